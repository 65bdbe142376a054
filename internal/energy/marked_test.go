package energy_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit/markersrun"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// recordSim records sim:h200 on a virtual clock with loads (start, end, watts) and the
// baseline before cmdStart, as measure's trace has it.
func recordSim(t *testing.T, span time.Duration, cmdStart float64, loads [][3]float64) (*trace.Trace, simtest.Sim) {
	t.Helper()
	s := simtest.Open(t, "h200")
	for _, l := range loads {
		s.Dev.AddLoad(sec(l[0]), sec(l[1]), l2p(l[2]))
	}
	tr := s.Record(t, nil, sensor.Options{}, span)
	tr.Meta.Marks = []trace.Mark{{T: cmdStart, Name: "cmd.start"}}
	return tr, s
}

// TestRegionEnergiesHoldTruth: on the twin, each region's energy (nested, repeated, of
// 0.15 to 1.5 s) lies within its stated interval of the true energy, and a region whose
// end was written while its work still ran is flagged, where the synchronised ones are not.
func TestRegionEnergiesHoldTruth(t *testing.T) {
	t.Parallel()
	loads := [][3]float64{
		{2.0, 3.5, 520},  // train (synchronised end)
		{2.3, 2.6, 640},  // its step #1 (the highest load wins)
		{2.9, 3.05, 640}, // its step #2, 150 ms
		{4.5, 6.5, 600},  // async: the work runs to 6.5 s, its end marker came at 5.0
		{7.5, 8.0, 450},  // after: a short synchronised region
	}
	tr, s := recordSim(t, 10*time.Second, 1.5, loads)
	evs := []marks.Event{
		{Begin: true, Name: "train", T: sec(2.0), Line: 1, Stamped: true}, {Begin: true, Name: "step", T: sec(2.3), Line: 2, Stamped: true}, {Begin: false, Name: "step", T: sec(2.6), Line: 3, Stamped: true},
		{Begin: true, Name: "step", T: sec(2.9), Line: 4, Stamped: true}, {Begin: false, Name: "step", T: sec(3.05), Line: 5, Stamped: true}, {Begin: false, Name: "train", T: sec(3.5), Line: 6, Stamped: true},
		{Begin: true, Name: "async", T: sec(4.5), Line: 7, Stamped: true}, {Begin: false, Name: "async", T: sec(5.0), Line: 8, Stamped: true},
		{Begin: true, Name: "tail", T: sec(7.5), Line: 9, Stamped: true}, {Begin: false, Name: "tail", T: sec(8.0), Line: 10, Stamped: true},
	}
	spans, ws := marks.Pair(evs)
	if len(ws) != 0 {
		t.Fatal(ws)
	}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{SyncCheck: true})
	if len(regs) != 5 {
		t.Fatalf("%d regions", len(regs))
	}
	for i, r := range regs {
		g := r.GPUs[0]
		truth := s.Dev.TrueEnergy(spans[i].Start, spans[i].End).Joules()
		onScale := onBoardScale(s, g, truth, spans[i].End-spans[i].Start)
		flagged := false
		for _, w := range g.Warnings {
			flagged = flagged || w.Code == marks.CodeUnsynced
		}
		t.Logf("%s #%d %.2f-%.2f s: %.2f J [%.2f, %.2f] (%s), truth %.2f J (%.2f on the board's scale), unsynced %v", r.Name, r.Instance, r.StartS, r.EndS, g.EnergyJ, g.LowJ, g.HighJ, g.Method, truth, onScale, flagged)
		if g.NoFigure || onScale < g.LowJ || onScale > g.HighJ {
			t.Errorf("%s #%d: the truth on the board's scale %.2f J lies outside [%.2f, %.2f]", r.Name, r.Instance, onScale, g.LowJ, g.HighJ)
		}
		if r.Name != "async" && (truth < g.AbsoluteLowJ || truth > g.AbsoluteHighJ) {
			t.Errorf("%s #%d: the truth %.2f J lies outside the absolute interval [%.2f, %.2f]", r.Name, r.Instance, truth, g.AbsoluteLowJ, g.AbsoluteHighJ)
		}
		if hw := (g.HighJ - g.LowJ) / 2; hw > 0.1*truth {
			t.Errorf("%s #%d: half-width %.2f J is over 10 %% of %.2f J", r.Name, r.Instance, hw, truth)
		}
		if want := r.Name == "async"; flagged != want {
			t.Errorf("%s: flagged unsynchronised %v, want %v: %v", r.Name, flagged, want, g.Warnings)
		}
	}
	if p := regs[1].Parent; p == nil || *p != 0 || regs[1].Depth != 1 || regs[2].Instance != 2 {
		t.Errorf("nesting: %+v", regs[1])
	}
}

func l2p(w float64) units.Power { return units.Power(w) }

