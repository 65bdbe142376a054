package energy_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/fitted"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// lockedLoad is one of the loads no power channel of an H200 resolves: a square wave of
// the ring's 20 ms or the counter's and 100 ms channels' period, or a duty ramp in the
// ring's 20 ms slots (bench/load/shapes.py's ramp-3s).
type lockedLoad struct {
	name   string
	period time.Duration // the square wave's; 0: the duty ramp in 20 ms slots
	d      time.Duration // how long it runs
}

var lockedLoads = []lockedLoad{
	{"square 20 ms", 20 * time.Millisecond, 2 * time.Second},
	{"square 100 ms", 100 * time.Millisecond, 2 * time.Second},
	{"ramp in 20 ms slots", 0, 3 * time.Second},
}

// denseTally is how the default did on windows of 2 s and more: within 2 % of the truth
// on the counter's scale, the truth inside the interval, and the relative half-widths.
type denseTally struct {
	within, inside, n int
	hw                []float64
	misses            []string
}

// TestDenseCounterLockedLoads: on an h200 twin, loads locked to the board's sampling (20 ms
// and 100 ms square waves, a ramp in 20 ms slots: the H200 runs' misses, results/nvidia-
// h200/2026-11-28-intervals-shapes-3 to -6) among steady bursts, windows of 2-3 s padded
// into idle. One recording with the counter read every 100 ms (measure --counter-every
// 100ms), estimated twice: with every counter reading, and with the counter thinned to
// the lean default's spacing on an H200 (every 1.5-2.5 s). Dense, the default is within
// 2 % of the truth (on the counter's scale) and holds it in its interval in at least 95 %
// of the windows, and its median half-width is narrower than thinned; thinned, it still
// holds the truth in 95 % (its interval honest where it cannot be close).
func TestDenseCounterLockedLoads(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	const preset = "h200"
	sp := fitted.Profile(t, preset)
	dense, thin := &denseTally{}, &denseTally{}
	paths := map[string][2]int{}
	for rec := range 4 {
		cfg := simtest.Preset(t, preset)
		cfg.Seed += uint64(300 + rec)
		sm := simtest.OpenConfig(t, cfg)
		rng := rand.New(rand.NewPCG(uint64(rec), 28))
		ring, _ := sm.Dev.Model(trace.ChPowerSamples)
		type win struct {
			name     string
			from, to time.Duration
		}
		var wins []win
		at := time.Second
		for i, l := range lockedLoads {
			for phase := range 2 {
				// A steady burst between the locked loads, as in the shapes' run.
				sm.Dev.AddLoad(at, at+1500*time.Millisecond, units.Power(350+rng.Float64()*250))
				at += 1500*time.Millisecond + time.Duration(300+rng.IntN(900))*time.Millisecond
				q := l.period
				if q == 0 {
					q = ring.Period
				}
				t0 := at + time.Duration((float64(phase)/2+float64(i)/8+0.1*rng.Float64())*float64(q))
				hi, lo := units.Power(600+rng.Float64()*100), units.Power(130+rng.Float64()*100)
				for x := time.Duration(0); x < l.d; x += q {
					on := q / 2
					if l.period == 0 {
						on = time.Duration((float64(x) + float64(q)/2) / float64(l.d) * float64(q))
					}
					sm.Dev.AddLoad(t0+x, t0+x+on, hi)
					sm.Dev.AddLoad(t0+x+on, t0+x+q, lo)
				}
				const pad = 150 * time.Millisecond
				wins = append(wins, win{fmt.Sprintf("%s, phase %d", l.name, phase), t0 - pad, t0 + l.d + pad})
				at = t0 + l.d + time.Duration(300+rng.IntN(1200))*time.Millisecond
			}
		}
		tr := sm.Record(t, calibChannels, sensor.Options{CounterEvery: 100 * time.Millisecond}, at+2*time.Second)
		sparse := &trace.Trace{Meta: tr.Meta, Samples: slices.Clone(tr.Samples)}
		simtest.ThinCounter(sparse, rng, 1500*time.Millisecond, 2500*time.Millisecond)
		c, _ := sm.Dev.Model(trace.ChEnergyTotal)
		for _, v := range []struct {
			tr    *trace.Trace
			tally *denseTally
			what  string
		}{{tr, dense, "dense"}, {sparse, thin, "thinned"}} {
			cache := &energy.Cache{}
			for _, w := range wins {
				truth := c.Gain * sm.Dev.TrueEnergy(w.from, w.to).Joules()
				est := energy.Region(v.tr, 0, w.from, w.to, energy.Options{Sensor: &sp, Cache: cache})
				v.tally.add(est, truth, fmt.Sprintf("recording %d %s [%v, %v]", rec, w.name, w.from, w.to))
				if v.what != "dense" {
					continue
				}
				for _, m := range calibMethods[1:] {
					e := energy.Region(v.tr, 0, w.from, w.to, energy.Options{Method: m.method, Channel: m.channel, Named: m.named, Sensor: &sp, Cache: cache})
					onScale := pathTruth(sm, e, truth/c.Gain, w.to-w.from)
					k := paths[m.name]
					k[1]++
					if e.Method != energy.NoFigure && e.LowJ <= onScale && onScale <= e.HighJ {
						k[0]++
					} else {
						t.Logf("dense, %s, recording %d %s: %.1f J ± %.1f J against %.1f J (%+.2f %%): %s", m.name, rec, w.name, e.EnergyJ, e.HalfWidthJ(), onScale, 100*(e.EnergyJ/onScale-1), energy.Budget(e.Uncertainty))
						if testing.Verbose() {
							for _, c := range e.Uncertainty.Components {
								if c.Name == "reference" {
									t.Logf("    %s", c.Note)
								}
							}
						}
					}
					paths[m.name] = k
				}
			}
		}
	}
	for _, v := range []struct {
		what string
		k    *denseTally
	}{{"dense (every 100 ms)", dense}, {"thinned (every 1.5-2.5 s)", thin}} {
		t.Logf("%-26s within 2 %% %2d/%d, inside %2d/%d, median half-width ±%.2f %%", v.what, v.k.within, v.k.n, v.k.inside, v.k.n, 100*medianOf(v.k.hw))
		for _, m := range v.k.misses {
			t.Logf("  %s", m)
		}
	}
	for _, m := range calibMethods[1:] {
		k := paths[m.name]
		t.Logf("dense, %-24s inside %d/%d", m.name, k[0], k[1])
		// A channel inverted on its own scale (--method inversion) is checked against the
		// counter, whose scale the twin's boards put up to 2 % apart from the channel's: a
		// misread partly hidden by that gap is not seen in full (the ring −7.0 % on its
		// own scale, −5.4 % against the counter), so only the named channels, on the
		// counter's scale, are held to the calibration's 93 % here.
		if m.named && float64(k[0]) < calibWantCoverage*float64(k[1]) {
			t.Errorf("dense counter, %s: the truth inside in %d of %d windows, want at least %.0f %%", m.name, k[0], k[1], 100*calibWantCoverage)
		}
	}
	if float64(dense.within) < 0.95*float64(dense.n) || float64(dense.inside) < 0.95*float64(dense.n) {
		t.Errorf("dense counter: the default within 2 %% in %d and the truth inside in %d of %d windows, want 95 %% each", dense.within, dense.inside, dense.n)
	}
	if float64(thin.inside) < 0.95*float64(thin.n) {
		t.Errorf("thinned counter: the truth inside in %d of %d windows, want 95 %%", thin.inside, thin.n)
	}
	if !(medianOf(dense.hw) < medianOf(thin.hw)) {
		t.Errorf("the dense counter's median half-width ±%.2f %% is not narrower than the thinned one's ±%.2f %%", 100*medianOf(dense.hw), 100*medianOf(thin.hw))
	}
}

