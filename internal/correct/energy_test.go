package correct_test

import (
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// steps is a true power: p[i] from t[i] on (p0 before the first).
type steps struct {
	p0 float64
	t  []float64 // s
	p  []float64
}

func (s steps) at(x float64) float64 {
	v := s.p0
	for i, t := range s.t {
		if x >= t {
			v = s.p[i]
		}
	}
	return v
}

// energy is the exact integral over [a, b].
func (s steps) energy(a, b float64) float64 {
	pts := []float64{a}
	for _, t := range s.t {
		if t > a && t < b {
			pts = append(pts, t)
		}
	}
	pts = append(pts, b)
	var e float64
	for i := 1; i < len(pts); i++ {
		e += s.at(pts[i-1]) * (pts[i] - pts[i-1])
	}
	return e
}

// lag is the exact first-order lag of s at x (steady at p0 before the first step).
func (s steps) lag(x, tau float64) float64 {
	y, last := s.p0, math.Inf(-1)
	for i, t := range s.t {
		if t > x {
			break
		}
		if !math.IsInf(last, -1) {
			y = s.p[i-1] + (y-s.p[i-1])*math.Exp(-(t-last)/tau)
		}
		last = t
	}
	if math.IsInf(last, -1) {
		return s.p0
	}
	p := s.at(x)
	return p + (y-p)*math.Exp(-(x-last)/tau)
}

var testLoad = steps{p0: 50, t: []float64{1.0, 1.3, 2.05, 2.25, 4.0}, p: []float64{180, 120, 300, 60, 50}}

func sec(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// readings samples f at t0, t0+dt, ... up to t1, with a deterministic jitter of ±j·dt.
func readings(t0, t1, dt, j float64, f func(float64) float64) []trace.Sample {
	var out []trace.Sample
	for i := 0; ; i++ {
		x := t0 + float64(i)*dt + j*dt*math.Sin(float64(i)*2.3)
		if x > t1 {
			return out
		}
		x = math.Round(x*1e6) / 1e6 // a trace's µs
		out = append(out, trace.Sample{T: sec(x), Channel: "power.usage", Value: f(x)})
	}
}

func relErr(got units.Energy, want float64) float64 { return (got.Joules() - want) / want }

var testRegions = [][2]float64{
	{1.0, 1.3}, {0.8, 1.5}, {1.3, 2.05}, {2.0, 2.3}, {2.05, 2.25}, {1.5, 3.5}, {0.5, 5.5}, {3.0, 4.5},
}

func TestEnergyRCExact(t *testing.T) {
	tau := 0.84
	s := readings(0, 8, 0.015, 0.4, func(x float64) float64 { return testLoad.lag(x, tau) })
	m := sensormodel.Model{Tau: sec(tau)}
	ser := correct.Prepare(s, m, correct.Options{})
	for _, rg := range testRegions {
		want := testLoad.energy(rg[0], rg[1])
		r := ser.Energy(sec(rg[0]), sec(rg[1]))
		if e := relErr(r.Energy, want); math.Abs(e) > 0.002 {
			t.Errorf("[%g, %g]: corrected %v, want %.3f J (%+.3f %%)", rg[0], rg[1], r.Energy, want, 100*e)
		}
	}
	// The naive integral of a lagging sensor misses a 300 ms burst by far.
	r := ser.Energy(sec(1.0), sec(1.3))
	if e := relErr(r.EnergyRaw, testLoad.energy(1.0, 1.3)); e > -0.3 {
		t.Errorf("naive error %+.1f %%: want a large deficit", 100*e)
	}
}

// denseLoad has its changes (and their echoes one 1 s window later) at least 2.5 update
// periods apart: each kink of the readings can be told apart.
var denseLoad = steps{p0: 50, t: []float64{1.0, 1.3, 2.6, 2.85, 4.5}, p: []float64{180, 120, 300, 60, 50}}

var denseRegions = [][2]float64{
	{1.0, 1.3}, {0.8, 1.5}, {1.3, 2.6}, {2.6, 2.85}, {2.5, 3.0}, {2.0, 2.3}, {1.5, 3.5}, {0.5, 5.5}, {3.0, 4.5}, {4.5, 6.0},
}

func TestEnergyBoxcarDeconvolved(t *testing.T) {
	const w = 1.0
	s := readings(0, 8, 0.1, 0.01, func(x float64) float64 { return denseLoad.energy(x-w, x) / w })
	m := sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond}
	ser := correct.Prepare(s, m, correct.Options{})
	for _, rg := range denseRegions {
		want := denseLoad.energy(rg[0], rg[1])
		r := ser.Energy(sec(rg[0]), sec(rg[1]))
		if e := relErr(r.Energy, want); math.Abs(e) > 0.01 {
			t.Errorf("[%g, %g]: corrected %v, want %.3f J (%+.3f %%); warnings %v", rg[0], rg[1], r.Energy, want, 100*e, r.Warnings)
		}
	}
}

func TestEnergyBoxcarTiled(t *testing.T) {
	// W = T = 20 ms, windows ending at 3 ms + k·20 ms: the steps fall inside windows, which
	// see them as mixed readings; the cells split there.
	const w = 0.02
	s := readings(0.003, 8, w, 0, func(x float64) float64 { return testLoad.energy(x-w, x) / w })
	m := sensormodel.Model{Window: 20 * time.Millisecond, Period: 20 * time.Millisecond}
	ser := correct.Prepare(s, m, correct.Options{})
	for _, rg := range testRegions {
		want := testLoad.energy(rg[0], rg[1])
		r := ser.Energy(sec(rg[0]), sec(rg[1]))
		if e := relErr(r.Energy, want); math.Abs(e) > 1e-6 {
			t.Errorf("[%g, %g]: corrected %v, want %.4f J (%+.5f %%)", rg[0], rg[1], r.Energy, want, 100*e)
		}
		if r.Coverage != 1 || r.DataCoverage != 1 || r.SensorCoverage != 1 {
			t.Errorf("coverage %v, want 1", r.Coverage)
		}
	}
}

func TestEnergyBoxcarPartial(t *testing.T) {
	// 25 ms of every 100 ms: steady loads are right, and a step seen inside a window is
	// placed where the reading says; one in the unseen gap lands in its middle.
	const w, T = 0.025, 0.1
	s := readings(0.037, 8, T, 0, func(x float64) float64 { return testLoad.energy(x-w, x) / w })
	m := sensormodel.Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond}
	ser := correct.Prepare(s, m, correct.Options{})
	steady := ser.Energy(sec(2.5), sec(3.9))
	if e := relErr(steady.Energy, testLoad.energy(2.5, 3.9)); math.Abs(e) > 1e-9 {
		t.Errorf("steady region: %+.6f %%", 100*e)
	}
	if steady.Coverage != 0.25 || steady.SensorCoverage != 0.25 || !hasWarning(steady, "sees 25 % of the time") {
		t.Errorf("coverage %v / %v, warnings %v", steady.Coverage, steady.SensorCoverage, steady.Warnings)
	}
	for _, rg := range testRegions {
		want := testLoad.energy(rg[0], rg[1])
		r := ser.Energy(sec(rg[0]), sec(rg[1]))
		// Each step within reach may be misplaced by up to (T − W)/2.
		var bound float64
		prev := testLoad.p0
		for i, c := range testLoad.t {
			if c >= rg[0]-T && c <= rg[1]+T {
				bound += math.Abs(testLoad.p[i]-prev) * (T - w) / 2
			}
			prev = testLoad.p[i]
		}
		if d := math.Abs(r.Energy.Joules() - want); d > bound+1e-9 {
			t.Errorf("[%g, %g]: off by %.3f J, beyond the sampling limit %.3f J", rg[0], rg[1], d, bound)
		}
	}
}