// onBoardScale is the true energy as the figure's source sees it: the counter's gain for
// the counter and the calibrated ring (on the counter's scale), the channel's own gain and
// offset for an inversion. The relative interval leaves the board's gain error out, as it
// says; the absolute interval holds the truth itself.
func onBoardScale(s simtest.Sim, g energy.GPUFigure, truth float64, d time.Duration) float64 {
	if g.Method == "counter" || g.Method == "calibrated_ring" {
		c, _ := s.Dev.Model(trace.ChEnergyTotal)
		return c.Gain * truth
	}
	m, _ := s.Dev.Model(g.Channel)
	gain := m.Gain
	if gain == 0 {
		gain = 1
	}
	return gain*truth + float64(m.Offset)*d.Seconds()
}

// TestShortRegionNamesItsReadings: a region too short for the calibrated ring's figure
// is told how many readings it has, not "no calibration" (a calibration there is).
func TestShortRegionNamesItsReadings(t *testing.T) {
	t.Parallel()
	tr, _ := recordSim(t, 4*time.Second, 1, [][3]float64{{2, 2.03, 500}})
	regs := energy.Marked(tr, []marks.Span{{Name: "s", Instance: 1, Parent: -1, Start: sec(2), End: sec(2.03)}}, energy.MarkedOptions{})
	found := false
	for _, w := range regs[0].GPUs[0].Warnings {
		if w.Code == "uncalibrated_channel" {
			found = true
			if strings.Contains(w.Message, "no calibration") || !strings.Contains(w.Message, "its calibrated figure wants 10") {
				t.Errorf("%s", w.Message)
			}
		}
	}
	if !found {
		t.Errorf("no uncalibrated_channel warning: %v", regs[0].GPUs[0].Warnings)
	}
}

// TestH200MarkersRun re-analyses the H200 run of a PyTorch training loop, a region per
// step (docs/markers.md, the run's README): synchronised at every marker, no region is
// flagged, each step size's energies repeat within 3 % (CV), a step's energy grows with
// its work (4096 over 1024 and 16384 over 4096: 4x the flops, 3.7-4.3x the energy), and the
// steps together are the train region that holds them within 1 %; without the
// synchronise, the warm-up's and the training loop's ends are flagged (the loop's work ran
// 4.2 s past its end marker) and no step is.
func TestH200MarkersRun(t *testing.T) {
	t.Parallel()
	tr, evs := markersrun.Load(t, "sync")
	spans, ws := marks.Pair(evs)
	if len(ws) > 0 || len(spans) != 26 {
		t.Fatalf("%d regions, warnings %v", len(spans), ws)
	}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{SyncCheck: true})
	by := map[string][]float64{}
	steps, train := 0.0, 0.0
	for _, r := range regs {
		g := r.GPUs[0]
		if g.NoFigure {
			t.Fatalf("%s #%d: no figure", r.Name, r.Instance)
		}
		for _, w := range g.Warnings {
			if w.Code == marks.CodeUnsynced {
				t.Errorf("%s #%d synchronised, but flagged: %s", r.Name, r.Instance, w.Message)
			}
		}
		by[r.Name] = append(by[r.Name], g.EnergyJ)
		if strings.HasPrefix(r.Name, "step_") {
			steps += g.EnergyJ
		}
		if r.Name == "train" {
			train = g.EnergyJ
		}
	}
	mean := map[string]float64{}
	for name, es := range by {
		var m, ss float64
		for _, e := range es {
			m += e
		}
		m /= float64(len(es))
		for _, e := range es {
			ss += (e - m) * (e - m)
		}
		mean[name] = m
		if len(es) > 1 {
			cv := math.Sqrt(ss/float64(len(es)-1)) / m
			t.Logf("%s: %d regions, %.1f J mean, CV %.2f %%", name, len(es), m, 100*cv)
			if cv > 0.03 {
				t.Errorf("%s: CV %.1f %% over %d steps, want within 3 %%", name, 100*cv, len(es))
			}
		}
	}
	for _, p := range [][2]string{{"step_b4096", "step_b1024"}, {"step_b16384", "step_b4096"}} {
		if r := mean[p[0]] / mean[p[1]]; r < 3.7 || r > 4.3 {
			t.Errorf("%s / %s = %.2f: 4x the flops, want 3.7-4.3x the energy", p[0], p[1], r)
		}
	}
	if d := steps/train - 1; math.Abs(d) > 0.01 {
		t.Errorf("the steps together %.1f J against the train region's %.1f J (%+.2f %%)", steps, train, 100*d)
	}

	tr, evs = markersrun.Load(t, "nosync")
	spans, _ = marks.Pair(evs)
	regs = energy.Marked(tr, spans, energy.MarkedOptions{SyncCheck: true})
	flagged := map[string]bool{}
	for _, r := range regs {
		for _, w := range r.GPUs[0].Warnings {
			if w.Code == marks.CodeUnsynced {
				flagged[r.Name] = true
				t.Logf("%s #%d: %s", r.Name, r.Instance, w.Message)
			}
		}
	}
	if !flagged["warmup"] || !flagged["train"] || len(flagged) != 2 {
		t.Errorf("flagged %v, want warmup and train alone", flagged)
	}
}
