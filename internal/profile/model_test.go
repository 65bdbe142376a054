package profile_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// offModel is the h200 twin's power.samples model with its lag and delay scaled (5-10 %
// off, as a fitted model may be), each with a 95 % interval of ±15 % about its value,
// which holds the twin's true 14 ms and 3 ms.
func offModel(t *testing.T, base sensormodel.Model, tauScale, delayScale float64) sensormodel.Model {
	t.Helper()
	m := base
	m.Tau = time.Duration(float64(base.Tau) * tauScale)
	m.Delay = time.Duration(float64(base.Delay) * delayScale)
	iv := func(d time.Duration) sensormodel.Interval {
		return sensormodel.Interval{Low: 0.85 * d.Seconds(), High: 1.15 * d.Seconds()}
	}
	m.CI = sensormodel.Intervals{Tau: iv(m.Tau), Delay: iv(m.Delay)}
	for _, c := range []struct {
		iv    sensormodel.Interval
		truth time.Duration
	}{{m.CI.Tau, base.Tau}, {m.CI.Delay, base.Delay}} {
		if !(c.iv.Low <= c.truth.Seconds() && c.truth.Seconds() <= c.iv.High) {
			t.Fatalf("interval %+v does not hold the twin's %s", c.iv, c.truth)
		}
	}
	return m
}

// TestSteadyProfileModelOff (issue 13): a steady 5 ms fp32.fma kernel (~490 W) on the h200
// twin's power.samples, profiled with a model 5-10 % off in tau and delay. Away from the
// kernel's edges (half the stated resolution plus the stated placement), every bin holds
// the true power on the channel's scale within its 95 % band or within 10 %, and the
// energy per run's interval holds the true energy. Plain least squares on bins fixed to
// the kernel's run gave 877 W and 357 W in its first two bins for the 490 W kernel, and an
// energy interval of ±0.1 % that missed the truth by 3 %.
func TestSteadyProfileModelOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tau, delay float64 }{
		{0.95, 1.10}, // tau 13.3 ms, delay 3.3 ms: the case
		{1.05, 0.90}, // 14.7 ms, 2.7 ms
		{0.90, 1.10}, // 12.6 ms, 3.3 ms
	} {
		su := newSetup(t, "h200", "power.samples")
		m := offModel(t, su.sens, tc.tau, tc.delay)
		k := su.k.Kernel // the plain, steady kernel
		res, err := profile.Measure(context.Background(), su.clk, su.dev.Sensor("power.samples"), k, "fp32.fma", profile.MeasureOptions{Sensor: m})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Profile) == 0 {
			t.Fatalf("no profile: %v", res.Warnings)
		}
		// the truth of one run on the channel's scale, well after everything else
		start := su.clk.Now() + time.Second
		su.clk.Sleep(context.Background(), time.Second)
		if _, _, err := k.Run(1); err != nil {
			t.Fatal(err)
		}
		g, _ := su.dev.Model("power.samples")
		onScale := func(t0, t1 time.Duration) float64 {
			return g.Gain*su.dev.TrueEnergy(t0, t1).Joules() + float64(g.Offset)*(t1-t0).Seconds()
		}
		edge := res.ResolutionS/2 + res.PlacementS
		checked, bad := 0, 0
		for _, b := range res.Profile {
			if b.StartS < edge || b.EndS > res.KernelS-edge {
				continue
			}
			t0, t1 := start+time.Duration(b.StartS*1e9), start+time.Duration(b.EndS*1e9)
			truth := onScale(t0, t1) / (b.EndS - b.StartS)
			checked++
			if !(b.LowW <= truth && truth <= b.HighW) && math.Abs(b.PowerW-truth) > 0.1*truth {
				bad++
				t.Errorf("tau %s delay %s: bin [%.3f, %.3f) ms %.1f W [%.1f, %.1f], true %.1f W", m.Tau, m.Delay, b.StartS*1e3, b.EndS*1e3, b.PowerW, b.LowW, b.HighW, truth)
			}
		}
		trueE := onScale(start, start+su.tex)
		t.Logf("%s", res.ResolutionWhy)
		t.Logf("tau %s delay %s: %d bins checked (away from the edges by %.3g ms; resolution %.3g ms, placement %.3g ms), %d off; energy %.4f J [%.4f, %.4f], true %.4f J",
			m.Tau, m.Delay, checked, edge*1e3, res.ResolutionS*1e3, res.PlacementS*1e3, bad, res.EnergyJ, res.LowJ, res.HighJ, trueE)
		if checked < len(res.Profile)/3 {
			t.Errorf("only %d of %d bins away from the edges", checked, len(res.Profile))
		}
		if !(res.LowJ <= trueE && trueE <= res.HighJ) {
			t.Errorf("tau %s delay %s: true energy %.4f J outside [%.4f, %.4f] J", m.Tau, m.Delay, trueE, res.LowJ, res.HighJ)
		}
	}
}
