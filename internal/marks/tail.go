package marks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// MaxLineBytes is the longest marker line kept; a longer one is a bad line.
const MaxLineBytes = 4096

// MaxBytes is the most of a marks file read: past it the rest is not read (a warning says
// so). A command that writes without end must not grow gpuwatt without end.
const MaxBytes = 16 << 20

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
	raw   []byte // every byte read, as written (marks.txt), at most MaxBytes
	full  bool   // MaxBytes read: the rest is not

	stop chan struct{}
	done chan struct{}
}

// OpenTail creates (or empties) the marks file at path and starts reading it on clk: on a
// real clock every ArrivalPoll until Stop; on a virtual clock only at Stop. The file is a
// regular file or a FIFO (read without blocking: Stop never waits on a writer); a device,
// a socket or a directory is refused. Neither opening nor reading ever blocks.
func OpenTail(ctx context.Context, path string, clk clock.Clock) (*Tail, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", EnvVar, path, err)
	}
	if err := tailable(f, path); err != nil {
		f.Close()
		return nil, err
	}
	t := &Tail{clk: clk, f: f, path: path, stop: make(chan struct{}), done: make(chan struct{})}
	if clock.IsVirtual(clk) {
		close(t.done)
		return t, nil
	}
	// Where the kernel tells of each write (inotify), a line is read the moment it is
	// written, and the file is polled only every IdlePoll besides, in case a write goes
	// unseen; elsewhere it is polled every ArrivalPoll.
	written, unwatch, werr := watchWrites(path)
	poll := IdlePoll
	if werr != nil {
		poll = ArrivalPoll
	}
	go func() {
		defer close(t.done)
		if unwatch != nil {
			defer unwatch()
		}
		tk := time.NewTicker(poll)
		defer tk.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-ctx.Done():
				return
			case <-written:
				t.read(false)
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
	for !t.full {
		// What is there now, at most a millisecond's wait: a FIFO's read would block until
		// a writer writes (a deadline already past reads nothing at all; a regular file
		// has no deadline and never blocks).
		_ = t.f.SetReadDeadline(time.Now().Add(time.Millisecond))
		n, err := t.f.Read(buf[:min(len(buf), MaxBytes-len(t.raw))])
		if n > 0 {
			now := t.clk.Now()
			t.raw = append(t.raw, buf[:n]...)
			t.full = len(t.raw) >= MaxBytes
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
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
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
	if t.full {
		return t.lines, fmt.Errorf("%s %s: the file grew past %d MiB: the rest was not read", EnvVar, t.path, MaxBytes>>20)
	}
	return t.lines, nil
}

// Raw is every byte read from the file, as written (at most MaxBytes): measure keeps it as
// marks.txt without opening the path again (the command may have put anything there).
func (t *Tail) Raw() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw
}

// tailable refuses what a marks file cannot be: anything but a regular file or a FIFO.
func tailable(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s %s: %w", EnvVar, path, err)
	}
	if m := st.Mode(); m.IsRegular() || m&fs.ModeNamedPipe != 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %w", EnvVar, path, infile.Regular(path, st))
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
