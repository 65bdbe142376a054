package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/region"
)

// The end-to-end test of gpuwatt report (one DIR re-rendered, two side by side) is in
// TestCharacterizeSim, which makes the results it reads.

func TestReportBadInput(t *testing.T) {
	t.Parallel()
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

// TestReportOldResults: a results.json written before warnings had codes (the H200 quick
// datasheet, its warnings plain strings) still loads; its kernels' repeated channel
// disagreements get their codes (region.Legacy) and the page tells each once per section.
func TestReportOldResults(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-21-characterize-quick", "quick")
	r, err := loadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 12 || r.Warnings[0].Code != "" || !strings.HasPrefix(r.Warnings[0].Message, "sensor: power.instant: sees about 33 %") {
		t.Fatalf("%d warnings, first %+v", len(r.Warnings), r.Warnings[0])
	}
	coded := 0
	for _, x := range r.Micro.Rows {
		for _, w := range x.Warnings {
			if w.Code == region.CodeChannelDisagreement {
				coded++
			}
		}
	}
	if coded != 18 {
		t.Errorf("%d of the micro rows' 18 disagreements have their code", coded)
	}
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "q.html")
	if code := a.Main(ctx, []string{"report", "--out", out, dir}); code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	_, _, text := htmlOutline(t, out)
	// 9 of 39 kernels disagree (8 of them in the instruction section): one line per section
	// and channel, none per kernel.
	if n := strings.Count(text, "power.usage and power.samples (calibrated to energy.total) disagree by more than 5 %: "); n != 1 {
		t.Errorf("the power.usage disagreement is told %d times in the micro sections, want 1", n)
	}
	if strings.Contains(text, "int32.popc: power.usage") {
		t.Error("a kernel's own disagreement line is on the page")
	}
}
