package cli

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// TestMeasureHost: measure on a twin in a two-socket host gives each CPU package's and
// DRAM's energy over the command with the truth inside its interval (the packages draw
// 60 + 90 W while the command runs, the DRAM 8 W), and the node's total where every GPU
// was recorded; with one GPU of two, no node total, and the text says why.
func TestMeasureHost(t *testing.T) {
	t.Parallel()
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

// testMeasureRegionsHost: a command's marked regions (stamped on arrival) on a twin in a
// host with RAPL counters: each region gives the CPU packages' and DRAM's energy with an
// interval that holds every truth the markers allow (the twin's domains draw a steady
// 150 W and 12 W while the command runs; an edge stamped on arrival may be up to
// marks.ArrivalPoll late), and the node's total (one GPU of one: all recorded) as the sum
// of its parts; the text and report.html show them as rows cpu, dram and node.
func testMeasureRegionsHost(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sim.json")
	os.WriteFile(cfg, []byte(`{"preset": "h100", "host": {"package_idle_w": 60, "package_busy_w": 90, "dram_w": 8, "dram_busy_w": 4}}`), 0o644)
	out := filepath.Join(dir, "run")
	sum, _ := measureSh(t, `for r in a b; do echo begin $r >> "$GPUWATT_MARKS"; sleep 0.3; echo end $r >> "$GPUWATT_MARKS"; done`, "--sim-config", cfg, "--out", out)
	if len(sum.Regions) != 2 {
		t.Fatalf("regions %+v", sum.Regions)
	}
	for _, r := range sum.Regions {
		h := r.Host
		if h == nil || len(h.Domains) != 2 {
			t.Fatalf("region %s (%.3f s, timing %s, GPUs %+v): host %+v", r.Name, r.DurationS, r.Timing, r.GPUs, h)
		}
		a := marks.ArrivalPoll.Seconds()
		parts := 0.0
		for _, g := range r.GPUs {
			parts += g.EnergyJ
		}
		for _, d := range h.Domains {
			p := 12.0
			if d.Kind == "package" {
				p = 150
			}
			lo, hi := p*(r.DurationS-a), p*(r.DurationS+a)
			t.Logf("%s %s: %.3f J [%.3f, %.3f]; truths allowed %.3f-%.3f J", r.Name, d.Name, d.EnergyJ, d.LowJ, d.HighJ, lo, hi)
			if !d.OK() || d.LowJ > lo || d.HighJ < hi || r.Timing != "arrival" {
				t.Errorf("%s %s (%s timing): [%.3f, %.3f] J does not hold every truth %.3f-%.3f J", r.Name, d.Name, r.Timing, d.LowJ, d.HighJ, lo, hi)
			}
			parts += d.EnergyJ
		}
		if n := h.Node; n == nil || math.Abs(n.EnergyJ-parts) > 1e-9*parts {
			t.Errorf("%s: node %+v (%s), want the parts' %.3f J", r.Name, n, h.NodeMissing, parts)
		}
	}
	var b strings.Builder
	if err := measure.WriteText(&b, sum); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{`a #1 +cpu +[0-9.]+ s +[0-9]+ ms +[0-9.]+ J ± `, `b #1 +node `, `a #1 +dram `, `cpu: every CPU package`} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "<td>node</td>") && !strings.Contains(string(page), ">node<") {
		t.Errorf("report.html has no node row (%v)", err)
	}
}

// TestRecordSocketBadInput: record --socket refuses --out (each program's recording would
// overwrite the last) and a path that is not a socket, with exit 2 and one line, leaving
// the path as it was. (Serving on the socket: python/tests/test_monitor.py
// test_connect_to_a_running_recorder, run by TestPythonPackage.)
func TestRecordSocketBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--device", "sim", "--socket", filepath.Join(dir, "s"), "--out", filepath.Join(dir, "o")}, "--out with --socket"},
		{[]string{"record", "--device", "sim", "--socket", file}, "exists and is not a socket"},
	} {
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, tc.args); code != ExitUsage || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("the file was changed: %q %v", b, err)
	}
}
