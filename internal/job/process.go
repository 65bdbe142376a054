package job

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// Spawn starts argv as the job's detached recorder: a session of its own (setsid), so the
// prolog's end and its terminal signals leave it alone, stdin and stdout on /dev/null,
// stderr into LogFile. It writes PIDFile and returns the pid, and a channel that receives
// the recorder's exit if it ends while this process still runs.
func Spawn(argv []string, dir string) (int, <-chan error, error) {
	logf, err := createFile(filepath.Join(dir, LogFile), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	// A ready file left there (an earlier run's, or planted) is not this recorder's.
	if err := os.Remove(filepath.Join(dir, ReadyFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = nil, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("starting the recorder %s: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := writeNew(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(pid)+"\n")); err != nil {
		_ = cmd.Process.Kill()
		return 0, nil, err
	}
	return pid, exited, nil
}

// WaitReady waits until the recorder has written ReadyFile (true), has exited (false, with
// its log's last line), or timeout has passed (false, ""). The ready file is the
// recorder's own, a regular file: a symlink planted there named an existing file and made
// begin return before the recorder had read anything.
func WaitReady(dir string, exited <-chan error, timeout time.Duration) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		if st, err := os.Lstat(filepath.Join(dir, ReadyFile)); err == nil && st.Mode().IsRegular() {
			return true, ""
		}
		select {
		case err := <-exited:
			return false, fmt.Sprintf("the recorder exited (%v): %s", err, LastLogLine(dir))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false, ""
		}
	}
}

// LastLogLine is the last non-empty line of the recorder's log ("" where none).
func LastLogLine(dir string) string {
	b, _ := infile.ReadFile(filepath.Join(dir, LogFile), 1<<20)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// isRecorder says whether pid is a live recorder of this job directory (not a process that
// took its pid after it died): its command line holds "record" and the directory.
func isRecorder(pid int, dir string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true // no /proc: take the live pid as the recorder
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// A zombie (state Z) has ended: its parent has not reaped it yet.
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			return false
		}
	}
	args := strings.Split(string(b), "\x00")
	hasRecord, hasDir := false, false
	for _, a := range args {
		hasRecord = hasRecord || a == "record"
		hasDir = hasDir || a == dir
	}
	return hasRecord && hasDir
}

// Stop ends the job's recorder (SIGTERM, then SIGKILL after timeout) and waits for its
// trace. It returns "" when the trace is saved, else why there is none: the recorder is
// not running (it died: the node rebooted, it was killed, the pid is another process's), or
// it did not save its trace in time.
func Stop(dir string, timeout time.Duration) string {
	done := filepath.Join(dir, DoneFile)
	if _, err := os.Stat(done); err == nil {
		return "" // stopped before (an end that failed after stopping it)
	}
	b, err := infile.ReadFile(filepath.Join(dir, PIDFile), 64)
	if err != nil {
		return "no recorder was started (" + PIDFile + " is missing)"
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	abs, _ := filepath.Abs(dir)
	if !isRecorder(pid, abs) {
		return fmt.Sprintf("the recorder (pid %d) is not running: it died before the job ended (%s)", pid, orNone(LastLogLine(dir)))
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Sprintf("the recorder (pid %d) could not be signalled: %v", pid, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(done); err == nil {
			// Saved; let it exit.
			for i := 0; i < 100 && isRecorder(pid, abs); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			return ""
		}
		if !isRecorder(pid, abs) {
			return fmt.Sprintf("the recorder (pid %d) exited without saving its trace (%s)", pid, orNone(LastLogLine(dir)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return fmt.Sprintf("the recorder (pid %d) did not save its trace within %s and was killed", pid, timeout)
}

func orNone(s string) string {
	if s == "" {
		return "its log is empty"
	}
	return "its log: " + s
}

// LiveRecorder returns the pid of the job directory's recorder where it still runs.
func LiveRecorder(dir string) (int, bool) {
	b, err := infile.ReadFile(filepath.Join(dir, PIDFile), 64)
	if err != nil {
		return 0, false
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	abs, _ := filepath.Abs(dir)
	return pid, isRecorder(pid, abs)
}

// SetAside renames a job's directory to the first free DIR.1, DIR.2, … and returns the
// new name: a job begun again (Slurm requeued it) keeps what its earlier run left.
func SetAside(dir string) (string, error) {
	for n := 1; n < 1000; n++ {
		to := fmt.Sprintf("%s.%d", dir, n)
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			return to, os.Rename(dir, to)
		}
	}
	return "", fmt.Errorf("%s: no free name to set the earlier run aside", dir)
}

// ErrEnded is returned (wrapped) by end for a job that has already ended.
var ErrEnded = errors.New("the job has already ended")
