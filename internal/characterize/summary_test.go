package characterize

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
	"github.com/gpuwatt/gpuwatt/internal/termtext"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestAbsoluteWidensByGain: without a recorded absolute interval, each side of the relative
// interval is widened by the ±5 % gain part in quadrature (as the energy estimator makes its
// absolute interval); a recorded one is used as it is; no interval stays none.
func TestAbsoluteWidensByGain(t *testing.T) {
	t.Parallel()
	got, widened := absolute(100, [2]float64{97, 104}, [2]float64{})
	want := [2]float64{100 - math.Sqrt(3*3+5*5), 100 + math.Sqrt(4*4+5*5)}
	if !widened || math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 {
		t.Errorf("widened %v %v, want %v", got, widened, want)
	}
	if got, widened := absolute(100, [2]float64{97, 104}, [2]float64{90, 111}); widened || got != [2]float64{90, 111} {
		t.Errorf("recorded absolute interval: %v %v", got, widened)
	}
	if got, _ := absolute(100, [2]float64{}, [2]float64{}); got != [2]float64{} {
		t.Errorf("no interval became %v", got)
	}
	f := KeyFigure{Name: "x", Unit: "W", Value: 119.3, NoInterval: "a reading"}
	if s := f.Text(); s != "119.3 W (a reading)" {
		t.Errorf("a figure without an interval reads %q", s)
	}
}

// TestKeyFiguresHoldTheTruth runs the archline and load-level stages on a twin whose power
// sensors and energy counter read 3 % high and checks that each key figure's absolute
// interval holds the twin's true eps_flop, eps_mem, pi0 and active idle (the truth off the
// board's scale), where the relative interval, on the board's scale, need not; and that
// every key figure has the absolute interval its stage recorded (its *_abs_ci key), not
// one widened here: a stage that stops writing it fails this test.
func TestKeyFiguresHoldTheTruth(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range cfg.Sensors {
		if strings.HasPrefix(name, "energy") || strings.HasPrefix(name, "power") {
			s.Model.Gain = 1.03
			cfg.Sensors[name] = s
		}
	}
	sm := simtest.OpenConfig(t, cfg)
	t.Cleanup(func() { sm.Sys.Close() })
	r, err := characterise(context.Background(), Options{Clock: sm.Clock, System: sm.Sys, Device: sm.Sys.Devices()[0], Quick: true, Stages: []string{StageArchline, StageLoadlevel}})
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]float64{
		"Energy per flop, fp32":                   cfg.EpsFlopFP32.Joules() * 1e12,
		"Energy per flop, fp64":                   cfg.EpsFlopFP64.Joules() * 1e12,
		"Energy per byte of HBM":                  cfg.EpsMemPerByte.Joules() * 1e12,
		"pi0, constant power while a kernel runs": cfg.Pi0.Watts(),
		"Active idle power":                       cfg.ActiveIdle.Watts(),
	}
	seen, loadFigures := 0, 0
	for _, f := range r.KeyFigures() {
		if f.Widened || !f.HasInterval() {
			t.Errorf("%s: %s: no absolute interval recorded by its stage (widened %v)", f.Name, f.Text(), f.Widened)
		}
		if f.Name == "Active idle power" || f.Name == "Efficiency at full load" {
			loadFigures++
		}
		v, ok := truth[f.Name]
		if !ok {
			continue
		}
		seen++
		if !f.HasInterval() || !(f.Abs[0] <= v && v <= f.Abs[1]) {
			t.Errorf("%s: %s, absolute interval [%.4g, %.4g]; the twin's truth %.4g", f.Name, f.Text(), f.Abs[0], f.Abs[1], v)
		}
		if w := (f.Abs[1] - f.Abs[0]) / v; w > 0.25 {
			t.Errorf("%s: absolute interval %.1f %% wide", f.Name, 100*w)
		}
	}
	if loadFigures != 2 {
		t.Errorf("%d of the load levels' two key figures (active idle, full load): %+v", loadFigures, r.KeyFigures())
	}
	if seen != len(truth) {
		t.Errorf("%d of the %d key figures of the roofline: %+v", seen, len(truth), r.KeyFigures())
	}

	// The text summary characterize prints on stdout: each figure with its interval, the
	// verdict, within 120 columns.
	var b strings.Builder
	r.WriteSummary(&b, "ch/report.html")
	for _, f := range r.KeyFigures() {
		if !strings.Contains(b.String(), f.Text()) {
			t.Errorf("the summary lacks %q:\n%s", f.Text(), b.String())
		}
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if termtext.Len(l) > termtext.Width {
			t.Errorf("summary line of %d columns: %q", termtext.Len(l), l)
		}
	}
	if !strings.Contains(b.String(), "ch/report.html") || !strings.Contains(b.String(), r.Verdict()[0]) {
		t.Errorf("the summary names neither the page nor the verdict:\n%s", b.String())
	}
}

