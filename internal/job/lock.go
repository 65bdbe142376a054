package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// LockWait is how long begin and end wait for another begin or end of the same job.
const LockWait = 60 * time.Second

// Lock takes the job's lock, a file .ID.lock beside its directory (never removed: a lock
// file unlinked while held lets a third process lock a new one), so that concurrent begins
// and ends of one job run one after the other: eight concurrent begins of one id started
// several recorders that ran for ever after end. It waits up to LockWait (or ctx), and
// returns the unlock.
func Lock(ctx context.Context, dir string) (func(), error) {
	base, id := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("%w: --dir %s: cannot create it: %v", status.ErrInput, base, err)
	}
	path := filepath.Join(base, "."+id+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: the job's lock %s: %v", status.ErrInput, path, err)
	}
	deadline := time.Now().Add(LockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("job %s: another gpuwatt job begin or end holds %s (%v)", id, path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MakeDir creates the job's directory, 0700 (the job's figures and its recorder's files
// are its owner's), or checks the one there: a directory (not a symlink to one) that this
// user owns, made 0700.
func MakeDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: cannot create the job's directory %s: %v", status.ErrInput, dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: the job's directory %s is not a directory (a symbolic link?)", status.ErrInput, dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: the job's directory %s belongs to user %d, not to this one", status.ErrInput, dir, sys.Uid)
	}
	return os.Chmod(dir, 0o700)
}

// createFile creates path anew, 0600, never through a symlink: what was at path (a stale
// file, or a link planted there) is removed first, and O_EXCL|O_NOFOLLOW refuse any that
// comes back in between.
func createFile(path string, flag int) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

// writeNew writes data to path through createFile.
func writeNew(path string, data []byte) error {
	f, err := createFile(path, os.O_WRONLY)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
