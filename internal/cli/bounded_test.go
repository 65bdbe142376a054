package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// within runs f and fails the test when it has not returned after d (the verb hangs).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %s (it blocks on its input)", what, d)
	}
}

// TestInputsThatAreNotFiles: a FIFO (no writer: opening it blocked for ever, deaf to
// signals), a device (/dev/zero: read whole, gpuwatt grew to 24 GB) or a directory given
// as an input file is refused at once, exit 2, naming what it is (issue 29).
func TestInputsThatAreNotFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "rep")
	os.Mkdir(rep, 0o755)
	if err := syscall.Mkfifo(filepath.Join(rep, "results.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "t.csv")
	os.WriteFile(tr, []byte("t_s,power_w\n0,100\n1,100\n2,100\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"energy --trace FIFO", []string{"energy", "--trace", fifo}, "a FIFO"},
		{"energy --trace /dev/zero", []string{"energy", "--trace", "/dev/zero"}, "a device"},
		{"energy --sensor /dev/zero", []string{"energy", "--trace", tr, "--sensor", "/dev/zero"}, "a device"},
		{"energy --sensor FIFO", []string{"energy", "--trace", tr, "--sensor", fifo}, "a FIFO"},
		{"measure --sim-config FIFO", []string{"measure", "--sim-config", fifo, "--", "fake", "1s"}, "a FIFO"},
		{"measure --marks /dev/zero", []string{"measure", "--device", "sim", "--marks", "/dev/zero", "--", "fake", "1s"}, "a device"},
		{"report results.json FIFO", []string{"report", rep}, "a FIFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, stderr, ctx := testApp(t)
			var code int
			within(t, 10*time.Second, tc.name, func() { code = a.Main(ctx, tc.args) })
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, want 2 naming %s: %s", code, tc.want, stderr)
			}
		})
	}
}

// helperMeasure starts gpuwatt measure with args as a real process (through
// TestSignalsEndMeasure's helper, with the environment env added) and waits for the command
// to write its pid to pidFile.
func helperMeasure(t *testing.T, args []string, pidFile string, env ...string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsEndMeasure$")
	cmd.Env = append(append(os.Environ(), "GPUWATT_SIGNAL_HELPER=1", "GPUWATT_ARGS="+string(b)), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if child, _ := strconv.Atoi(strings.TrimSpace(string(b))); child > 0 {
				return cmd, &stderr, child
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the command did not start in 30 s: %s", stderr.String())
	return nil, nil, 0
}

// TestMarksFIFOEndsOnSIGTERM: a FIFO given as the marks file is read without ever
// blocking (the tail's read waited for a writer for ever, so measure was deaf to SIGTERM):
// its markers are read, and measure ends within a second of SIGTERM with every file.
//
// The second is gpuwatt's own: from the signal's arrival in the process to Main's return
// with every file written (the helper notes both), not the time a loaded machine takes to
// schedule the process and reap it. On a 2-core machine shared by a dozen test processes
// even that was once over a second, so a run over it is tried again, twice at most: a
// measure deaf to the signal misses every time (it never ends), a loaded machine rarely
// thrice; every run must end within 10 s of the signal, with every file.
func TestMarksFIFOEndsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real processes and signals")
	}
	var took []time.Duration
	for attempt := 0; attempt < 3; attempt++ {
		d := marksFIFOSIGTERM(t)
		took = append(took, d)
		t.Logf("run %d: measure ended %s after SIGTERM reached it", attempt+1, d)
		if d <= time.Second {
			return
		}
	}
	t.Errorf("measure ended %v after SIGTERM reached it, want within 1 s", took)
}

