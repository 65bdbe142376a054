package energy_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// denseRun is a recorded run of bench/gpu/intervals_shapes.sh with COUNTER_EVERY set:
// measure read the energy counter densely (measure --counter-every) while the independent
// poller logged it too.
type denseRun struct {
	dir string // under results/
	gpu int
	// knownMiss: "window path" pairs where, with every counter reading, the reference lies
	// outside the interval, each with why (the test fails on any other).
	knownMiss map[string]string
	// knownOff: windows of 2 s and more where, with every counter reading, the default is
	// off by more than 2 %, each with why.
	knownOff map[string]string
}

var denseRuns = []denseRun{
	// results/nvidia-h200/2026-11-28-intervals-shapes-7 and -8: the shapes in two new orders
	// (--seed 7, 8) on two boards at once, the counter read every 100 ms.
	{dir: "nvidia-h200/2026-11-28-intervals-shapes-7/recorded", gpu: 0,
		knownMiss: map[string]string{
			"r0-square-20ms named:power.samples": square20Why + "; on its robust scale −0.66 % against ±0.60 %, the counter's readings around it finding it within its own interval",
			"r0-square-20ms power.usage":         avg20Why,
			"r0-square-20ms named:power.usage":   avg20Why,
			"r0-square-20ms power.average":       avg20Why,
			"r0-square-20ms named:power.average": avg20Why,
			"r1-ramp-3s power.usage":             avgRampWhy,
			"r1-ramp-3s named:power.usage":       avgRampWhy,
			"r1-ramp-3s power.average":           avgRampWhy,
			"r1-ramp-3s named:power.average":     avgRampWhy,
		}},
	{dir: "nvidia-h200/2026-11-28-intervals-shapes-8/recorded", gpu: 1},
	// results/nvidia-h200/2026-11-28-intervals-shapes-9: recorded after the dense anchor
	// and the fits' spacing were fitted to -7 and -8 (main at 6c9c4cf), on a third board,
	// in a third order (--seed 9): nothing here was tuned on it.
	// Its misses (the default holds on every window): named power.samples over-confident on
	// steady loads, a defect found here and not mended (scale9Why).
	{dir: "nvidia-h200/2026-11-28-intervals-shapes-9/recorded", gpu: 0,
		knownMiss: map[string]string{
			"r0-memory-2.5s named:power.samples":  scale9Why + " (−0.67 % against ±0.40 %)",
			"r1-memory-2.5s named:power.samples":  scale9Why + " (−0.75 % against ±0.41 %)",
			"r2-memory-2.5s named:power.samples":  scale9Why + " (−0.67 % against ±0.43 %)",
			"r0-compute-2.5s named:power.samples": scale9Why + " (−0.91 % against ±0.58 %)",
			"r1-compute-2.5s named:power.samples": scale9Why + " (−0.69 % against ±0.57 %)",
			"r2-compute-2.5s named:power.samples": scale9Why + " (−1.09 % against ±0.60 %)",
			"r0-ramp13-3s named:power.samples":    scale9Why + " (−1.14 % against ±0.86 %)",
			"r0-square-20ms named:power.samples":  square20Why + "; on its robust scale −20.4 % against ±20.0 %, the reference part (±299 J) a little short",
			"r1-ramp-3s named:power.samples":      rampWhy + "; on its robust scale −14.5 % against ±14.1 %, the reference part (±202 J) a little short",
			"r0-square-100ms power.average":       "a 100 ms square wave read −2.45 % by the 1 s average against ±1.8 % (its edges part): the ring and the counter around it agree, so no reference part widens it",
			"r0-square-100ms named:power.average": "as power.average: −2.78 % against ±2.0 %",
		}},
	// results/nvidia-h200/2026-11-28-intervals-shapes-11: a fourth board, recorded with the
	// slow-call rule (3d1948c; one call of 57 ms left out), untuned as -9.
	{dir: "nvidia-h200/2026-11-28-intervals-shapes-11/recorded", gpu: 0,
		knownMiss: map[string]string{
			"r1-square-20ms named:power.usage":   avg20Why11,
			"r1-square-20ms named:power.average": avg20Why11,
		}},
}

