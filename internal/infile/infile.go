// Package infile opens the files gpuwatt reads as input: as regular files, and read whole
// only up to a size limit. A FIFO, a device or a socket can block an open or a read for
// ever, or never end (/dev/zero grew gpuwatt to 24 GB), and a file named as input may be
// swapped for one of them; so each is refused, naming what it is, unless the caller says
// it takes them (Special). The open never blocks: a FIFO is opened O_NONBLOCK and refused.
package infile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned (wrapped) for a FIFO, device, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned (wrapped) for a file beyond the limit of what reads it whole.
var ErrTooLarge = errors.New("larger than expected")

// Limits of the files read whole.
const (
	JSONLimit  = 256 << 20 // results.json, trace.json, summary.json
	SmallLimit = 4 << 20   // sensor.json, a sim config, a marks file kept
)

// Open opens path for reading. Unless special, path must be a regular file (symlinks to
// one are followed): anything else is refused, with ErrNotRegular naming its kind.
func Open(path string, special bool) (*os.File, error) {
	flags := os.O_RDONLY
	if !special {
		flags |= syscall.O_NONBLOCK // a FIFO without a writer would block the open itself
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	if special {
		return f, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := Regular(path, st); err != nil {
		f.Close()
		return nil, err
	}
	// A regular file ignores O_NONBLOCK; clearing it keeps reads ordinary all the same.
	_ = syscall.SetNonblock(int(f.Fd()), false)
	return f, nil
}

// Regular returns nil for a regular file, else ErrNotRegular naming what st is.
func Regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: %w: it is %s (it can block or never end): expected a file", path, ErrNotRegular, Kind(st.Mode()))
}

// Kind names a file mode's type: "a FIFO", "a device", "a socket", "a directory".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// ReadFile reads the regular file path whole, at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to its end, at most limit bytes; more is ErrTooLarge naming name.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: over %s", name, ErrTooLarge, Size(limit))
	}
	return b, nil
}

// Size is a byte count in words: "4 MiB", "256 MiB", "1000 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