// marksFIFOSIGTERM runs measure with a FIFO as its marks file, signals it (SIGTERM) and
// checks how it ended; it returns the time from the signal's arrival to Main's return.
func marksFIFOSIGTERM(t *testing.T) time.Duration {
	t.Helper()
	dir := t.TempDir()
	fifo, out, pidFile, times := filepath.Join(dir, "marks"), filepath.Join(dir, "run"), filepath.Join(dir, "pid"), filepath.Join(dir, "times")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, stderr, child := helperMeasure(t, []string{"measure", "--device", "sim", "--baseline", "100ms", "--tail", "100ms", "--marks", fifo, "--out", out, "--",
		"sh", "-c", `echo begin step > "$GPUWATT_MARKS"; echo $$ > ` + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; exec sleep 30"}, pidFile,
		"GPUWATT_SIGNAL_TIMES="+times)
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("gpuwatt did not end 10 s after SIGTERM: %s", stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d, want 143: %s", code, stderr)
	}
	if err := syscall.Kill(child, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Errorf("the command (pid %d) outlived gpuwatt", child)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if !sum.Incomplete {
		t.Errorf("summary.json not incomplete")
	}
	if b, err := os.ReadFile(filepath.Join(out, "marks.txt")); err != nil || string(b) != "begin step\n" {
		t.Errorf("marks.txt %q (%v), want the marker written to the FIFO", b, err)
	}
	var got, ended int64
	if b, err := os.ReadFile(times); err != nil {
		t.Fatalf("the helper wrote no times: %v", err)
	} else if _, err := fmt.Sscan(string(b), &got, &ended); err != nil || got == 0 || ended < got {
		t.Fatalf("the helper's times %q: the signal's arrival not seen (%v)", b, err)
	}
	return time.Duration(ended - got)
}

// testMarksSwappedForSymlink: the command replaces its marks file by a symlink to
// /dev/zero; measure read the path again for marks.txt (for ever: summary.json was lost).
// marks.txt is what the tail read; every file is written.
func testMarksSwappedForSymlink(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	var sum *measure.Summary
	within(t, 30*time.Second, "measure", func() {
		sum, _ = measureSh(t, `echo begin x >> "$GPUWATT_MARKS"; echo end x >> "$GPUWATT_MARKS"; rm "$GPUWATT_MARKS"; ln -s /dev/zero "$GPUWATT_MARKS"`, "--out", out)
	})
	if len(sum.Regions) != 1 {
		t.Errorf("regions %+v", sum.Regions)
	}
	if b, err := os.ReadFile(filepath.Join(out, "marks.txt")); err != nil || string(b) != "begin x\nend x\n" {
		t.Errorf("marks.txt %q (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestOutputNeverOverwritesAnInput: energy --series naming the trace it reads, or report
// --out naming results.json, destroyed the input, exit 0. Refused, exit 2, the input intact.
func TestOutputNeverOverwritesAnInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	data := []byte("t_s,power_w\n0,100\n0.1,100\n0.2,100\n0.3,100\n")
	os.WriteFile(csv, data, 0o600)
	link := filepath.Join(dir, "link.csv")
	os.Symlink(csv, link)
	rep := filepath.Join(dir, "rep")
	os.Mkdir(rep, 0o755)
	res, err := os.ReadFile(filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-21-characterize-quick", "quick", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rep, "results.json"), res, 0o600)
	for _, tc := range []struct {
		name string
		args []string
		keep string
		was  []byte
	}{
		{"energy --series the trace", []string{"energy", "--trace", csv, "--series", csv}, csv, data},
		{"energy --series a link to the trace", []string{"energy", "--trace", csv, "--series", link}, csv, data},
		{"report --out results.json", []string{"report", rep, "--out", filepath.Join(rep, "results.json")}, filepath.Join(rep, "results.json"), res},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, stderr, ctx := testApp(t)
			if code := a.Main(ctx, tc.args); code != ExitUsage || !strings.Contains(stderr.String(), "that is an input") {
				t.Errorf("exit %d, want 2: %s", code, stderr)
			}
			if b, _ := os.ReadFile(tc.keep); !bytes.Equal(b, tc.was) {
				t.Errorf("%s was overwritten", tc.keep)
			}
		})
	}
}
