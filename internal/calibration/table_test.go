package calibration_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	isim "github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/job"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/fitted"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
	"github.com/gpuwatt/gpuwatt/sim"
)

// WantCoverage: every path's 95 % intervals hold the truth in at least this share.
const WantCoverage = 0.93

// A case is one figure against the twin's truth.
type tcase struct {
	path      string
	dur       time.Duration
	inside    bool // the truth on the figure's scale inside the relative interval
	hasRel    bool // the relative interval was checked (the library's twin hides its gains)
	absInside bool // the true energy inside the absolute interval
	rel       float64
}

// TestCalibrationTable: the one table of docs/calibration.md. On h200 and h100 twins with
// randomised loads (bursts, ramps, fast square waves, square waves locked to every
// channel's period, duty cycles in the ring's 20 ms slots, power-cap steps), their sensors
// characterised by gpuwatt sensor on a twin of their own, the counter read densely or
// every 3–8 s (a busy host's lean recording), regions of 20 ms to 6 s:
//   - energy: the default, and --channel C for each board channel (the channel's own figure);
//   - measure's marked regions (marks.Energies, as measure gives them);
//   - job (job.Compute over begin's and end's counter readings and the recorder's trace);
//   - the library (gpuwatt.Start, Begin, End on the public twin): the absolute interval.
//
// Each path holds the truth in at least 93 % of its cases, on the figure's own scale (the
// relative interval) and in absolute terms; the table logs the median half-widths by
// region length. Behind GPUWATT_SLOW_TESTS (about 20 s).
func TestCalibrationTable(t *testing.T) {
	testkit.Slow(t)
	var cases []tcase
	for _, preset := range []string{"h200", "h100"} {
		sp := fitted.Profile(t, preset)
		for rec := range 8 {
			cases = append(cases, recording(t, preset, sp, rec)...)
		}
	}
	cases = append(cases, library(t)...)
	table(t, cases)
}

var channels = []string{trace.ChEnergyTotal, trace.ChPowerSamples, trace.ChPowerUsage, trace.ChPowerInstant}

const span = 14 * time.Second

// recording records one randomised load on a fresh twin and estimates its regions by
// every path but the library's.
func recording(t *testing.T, preset string, sp correct.Spec, rec int) []tcase {
	rng := rand.New(rand.NewPCG(uint64(rec), 28))
	cfg := simtest.Preset(t, preset)
	cfg.Seed += uint64(50 + rec)
	sm := simtest.OpenConfig(t, cfg)
	workload(rng, sm.Dev)
	tr := sm.Record(t, channels, sensor.Options{}, span)
	sparse := ""
	if rec%2 == 1 {
		simtest.ThinCounter(tr, rng, 3*time.Second, 8*time.Second)
		sparse = ", counter every 3–8 s"
	}
	ctr, _ := sm.Dev.Model(trace.ChEnergyTotal)
	// the truth on the scale of the figure's source: the counter's where it is the counter
	// or the ring calibrated to it (or a named channel put on its scale), else the channel's
	onScale := func(f energy.Figure, scaled bool, from, to time.Duration) float64 {
		truth := sm.Dev.TrueEnergy(from, to).Joules()
		if f.Method == energy.Counter || f.Method == energy.CalibratedRing || f.Method == energy.CounterInterpolated || scaled {
			return ctr.GainOrOne() * truth
		}
		m, _ := sm.Dev.Model(f.Channel)
		return m.GainOrOne()*truth + float64(m.Offset)*(to-from).Seconds()
	}
	check := func(path string, f energy.Figure, scaled bool, from, to time.Duration) tcase {
		path += sparse
		s := onScale(f, scaled, from, to)
		truth := sm.Dev.TrueEnergy(from, to).Joules()
		u := f.Uncertainty
		c := tcase{path: path, dur: to - from, hasRel: true, inside: f.LowJ <= s && s <= f.HighJ,
			absInside: u.AbsoluteLowJ <= truth && truth <= u.AbsoluteHighJ, rel: u.HalfWidthJ / math.Abs(s)}
		if !c.inside && testing.Verbose() {
			t.Logf("miss: %s rec %d %s [%v, %v] %s: %.3f J on scale, %.3f ± %.3f J (%+.2f %%): %s",
				preset, rec, path, from, to, f.Method, s, f.EnergyJ, u.HalfWidthJ, 100*(f.EnergyJ/s-1), energy.Budget(u))
		}
		return c
	}
	var out []tcase
	var spans []marks.Span
	cache := &energy.Cache{}
	for i := range 5 {
		d := time.Duration(math.Exp(math.Log(0.02)+rng.Float64()*(math.Log(6)-math.Log(0.02))) * float64(time.Second))
		from := (time.Second + time.Duration(rng.Float64()*float64(span-2*time.Second-d))).Round(time.Microsecond)
		to := from + d
		spans = append(spans, marks.Span{Name: "step", Instance: i + 1, Parent: -1, Start: from, End: to})
		est := energy.Region(tr, 0, from, to, energy.Options{Sensor: &sp, Cache: cache})
		out = append(out, check("energy (default)", est.Figure, false, from, to))
		for _, ch := range []string{trace.ChPowerSamples, trace.ChPowerUsage, trace.ChPowerInstant} {
			est := energy.Region(tr, 0, from, to, energy.Options{Channel: ch, Named: true, Sensor: &sp, Cache: cache})
			out = append(out, check("energy --channel "+ch, est.Figure, est.Scale != nil, from, to))
		}
	}
	// measure's marked regions: every region of the recording at once, as measure does
	for _, r := range energy.Marked(tr, spans, energy.MarkedOptions{}) {
		g := r.GPUs[0]
		if g.NoFigure {
			t.Errorf("%s rec %d: marked region [%v, %v]: no figure: %v", preset, rec, r.Start, r.End, g.Warnings)
			continue
		}
		out = append(out, check("measure's marked regions", g.Figure, false, r.Start, r.End))
	}
	// job: begin and end read the counter (here: the recording's readings near 1 s and
	// near its end); the recorder's trace covers the job
	if c, ok := jobCase(tr, sm.Dev.Info(), check); ok {
		out = append(out, c)
	} else {
		t.Errorf("%s rec %d: no job figure", preset, rec)
	}
	return out
}

