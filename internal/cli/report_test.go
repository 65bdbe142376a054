package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The end-to-end test of gpuwatt report (one DIR re-rendered, two side by side) is in
// TestCharacterizeSim, which makes the results it reads.

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.MkdirAll(garbage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbage, "results.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "results.json"), []byte(`{"format":"gpuwatt-micro/1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nothing")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no dir", []string{"report"}, "no directory"},
		{"missing dir", []string{"report", missing}, missing},
		{"no results", []string{"report", empty}, filepath.Join(empty, "results.json")},
		{"unreadable results", []string{"report", garbage}, "not valid JSON"},
		{"other results", []string{"report", other}, `format "gpuwatt-micro/1"`},
		{"two without out", []string{"report", garbage, other}, "--out FILE"},
		{"unknown flag", []string{"report", "--colour", dir}, "unknown flag -colour"},
		{"characterize unknown flag", []string{"characterize", "--slow"}, "unknown flag -slow"},
		{"characterize argument", []string{"characterize", "--device", "sim", "extra"}, `unexpected argument "extra"`},
		{"characterize bad gpu", []string{"characterize", "--device", "sim", "--gpu", "7", "--out", filepath.Join(dir, "o")}, "--gpu 7: no such GPU"},
		{"characterize bad device", []string{"characterize", "--device", "tpu", "--out", filepath.Join(dir, "o")}, `--device "tpu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, stderr, ctx := testApp(t)
			if code := a.Main(ctx, tc.args); code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}