// avg20Why11: as avg20Why, on run -11 by name.
const avg20Why11 = "a 20 ms square wave read +14.7 to +14.9 % by the 1 s average on its counter scale, against ±14.6 to ±14.7 %: the reference over the readings around it (±217-220 J) short of the region's 223-227 J"

// scale9Why: on run -9 (a third board, untuned) named power.samples' scale, fitted to the
// dense counter's readings 1.5 s apart, lands ~0.9 % above the ring's ratio to the counter on
// steady loads, and its calibration part (±0.4 %, the robust fit's error) does not hold
// that: thinned to 2 s the same channel holds the reference on 27/27. The default holds on
// every window of the run. Found 2026-11-28 on this run, not mended.
const scale9Why = "named power.samples with the dense counter: its scale, fitted over readings 1.5 s apart, ~0.9 % off the ring's steady-load ratio, beyond its ±0.4 % calibration part"

// avg20Why and avgRampWhy: the 1 s average (power.usage, power.average), built of the
// board's 20 ms samples, misreads a load locked to them; with the counter read every 100 ms
// its reference check spans the readings just around the region (3.5 s) and adds their
// difference whole, which falls short of the region's own by 3-4 %: the pieces of the span
// outside the region hold a little of the opposite sign.
const (
	avg20Why   = "a 20 ms square wave read +17.4 to +17.8 % by the 1 s average, against ±17.1 %: the reference over the readings around it (±272 J) short of the region's 280-285 J"
	avgRampWhy = "a ramp in 20 ms slots read −11.3 to −11.6 % by the 1 s average, against ±10.7 to ±11.0 %: the reference over the readings around it short of the region's error"
)

// DefaultCounterSpacing is how far apart the lean default's counter readings lie on an
// H200 (its call costs 3.4-6.3 ms, capped at 0.2 % of a core: every 1.7-3.2 s;
// results/nvidia-h200/2026-11-28-counter-cost): a dense recording thinned to it is what
// the default would have read.
const DefaultCounterSpacing = 2 * time.Second

// thinCounterEvery is tr with its energy counter's readings kept at least every apart
// (the first kept), everything else as recorded.
func thinCounterEvery(tr *trace.Trace, every time.Duration) *trace.Trace {
	out := &trace.Trace{Meta: tr.Meta, Samples: make([]trace.Sample, 0, len(tr.Samples))}
	next := time.Duration(math.MinInt64)
	for _, x := range tr.Samples {
		if x.Channel == trace.ChEnergyTotal {
			if x.T < next {
				continue
			}
			next = x.T + every
		}
		out.Samples = append(out.Samples, x)
	}
	return out
}

// TestH200DenseCounterRecorded re-checks issue 28's shapes recorded on an H200 with the
// counter read every 100 ms (measure --counter-every 100ms), every window of 2 s and more
// twice: with every counter reading, and with the counter thinned to the lean default's
// spacing (DefaultCounterSpacing), so that the one run shows what the dense counter buys.
// With every reading the default is within 2 % of the independently polled counter on
// every window of 2 s and more, and the reference lies inside every path's interval (the
// default, each channel by --method inversion and by name), but the known ones, each named
// with why; thinned, the figures are logged beside them, and the dense default must be
// within 2 % on at least as many windows.
func TestH200DenseCounterRecorded(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	if len(denseRuns) == 0 {
		t.Skip("no dense-counter run recorded yet")
	}
	for _, run := range denseRuns {
		t.Run(run.dir, func(t *testing.T) { checkDenseRun(t, run) })
	}
}

// denseScore is one variant's tally over the windows of 2 s and more.
type denseScore struct {
	within, n int
	inside    map[string][2]int
	hw        []float64 // the default's relative half-widths
}

