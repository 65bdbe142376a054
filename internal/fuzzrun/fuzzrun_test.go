package fuzzrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

func monitorOf(log string) *Monitor {
	m := &Monitor{}
	for _, l := range strings.Split(log, "\n") {
		m.Line(l)
	}
	return m
}

// TestPassWhileMinimisingIsNotAPass: the log of `go test -fuzz FuzzResultsJSON -fuzztime
// 60s` (recorded here, 2026-11-28, GODEBUG=fuzzdebug=1) says PASS, exit 0, after 54
// executions, every one of them minimising a seed; two minimisations were cut by the stop.
// The monitor refuses it.
func TestPassWhileMinimisingIsNotAPass(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pass_while_minimising.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nPASS\n") {
		t.Fatal("the recorded log does not say PASS")
	}
	m := monitorOf(string(b))
	err = m.Verdict(0)
	if err == nil || !strings.Contains(err.Error(), "ended while 6 inputs were being minimised") {
		t.Errorf("verdict %v, want: ended while 6 inputs were being minimised", err)
	}
	if m.Execs != 54 || !m.Fuzzing {
		t.Errorf("execs %d, fuzzing %v", m.Execs, m.Fuzzing)
	}
}

// TestVerdicts: what the monitor makes of each kind of ending.
func TestVerdicts(t *testing.T) {
	const start = "fuzz: elapsed: 0s, gathering baseline coverage: 2/2 completed, now fuzzing with 2 workers\n"
	for _, tc := range []struct {
		name, log string
		exit      int
		want      string // "" : a pass
	}{
		{"clean", start + "fuzz: elapsed: 3s, execs: 4000 (1333/sec), new interesting: 1 (total: 3)\n" +
			"2026 DEBUG queueing input for minimization, id: ab12, parent: seed#0, keepCoverage: true, crasher: false\n" +
			"2026 DEBUG input minimized, id: cd34, original id: ab12, crasher: false, originally crasher: false, minimizing took: 1s\n" +
			"2026 DEBUG stop called at internal/fuzz/fuzz.go:228. stopping: false\nPASS\n", 0, ""},
		{"cut at the stop", start + "fuzz: elapsed: 3s, execs: 4000 (1333/sec), new interesting: 1 (total: 3)\n" +
			"2026 DEBUG queueing input for minimization, id: ab12, parent: seed#0, keepCoverage: true, crasher: false\n" +
			"2026 DEBUG stop called at internal/fuzz/fuzz.go:228. stopping: false\n" +
			"2026 DEBUG input minimized, id: ab12, original id: ab12, crasher: false, originally crasher: false, minimizing took: 0s\nPASS\n", 0,
			"ended while 1 inputs were being minimised"},
		{"crash dropped", start + "fuzz: elapsed: 3s, execs: 4000 (1333/sec), new interesting: 1 (total: 3)\n" +
			"2026 DEBUG queueing input for minimization, id: ab12, parent: seed#0, keepCoverage: true, crasher: false\n" +
			"2026 DEBUG stop called at internal/fuzz/fuzz.go:228. stopping: false\n" +
			"2026 DEBUG input minimized, id: ef56, original id: ab12, crasher: true, originally crasher: false, minimizing took: 2s\nPASS\n", 0,
			"found a failing input"},
		{"failing input", start + "fuzz: minimizing 76-byte failing input file\nfuzz: elapsed: 3s, minimizing\n--- FAIL: FuzzX (5.24s)\n" +
			"    Failing input written to testdata/fuzz/FuzzX/2e2ab5321f31c0d1\nFAIL\n", 1, "testdata/fuzz/FuzzX/2e2ab5321f31c0d1"},
		{"no target", "testing: warning: no fuzz tests to fuzz\nPASS\n", 0, "no fuzz target matched"},
		{"never fuzzed", "fuzz: elapsed: 0s, gathering baseline coverage: 0/2 completed\nPASS\n", 0, "never began fuzzing"},
		{"no executions", start + "PASS\n", 0, "no input was fuzzed"},
		{"exit without failing input", start + "fuzz: elapsed: 3s, execs: 10 (3/sec)\nsignal: killed\n", 137, "exit 137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := monitorOf(tc.log).Verdict(tc.exit)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("not a pass: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("verdict %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTargetsFound: every fuzz function of the module is found, none listed by hand.
func TestTargetsFound(t *testing.T) {
	ts, err := Targets(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, x := range ts {
		have[x.String()] = true
	}
	for _, want := range []string{"./internal/characterize FuzzResultsJSON", "./internal/energy FuzzPipeline", "./internal/trace FuzzReadSMI", "./internal/marks FuzzParseLines"} {
		if !have[want] {
			t.Errorf("%s not found among %v", want, ts)
		}
	}
	for x := range have {
		if strings.Contains(x, "testdata") {
			t.Errorf("%s: a testdata target", x)
		}
	}
}

// TestRunStopsWhenQuiet: Run on a small target fuzzes it, stops it with SIGINT once
// nothing is minimised, and calls that a pass; the same target with a failing input is a
// failure naming the input.
func TestRunStopsWhenQuiet(t *testing.T) {
	testkit.Slow(t)
	root := filepath.Join("..", "..")
	dir := filepath.Join("internal", "fuzzrun", "testdata", "toy")
	bin := filepath.Join(t.TempDir(), "toy.test")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := Build(ctx, root, dir, bin); err != nil {
		t.Fatal(err)
	}
	o := Options{Fuzz: 3 * time.Second, Grace: 30 * time.Second, Minimise: time.Second, CacheDir: t.TempDir()}
	var log bytes.Buffer
	o.Log = &log
	r := Run(ctx, root, Target{Dir: dir, Name: "FuzzToy"}, bin, o)
	if r.Err != nil || r.Execs == 0 {
		t.Errorf("FuzzToy: %v, %d executions, %s:\n%s", r.Err, r.Execs, r.Elapsed, log.String())
	}
	if r.Elapsed > o.Fuzz+o.Grace+10*time.Second {
		t.Errorf("took %s", r.Elapsed)
	}
	// FuzzToyFails fails on any input starting "x"; its failing input is written under
	// the test's own copy of the package (testdata is read-only in CI's eyes: copy it).
	work := filepath.Join(t.TempDir(), "toy")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	r = Run(ctx, filepath.Dir(work), Target{Dir: "toy", Name: "FuzzToyFails"}, bin, o)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "failing input written to testdata/fuzz/FuzzToyFails/") {
		t.Errorf("FuzzToyFails: %v:\n%s", r.Err, log.String())
	}
}

// TestFuzzTargets fuzzes every target of the module for GPUWATT_FUZZ_TIME (seconds; .ci/run
// sets it), each stopped only when nothing is being minimised: a pass is a real one.
func TestFuzzTargets(t *testing.T) {
	secs, _ := strconv.ParseFloat(os.Getenv("GPUWATT_FUZZ_TIME"), 64)
	if secs <= 0 {
		t.Skip("runs with GPUWATT_FUZZ_TIME=SECONDS (.ci/run sets it)")
	}
	root := filepath.Join("..", "..")
	ts, err := Targets(root)
	if err != nil {
		t.Fatal(err)
	}
	fuzz := time.Duration(secs * float64(time.Second))
	o := Options{Fuzz: fuzz, Grace: 2*fuzz + 30*time.Second, Minimise: max(fuzz/4, time.Second), CacheDir: t.TempDir()}
	bins := map[string]string{}
	binDir := t.TempDir()
	for _, x := range ts {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+o.Fuzz+o.Grace)
		bin, ok := bins[x.Dir]
		if !ok {
			bin = filepath.Join(binDir, strings.ReplaceAll(x.Dir, string(filepath.Separator), "_")+".test")
			if err := Build(ctx, root, x.Dir, bin); err != nil {
				t.Fatal(err)
			}
			bins[x.Dir] = bin
		}
		var log bytes.Buffer
		o.Log = &log
		r := Run(ctx, root, x, bin, o)
		cancel()
		if r.Err != nil {
			t.Errorf("%s: %v\n%s", x, r.Err, tail(log.String(), 40))
			continue
		}
		t.Logf("%s: pass, %d executions in %s", x, r.Execs, r.Elapsed.Round(100*time.Millisecond))
	}
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}
