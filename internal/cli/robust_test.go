package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/characterize"
)

// The flag cases of issue 20 ("nothing silently wrong"): each was accepted, or did
// something else than asked, before.

// TestFlagsRefused: a value that was silently replaced by a default (a negative duration
// or count), a poll interval the Sampler cannot keep (it spun at 100 % CPU, deaf to
// Ctrl-C) and a boxcar with period=0s are refused with exit 2 and one line naming them.
func TestFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--device", "sim", "--window", "-5ms"}, "--window -5ms: must not be negative"},
		{[]string{"profile", "--device", "sim", "--tau", "-1ms"}, "--tau -1ms: must not be negative"},
		{[]string{"profile", "--device", "sim", "--delay", "-2ms"}, "--delay -2ms: must not be negative"},
		{[]string{"micro", "--device", "sim", "--min-updates", "-3"}, "--min-updates -3: must not be negative"},
		{[]string{"micro", "--device", "sim", "--warmup", "-1s"}, "--warmup -1s: must not be negative"},
		{[]string{"archline", "--device", "sim", "--warmup", "-1s"}, "--warmup -1s: must not be negative"},
		{[]string{"loadlevel", "--device", "sim", "--warmup", "-1s"}, "--warmup -1s: must not be negative"},
		{[]string{"measure", "--device", "sim", "--poll", "1ns", "--", "fake", "1s"}, "--poll 1ns: shorter than the 100µs"},
		{[]string{"measure", "--device", "sim", "--poll", "1us", "--", "fake", "1s"}, "--poll 1µs: shorter than"},
		{[]string{"micro", "--device", "sim", "--poll", "1us"}, "--poll 1µs: shorter than"},
		{[]string{"archline", "--device", "sim", "--poll", "1ns"}, "--poll 1ns: shorter than"},
		{[]string{"profile", "--device", "sim", "--poll", "1ns"}, "--poll 1ns: shorter than"},
		{[]string{"profile", "--device", "sim", "--sensor-profile", "boxcar:window=25ms,period=0s"}, "period=0s: want > 0"},
		{[]string{"measure", "--device", "sim", "--gpu", "0,0", "--", "fake", "1s"}, "GPU 0 is named twice"},
		{[]string{"micro", "--device", "sim", "--gpu", "-1"}, "--gpu -1: must not be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			a, stdout, stderr, ctx := testApp(t)
			if code := a.Main(ctx, tc.args); code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", msg, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q", stdout)
			}
		})
	}
}

// TestOutNotLeftEmpty: an error found after the flags are read (a GPU that is not there)
// left an empty --out directory behind; --out is now created only to write into it.
func TestOutNotLeftEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"measure", "--device", "sim", "--gpu", "3", "--", "fake", "1s"},
		{"micro", "--device", "sim", "--gpu", "3", "--only", "int32.add"},
		{"characterize", "--device", "sim", "--gpu", "7"},
		{"sensor", "--device", "sim", "--gpu", "7", "--quick"},
		{"loadlevel", "--device", "sim", "--gpu", "7"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out := filepath.Join(dir, args[0], "out")
			a, _, stderr, ctx := testApp(t)
			if code := a.Main(ctx, append(args, "--out", out)); code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, args[0])); !os.IsNotExist(err) {
				t.Errorf("--out %s (or its parent) was created by a run that wrote nothing (stat: %v)", out, err)
			}
		})
	}
}

// TestOutNotEmptyNeedsForce: a second run into the same --out overwrote the first without
// a word; now it is refused (exit 2, naming --force) unless --force is given.
func TestOutNotEmptyNeedsForce(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"measure", "--device", "sim", "--baseline", "100ms", "--tail", "100ms", "--out", out, "--", "fake", "200ms"}
	a, _, stderr, ctx := testApp(t)
	if code := a.Main(ctx, args); code != ExitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, _, stderr, ctx = testApp(t)
	code := a.Main(ctx, args)
	if code != ExitUsage || !strings.Contains(stderr.String(), "--out "+out+": the directory is not empty") || !strings.Contains(stderr.String(), "--force") {
		t.Fatalf("second run into the same --out: exit %d, stderr %q; want 2 and a message naming --force", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "summary.json")); string(after) != string(before) {
		t.Error("the refused run changed summary.json")
	}
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, append([]string{"measure", "--force"}, args[1:]...)); code != ExitOK {
		t.Fatalf("with --force: exit %d: %s", code, stderr)
	}
}

// TestFlagsAfterArguments: `report DIR --out F` read --out and F as two more directories.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res := `{"format":"` + characterize.Format + `","gpu":{"name":"sim"}}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "page.html")
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"report", dir, "--out", page}); code != ExitOK {
		t.Fatalf("report DIR --out F: exit %d: %s", code, stderr)
	}
	if st, err := os.Stat(page); err != nil || st.Size() == 0 {
		t.Fatalf("report DIR --out F did not write F: %v", err)
	}
	if !strings.Contains(stdout.String(), "wrote "+page) {
		t.Errorf("stdout %q", stdout)
	}
	// After "--" everything is an argument.
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, []string{"report", "--", dir, "--out"}); code != ExitUsage || !strings.Contains(stderr.String(), "--out") {
		t.Errorf("report -- DIR --out: exit %d, stderr %q; want 2 and --out read as a directory", code, stderr)
	}
}
