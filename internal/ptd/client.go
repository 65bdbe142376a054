// Package ptd is a client for SPEC's PTDaemon (the power/temperature daemon that drives an
// external power analyzer) and a small fake PTDaemon for tests.
//
// The protocol is plain text over TCP (default port 8888): one command per line ending in
// "\r\n", one reply line per command. The client speaks the subset gpuwatt needs: Hello,
// Identify, Go, Mark, Stop and Watts, whose reply is "Watts,avg,min,max,samples,errors,valid".
// PTDaemon itself is SPEC-licensed software; nothing of it is included here.
package ptd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPort is PTDaemon's default TCP port for a power analyzer.
const DefaultPort = "8888"

// ErrReply is wrapped by every error the daemon itself reports ("Error: ...", "Unknown
// command", "Invalid number of parameters").
var ErrReply = errors.New("ptd: daemon replied with an error")

// ErrNoSamples is returned by Watts when the daemon has no valid samples to average.
var ErrNoSamples = errors.New("ptd: no valid samples")

// Reading is a parsed "Watts,avg,min,max,samples,errors,valid" reply.
type Reading struct {
	Avg, Min, Max          float64
	Samples, Errors, Valid int
}

// Client is a connection to one PTDaemon. Its methods are safe for concurrent use; each
// sends one command and waits for its reply.
type Client struct {
	mu      sync.Mutex
	conn    net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

// Dial connects to a PTDaemon at addr ("host:port"; a missing port means 8888) and checks
// it with Hello.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*Client, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, DefaultPort)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ptd: %w", err)
	}
	c := &Client{conn: conn, r: bufio.NewReaderSize(conn, 4096), timeout: timeout}
	if err := c.Hello(); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Command sends one command line and returns the reply line without its line ending.
// Replies that report an error are returned as errors wrapping ErrReply.
func (c *Client) Command(cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\r\n") {
		return "", fmt.Errorf("ptd: command %q contains a line break", cmd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", fmt.Errorf("ptd: sending %s: %w", verbOf(cmd), err)
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("ptd: reply to %s: %w", verbOf(cmd), err)
	}
	line = strings.TrimRight(line, "\r\n")
	if isError(line) {
		return line, fmt.Errorf("%w: %s: %q", ErrReply, verbOf(cmd), line)
	}
	return line, nil
}

func verbOf(cmd string) string {
	v, _, _ := strings.Cut(cmd, ",")
	return v
}

func isError(line string) bool {
	l := strings.ToLower(line)
	return strings.HasPrefix(l, "error") || strings.HasPrefix(l, "unknown command") ||
		strings.HasPrefix(l, "invalid") || strings.HasPrefix(l, "meter busy")
}

// Hello checks that the peer is a PTDaemon.
func (c *Client) Hello() error {
	r, err := c.Command("Hello")
	if err != nil {
		return err
	}
	if !strings.Contains(r, "PTDaemon") {
		return fmt.Errorf("ptd: Hello: unexpected reply %q (not a PTDaemon?)", r)
	}
	return nil
}

// Identify returns the daemon's Identify line (driver, averaging interval, capabilities,
// version, mode...).
func (c *Client) Identify() (string, error) { return c.Command("Identify") }

// Go starts an untimed measurement sampling every interval (0: the device default), with
// the samples labelled mark when mark is not empty.
func (c *Client) Go(interval time.Duration, mark string) error {
	cmd := fmt.Sprintf("Go,%d,0", interval.Milliseconds())
	if mark != "" {
		cmd += "," + mark
	}
	_, err := c.Command(cmd)
	return err
}

// Mark changes the label written on the samples logged from now on.
func (c *Client) Mark(label string) error {
	if strings.Contains(label, ",") {
		return fmt.Errorf("ptd: mark %q contains a comma", label)
	}
	_, err := c.Command("Mark," + label)
	return err
}

// Stop ends the measurement.
func (c *Client) Stop() error {
	_, err := c.Command("Stop")
	return err
}

// Watts returns the power statistics of the last measurement.
func (c *Client) Watts() (Reading, error) {
	r, err := c.Command("Watts")
	if err != nil {
		return Reading{}, err
	}
	rd, err := ParseWatts(r)
	if err != nil {
		return rd, err
	}
	if rd.Valid == 0 || rd.Samples == 0 || rd.Avg < 0 {
		return rd, fmt.Errorf("%w: %q", ErrNoSamples, r)
	}
	return rd, nil
}

// ParseWatts parses "Watts,avg,min,max,samples,errors,valid".
func ParseWatts(line string) (Reading, error) {
	f := strings.Split(strings.TrimSpace(line), ",")
	if len(f) != 7 || f[0] != "Watts" {
		return Reading{}, fmt.Errorf("ptd: Watts reply %q: want Watts,avg,min,max,samples,errors,valid", line)
	}
	var rd Reading
	var err error
	fl := []*float64{&rd.Avg, &rd.Min, &rd.Max}
	for i, p := range fl {
		if *p, err = strconv.ParseFloat(f[1+i], 64); err != nil {
			return Reading{}, fmt.Errorf("ptd: Watts reply %q: field %d: %v", line, 2+i, err)
		}
	}
	in := []*int{&rd.Samples, &rd.Errors, &rd.Valid}
	for i, p := range in {
		if *p, err = strconv.Atoi(f[4+i]); err != nil || *p < 0 {
			return Reading{}, fmt.Errorf("ptd: Watts reply %q: field %d: not a count", line, 5+i)
		}
	}
	return rd, nil
}