func checkDenseRun(t *testing.T, run denseRun) {
	dir := filepath.Join("../../results", run.dir)
	tr, err := trace.Load(filepath.Join(dir, "measure"))
	if err != nil {
		t.Fatal(err)
	}
	ctr := tr.Readings(run.gpu, trace.ChEnergyTotal)
	if ctr.Len() < 2 {
		t.Fatalf("%s: %d counter readings", dir, ctr.Len())
	}
	spacing := (ctr.T[ctr.Len()-1] - ctr.T[0]) / time.Duration(ctr.Len()-1)
	if spacing > 500*time.Millisecond {
		t.Fatalf("%s: the counter read every %v on average: not a dense recording", dir, spacing)
	}
	thin := thinCounterEvery(tr, DefaultCounterSpacing)
	t.Logf("counter readings: %d dense (every %v), %d thinned to %v", ctr.Len(), spacing.Round(time.Millisecond), thin.Readings(run.gpu, trace.ChEnergyTotal).Len(), DefaultCounterSpacing)
	var wins []shapeWindow
	for _, w := range loadShapeWindows(t, filepath.Join(dir, "crosscheck.json")) {
		if w.ToS-w.FromS >= 2 {
			wins = append(wins, w)
		}
	}
	if len(wins) < 20 {
		t.Fatalf("%d windows of 2 s and more in %s, want the run's 27", len(wins), dir)
	}
	var chans []string
	for _, c := range []string{trace.ChPowerSamples, trace.ChPowerInstant, trace.ChPowerUsage, trace.ChPowerAverage} {
		if _, ok := tr.Channel(run.gpu, c); ok {
			chans = append(chans, c)
		}
	}
	type path struct {
		name string
		o    energy.Options
	}
	paths := []path{{"default", energy.Options{}}}
	for _, c := range chans {
		paths = append(paths, path{c, energy.Options{Method: energy.Inversion, Channel: c}}, path{"named:" + c, energy.Options{Channel: c, Named: true}})
	}
	scores := map[string]*denseScore{}
	for _, v := range []struct {
		name string
		tr   *trace.Trace
	}{{"dense", tr}, {"thinned", thin}} {
		sc := &denseScore{inside: map[string][2]int{}}
		scores[v.name] = sc
		cache := &energy.Cache{}
		for _, w := range wins {
			from, to := time.Duration(w.FromS*1e9), time.Duration(w.ToS*1e9)
			for _, p := range paths {
				o := p.o
				o.Cache = cache
				est := energy.Region(v.tr, run.gpu, from, to, o)
				off := est.EnergyJ - w.RefJ
				ok := est.Method != energy.NoFigure && math.Abs(off) <= est.HalfWidthJ()+w.RefUJ
				k := sc.inside[p.name]
				k[1]++
				if ok {
					k[0]++
				}
				sc.inside[p.name] = k
				key := w.Burst + " " + p.name
				if v.name == "dense" {
					why, known := run.knownMiss[key]
					switch {
					case !ok && !known:
						t.Errorf("dense %s: %s %.1f J ± %.1f J against the counter's %.1f J ± %.1f J (%+.2f %%): %s", key, est.Method, est.EnergyJ, est.HalfWidthJ(), w.RefJ, w.RefUJ, 100*off/w.RefJ, energy.Budget(est.Uncertainty))
					case !ok:
						t.Logf("known miss, dense %s (%+.2f %% against ±%.2f %%): %s", key, 100*off/w.RefJ, 100*est.HalfWidthJ()/w.RefJ, why)
					case known:
						t.Logf("dense %s holds now (%+.2f %% against ±%.2f %%): remove it from the known misses", key, 100*off/w.RefJ, 100*est.HalfWidthJ()/w.RefJ)
					}
				}
				if p.name != "default" {
					continue
				}
				sc.n++
				sc.hw = append(sc.hw, est.HalfWidthJ()/w.RefJ)
				far := math.Abs(off) > 0.02*w.RefJ
				if !far {
					sc.within++
				}
				if v.name != "dense" {
					if far {
						t.Logf("thinned %s: %s %+.2f %% ± %.2f %%", w.Burst, est.Method, 100*off/w.RefJ, 100*est.HalfWidthJ()/w.RefJ)
					}
					continue
				}
				why, known := run.knownOff[w.Burst]
				switch {
				case far && !known:
					t.Errorf("dense %s default: %s %+.2f %% ± %.2f %% on a window of %.1f s (want within 2 %%): %s", w.Burst, est.Method, 100*off/w.RefJ, 100*est.HalfWidthJ()/w.RefJ, w.ToS-w.FromS, energy.Budget(est.Uncertainty))
				case far:
					t.Logf("known: dense %s default %+.2f %%: %s", w.Burst, 100*off/w.RefJ, why)
				case known:
					t.Logf("dense %s default within 2 %% now (%+.2f %%): remove it from the known ones", w.Burst, 100*off/w.RefJ)
				}
			}
		}
	}
	for _, name := range []string{"dense", "thinned"} {
		sc := scores[name]
		var in []string
		for _, k := range mapsKeys(sc.inside) {
			in = append(in, fmt.Sprintf("%s %d/%d", k, sc.inside[k][0], sc.inside[k][1]))
		}
		t.Logf("%-7s: default within 2 %% on %d/%d windows of 2 s and more (median half-width ±%.2f %%); reference inside: %s", name, sc.within, sc.n, 100*medianOf(slices.Clone(sc.hw)), strings.Join(in, ", "))
	}
	if d, s := scores["dense"], scores["thinned"]; d.within < s.within {
		t.Errorf("the dense counter's default within 2 %% on %d windows, the thinned one's on %d: density should not cost", d.within, s.within)
	}
	checkDenseShortWindows(t, dir, run, tr, thin)
}