// jobCase runs job.Compute over the span between two of tr's counter readings.
func jobCase(tr *trace.Trace, g trace.GPU, check func(string, energy.Figure, bool, time.Duration, time.Duration) tcase) (tcase, bool) {
	ctr := tr.Readings(0, trace.ChEnergyTotal)
	i := ctr.Search(time.Second)
	j := ctr.Search(span-time.Second) - 1
	if i >= ctr.Len() || j <= i {
		return tcase{}, false
	}
	cp := *tr
	cp.Samples = append([]trace.Sample(nil), tr.Samples...)
	b := &job.Begin{GPUs: []job.BeginGPU{{Index: 0, UUID: g.UUID, Name: g.Name, PowerLimitW: g.PowerLimitW,
		Counter: &job.Counter{T: ctr.T[i].Seconds(), EnergyJ: ctr.V[i]}}}}
	end := map[int]*job.Counter{0: {T: ctr.T[j].Seconds(), EnergyJ: ctr.V[j]}}
	r := job.Compute(b, end, nil, ctr.T[j], &cp, "")
	if len(r.GPUs) != 1 || !r.GPUs[0].OK() {
		return tcase{}, false
	}
	return check("job", r.GPUs[0].Figure, false, ctr.T[i], ctr.T[j]), true
}

// library brackets randomised steps on the public twin with Begin and End: each region's
// true energy inside its absolute interval (the public twin does not show its gains, so
// the relative interval is not checked here: it is energy's default's, above).
func library(t *testing.T) []tcase {
	var out []tcase
	for seed := range 4 {
		rng := rand.New(rand.NewPCG(uint64(seed), 31))
		s, err := sim.New(sim.Options{Preset: []string{"h200", "h100"}[seed%2], Seed: uint64(10 + seed)})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
		if err != nil {
			t.Fatal(err)
		}
		s.Sleep(time.Second)
		outer := rec.Begin("all")
		for range 6 {
			d := time.Duration(math.Exp(math.Log(0.02)+rng.Float64()*(math.Log(3)-math.Log(0.02))) * float64(time.Second))
			r := rec.Begin("step")
			if rng.IntN(2) == 0 {
				s.Launch(d, 200+500*rng.Float64())
			} else { // a square wave of 20-120 ms
				q := time.Duration(20+rng.IntN(100)) * time.Millisecond
				for x := time.Duration(0); x < d; x += q {
					s.Launch(min(q/2, d-x), 600)
					s.Launch(min(q/2, max(d-x-q/2, 0)), 150)
				}
			}
			s.Synchronize()
			r.End()
			s.Sleep(time.Duration(50+rng.IntN(700)) * time.Millisecond)
		}
		outer.End()
		s.Sleep(time.Second)
		res, err := rec.Stop()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Regions {
			e := r.GPUs[0]
			truth := s.GPU(0).TrueEnergy(r.Start, r.End)
			if !e.OK {
				t.Errorf("library region %s #%d: no figure", r.Name, r.Instance)
				continue
			}
			out = append(out, tcase{path: "library (Begin/End)", dur: r.Duration(), absInside: e.AbsLow <= truth && truth <= e.AbsHigh,
				rel: (e.High - e.Low) / 2 / truth})
		}
	}
	return out
}