func (k *denseTally) add(est energy.Estimate, truth float64, what string) {
	k.n++
	off := est.EnergyJ/truth - 1
	in := est.Method != energy.NoFigure && est.LowJ <= truth && truth <= est.HighJ
	if math.Abs(off) <= 0.02 {
		k.within++
	}
	if in {
		k.inside++
	}
	k.hw = append(k.hw, est.HalfWidthJ()/truth)
	if !in || math.Abs(off) > 0.02 {
		k.misses = append(k.misses, fmt.Sprintf("%s: %s %.1f J ± %.1f J against %.1f J (%+.2f %%)", what, est.Method, est.EnergyJ, est.HalfWidthJ(), truth, 100*off))
	}
}

// pathTruth is the twin's true energy over a window on the scale of an estimate's source:
// the counter's where the figure is calibrated to it, else its channel's gain and offset.
func pathTruth(sm simtest.Sim, est energy.Estimate, truth float64, d time.Duration) float64 {
	if est.Method == energy.CalibratedRing || est.Method == energy.Counter || est.Scale != nil {
		c, _ := sm.Dev.Model(trace.ChEnergyTotal)
		return c.Gain * truth
	}
	src, _ := sm.Dev.Model(est.Channel)
	g := src.Gain
	if g == 0 {
		g = 1
	}
	return g*truth + float64(src.Offset)*d.Seconds()
}
