package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// TestMeasureHost: measure on a twin in a two-socket host gives each CPU package's and
// DRAM's energy over the command with the truth inside its interval (the packages draw
// 60 + 90 W while the command runs, the DRAM 8 W), and the node's total where every GPU
// was recorded; with one GPU of two, no node total, and the text says why.
func TestMeasureHost(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sim.json")
	os.WriteFile(cfg, []byte(`{"preset": "h100", "gpus": 2, "host": {"sockets": 2, "package_idle_w": 60, "package_busy_w": 90, "dram_w": 8}}`), 0o644)
	for _, gpus := range []string{"all", "0"} {
		a, _, stderr, ctx := testApp(t)
		out := filepath.Join(t.TempDir(), "run")
		if code := a.Main(ctx, []string{"measure", "--device", "sim", "--sim-config", cfg, "--gpu", gpus, "--baseline", "2s", "--out", out, "--", "fake", "5s"}); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var sum measure.Summary
		readJSON(t, filepath.Join(out, "summary.json"), &sum)
		h := sum.Host
		if h == nil || h.Unavailable != "" || len(h.Domains) != 4 {
			t.Fatalf("--gpu %s: host %+v", gpus, h)
		}
		for _, d := range h.Domains {
			w := 8.0
			if d.Kind == "package" {
				w = 150
			}
			truth := w * sum.DurationS
			if !d.OK() || truth < d.LowJ || truth > d.HighJ || !d.Partial {
				t.Errorf("%s: %.3f J [%.3f, %.3f], truth %.3f J", d.Name, d.EnergyJ, d.LowJ, d.HighJ, truth)
			}
		}
		text := stderr.String()
		if !strings.Contains(text, "Host (RAPL)") || !strings.Contains(text, "cpu.package.1") {
			t.Errorf("the text has no host section:\n%s", text)
		}
		if gpus == "all" {
			sumJ := sum.Total.EnergyJ
			for _, d := range h.Domains {
				sumJ += d.EnergyJ
			}
			if h.Node == nil || (h.Node.EnergyJ-sumJ) > 1e-6*sumJ || (sumJ-h.Node.EnergyJ) > 1e-6*sumJ {
				t.Errorf("node %+v, want %.3f J", h.Node, sumJ)
			}
		} else if h.Node != nil || !strings.Contains(text, "no node total") || !strings.Contains(h.NodeMissing, "not every GPU") {
			t.Errorf("one GPU of two: node %+v, missing %q", h.Node, h.NodeMissing)
		}
	}
}