// table logs the calibration table and fails a path under WantCoverage.
func table(t *testing.T, cases []tcase) {
	paths := []string{}
	seen := map[string]bool{}
	for _, c := range cases {
		if !seen[c.path] {
			seen[c.path] = true
			paths = append(paths, c.path)
		}
	}
	classes := []struct {
		name   string
		lo, hi time.Duration
	}{{"< 0.2 s", 0, 200 * time.Millisecond}, {"0.2–1 s", 200 * time.Millisecond, time.Second}, {">= 1 s", time.Second, time.Hour}}
	t.Logf("| path | relative: truth inside | absolute: truth inside | median half-width < 0.2 s | 0.2–1 s | >= 1 s |")
	for _, p := range paths {
		var n, in, nrel, abs int
		var hw [3][]float64
		for _, c := range cases {
			if c.path != p {
				continue
			}
			n++
			if c.hasRel {
				nrel++
				if c.inside {
					in++
				}
			}
			if c.absInside {
				abs++
			}
			for i, cl := range classes {
				if c.dur >= cl.lo && c.dur < cl.hi {
					hw[i] = append(hw[i], c.rel)
				}
			}
		}
		med := func(v []float64) string {
			if len(v) == 0 {
				return "–"
			}
			sort.Float64s(v)
			return fmt.Sprintf("%.2f %% (%d)", 100*v[len(v)/2], len(v))
		}
		rel := "–"
		if nrel > 0 {
			rel = fmt.Sprintf("%d/%d (%.0f %%)", in, nrel, 100*float64(in)/float64(nrel))
			if float64(in) < WantCoverage*float64(nrel) {
				t.Errorf("%s: the truth inside the relative interval in %d of %d cases, want at least %.0f %%", p, in, nrel, 100*WantCoverage)
			}
		}
		if float64(abs) < WantCoverage*float64(n) {
			t.Errorf("%s: the true energy inside the absolute interval in %d of %d cases, want at least %.0f %%", p, abs, n, 100*WantCoverage)
		}
		t.Logf("| %s | %s | %d/%d (%.0f %%) | %s | %s | %s |", p, rel, abs, n, 100*float64(abs)/float64(n), med(hw[0]), med(hw[1]), med(hw[2]))
	}
	if len(cases) < 300 {
		t.Errorf("%d cases, want at least 300", len(cases))
	}
}

// workload adds a randomised load to dev over [0, span): bursts, ramps, fast square waves,
// square waves locked near every channel's period (0.5–2 ×, a random phase), duty cycles
// in the ring's slots, power-cap steps, idle gaps.
func workload(rng *rand.Rand, dev *isim.Device) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	watts := func(lo, hi float64) units.Power { return units.Power(lo + rng.Float64()*(hi-lo)) }
	square := func(t0, d, q time.Duration, hi, lo units.Power) {
		for x := time.Duration(0); x < d; x += q {
			dev.AddLoad(t0+x, t0+x+q/2, hi)
			dev.AddLoad(t0+x+q/2, t0+x+q, lo)
		}
	}
	t := ms(300 + rng.Float64()*700)
	for t < span-time.Second {
		switch rng.IntN(6) {
		case 0: // bursts of 20–500 ms
			for range 1 + rng.IntN(4) {
				d := ms(20 + rng.Float64()*480)
				dev.AddLoad(t, t+d, watts(250, 700))
				t += d + ms(rng.Float64()*300)
			}
		case 1: // a ramp in 5 ms steps
			d := ms(300 + rng.Float64()*1700)
			p0, p1 := watts(200, 700), watts(200, 700)
			for x := time.Duration(0); x < d; x += 5 * time.Millisecond {
				dev.AddLoad(t+x, t+x+5*time.Millisecond, p0+units.Power(float64(x)/float64(d))*(p1-p0))
			}
			t += d
		case 2: // a square wave of 8–80 ms
			d := ms(500 + rng.Float64()*1500)
			square(t, d, ms(8+rng.Float64()*72), watts(400, 700), watts(150, 350))
			t += d
		case 3: // a power-cap step
			d0, d1 := ms(300+rng.Float64()*500), ms(500+rng.Float64()*1500)
			p := watts(650, 700)
			dev.AddLoad(t, t+d0, p)
			dev.AddLoad(t+d0, t+d0+d1, p-watts(30, 120))
			t += d0 + d1
		case 4: // locked near a channel's period
			m, _ := dev.Model(channels[rng.IntN(len(channels))])
			q := time.Duration([]float64{0.5, 0.75, 1, 1.5, 2}[rng.IntN(5)] * float64(m.Period))
			d := ms(1000 + rng.Float64()*2000)
			t0 := t + time.Duration(rng.Float64()*float64(q))
			square(t0, d, q, watts(450, 700), watts(130, 300))
			t = t0 + d
		case 5: // duty cycles rising in the ring's slots (bench/load/shapes.py's ramp)
			m, _ := dev.Model(trace.ChPowerSamples)
			q := m.Period
			d := ms(1000 + rng.Float64()*2000)
			hi, lo := watts(550, 700), watts(120, 200)
			t0 := t + time.Duration(rng.Float64()*float64(q))
			for x := time.Duration(0); x < d; x += q {
				busy := time.Duration((float64(x) + float64(q)/2) / float64(d) * float64(q))
				dev.AddLoad(t0+x, t0+x+busy, hi)
				dev.AddLoad(t0+x+busy, t0+x+q, lo)
			}
			t = t0 + d
		}
		t += ms(rng.Float64() * 1000)
	}
}