// TestCompareSummariesSideBySide: report DIR1 DIR2's first section is the two summaries in
// one table, a column per run: each key figure's row holds each run's value with its
// absolute interval, "not measured" where a run lacks it, and each run's verdict.
func TestCompareSummariesSideBySide(t *testing.T) {
	t.Parallel()
	run := func(gpu string, pi0, idle, tx float64, withLoad bool) *Result {
		abs := func(v, rel float64) [2]float64 { return [2]float64{v * (1 - rel), v * (1 + rel)} }
		r := &Result{Format: Format, GPU: trace.GPU{Name: gpu}, Stages: []StageInfo{{Name: StageArchline, Status: StatusDone}}}
		r.Archline = &archline.Result{Results: map[string]*archline.PrecisionResult{"fp32": {Precision: "fp32"}}, Pi0: &archline.JointFit{
			Pi0W: pi0, Pi0CI: abs(pi0, 0.02), Pi0AbsCI: abs(pi0, 0.06),
			EpsMemPJPerByte: 91, EpsMemCI: abs(91, 0.03), EpsMemAbsCI: abs(91, 0.07),
			EpsFlopPJ: map[string]float64{"fp32": 4}, EpsFlopCI: map[string][2]float64{"fp32": abs(4, 0.04)},
			EpsFlopAbsCI: map[string][2]float64{"fp32": abs(4, 0.08)}, Points: 23}}
		if withLoad {
			p := 690.0
			r.Loadlevel = &loadlevel.Result{Workload: "gemm", Valid: true, Levels: []loadlevel.Level{
				{TargetLoad: 1, TxPerS: tx * p, PowerW: p, TxPerJ: tx, PowerLowW: p - 4, PowerHighW: p + 4, PowerAbsCI: &[2]float64{p - 35, p + 35}},
				{ActiveIdle: true, PowerW: idle, PowerLowW: idle - 1, PowerHighW: idle + 1, PowerAbsCI: &[2]float64{idle - 6, idle + 6}}}}
			r.Stages = append(r.Stages, StageInfo{Name: StageLoadlevel, Status: StatusDone})
		}
		return r
	}
	a, b := run("NVIDIA H100", 141, 115, 3.5, true), run("NVIDIA H200", 155, 129.5, 3.9, false)
	p := Compare([]*Result{a, b}, []string{"runs/h100", "runs/h200"})
	if len(p.Sections) == 0 || p.Sections[0].Title != ComparisonTitle || p.Sections[0].Table == nil {
		t.Fatalf("the comparison page does not open with the summaries side by side: %+v", p.Sections)
	}
	tab := p.Sections[0].Table
	if len(tab.Header) != 3 {
		t.Fatalf("header %q: want the figure and one column per run", tab.Header)
	}
	rows := map[string][]string{}
	for _, row := range tab.Rows {
		rows[row[0]] = row
	}
	for i, r := range []*Result{a, b} {
		for _, f := range r.KeyFigures() {
			row := rows[f.Name+" ("+f.Unit+")"]
			if row == nil || row[1+i] != f.Text() {
				t.Errorf("run %d, %s: the row is %q, want %q in column %d", i+1, f.Name, row, f.Text(), 1+i)
			}
			if f.Widened || !f.HasInterval() {
				t.Errorf("run %d, %s: %s: not the recorded absolute interval", i+1, f.Name, f.Text())
			}
		}
		if !strings.Contains(p.Sections[0].Text, r.Verdict()[0]) || !strings.Contains(p.Sections[0].Text, r.GPU.Name) {
			t.Errorf("run %d's card and verdict are not in the comparison's text: %q", i+1, p.Sections[0].Text)
		}
	}
	if row := rows["Active idle power (W)"]; row == nil || row[2] != "not measured" {
		t.Errorf("a figure only the first run has: %q, want \"not measured\" for the second", row)
	}
	if n := len(a.KeyFigures()); n != 5 {
		t.Errorf("%d key figures in the first run, want 5: %+v", n, a.KeyFigures())
	}
}
