//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// canceller ends a run's context with a signal's cause at a virtual time: a signal that
// arrives at a chosen stage of a run on the virtual clock.
type canceller struct {
	at     time.Duration
	sig    syscall.Signal
	cancel context.CancelCauseFunc
	fired  bool
}

func (c *canceller) Next() time.Duration {
	if c.fired {
		return clock.Never
	}
	return c.at
}

func (c *canceller) Fire(time.Duration) {
	c.fired = true
	c.cancel(Interrupted{c.sig})
}

// signalApp is testApp on a context that the canceller ends at virtual time at with sig
// (never, with at < 0); it returns the clock, so a test can read how long a run took.
func signalApp(t *testing.T, at time.Duration, sig syscall.Signal) (*App, *bytes.Buffer, *bytes.Buffer, context.Context, *clock.Virtual) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	clk := clock.NewVirtual(time.Time{})
	if at >= 0 {
		clk.Add(&canceller{at: at, sig: sig, cancel: cancel})
	}
	off := false
	a := &App{
		Stdout: &stdout, Stderr: &stderr,
		NewClock:    func() clock.Clock { return clk },
		Runner:      &fakeRunner{clk: clk},
		NVMLPaths:   []string{filepath.Join(t.TempDir(), "libnvidia-ml.so.1")},
		Host:        "testhost",
		Version:     "test",
		Interactive: &off,
	}
	return a, &stdout, &stderr, ctx, clk
}

// TestSignalAtEveryMeasureStage: SIGINT, SIGTERM and SIGHUP at the baseline, while the
// command runs and in the tail all end measure the same way: every file written, the
// summary marked incomplete with the signal and the stage named, exit 128+N.
func TestSignalAtEveryMeasureStage(t *testing.T) {
	t.Parallel()
	for _, stage := range []struct {
		name string
		at   time.Duration
	}{{"during the baseline", 500 * time.Millisecond}, {"while the command ran", 2 * time.Second}, {"during the tail", 3500 * time.Millisecond}} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			name := measure.SignalName(sig)
			t.Run(stage.name+"/"+name, func(t *testing.T) {
				a, _, stderr, ctx, _ := signalApp(t, stage.at, sig)
				out := filepath.Join(t.TempDir(), "run")
				code := a.Main(ctx, []string{"measure", "--device", "sim", "--baseline", "1s", "--tail", "1s", "--out", out, "--", "fake", "2s"})
				if code != 128+int(sig) {
					t.Errorf("exit %d, want %d: %s", code, 128+int(sig), stderr)
				}
				var sum measure.Summary
				readJSON(t, filepath.Join(out, "summary.json"), &sum)
				if want := "interrupted by " + name + " " + stage.name; !sum.Incomplete || sum.Reason != want {
					t.Errorf("summary.json: incomplete %v, reason %q; want %q", sum.Incomplete, sum.Reason, want)
				}
				for _, f := range []string{"trace.csv", "trace.json", "report.html"} {
					if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
						t.Errorf("%s not written: %v", f, err)
					}
				}
				if !strings.Contains(stderr.String(), "INCOMPLETE: interrupted by "+name) {
					t.Errorf("stderr does not say the run is incomplete, and why:\n%s", stderr)
				}
			})
		}
	}
}

// TestSignalEndsEveryVerb: SIGHUP 1.5 s (virtual) into each verb that runs gpuwatt's own
// workloads: exit 129, what was measured written and marked incomplete. sensor gave exit 1,
// "context canceled", and wrote nothing: its recording is now kept (not analysed).
func TestSignalEndsEveryVerb(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		files []string
		says  string // on stderr
	}{
		{[]string{"sensor", "--device", "sim", "--quick"}, []string{"trace.csv", "trace.json"}, "interrupted by SIGHUP before every phase was recorded: the recording is kept in"},
		{[]string{"micro", "--device", "sim", "--only", "int32.add,fp32.fma"}, []string{"results.json", "results.csv", "report.html", "trace.csv"}, ""},
		{[]string{"archline", "--device", "sim", "--quick"}, []string{"results.json", "report.html", "trace.csv"}, ""},
		{[]string{"loadlevel", "--device", "sim"}, []string{"results.json", "report.html"}, ""},
		{[]string{"profile", "--device", "sim"}, nil, "interrupted by SIGHUP before a run was profiled: nothing to write"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			a, _, stderr, ctx, _ := signalApp(t, 1500*time.Millisecond, syscall.SIGHUP)
			out := filepath.Join(t.TempDir(), "o")
			if code := a.Main(ctx, append(tc.args, "--quiet", "--out", out)); code != 129 {
				t.Errorf("exit %d, want 129: %s", code, stderr)
			}
			assertFiles(t, out, tc.files, nil)
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("stderr %q, want %q", stderr, tc.says)
			}
			if len(tc.files) > 0 && tc.files[0] == "results.json" {
				var st struct {
					Incomplete bool   `json:"incomplete"`
					Reason     string `json:"incomplete_reason"`
				}
				readJSON(t, filepath.Join(out, "results.json"), &st)
				if !st.Incomplete || !strings.Contains(st.Reason, "interrupted") {
					t.Errorf("results.json: incomplete %v, reason %q", st.Incomplete, st.Reason)
				}
			}
			if tc.files != nil && tc.files[0] == "trace.csv" {
				tr, err := trace.Load(out)
				if err != nil {
					t.Fatal(err)
				}
				if !tr.Meta.Incomplete || len(tr.Samples) == 0 {
					t.Errorf("trace: incomplete %v, %d samples; want the recording kept, marked", tr.Meta.Incomplete, len(tr.Samples))
				}
			}
		})
	}
}

