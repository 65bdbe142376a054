package infile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatIsNotAFile: a FIFO (no writer: the open would block for ever), a device
// (/dev/zero never ends), a socket and a directory are refused at once, naming what they
// are; a regular file, and a symlink to one, read; a file over the limit is refused.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(dir, "f.json")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{{fifo, "a FIFO"}, {"/dev/zero", "a device"}, {sock, ""}, {dir, "a directory"}} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(tc.path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if tc.path == sock {
				if err == nil {
					t.Errorf("%s read", sock)
				}
				continue
			}
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("%s: %v, want ErrNotRegular naming %s", tc.path, err, tc.kind)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: the read blocks", tc.path)
		}
	}
	for _, p := range []string{file, link} {
		if b, err := ReadFile(p, 10); err != nil || string(b) != "0123456789" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	if _, err := ReadFile(file, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "over 9 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if f, err := Open("/dev/null", true); err != nil {
		t.Errorf("special: %v", err)
	} else {
		f.Close()
	}
}