// checkDenseShortWindows: on the windows under 2 s (0.5 s inside the loads, the parts of
// back-to-back regions) the default holds the reference (within its own uncertainty) in at
// least 95 % of them with every counter reading, as thinned. Before the fits took dense
// readings 1.5 s apart (MinFitIncrement), the ring's calibration over increments of 0.1 s
// put them 2-6 % off: 31-33 of 39 on -7 and -8, against 39/39 thinned.
func checkDenseShortWindows(t *testing.T, dir string, run denseRun, dense, thin *trace.Trace) {
	for _, v := range []struct {
		name string
		tr   *trace.Trace
	}{{"dense", dense}, {"thinned", thin}} {
		cache := &energy.Cache{}
		in, n := 0, 0
		var hw []float64
		for _, w := range loadShapeWindows(t, filepath.Join(dir, "crosscheck.json")) {
			if w.ToS-w.FromS >= 2 {
				continue
			}
			est := energy.Region(v.tr, run.gpu, time.Duration(w.FromS*1e9), time.Duration(w.ToS*1e9), energy.Options{Cache: cache})
			n++
			hw = append(hw, est.HalfWidthJ()/w.RefJ)
			if est.Method != energy.NoFigure && math.Abs(est.EnergyJ-w.RefJ) <= est.HalfWidthJ()+w.RefUJ {
				in++
			} else {
				t.Logf("%s %s default: %s %+.2f %% ± %.2f %% (the reference ± %.2f %%): %s", v.name, w.Burst, est.Method, 100*(est.EnergyJ/w.RefJ-1), 100*est.HalfWidthJ()/w.RefJ, 100*w.RefUJ/w.RefJ, energy.Budget(est.Uncertainty))
			}
		}
		t.Logf("%-7s: windows under 2 s, the default holds the reference in %d/%d (median half-width ±%.2f %%)", v.name, in, n, 100*medianOf(hw))
		if v.name == "dense" && float64(in) < 0.95*float64(n) {
			t.Errorf("dense: the default holds the reference in %d of %d windows under 2 s, want 95 %%", in, n)
		}
	}
}

// mapsKeys is m's keys (sorted by the caller).
func mapsKeys(m map[string][2]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