// TestSignalAtEveryCharacterizeStage: a signal in each stage of characterize keeps the
// stages finished before it (done), marks the one it cut (partial or failed, with why),
// writes results.json and report.html, and exits 128+N. Each stage is cut 1 s (virtual)
// into a run of it alone; then a run of sensor and micro is cut 1 s into micro.
func TestSignalAtEveryCharacterizeStage(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, stages string, at time.Duration, wantCode int) (characterize.Result, time.Duration) {
		t.Helper()
		a, _, stderr, ctx, clk := signalApp(t, at, syscall.SIGTERM)
		out := filepath.Join(t.TempDir(), "ch")
		if code := a.Main(ctx, []string{"characterize", "--device", "sim", "--quick", "--quiet", "--stages", stages, "--out", out}); code != wantCode {
			t.Errorf("exit %d, want %d: %s", code, wantCode, stderr)
		}
		var res characterize.Result
		readJSON(t, filepath.Join(out, "results.json"), &res)
		if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
			t.Error(err)
		}
		return res, clk.Now()
	}
	cut := func(t *testing.T, res characterize.Result, stage string) {
		t.Helper()
		if !res.Incomplete || !strings.Contains(res.Reason, "interrupted by SIGTERM") {
			t.Errorf("results.json: incomplete %v, reason %q; want it marked interrupted", res.Incomplete, res.Reason)
		}
		if s := res.Stage(stage); s == nil || s.Status == characterize.StatusDone || s.Status == characterize.StatusNotRun {
			t.Errorf("stage %s, cut by the signal: %+v; want partial or failed", stage, s)
		}
	}
	for _, st := range characterize.Stages {
		t.Run(st, func(t *testing.T) {
			res, _ := run(t, st, time.Second, 143)
			cut(t, res, st)
		})
	}
	t.Run("sensor,micro", func(t *testing.T) {
		// The signal comes when micro's progress shows its second kernel (the live line: piped,
		// progress names only a long list's first and last steps). The sensor stage runs
		// whole first: on the h100 twin (1.5-2 s of CPU) where the slow tests run (CI), else
		// on the v100 twin (fewer channels: 0.7 s; the k20's micro fails), the same stages
		// and the same checks.
		board := "sim:v100"
		if testkit.SlowOn() {
			board = "sim"
		}
		a, _, _, _, _ := signalApp(t, -1, 0)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		stderr := &signalOn{match: "micro: [ 2/", sig: syscall.SIGTERM, cancel: cancel}
		a.Stderr = stderr
		live := true
		a.Interactive = &live
		out := filepath.Join(t.TempDir(), "ch")
		if code := a.Main(ctx, []string{"characterize", "--device", board, "--quick", "--stages", "sensor,micro", "--out", out}); code != 143 {
			t.Errorf("exit %d, want 143: %s", code, &stderr.buf)
		}
		var res characterize.Result
		readJSON(t, filepath.Join(out, "results.json"), &res)
		if s := res.Stage("sensor"); s == nil || s.Status != characterize.StatusDone {
			t.Errorf("sensor, finished before the signal: %+v; want done", s)
		}
		cut(t, res, "micro")
		if res.Micro == nil || len(res.Micro.Rows) == 0 || res.Micro.Rows[0].EnergyPerLaunchJ <= 0 {
			t.Errorf("micro's first kernel, measured before the signal, was lost")
		}
	})
}

// signalOn is a stderr that ends the run's context with sig once a progress line holds
// match: a signal at a chosen step.
type signalOn struct {
	buf    bytes.Buffer
	match  string
	sig    syscall.Signal
	cancel context.CancelCauseFunc
}

func (s *signalOn) Write(p []byte) (int, error) {
	s.buf.Write(p)
	if strings.Contains(s.buf.String(), s.match) {
		s.cancel(Interrupted{s.sig})
	}
	return len(p), nil
}

