package marks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

// MaxLineBytes is the longest marker line kept; a longer one is a bad line.
const MaxLineBytes = 4096

// Tail reads a marks file while the command runs, stamping each line when it is read.
type Tail struct {
	clk  clock.Clock
	f    *os.File
	path string

	mu    sync.Mutex
	part  []byte // a line not ended yet
	lines []Line
	no    int
	err   error

	stop chan struct{}
	done chan struct{}
}

// OpenTail creates (or empties) the marks file at path and starts reading it on clk: on a
// real clock every ArrivalPoll until Stop; on a virtual clock only at Stop.
func OpenTail(ctx context.Context, path string, clk clock.Clock) (*Tail, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", EnvVar, path, err)
	}
	t := &Tail{clk: clk, f: f, path: path, stop: make(chan struct{}), done: make(chan struct{})}
	if clock.IsVirtual(clk) {
		close(t.done)
		return t, nil
	}
	go func() {
		defer close(t.done)
		tk := time.NewTicker(ArrivalPoll)
		defer tk.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
				t.read(false)
			}
		}
	}()
	return t, nil
}

// read reads what was appended since the last read; at the end (final) a last line
// without its newline counts too.
func (t *Tail) read(final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	var buf [32 << 10]byte
	for {
		n, err := t.f.Read(buf[:])
		if n > 0 {
			now := t.clk.Now()
			t.part = append(t.part, buf[:n]...)
			for {
				i := bytes.IndexByte(t.part, '\n')
				if i < 0 {
					break
				}
				t.add(t.part[:i], now)
				t.part = t.part[i+1:]
			}
			if len(t.part) > MaxLineBytes {
				t.add(t.part, now)
				t.part = nil
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.err = err
			}
			break
		}
		if n == 0 {
			break
		}
	}
	if final && len(t.part) > 0 {
		t.add(t.part, t.clk.Now())
		t.part = nil
	}
}

func (t *Tail) add(b []byte, now time.Duration) {
	t.no++
	if len(b) > MaxLineBytes {
		b = append(b[:MaxLineBytes:MaxLineBytes], "..."...)
	}
	t.lines = append(t.lines, Line{No: t.no, Text: string(bytes.TrimRight(b, "\r")), Arrived: now})
}

// Stop reads the rest, closes the file and returns every line read, with an error where
// the file could not be read.
func (t *Tail) Stop() ([]Line, error) {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
	t.read(true)
	t.f.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.lines, fmt.Errorf("%s %s: %w", EnvVar, t.path, t.err)
	}
	return t.lines, nil
}

// Origin maps the writers' CLOCK_MONOTONIC seconds onto clk's axis: a real clock's axis is
// the host's monotonic clock since the clock's origin, so the offset is read once (between
// two readings of CLOCK_MONOTONIC, a microsecond apart). nil where that cannot be had (a
// virtual clock, a host other than Linux): then lines are stamped on arrival.
func Origin(clk clock.Clock) func(sec float64) time.Duration {
	if clock.IsVirtual(clk) {
		return nil
	}
	m1, ok1 := monotonic()
	c := clk.Now()
	m2, ok2 := monotonic()
	if !ok1 || !ok2 {
		return nil
	}
	origin := (m1+m2)/2 - c.Seconds()
	return func(sec float64) time.Duration {
		return time.Duration((sec - origin) * float64(time.Second))
	}
}
