package profile_test

import (
	"context"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// h200Like is the h200 twin with its power.samples as an H200 other than the ones the
// built-in model came from (tau 13 ms, delay 3.35 ms: run 3's card fitted 13.4 and 3.35)
// and the scatter the H200's profiles show about their fit (4.5 W: run to run, not the
// sensor's 0.4 W).
func h200Like(t *testing.T, seed uint64) sim.Config {
	t.Helper()
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = seed
	sc := cfg.Sensors["power.samples"]
	sc.Model.Tau, sc.Model.Delay, sc.Model.Noise = 13*time.Millisecond, 3350*time.Microsecond, 4.5
	cfg.Sensors["power.samples"] = sc
	return cfg
}

// TestTransitionWithinStatedResolution (issue 13): a user profiles the two-phase kernel
// with the built-in H200 model (correct.Auto: tau 14 ms [12, 16], delay 3 ms [2.5, 4.5]) on
// a board whose sensor differs from it (h200Like). The resolution stated for the
// transition's own step (the step test at the profile's λ, through the model's interval
// ends, with draws of the fit's noise, its 95th percentile) bounds the width the profile
// shows in at least 7 of 8 profiles (4+4 and 2+2 ms, four seeds; 95 % stated; 12 of 12 over
// six seeds while it was built), and the
// energy's interval holds the long runs' energy per launch. Before, the step test chose λ
// again on clean synthetic readings: the H200's transitions came out up to 1.9x wider than
// stated (results/nvidia-h200/2026-11-24-profile-two-phase, run 2).
func TestTransitionWithinStatedResolution(t *testing.T) {
	t.Parallel()
	m, why := correct.Auto("power.samples", "NVIDIA H200")
	spec := correct.ModelSpec(m, why)
	within, n, energyIn := 0, 0, 0
	for _, k := range []string{"4ms+4ms", "2ms+2ms"} {
		for seed := uint64(1); seed <= 4; seed++ {
			sm := simtest.OpenConfig(t, h200Like(t, seed))
			o := profile.DefaultOptions()
			o.Kernel, o.Sensor, o.SensorFrom, o.Runs = k, &spec, "the built-in model", 800
			res, err := o.Run(context.Background(), device.Env{System: sm.Sys, Clock: sm.Clock})
			if err != nil {
				t.Fatal(err)
			}
			tr := res.Transition
			if tr == nil || res.LongRun == nil {
				t.Fatalf("%s seed %d: transition %v, long run %v", k, seed, tr, res.LongRun)
			}
			lr := res.LongRun.EnergyPerLaunchJ
			in := res.LowJ <= lr && lr <= res.HighJ
			t.Logf("%s seed %d: transition at %.2f ms shown at %.2f ms over %.2f ms, stated %.2f ms (placement %.2f ms; quarter step %.2f ms): within %v; energy %.4f J [%.4f, %.4f], long runs %.4f J: %v",
				k, seed, tr.AtS*1e3, tr.MidS*1e3, tr.WidthS*1e3, tr.ResolutionS*1e3, tr.PlacementS*1e3, res.ResolutionS*1e3, tr.Within, res.EnergyJ, res.LowJ, res.HighJ, lr, in)
			n++
			if tr.Within {
				within++
			}
			if in {
				energyIn++
			}
			for _, w := range res.Warnings {
				if w.Code == profile.CodeImplausible && !strings.Contains(res.EnergyModelNote, "doubled") {
					t.Errorf("%s seed %d: an implausible profile whose energy interval is not widened: %s", k, seed, res.EnergyModelNote)
				}
			}
		}
	}
	t.Logf("transitions within the stated resolution: %d of %d; energy intervals holding the long runs': %d of %d", within, n, energyIn, n)
	if within < n-1 || energyIn < n-1 {
		t.Errorf("%d of %d transitions within the stated resolution (want >= %d), %d of %d energy intervals hold the long runs' energy", within, n, n-1, energyIn, n)
	}
}

// TestEnergyIntervalCalibration (issue 13): over 16 seeds of the twin with the H200's
// scatter (4.5 W about the fit) and 600 runs of the shaped 5 ms kernel, the energy per run's
// 95 % interval holds the true energy (on the channel's scale) in at least 14 (P = 0.96 for
// a true 95 %; 111 of 120, 92.5 %, over 120 profiles at 0.4 and 4.5 W while it was built), with the model exact and carrying no interval,
// so that what is checked is the rest: the fit's statistics, the runs' spread, the bins and
// the regularisation. The interval is not made wide to get there: its median half-width is
// under 1 % of the energy. Seed 7's samples had stamps past the grid's cut that landed on
// their neighbours' instants (energy −6 %); they are put back (Grid.Reassigned).
func TestEnergyIntervalCalibration(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	in, n, reassigned, absIn := 0, 0, 0, 0
	var half []float64
	for seed := uint64(1); seed <= 16; seed++ {
		su := setupConfig(t, h200Like(t, seed), "power.samples")
		m := su.sens
		m.CI = sensormodel.Intervals{}
		res, err := profile.Measure(context.Background(), su.clk, su.dev.Sensor("power.samples"), su.k, "shaped", profile.MeasureOptions{Sensor: m, Runs: 600, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		start := su.clk.Now() + time.Second
		su.clk.Sleep(context.Background(), time.Second)
		if _, _, err := su.k.Run(1); err != nil {
			t.Fatal(err)
		}
		g, _ := su.dev.Model("power.samples")
		trueE := g.Gain*su.dev.TrueEnergy(start, start+su.tex).Joules() + float64(g.Offset)*su.tex.Seconds()
		ok := res.LowJ <= trueE && trueE <= res.HighJ
		n++
		if ok {
			in++
		}
		// the absolute band holds the true energy itself, the board's gain error included
		if te := su.dev.TrueEnergy(start, start+su.tex).Joules(); te >= res.AbsoluteLowJ && te <= res.AbsoluteHighJ {
			absIn++
		}
		if res.Grid != nil {
			reassigned += res.Grid.Reassigned
		}
		half = append(half, (res.HighJ-res.LowJ)/2/res.EnergyJ)
		t.Logf("seed %d: %.4f J [%.4f, %.4f] (fit ±%.4f, runs ±%.4f, bins %.4f, regularisation %.5f), true %.4f J (%+.2f %%): %v",
			seed, res.EnergyJ, res.LowJ, res.HighJ, res.EnergyStatHalfWidthJ, res.EnergyJackknifeHalfWidthJ, res.EnergyBinsJ, res.EnergyRegularisationJ, trueE, 100*(res.EnergyJ-trueE)/trueE, ok)
	}
	sort.Float64s(half)
	med := half[len(half)/2]
	t.Logf("coverage %d of %d; median half-width %.2f %%; %d samples put back on their instants", in, n, 100*med, reassigned)
	if absIn < 15 {
		t.Errorf("the true energy inside the absolute band (energy_abs_low_j, energy_abs_high_j) in %d of %d, want >= 15", absIn, n)
	}
	if in < 14 || med > 0.01 || reassigned == 0 || math.IsNaN(med) {
		t.Errorf("coverage %d of %d (want >= 14), median half-width %.2f %% (want < 1 %%), %d samples reassigned", in, n, 100*med, reassigned)
	}
}

// slowFirst is a kernel whose first run (the timing run) takes longer than the rest, as a
// GPU's first launch may (1.58 against 1.17 ms on an H200).
type slowFirst struct {
	gpu.Kernel
	clk   *clock.Virtual
	extra time.Duration
	n     int
}

func (s *slowFirst) Run(n int) (time.Duration, time.Duration, error) {
	st, e, err := s.Kernel.Run(n)
	if s.n++; s.n == 1 && err == nil {
		_ = s.clk.Sleep(context.Background(), s.extra)
		e += s.extra
	}
	return st, e, err
}

// TestSlowFirstRun: the profile takes the kernel's length as the mean over its runs, not
// the timing run's: with a first run 0.5 ms longer, the energy per run still holds the
// truth (taking the first run's length added the baseline over 0.5 ms: +10.9 % on the
// H200's 0.5+0.5 ms kernel, results/nvidia-h200/2026-11-24-profile-two-phase run 2).
func TestSlowFirstRun(t *testing.T) {
	t.Parallel()
	su := newSetup(t, "h200", "power.samples")
	k := &slowFirst{Kernel: su.k, clk: su.clk, extra: 500 * time.Microsecond}
	res, err := profile.Measure(context.Background(), su.clk, su.dev.Sensor("power.samples"), k, "shaped", profile.MeasureOptions{Sensor: su.sens, Runs: 400})
	if err != nil {
		t.Fatal(err)
	}
	start := su.clk.Now() + time.Second
	su.clk.Sleep(context.Background(), time.Second)
	if _, _, err := su.k.Run(1); err != nil {
		t.Fatal(err)
	}
	g, _ := su.dev.Model("power.samples")
	trueE := g.Gain*su.dev.TrueEnergy(start, start+su.tex).Joules() + float64(g.Offset)*su.tex.Seconds()
	t.Logf("kernel %.3f ms (true %.3f ms); energy %.4f J [%.4f, %.4f], true %.4f J (%+.2f %%)", res.KernelS*1e3, su.tex.Seconds()*1e3, res.EnergyJ, res.LowJ, res.HighJ, trueE, 100*(res.EnergyJ/trueE-1))
	if math.Abs(res.KernelS-su.tex.Seconds()) > 1e-5 || !(res.LowJ <= trueE && trueE <= res.HighJ) || math.Abs(res.EnergyJ/trueE-1) > 0.01 {
		t.Errorf("kernel %.4f ms against %.4f ms; energy %.4f J [%.4f, %.4f] against %.4f J", res.KernelS*1e3, su.tex.Seconds()*1e3, res.EnergyJ, res.LowJ, res.HighJ, trueE)
	}
}
