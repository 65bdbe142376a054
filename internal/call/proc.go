package call

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/marks"
)

// The line protocol between gpuwatt and a command that runs the call (docs/call.md):
//
//	command → gpuwatt   ready                  once, when it is set up
//	gpuwatt → command   call N                 run the call N times back to back
//	command → gpuwatt   done [T0 T1]           done (its GPU work finished); T0, T1: the
//	                                           GPU work's start and end, CLOCK_MONOTONIC s
//	command → gpuwatt   error MESSAGE          the call failed
//	gpuwatt → command   (end of its stdin)     exit
//
// Any other line the command writes to its stdout is passed on to gpuwatt's stderr.
const (
	EnvVar = "GPUWATT_CALL" // set to "1" in the command's environment
)

// ProcOptions of StartProc.
type ProcOptions struct {
	// ReadyTimeout bounds the wait for "ready" (default 10 min), CallTimeout each call's
	// "done" (default 1 min), ExitTimeout the command's exit after its stdin is closed
	// (default 10 s; then it is killed).
	ReadyTimeout, CallTimeout, ExitTimeout time.Duration
	// Other receives the command's other stdout lines (nil: dropped); its stderr goes to
	// Stderr (nil: dropped).
	Other, Stderr io.Writer
}

// Proc is a running command that runs the call on request, or (Attach) the program on
// the other end of a pipe: gpuwatt's own parent (`gpuwatt call --stdio`, the Python face).
type Proc struct {
	cmd    *exec.Cmd // nil for Attach
	in     io.WriteCloser
	lines  chan string
	clk    clock.Clock
	toAxis func(sec float64) time.Duration
	o      ProcOptions
	once   sync.Once
	// Stamped counts the replies that carried their own T0 T1, Arrival those stamped by
	// gpuwatt (the request's write and the reply's arrival).
	Stamped, Arrival int
}

// ErrProtocol marks a reply that breaks the protocol.
var ErrProtocol = errors.New("call protocol")

// StartProc starts argv and waits for its "ready".
func StartProc(ctx context.Context, argv []string, clk clock.Clock, o ProcOptions) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	o = o.withDefaults()
	if o.Other != nil && o.Other == o.Stderr {
		// Both are written from goroutines of their own: one lock for the two.
		lw := &lockedWriter{w: o.Other}
		o.Other, o.Stderr = lw, lw
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), EnvVar+"=1")
	ownGroup(cmd)
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, in: in, lines: make(chan string, 16), clk: clk, toAxis: marks.Origin(clk), o: o}
	if err := p.begin(ctx, out); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// Attach speaks the protocol with the program at the other end of r and w (gpuwatt's
// stdin and stdout under `gpuwatt call --stdio`): it reads its "ready" and its replies
// from r and writes the requests to w. Close does not close r or w's owner.
func Attach(ctx context.Context, r io.Reader, w io.Writer, clk clock.Clock, o ProcOptions) (*Proc, error) {
	o = o.withDefaults()
	p := &Proc{in: nopCloser{w}, lines: make(chan string, 16), clk: clk, toAxis: marks.Origin(clk), o: o}
	if err := p.begin(ctx, r); err != nil {
		return nil, err
	}
	return p, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (o ProcOptions) withDefaults() ProcOptions {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Minute
	}
	if o.ExitTimeout <= 0 {
		o.ExitTimeout = 10 * time.Second
	}
	return o
}

// begin reads the other end's lines (the protocol's to p.lines, the rest to Other) and
// waits for its "ready".
func (p *Proc) begin(ctx context.Context, out io.Reader) error {
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<10) // a line is bounded
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if isProtocol(line) {
				p.lines <- line
			} else if p.o.Other != nil && line != "" {
				fmt.Fprintln(p.o.Other, line)
			}
		}
		close(p.lines)
	}()
	line, err := p.next(ctx, p.o.ReadyTimeout, "ready")
	if err != nil {
		return err
	}
	if line != "ready" {
		return fmt.Errorf("%w: the first line %q: want ready", ErrProtocol, clip(line))
	}
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func isProtocol(line string) bool {
	f := strings.Fields(line)
	return len(f) > 0 && (f[0] == "ready" || f[0] == "done" || f[0] == "error")
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// next is the command's next protocol line, within d.
func (p *Proc) next(ctx context.Context, d time.Duration, what string) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("the other end closed its pipe (it exited?) while gpuwatt waited for %s", what)
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("no %s from the command within %s", what, d)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Func runs the call through the command: "call N", then its "done".
func (p *Proc) Func() Func {
	return func(ctx context.Context, n int) (Span, error) {
		s := p.clk.Now()
		if _, err := fmt.Fprintf(p.in, "call %d\n", n); err != nil {
			return Span{}, fmt.Errorf("writing to the command: %w", err)
		}
		line, err := p.next(ctx, p.o.CallTimeout, "done")
		e := p.clk.Now()
		if err != nil {
			return Span{}, err
		}
		return p.parseDone(line, s, e)
	}
}

// parseDone reads "done [T0 T1]" or "error MESSAGE"; s and e are the request's write and
// the reply's arrival on the clock.
func (p *Proc) parseDone(line string, s, e time.Duration) (Span, error) {
	f := strings.Fields(line)
	switch {
	case f[0] == "error":
		return Span{}, fmt.Errorf("the command says: %s", strings.TrimSpace(strings.TrimPrefix(line, "error")))
	case f[0] != "done" || (len(f) != 1 && len(f) != 3):
		return Span{}, fmt.Errorf("%w: %q: want done or done T0 T1", ErrProtocol, clip(line))
	case len(f) == 1:
		p.Arrival++
		return Span{Start: s, End: e}, nil
	}
	t0, err0 := strconv.ParseFloat(f[1], 64)
	t1, err1 := strconv.ParseFloat(f[2], 64)
	if err0 != nil || err1 != nil || t1 < t0 {
		return Span{}, fmt.Errorf("%w: %q: T0 and T1 must be CLOCK_MONOTONIC seconds, T0 <= T1", ErrProtocol, clip(line))
	}
	if p.toAxis == nil {
		p.Arrival++
		return Span{Start: s, End: e}, nil
	}
	a, b := p.toAxis(t0), p.toAxis(t1)
	// The GPU work lies between the request and the reply: a time outside them is on
	// another clock.
	const slack = 2 * time.Millisecond
	if a < s-slack || b > e+slack {
		return Span{}, fmt.Errorf("%w: %q lies outside the call's request and reply (%.6f to %.6f s on CLOCK_MONOTONIC): are T0 and T1 CLOCK_MONOTONIC seconds?", ErrProtocol, clip(line), s.Seconds()-p.toAxis(0).Seconds(), e.Seconds()-p.toAxis(0).Seconds())
	}
	p.Stamped++
	return Span{Start: a, End: b}, nil
}

// kill ends a command that did not start as the protocol wants.
func (p *Proc) kill() {
	if p.cmd == nil {
		return
	}
	p.once.Do(func() {
		p.in.Close()
		killGroup(p.cmd)
		_ = p.cmd.Wait()
	})
}

// Close closes the command's stdin and waits for it to exit (ExitTimeout, then kills
// it). The error is the command's exit status.
func (p *Proc) Close() error {
	var err error
	if p.cmd == nil {
		return nil
	}
	p.once.Do(func() {
		p.in.Close()
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		t := time.NewTimer(p.o.ExitTimeout)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			killGroup(p.cmd)
			err = fmt.Errorf("the command did not exit within %s of the end of its stdin: killed", p.o.ExitTimeout)
			<-done
		}
	})
	return err
}
