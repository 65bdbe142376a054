//go:build unix

package measure

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}

// TestExecRunnerExitCodes: the exit codes a shell gives. A file that exists but is not
// executable got 127 ("not found"), a shell gives 126; a command ended by a signal was a
// bare 137 with no signal named.
func TestExecRunnerExitCodes(t *testing.T) {
	t.Parallel()
	needSh(t)
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ExecRunner{}
	for _, path := range []string{notExec, dir} {
		if err := r.Check([]string{path}); !errors.Is(err, ErrNotExecutable) {
			t.Errorf("Check(%s) = %v, want ErrNotExecutable", path, err)
		}
		code, err := r.Run(context.Background(), []string{path})
		if code != 126 || !errors.Is(err, ErrNotExecutable) {
			t.Errorf("Run(%s) = %d, %v; want 126 and ErrNotExecutable", path, code, err)
		}
	}
	if err := r.Check([]string{filepath.Join(dir, "missing")}); !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("Check(missing) = %v, want ErrCommandNotFound", err)
	}
	code, err := r.Run(context.Background(), []string{"sh", "-c", "kill -KILL $$"})
	var k *Killed
	if code != 137 || !errors.As(err, &k) || k.Signal != syscall.SIGKILL || err.Error() != "killed by SIGKILL" {
		t.Errorf("a command killed by SIGKILL: %d, %v; want 137 and \"killed by SIGKILL\"", code, err)
	}
	code, err = r.Run(context.Background(), []string{"sh", "-c", "exit 3"})
	if code != 3 || err != nil {
		t.Errorf("exit 3: %d, %v", code, err)
	}
}

type sigCause struct{ s os.Signal }

func (c sigCause) Error() string     { return "interrupted by " + c.s.String() }
func (c sigCause) Signal() os.Signal { return c.s }

// TestExecRunnerForwardsSignal: a run ended by SIGTERM or SIGHUP sends the command that
// signal (it got SIGINT whatever ended gpuwatt, and SIGHUP left it running under init).
func TestExecRunnerForwardsSignal(t *testing.T) {
	t.Parallel()
	needSh(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		t.Run(SignalName(sig), func(t *testing.T) {
			if signal.Ignored(sig) {
				// Under nohup (or any parent ignoring it) the command inherits the ignored
				// disposition and sh cannot trap it: that is what the user asked for.
				t.Skipf("%s is ignored by this test process (nohup?): the command cannot see it", SignalName(sig))
			}
			dir := t.TempDir()
			got, ready := filepath.Join(dir, "got"), filepath.Join(dir, "ready")
			script := "for s in INT TERM HUP; do trap \"echo $s > " + got + "; exit 9\" $s; done; touch " + ready + "; while :; do sleep 0.01; done"
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				for range 500 {
					if _, err := os.Stat(ready); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				cancel(sigCause{sig})
			}()
			code, _ := ExecRunner{Grace: 3 * time.Second}.Run(ctx, []string{"sh", "-c", script})
			b, _ := os.ReadFile(got)
			want := strings.TrimPrefix(SignalName(sig), "SIG")
			if strings.TrimSpace(string(b)) != want || code != 9 {
				t.Errorf("the command got %q and exited %d; want %s and 9", strings.TrimSpace(string(b)), code, want)
			}
		})
	}
}
