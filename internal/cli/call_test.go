package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/call"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// worker writes a shell script that speaks the call protocol (docs/call.md): body runs
// for each `call N` line.
func worker(t *testing.T, ready, reply string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "worker.sh")
	script := "#!/bin/sh\necho setting up\n" + ready + "\nwhile read -r cmd n; do\n  [ \"$cmd\" = call ] || continue\n  " + reply + "\ndone\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCallVerb: the protocol's path through the verb on the sim device (its virtual
// clock: the figures are not the point, the mechanics are): ready, call/done, the other
// lines passed to stderr, call.json with the calls made; bad input exits 2, a command
// whose call fails exits 1.
func TestCallVerb(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "out")
	w := worker(t, "echo ready", "echo done")
	if code := a.Main(ctx, []string{"call", "--device", "sim", "--calls", "8", "--quiet", "--out", out, "--json", "--", w}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Calls    int `json:"calls"`
		Warnings []struct {
			Code string `json:"code"`
		} `json:"warnings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Calls != 8 {
		t.Errorf("%d calls, want 8", res.Calls)
	}
	if !strings.Contains(stderr.String(), "setting up") {
		t.Errorf("the command's other line not passed on: %q (stdout %q)", stderr, stdout)
	}
	for _, f := range []string{"call.json", "trace.csv", "trace.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", []string{"call", "--device", "sim"}, ExitUsage, "no command"},
		{"bad target", []string{"call", "--device", "sim", "--target", "150%", "--", w}, ExitUsage, "--target"},
		{"never ready", []string{"call", "--device", "sim", "--ready-timeout", "300ms", "--", worker(t, "sleep 5", "echo done")}, ExitUsage, "ready"},
		{"not ready", []string{"call", "--device", "sim", "--", worker(t, "echo done", "echo done")}, ExitUsage, "want ready"},
		{"call fails", []string{"call", "--device", "sim", "--quiet", "--", worker(t, "echo ready", "echo error out of memory")}, ExitFailure, "out of memory"},
		{"bad reply", []string{"call", "--device", "sim", "--quiet", "--", worker(t, "echo ready", "echo done 1")}, ExitFailure, "want done or done T0 T1"},
	} {
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, c.args); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want %q)", c.name, code, c.code, stderr, c.want)
		}
	}
}

// TestPythonMeasureCall runs python/tests/test_call.py (gpuwatt.measure_call through
// `gpuwatt call --stdio` on the sim device) with python/ on PYTHONPATH; gpuwatt is this
// test binary behind a one-line wrapper, as in TestPythonPackage.
func TestPythonMeasureCall(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 20 s: python3 and the sim
	if testing.Short() {
		t.Skip("-short")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		skipOrFail(t, "python3 is not on PATH: measure_call is not tested here")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "gpuwatt")
	script := "#!/bin/sh\n" + recorderEnv + "=1 exec " + shellQuote(os.Args[0]) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join(root, "python", "tests", "test_call.py"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GPUWATT_BIN="+wrapper, "PYTHONPATH="+filepath.Join(root, "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python/tests/test_call.py: %v", err)
	}
}

// TestCallTextLeftOut: the text says how many repetitions were left out for a missing
// reading, and says nothing of it where none were.
func TestCallTextLeftOut(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 2} {
		var b strings.Builder
		if err := writeCallText(&b, &call.Result{Calls: 40, Batch: 1, LeftOut: n, Target: 0.01}); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(b.String(), "(2 left out: a reading missing in their window)")
		if has != (n == 2) || (n == 0 && strings.Contains(b.String(), "left out")) {
			t.Errorf("left out %d: %q", n, b.String())
		}
	}
}