// TestMeasureCommandExitCodes: a real command that exists but is not executable exits
// 126 (it gave 127, "not found"); a command killed by a signal is told as such ("killed
// by SIGKILL", summary.json "signal"), not as a bare exit 137.
func TestMeasureCommandExitCodes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _, stderr, ctx := testApp(t)
	a.Runner = nil
	if code := a.Main(ctx, []string{"measure", "--device", "sim", "--", script}); code != ExitNotExecutable || !strings.Contains(stderr.String(), "not executable") {
		t.Errorf("a file that is not executable: exit %d, stderr %q; want 126", code, stderr)
	}
	a, _, stderr, ctx = testApp(t)
	a.Runner = nil
	out := filepath.Join(dir, "killed")
	code := a.Main(ctx, []string{"measure", "--device", "sim", "--baseline", "100ms", "--tail", "100ms", "--out", out, "--", "sh", "-c", "kill -KILL $$"})
	if code != 137 || !strings.Contains(stderr.String(), "killed by SIGKILL, exit 137") {
		t.Errorf("a command killed by SIGKILL: exit %d, stderr %q; want 137 and the signal named", code, stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if sum.Signal != "SIGKILL" || sum.ExitCode != 137 || sum.Incomplete {
		t.Errorf("summary.json: signal %q, exit_code %d, incomplete %v; want SIGKILL, 137, complete", sum.Signal, sum.ExitCode, sum.Incomplete)
	}
}

// TestResumeOtherGPU: --resume into the directory of another GPU's run is bad input
// (exit 2), not a failure (it exited 1).
func TestResumeOtherGPU(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "ch")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	res := `{"format":"` + characterize.Format + `","device":"nvml","gpu":{"index":0,"name":"NVIDIA H200","uuid":"GPU-other"},"stages":[{"name":"sensor","status":"done"}]}`
	if err := os.WriteFile(filepath.Join(out, "results.json"), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _, stderr, ctx := testApp(t)
	code := a.Main(ctx, []string{"characterize", "--device", "sim", "--resume", "--out", out})
	if code != ExitUsage || !strings.Contains(stderr.String(), "--resume: those results are of nvml NVIDIA H200") {
		t.Errorf("exit %d, stderr %q; want 2 naming the other GPU", code, stderr)
	}
}

// TestSignalsEndMeasure sends real signals to a real gpuwatt measure (this test binary
// re-run as gpuwatt) of a real command: each ends it the same way, the command stopped
// (SIGHUP left it running under init), the files written and marked incomplete, exit
// 128+N (SIGTERM gave 130, SIGHUP killed gpuwatt with nothing written).
func TestSignalsEndMeasure(t *testing.T) {
	t.Parallel()
	if os.Getenv("GPUWATT_SIGNAL_HELPER") == "1" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv("GPUWATT_ARGS")), &args); err != nil {
			os.Exit(99)
		}
		// GPUWATT_SIGNAL_TIMES: write when the signal reached this process and when Main
		// returned (Unix ns), so that a test times gpuwatt's own ending, not how long a
		// loaded machine took to deliver the signal and reap the process.
		times := os.Getenv("GPUWATT_SIGNAL_TIMES")
		var got atomic.Int64
		if times != "" {
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			go func() { <-ch; got.Store(time.Now().UnixNano()) }()
		}
		ctx, stop := SignalContext(context.Background())
		code := Main(ctx, args, os.Stdout, os.Stderr)
		if times != "" {
			os.WriteFile(times, []byte(fmt.Sprintf("%d %d\n", got.Load(), time.Now().UnixNano())), 0o600)
		}
		stop()
		os.Exit(code)
	}
	if testing.Short() {
		t.Skip("real processes and signals")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(measure.SignalName(sig), func(t *testing.T) {
			dir := t.TempDir()
			out, pidFile := filepath.Join(dir, "run"), filepath.Join(dir, "pid")
			args, _ := json.Marshal([]string{"measure", "--device", "sim", "--baseline", "100ms", "--tail", "100ms", "--out", out, "--",
				"sh", "-c", "echo $$ > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; exec sleep 30"})
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsEndMeasure$")
			cmd.Env = append(os.Environ(), "GPUWATT_SIGNAL_HELPER=1", "GPUWATT_ARGS="+string(args))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var child int
			for range 1000 {
				if b, err := os.ReadFile(pidFile); err == nil {
					child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if child == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the command did not start in 10 s: %s", stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("gpuwatt did not end 20 s after %s: %s", measure.SignalName(sig), stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
				t.Errorf("exit %d, want %d: %s", code, 128+int(sig), stderr.String())
			}
			if err := syscall.Kill(child, 0); !errors.Is(err, syscall.ESRCH) {
				syscall.Kill(child, syscall.SIGKILL)
				t.Errorf("the measured command (pid %d) is still running after gpuwatt ended (kill 0: %v)", child, err)
			}
			var sum measure.Summary
			readJSON(t, filepath.Join(out, "summary.json"), &sum)
			if want := "interrupted by " + measure.SignalName(sig) + " while the command ran"; !sum.Incomplete || sum.Reason != want {
				t.Errorf("summary.json: incomplete %v, reason %q; want %q", sum.Incomplete, sum.Reason, want)
			}
		})
	}
}
