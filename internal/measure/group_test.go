//go:build linux

package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func readPID(t *testing.T, path string) int {
	t.Helper()
	for range 500 {
		if b, err := os.ReadFile(path); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestStopReachesTheGroup: a workload under `sh -c` (a background sleep the shell waits
// for) is stopped with the command: the signal goes to the command's process group (only
// the shell was signalled, and the workload ran on).
func TestStopReachesTheGroup(t *testing.T) {
	t.Parallel()
	needSh(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code, _ = ExecRunner{Grace: time.Second}.Run(ctx, []string{"sh", "-c", "sleep 30 & echo $! > " + pidFile + "; wait"})
	}()
	worker := readPID(t, pidFile)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(worker, syscall.SIGKILL)
		t.Fatal("Run did not return 5 s after the cancel")
	}
	time.Sleep(50 * time.Millisecond)
	if alive(worker) {
		syscall.Kill(worker, syscall.SIGKILL)
		t.Errorf("the workload (pid %d) outlived the stop; exit %d", worker, code)
	}
}

// TestChildOutlivesTheCommand: a command that exits while its child works on was reported
// complete; Run names the child (*Outlived), and with WaitChildren waits for it.
func TestChildOutlivesTheCommand(t *testing.T) {
	t.Parallel()
	needSh(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	code, err := ExecRunner{}.Run(context.Background(), []string{"sh", "-c", "sleep 0.6 & echo $! > " + pidFile})
	var o *Outlived
	if code != 0 || !errors.As(err, &o) || len(o.PIDs) != 1 || o.Waited != 0 || !strings.Contains(err.Error(), "--wait-children") {
		t.Fatalf("exit %d, %v", code, err)
	}
	if worker := readPID(t, pidFile); o.PIDs[0] != worker {
		t.Errorf("named %v, the child is %d", o.PIDs, worker)
	}
	os.Remove(pidFile)
	t0 := time.Now()
	code, err = ExecRunner{WaitChildren: true}.Run(context.Background(), []string{"sh", "-c", "sleep 0.6 & echo $! > " + pidFile})
	if code != 0 || !errors.As(err, &o) || o.Waited < 400*time.Millisecond || time.Since(t0) < 550*time.Millisecond {
		t.Fatalf("WaitChildren: exit %d, %v after %s", code, err, time.Since(t0))
	}
	if alive(readPID(t, pidFile)) {
		t.Error("the child still runs after the wait")
	}
	if code, err := (ExecRunner{}).Run(context.Background(), []string{"sh", "-c", "sleep 0.05"}); code != 0 || err != nil {
		t.Errorf("a command that leaves nothing behind: exit %d, %v", code, err)
	}
}