func TestEnergyDelay(t *testing.T) {
	// A boxcar published 30 ms after its window ends.
	const w, d = 0.02, 0.03
	s := readings(0.003, 6, w, 0, func(x float64) float64 { return testLoad.energy(x-d-w, x-d) / w })
	m := sensormodel.Model{Window: 20 * time.Millisecond, Period: 20 * time.Millisecond, Delay: 30 * time.Millisecond}
	r := correct.Energy(s, sec(1.0), sec(1.3), m, correct.Options{})
	if e := relErr(r.Energy, testLoad.energy(1.0, 1.3)); math.Abs(e) > 1e-6 {
		t.Errorf("delayed boxcar: %+.4f %%", 100*e)
	}
}

func TestEnergyNoneAndDedupe(t *testing.T) {
	// A K20-style poll: every update repeated 3 times 0.3 ms apart.
	var s []trace.Sample
	for i := 0; i < 100; i++ {
		x := sec(float64(i) * 0.015)
		v := 100 + float64(i%7)
		for r := 0; r < 4; r++ {
			s = append(s, trace.Sample{T: x + time.Duration(r)*300*time.Microsecond, Value: v})
		}
	}
	r := correct.Energy(s, 0, sec(1.49), sensormodel.Model{}, correct.Options{})
	if r.Samples != 100 || r.Dropped != 300 {
		t.Errorf("samples %d dropped %d, want 100 and 300", r.Samples, r.Dropped)
	}
	kept, dropped := correct.Dedupe(s)
	if len(kept) != 100 || dropped != 300 {
		t.Errorf("Dedupe kept %d, dropped %d", len(kept), dropped)
	}
	if want := trace.Integrate(kept, 0, sec(1.49)).Energy; math.Abs(float64(r.Energy-want)) > 1e-9 {
		t.Errorf("energy %v, want the trapezoid of the deduplicated readings %v", r.Energy, want)
	}
	if want := trace.Integrate(s, 0, sec(1.49)).Energy; r.EnergyRaw != want {
		t.Errorf("raw %v, want the trapezoid of all readings %v", r.EnergyRaw, want)
	}
	if r.Period != 15*time.Millisecond {
		t.Errorf("learned period %v, want 15ms", r.Period)
	}
	// Dedupe off.
	r = correct.Energy(s, 0, sec(1.49), sensormodel.Model{}, correct.Options{Dedupe: -1})
	if r.Samples != 400 || r.Dropped != 0 {
		t.Errorf("without dedupe: samples %d dropped %d", r.Samples, r.Dropped)
	}
}

