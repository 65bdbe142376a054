package marks

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

// repoFile is a file of the repository, from this package's directory.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// runHelper runs argv with GPUWATT_MARKS set (or not, path ""), and returns the markers it
// wrote, parsed with their own times mapped onto a real clock's axis, and the span of that
// axis the run took.
func runHelper(t *testing.T, path string, env []string, argv ...string) ([]Event, time.Duration, time.Duration) {
	t.Helper()
	clk := clock.NewReal()
	toAxis := Origin(clk)
	if toAxis == nil {
		t.Skipf("CLOCK_MONOTONIC is not read on %s: the writers' times cannot be mapped", runtime.GOOS)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if path != "" {
		cmd.Env = append(cmd.Env, EnvVar+"="+path)
	}
	t0 := clk.Now()
	out, err := cmd.CombinedOutput()
	t1 := clk.Now()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	if path == "" {
		return nil, t0, t1
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []Line
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		lines = append(lines, Line{No: i + 1, Text: l, Arrived: t1})
	}
	evs, ws := ParseLines(lines, toAxis)
	if len(ws) > 0 {
		t.Errorf("the helper's lines gave warnings: %v\n%s", ws, b)
	}
	return evs, t0, t1
}

// checkHelperMarks: the markers a helper wrote pair into the regions it meant (nested and
// repeated), every one stamped by the writer at a time inside the run on gpuwatt's axis.
func checkHelperMarks(t *testing.T, evs []Event, t0, t1 time.Duration, want string) {
	t.Helper()
	for _, e := range evs {
		if !e.Stamped || e.T < t0 || e.T > t1 {
			t.Errorf("%s: stamped %v at %v, want the writer's own time within the run [%v, %v]", e.Where(), e.Stamped, e.T, t0, t1)
		}
	}
	spans, ws := Pair(evs)
	if len(ws) > 0 {
		t.Errorf("pairing: %v", ws)
	}
	var got []string
	for _, s := range spans {
		got = append(got, strings.Repeat(">", s.Depth)+s.Name)
		if s.End < s.Start {
			t.Errorf("%s ends before it begins", s.Name)
		}
	}
	if g := strings.Join(got, " "); g != want {
		t.Errorf("regions %q, want %q", g, want)
	}
}

// TestPythonHelper runs python/gpuwatt/markers.py (import gpuwatt, python/ on PYTHONPATH): region() and begin/end, nested and repeated,
// the sync callable called before every marker, an end written when the block raises,
// a bad name refused, and nothing written without GPUWATT_MARKS.
func TestPythonHelper(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python helper is not tested here")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "use.py")
	os.WriteFile(script, []byte(`
import os, sys, time, gpuwatt
calls = []
gpuwatt.set_sync(lambda: calls.append(1))
with gpuwatt.region("train"):
    for i in range(2):
        with gpuwatt.region("step"):
            time.sleep(0.002)
gpuwatt.begin("eval", sync=lambda: calls.append(2))
gpuwatt.end("eval")
try:
    with gpuwatt.region("boom"):
        raise RuntimeError("x")
except RuntimeError:
    pass
for bad in ("two words", "", "tab\tname", "new\nline"):
    try:
        gpuwatt.begin(bad)
        sys.exit("accepted %r" % bad)
    except ValueError:
        pass
want = 10 if gpuwatt.enabled() else 0
if len(calls) != want or (want and calls.count(2) != 1):
    sys.exit("sync calls %r, want %d" % (calls, want))
`), 0o644)
	env := []string{"PYTHONPATH=" + filepath.Dir(filepath.Dir(repoFile(t, "python/gpuwatt/markers.py")))}
	path := filepath.Join(dir, "marks.txt")
	evs, t0, t1 := runHelper(t, path, env, py, script)
	checkHelperMarks(t, evs, t0, t1, "train >step >step eval boom")

	// Unset: a no-op that writes nothing anywhere (and calls no sync).
	runHelper(t, "", append(env, EnvVar+"="), py, script)
}

// TestCHelper compiles c/gpuwatt_marks.h into a program (strict C99, every warning an
// error) and runs it as TestPythonHelper runs the Python one.
func TestCHelper(t *testing.T) {
	t.Parallel()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("GPUWATT_REQUIRE_CC") != "" {
			t.Fatal("gcc is not on PATH, and GPUWATT_REQUIRE_CC is set")
		}
		t.Skip("gcc is not on PATH: the C helper is not tested here")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "use.c")
	os.WriteFile(src, []byte(`#include "gpuwatt_marks.h"
static int syncs;
static void count(void) { syncs++; }
int main(void) {
    int i, want;
    gpuwatt_set_sync(count);
    if (gpuwatt_begin("train")) return 1;
    for (i = 0; i < 2; i++) {
        if (gpuwatt_begin("step") || gpuwatt_end("step")) return 2;
    }
    if (gpuwatt_end("train")) return 3;
    if (gpuwatt_begin("two words") != -1 || gpuwatt_begin("") != -1) return 4;
    want = gpuwatt_enabled() ? 6 : 0;
    return syncs == want ? 0 : 5;
}
`), 0o644)
	bin := filepath.Join(dir, "use")
	if out, err := exec.Command(gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", filepath.Dir(repoFile(t, "c/gpuwatt_marks.h")), "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "marks.txt")
	evs, t0, t1 := runHelper(t, path, nil, bin)
	checkHelperMarks(t, evs, t0, t1, "train >step >step")
	runHelper(t, "", []string{EnvVar + "="}, bin)
}
