// Package atomicfile is gpuwatt's one writer of output files (a leaf: trace, report and the cli
// use it).
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Write is gpuwatt's one writer of output files: write fills a temporary file in
// path's directory, which is flushed, synced to disk and renamed over path, so a reader
// never sees half a file, and a failed write leaves no file under path (and any previous
// one in place). On error the temporary file is removed and the error names path. The
// file gets mode 0644.
func Write(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	var dst io.Writer = f
	if h := faultHook.Load(); h != nil {
		if limit, ferr := (*h)(path); ferr != nil {
			dst = &faultyWriter{w: f, left: limit, err: ferr}
		}
	}
	bw := bufio.NewWriterSize(dst, 256<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteBytes writes data to path with Write.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Fault makes writes fail, for tests of what gpuwatt does on a full disk: asked once per
// file written, a non-nil error makes that file's writes fail with it once limit bytes
// have gone through (a disk that fills part-way through the file).
type Fault func(path string) (limit int64, err error)

var faultHook atomic.Pointer[Fault]

// InjectFault sets f as the fault of every later Write (nil: none) and returns the
// function that removes it. For tests only; not safe for parallel tests.
func InjectFault(f Fault) (restore func()) {
	if f == nil {
		faultHook.Store(nil)
	} else {
		faultHook.Store(&f)
	}
	return func() { faultHook.Store(nil) }
}

type faultyWriter struct {
	w    io.Writer
	left int64
	err  error
}

func (f *faultyWriter) Write(p []byte) (int, error) {
	if int64(len(p)) <= f.left {
		f.left -= int64(len(p))
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.left])
	f.left = 0
	return n, f.err
}