func TestEnergyIdle(t *testing.T) {
	// 10 s at 100 W with 2 s at 40 W: the lowest decile of 250 ms bins is the 40 W floor.
	f := steps{p0: 100, t: []float64{3, 5}, p: []float64{40, 100}}
	s := readings(0, 10, 0.02, 0, f.at)
	ser := correct.Prepare(s, sensormodel.Model{}, correct.Options{})
	r := ser.Energy(sec(1), sec(4))
	if !r.IdleEstimated || math.Abs(float64(r.Idle)-40) > 1e-9 {
		t.Errorf("idle %v (estimated %v), want 40 W", r.Idle, r.IdleEstimated)
	}
	if want := r.Energy.Joules() - 40*3; math.Abs(r.EnergyActive.Joules()-want) > 1e-9 {
		t.Errorf("active %v, want %v", r.EnergyActive, want)
	}
	r = correct.Energy(s, sec(1), sec(4), sensormodel.Model{}, correct.Options{Idle: 30, IdleSet: true})
	if r.IdleEstimated || r.Idle != 30 || math.Abs(r.EnergyActive.Joules()-(r.Energy.Joules()-90)) > 1e-9 {
		t.Errorf("explicit idle: %+v", r)
	}
}

func hasWarning(r correct.Result, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w.Message, sub) {
			return true
		}
	}
	return false
}

func TestEnergyWarnings(t *testing.T) {
	s := readings(1, 3, 0.1, 0, func(float64) float64 { return 200 })
	none := sensormodel.Model{}
	for _, tc := range []struct {
		name     string
		s        []trace.Sample
		from, to float64
		want     string
	}{
		{"empty region", s, 2, 2, "the region is empty"},
		{"reversed", s, 2.5, 2, "the region is empty"},
		{"outside", s, 5, 6, "no reading describes the region"},
		{"partly outside", s, 0, 2, "describe only 50 %"},
		{"few readings", s, 1.5, 1.75, "only 3 readings"},
		{"short", s, 1, 3, "shorter than 50 update periods"},
		{"no readings", nil, 0, 1, "no readings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := correct.Energy(tc.s, sec(tc.from), sec(tc.to), none, correct.Options{})
			if !hasWarning(r, tc.want) {
				t.Errorf("warnings %v: want one containing %q", r.Warnings, tc.want)
			}
		})
	}
	r := correct.Energy(s, sec(1), sec(3), none, correct.Options{})
	if r.DataCoverage != 1 || r.Covered != 2*time.Second || math.Abs(r.Energy.Joules()-400) > 1e-9 || math.Abs(float64(r.MeanPower)-200) > 1e-9 {
		t.Errorf("full region: %+v", r)
	}
}

