package energy_test

import (
	"math"
	"math/rand/v2"
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

// TestSpanAnchorEdgesUnbiased: regions that begin in idle and end inside a steady load
// ("rising"), and the reverse ("falling"), on an h200 twin with the counter read every
// 0.7 s, so that the readings around a region lie at different powers; the regions that
// took the span anchor count. The Sampler stamps a counter reading in the middle of the
// interval its update lay in; the span anchor once moved the span back another half update
// period, which puts res/2 × the power step across the span into the ring's error there:
// over three recordings the anchored rising regions came out +1.7 % (standard error 0.33),
// the falling ones −2.7 % (0.53); now −0.1 % and −0.5 % (0.47 each). Unbiased, the two
// means agree within their noise.
// The real counter agrees: on the H200 runs -7 and -8 its increments line up with the
// ring's energy at a lag of 1-3 ms, not 50 (results/nvidia-h200/2026-11-28-counter-lag).
func TestSpanAnchorEdgesUnbiased(t *testing.T) {
	t.Parallel()
	const preset = "h200"
	sp := fitted.Profile(t, preset)
	var rise, fall []float64
	anchored := 0
	// Two recordings give ~17 anchored regions, enough to see the old bias (3.9 % apart
	// against 2.2 % allowed); CI adds two more.
	nrec := 2
	if testkit.SlowOn() {
		nrec = 4
	}
	for rec := range nrec {
		cfg := simtest.Preset(t, preset)
		cfg.Seed += uint64(500 + rec)
		sm := simtest.OpenConfig(t, cfg)
		rng := rand.New(rand.NewPCG(uint64(rec), 29))
		type win struct {
			rising   bool
			from, to time.Duration
		}
		var wins []win
		at := time.Second
		for range 12 {
			d := 3*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond
			sm.Dev.AddLoad(at, at+d, units.Power(500+rng.Float64()*150))
			mid := at + d/2 + time.Duration(rng.IntN(400)-200)*time.Millisecond
			wins = append(wins, win{true, at - 200*time.Millisecond, mid}, win{false, mid, at + d + 200*time.Millisecond})
			at += d + 2*time.Second + time.Duration(rng.IntN(1500))*time.Millisecond
		}
		tr := sm.Record(t, calibChannels, sensor.Options{CounterEvery: 700 * time.Millisecond}, at+2*time.Second)
		c, _ := sm.Dev.Model(trace.ChEnergyTotal)
		cache := &energy.Cache{}
		for _, w := range wins {
			truth := c.Gain * sm.Dev.TrueEnergy(w.from, w.to).Joules()
			est := energy.Region(tr, 0, w.from, w.to, energy.Options{Sensor: &sp, Cache: cache})
			if est.Method == energy.NoFigure {
				t.Fatalf("[%v, %v]: no figure: %v", w.from, w.to, est.Warnings)
			}
			isAnchored := false
			for _, co := range est.Uncertainty.Components {
				if co.Name == "anchor" {
					anchored++
					isAnchored = true
				}
			}
			if !isAnchored {
				continue
			}
			off := 100 * (est.EnergyJ/truth - 1)
			if w.rising {
				rise = append(rise, off)
			} else {
				fall = append(fall, off)
			}
		}
	}
	mr, sr := meanAndError(rise)
	mf, sf := meanAndError(fall)
	t.Logf("%d regions anchored; rising %+.3f %% (standard error %.3f), falling %+.3f %% (%.3f)", anchored, mr, sr, mf, sf)
	if anchored < 12 {
		t.Errorf("only %d regions took the span anchor: the test no longer exercises it", anchored)
	}
	if d, se := mr-mf, math.Hypot(sr, sf); math.Abs(d) > 3*se {
		t.Errorf("rising regions %+.3f %%, falling %+.3f %%: %+.3f %% apart, beyond 3 standard errors (%.3f %%): the anchor's span is off in time", mr, mf, d, 3*se)
	}
}

// meanAndError is the mean of x and its standard error.
func meanAndError(x []float64) (mean, se float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1) / float64(len(x)))
}
