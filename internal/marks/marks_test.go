package marks

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func lines(texts ...string) []Line {
	var out []Line
	for i, t := range texts {
		out = append(out, Line{No: i + 1, Text: t, Arrived: sec(10 + float64(i))})
	}
	return out
}

func codes(ws []status.Warning) string {
	var c []string
	for _, w := range ws {
		c = append(c, string(w.Code))
	}
	return strings.Join(c, ",")
}

// TestParseAndPair: nesting, repeats, the writer's stamps mapped, lines without a stamp
// stamped on arrival, and every bad line a warning naming it, never a region.
func TestParseAndPair(t *testing.T) {
	toAxis := func(s float64) time.Duration { return sec(s - 1000) }
	evs, ws := ParseLines(lines(
		"begin train 1001.0",
		"begin step 1001.5",
		"end step 1002.0",
		"# a comment",
		"",
		"begin step 1002.5",
		"  end step 1003.25  ",
		"end train 1004",
		"bgin x 1005",
		"begin two words here",
		"end step",
		"begin eval 1006.0",
		"begin x 12abc",
		"end ghost 1007",
		"begin open 1008",
	), toAxis)
	if got := codes(ws); got != "bad_marker,bad_marker,bad_marker,marker_stamped_on_arrival" {
		t.Errorf("warnings %s: %v", got, ws)
	}
	for _, want := range []string{`line 9 "bgin x 1005"`, `line 10 "begin two words here"`, `line 13 "begin x 12abc"`} {
		found := false
		for _, w := range ws {
			found = found || strings.Contains(w.Message, want)
		}
		if !found {
			t.Errorf("no warning names %s: %v", want, ws)
		}
	}
	spans, pws := Pair(evs)
	if got := codes(pws); got != "unmatched_marker,unmatched_marker,unended_region,unended_region" {
		t.Errorf("pair warnings %s: %v", got, pws)
	}
	// "end step" on line 11 has no stamp: stamped on arrival at 20 s, after eval began
	// (6 s) and ghost's end (7 s); no open step then: unmatched. eval and open never end.
	type want struct {
		name       string
		inst, dep  int
		par        int
		start, end float64
	}
	wants := []want{{"train", 1, 0, -1, 1, 4}, {"step", 1, 1, 0, 1.5, 2}, {"step", 2, 1, 0, 2.5, 3.25}}
	if len(spans) != len(wants) {
		t.Fatalf("%d spans, want %d: %+v", len(spans), len(wants), spans)
	}
	for i, w := range wants {
		s := spans[i]
		if s.Name != w.name || s.Instance != w.inst || s.Depth != w.dep || s.Parent != w.par || s.Start != sec(w.start) || s.End != sec(w.end) {
			t.Errorf("span %d = %s #%d depth %d parent %d %v..%v; want %+v", i, s.Name, s.Instance, s.Depth, s.Parent, s.Start, s.End, w)
		}
	}
	for _, w := range pws {
		if w.Code == CodeUnmatched && !strings.Contains(w.Message, `line 14 ("end ghost")`) && !strings.Contains(w.Message, `line 11`) {
			t.Errorf("unmatched warning names no line: %s", w.Message)
		}
	}
}

// TestPairSameNameNests: `end NAME` closes the innermost open region of that name.
func TestPairSameNameNests(t *testing.T) {
	evs := []Event{{true, "a", sec(1), 0, false}, {true, "a", sec(2), 0, false}, {false, "a", sec(3), 0, false}, {false, "a", sec(4), 0, false}}
	spans, ws := Pair(evs)
	if len(ws) != 0 || len(spans) != 2 || spans[0].End != sec(4) || spans[1].Start != sec(2) || spans[1].End != sec(3) || spans[1].Parent != 0 {
		t.Errorf("spans %+v, warnings %v", spans, ws)
	}
}

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
	loads := [][3]float64{
		{2.0, 3.5, 520},  // train (synchronised end)
		{2.3, 2.6, 640},  // its step #1 (the highest load wins)
		{2.9, 3.05, 640}, // its step #2, 150 ms
		{4.5, 6.5, 600},  // async: the work runs to 6.5 s, its end marker came at 5.0
		{7.5, 8.0, 450},  // after: a short synchronised region
	}
	tr, s := recordSim(t, 10*time.Second, 1.5, loads)
	evs := []Event{
		{true, "train", sec(2.0), 1, true}, {true, "step", sec(2.3), 2, true}, {false, "step", sec(2.6), 3, true},
		{true, "step", sec(2.9), 4, true}, {false, "step", sec(3.05), 5, true}, {false, "train", sec(3.5), 6, true},
		{true, "async", sec(4.5), 7, true}, {false, "async", sec(5.0), 8, true},
		{true, "tail", sec(7.5), 9, true}, {false, "tail", sec(8.0), 10, true},
	}
	spans, ws := Pair(evs)
	if len(ws) != 0 {
		t.Fatal(ws)
	}
	regs := Energies(tr, spans, Options{SyncCheck: true})
	if len(regs) != 5 {
		t.Fatalf("%d regions", len(regs))
	}
	for i, r := range regs {
		g := r.GPUs[0]
		truth := s.Dev.TrueEnergy(spans[i].Start, spans[i].End).Joules()
		onScale := onBoardScale(s, g, truth, spans[i].End-spans[i].Start)
		flagged := false
		for _, w := range g.Warnings {
			flagged = flagged || w.Code == CodeUnsynced
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
func onBoardScale(s simtest.Sim, g GPUEnergy, truth float64, d time.Duration) float64 {
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
	tr, _ := recordSim(t, 4*time.Second, 1, [][3]float64{{2, 2.03, 500}})
	regs := Energies(tr, []Span{{Name: "s", Instance: 1, Parent: -1, Start: sec(2), End: sec(2.03)}}, Options{})
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