func TestSpan(t *testing.T) {
	s := readings(1, 3, 0.1, 0, func(float64) float64 { return 200 })
	for _, tc := range []struct {
		m      sensormodel.Model
		lo, hi float64
	}{
		{sensormodel.Model{}, 1, 3},
		{sensormodel.Model{Tau: time.Second, Delay: 10 * time.Millisecond}, 0.99, 2.99},
		{sensormodel.Model{Window: time.Second}, 1, 3},
		// Held over periods centred on the windows' centres: 12.5 ms back, ± 50 ms.
		{sensormodel.Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond}, 0.9375, 3.0375},
	} {
		lo, hi := correct.Span(s, tc.m, correct.Options{})
		if lo != sec(tc.lo) || hi != sec(tc.hi) {
			t.Errorf("%s: span %v..%v, want %gs..%gs", tc.m, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := correct.Span(nil, sensormodel.Model{}, correct.Options{}); lo != 0 || hi != 0 {
		t.Errorf("no samples: %v..%v", lo, hi)
	}
}

func TestLearnPeriod(t *testing.T) {
	// Updates every 100 ms, each published as two changes 0.3 ms apart.
	var s []trace.Sample
	for i := 0; i < 50; i++ {
		x := sec(float64(i) * 0.1)
		s = append(s, trace.Sample{T: x, Value: 1}, trace.Sample{T: x + 300*time.Microsecond, Value: 2})
	}
	if p := correct.LearnPeriod(s); p < 99*time.Millisecond || p > 101*time.Millisecond {
		t.Errorf("period %v, want ~100ms", p)
	}
	if p := correct.LearnPeriod(s[:1]); p != 0 {
		t.Errorf("one sample: %v", p)
	}
}

func TestChannel(t *testing.T) {
	tr := &trace.Trace{Samples: []trace.Sample{{T: 0, Channel: "a"}, {T: 1, Channel: "b"}, {T: 2, Channel: "a", GPU: 1}, {T: 3, Channel: "a"}}}
	if got := correct.Channel(tr, 0, "a"); len(got) != 2 || got[1].T != 3 {
		t.Errorf("channel a: %+v", got)
	}
	one := &trace.Trace{Samples: []trace.Sample{{T: 0, Channel: "a"}, {T: 1, Channel: "a"}}}
	if got := correct.Channel(one, 0, "a"); &got[0] != &one.Samples[0] {
		t.Error("a trace of one channel should not be copied")
	}
}

func TestEnergyBursts(t *testing.T) {
	// A 25 ms window every 100 ms whose updates show up as two changes 0.4 ms apart, the
	// first a stale half-way value: one update each, with the later value.
	var s []trace.Sample
	for i := 0; i < 40; i++ {
		x := sec(0.037 + 0.1*float64(i))
		s = append(s, trace.Sample{T: x, Value: 150}, trace.Sample{T: x + 400*time.Microsecond, Value: 200})
	}
	m := sensormodel.Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond}
	r := correct.Energy(s, sec(1), sec(3), m, correct.Options{})
	if math.Abs(r.Energy.Joules()-400) > 1e-9 {
		t.Errorf("energy %v, want 400 J (200 W for 2 s)", r.Energy)
	}
}

// TestEnergyRCShortLagEdges: a lag short against the spacing of its readings (the H200's
// power.samples: tau 14 ms, point samples every 20 ms, 3 ms late). A region whose edges
// fall on steps of the power (a kernel's start and end) is within 0.5 % of the truth
// wherever in the 20 ms between readings the steps fall (exact without noise); an edge
// where the power is steady gives what the inversion without edges (∫readings +
// tau·Δreading) gave, within the noise; the whole span is integrated as before.
func TestEnergyRCShortLagEdges(t *testing.T) {
	const tau, dt, delay = 0.014, 0.020, 0.003
	m := sensormodel.Model{Tau: sec(tau), Period: sec(dt), Delay: sec(delay)}
	for _, sigma := range []float64{0, 0.3} { // W of noise per reading
		for _, phase := range []float64{0, 0.0025, 0.005, 0.01, 0.015, 0.019, 0.0199} {
			// Readings at 0.004 + k·dt see the lag 3 ms earlier: a step at s = 2.001 + phase
			// falls phase after the instant a reading saw.
			s := 2.001 + phase
			load := steps{p0: 132, t: []float64{s, s + 0.2, s + 0.7, s + 1.0}, p: []float64{600, 132, 450, 132}}
			var rs []trace.Sample
			var xs, vs []float64 // the readings on the time axis of the power
			for k := 0; ; k++ {
				stamp := math.Round((0.004+float64(k)*dt)*1e6) / 1e6
				if stamp > 5 {
					break
				}
				v := load.lag(stamp-delay, tau) + sigma*math.Sqrt2*math.Sin(float64(k)*12.9898)
				if sigma > 0 {
					v = math.Round(v*1e3) / 1e3
				}
				rs = append(rs, trace.Sample{T: sec(stamp), Channel: "power.samples", Value: v})
				xs, vs = append(xs, stamp-delay), append(vs, v)
			}
			ser := correct.Prepare(rs, m, correct.Options{})
			got := func(a, b float64) float64 { return ser.Energy(sec(a), sec(b)).Energy.Joules() }
			// old is the inversion without edges: ∫readings + tau·(reading(b) − reading(a)),
			// the readings interpolated linearly.
			interp := func(x float64) float64 {
				i := sort.SearchFloat64s(xs, x)
				if xs[i] == x {
					return vs[i]
				}
				return vs[i-1] + (vs[i]-vs[i-1])*(x-xs[i-1])/(xs[i]-xs[i-1])
			}
			old := func(a, b float64) float64 {
				pts := []float64{a}
				for _, x := range xs {
					if x > a && x < b {
						pts = append(pts, x)
					}
				}
				pts = append(pts, b)
				e := 0.0
				for i := 1; i < len(pts); i++ {
					e += (pts[i] - pts[i-1]) * (interp(pts[i]) + interp(pts[i-1])) / 2
				}
				return e + tau*(interp(b)-interp(a))
			}
			tol := 0.005
			if sigma == 0 {
				tol = 1e-9
			}
			for _, rg := range []struct {
				name string
				a, b float64
			}{
				{"200 ms burst on its edges", s, s + 0.2},
				{"500 ms after a step down", s + 0.2, s + 0.7},
				{"300 ms step on its edges", s + 0.7, s + 1.0},
				{"idle up to a step", s - 0.3, s},
				{"a step up to its end", s - 0.3, s + 0.2},
			} {
				want := load.energy(rg.a, rg.b)
				if e := (got(rg.a, rg.b) - want) / want; math.Abs(e) > tol {
					t.Errorf("noise %g W, phase %g ms, %s: corrected %.4f J, want %.4f J (%+.4f %%; before: %+.2f %%)",
						sigma, phase*1e3, rg.name, got(rg.a, rg.b), want, 100*e, 100*(old(rg.a, rg.b)-want)/want)
				}
			}
			// Edges where the power is steady: as before, within the noise.
			for _, rg := range [][2]float64{{s + 0.1, s + 0.15}, {s - 0.5, s - 0.2}, {s + 0.3, s + 0.6}, {s + 0.75, s + 0.95}} {
				want, g, o := load.energy(rg[0], rg[1]), got(rg[0], rg[1]), old(rg[0], rg[1])
				if math.Abs(g-o) > 0.001*want+1e-9 {
					t.Errorf("noise %g W, phase %g ms, steady edges [%g, %g]: corrected %.4f J, before %.4f J, truth %.4f J", sigma, phase*1e3, rg[0], rg[1], g, o, want)
				}
			}
			// The whole span: the integral as before.
			from, to := ser.Span()
			if g, o := got(from.Seconds(), to.Seconds()), old(from.Seconds(), to.Seconds()); math.Abs(g-o) > 1e-9*o {
				t.Errorf("noise %g W, phase %g ms, whole span: %.6f J, before %.6f J", sigma, phase*1e3, g, o)
			}
		}
	}
}
