package sensorchar

import (
	"bytes"
	"context"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// quickRuns keeps the --quick characterisation of each preset (seed 1), which several tests
// read (none changes it): each runs once per test binary, whichever test asks first (the
// tests run side by side: quickMu guards the map, each entry's once its run).
var (
	quickMu   sync.Mutex
	quickRuns = map[string]*quickRun{}
)

type quickRun struct {
	once sync.Once
	rep  *Result
	dev  *sim.Device
	err  error
}

func runPreset(t *testing.T, preset string, quick bool) (*Result, *sim.Device) {
	t.Helper()
	if !quick {
		rep, dev, err := measurePreset(t, preset, false)
		if err != nil {
			t.Fatal(err)
		}
		return rep, dev
	}
	quickMu.Lock()
	r, ok := quickRuns[preset]
	if !ok {
		r = &quickRun{}
		quickRuns[preset] = r
	}
	quickMu.Unlock()
	r.once.Do(func() { r.rep, r.dev, r.err = measurePreset(t, preset, true) })
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.rep, r.dev
}

// measurePreset characterises the preset's twin on its own virtual clock.
func measurePreset(t *testing.T, preset string, quick bool) (*Result, *sim.Device, error) {
	cfg, err := sim.Preset(preset)
	if err != nil {
		return nil, nil, err
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, dev := sm.Clock, sm.Dev
	rep, err := Measure(context.Background(), clk, dev, dev, Options{Quick: quick})
	return rep, dev, err
}

// near reports whether got is within rel of want, or within abs.
func near(got, want, rel, abs float64) bool {
	return math.Abs(got-want) <= math.Max(rel*math.Abs(want), abs)
}

// TestIdentifyPresets checks, for every preset, that each channel's identified model
// matches the sim's configured one. Tolerances: T within 2 % (the median of ~100
// intervals of a ±1 % jittered period); W and tau within 10 % or 1 ms (the poll step on
// the virtual clock is 0.1 ms); delay within 1 ms or T/4 (a reading is published only at
// updates, and on the K20 the update instants jitter by ±45 % of T, so the delay trades
// against the phase of the updates by a fraction of T).
func TestIdentifyPresets(t *testing.T) {
	t.Parallel()
	// Without GPUWATT_SLOW_TESTS: a part-time boxcar board (v100: 10 ms of every 20) and an RC
	// one with jittered updates (k20), the cheapest two (h100 and h200 take 6x as long).
	for _, p := range testkit.Presets(t, sim.Presets(), "v100", "k20") {
		t.Run(p, func(t *testing.T) {
			rep, dev := runPreset(t, p, true)
			if len(rep.Channels) == 0 {
				t.Fatal("no channels")
			}
			for _, c := range rep.Channels {
				m, _ := dev.Model(c.Name)
				T := m.Period.Seconds()
				if !near(c.PeriodS, T, 0.02, 1e-3) {
					t.Errorf("%s: T = %.4f s, want %.4f", c.Name, c.PeriodS, T)
				}
				if !near(c.DelayS, m.Delay.Seconds(), 0, math.Max(1e-3, T/4)) {
					t.Errorf("%s: delay = %.4f s, want %.4f", c.Name, c.DelayS, m.Delay.Seconds())
				}
				switch {
				case m.Tau > 0 && m.Window > 0: // a boxcar of a lagged signal (h200 power.instant)
					if c.Kind != "boxcar" || !near(c.WindowS, m.Window.Seconds(), 0.10, 1e-3) || !near(c.TauS, m.Tau.Seconds(), 0.10, 1e-3) {
						t.Errorf("%s: %s, want boxcar window=%v tau=%v", c.Name, c.Model, m.Window, m.Tau)
					}
				case m.Tau > 0:
					if c.Kind != "rc" || !near(c.TauS, m.Tau.Seconds(), 0.10, 1e-3) {
						t.Errorf("%s: %s, want rc tau=%v", c.Name, c.Model, m.Tau)
					}
				case c.Kind != "boxcar" || !near(c.WindowS, m.Window.Seconds(), 0.10, 1e-3):
					t.Errorf("%s: %s, want boxcar window=%v", c.Name, c.Model, m.Window)
				}
				// The fitted shape's 95 % interval holds the twin's window or tau, and is
				// narrower than 10 % of it (the sim's noise is small against the steps).
				for _, iv := range []struct {
					ci   sensormodel.Interval
					true float64
				}{{c.model.CI.Window, m.Window.Seconds()}, {c.model.CI.Tau, m.Tau.Seconds()}} {
					if !iv.ci.Known() {
						continue
					}
					// Readings in whole watts (the MI300X's socket power) against a 1 ms
					// window leave the fit a wider interval: half the window.
					width := 0.1
					if m.Quantum >= 1 {
						width = 0.5
					}
					if iv.ci.Low > iv.true || iv.ci.High < iv.true || iv.ci.High-iv.ci.Low > width*iv.true {
						t.Errorf("%s: 95 %% interval [%.6f, %.6f] s, true %.6f s", c.Name, iv.ci.Low, iv.ci.High, iv.true)
					}
				}
				if m.Tau == 0 || m.Window == 0 {
					if !c.model.CI.Window.Known() && !c.model.CI.Tau.Known() {
						t.Errorf("%s: no interval for the fitted %s", c.Name, c.Model)
					}
				}
				// Coverage against the true model's: W/T for a boxcar, 2 tau/T for a lag;
				// a channel that sees less than PartialCoverage of the time is flagged.
				trueCov := 1.0
				if m.Window > 0 {
					trueCov = min(1, m.Window.Seconds()/T)
				} else if m.Tau > 0 {
					trueCov = min(1, 2*m.Tau.Seconds()/T)
				}
				if !near(c.Coverage, trueCov, 0.12, 0.01) {
					t.Errorf("%s: coverage %.3f, true %.3f", c.Name, c.Coverage, trueCov)
				}
				flagged := slices.ContainsFunc(c.Warnings, func(w status.Warning) bool { return strings.Contains(w.Message, "of the time") })
				if flagged != (c.Coverage < PartialCoverage) {
					t.Errorf("%s: coverage %.2f, flagged %v: %v", c.Name, c.Coverage, flagged, c.Warnings)
				}
				t.Logf("%-22s %s (true T=%v W=%v tau=%v delay=%v)", c.Name, c.Model, m.Period, m.Window, m.Tau, m.Delay)
			}

			// sensor.json round-trips, and its model gives the energy of a steady region
			// within 2 % of the truth the channel sees (gain × true energy + offset × time).
			var buf bytes.Buffer
			if err := correct.WriteProfile(&buf, rep.Profile()); err != nil {
				t.Fatal(err)
			}
			prof, err := correct.ParseProfile(buf.Bytes())
			if err != nil {
				t.Fatalf("ParseProfile: %v\n%s", err, buf.Bytes())
			}
			for _, c := range rep.Channels {
				m := prof.Channels[c.Name].Model
				if m != c.model {
					t.Errorf("%s: round trip gave %v, want %v", c.Name, m, c.model)
				}
				if c.Name != rep.Reference && c.Name != "power.usage" {
					continue
				}
				sm, _ := dev.Model(c.Name)
				a, b := rep.rec.step.start+500*time.Millisecond, rep.rec.step.end
				res := correct.Energy(correct.Channel(rep.Trace(), 0, c.Name), a, b, m, correct.Options{})
				want := sm.Gain*dev.TrueEnergy(a, b).Joules() + float64(sm.Offset)*(b-a).Seconds()
				if !near(res.Energy.Joules(), want, 0.02, 0) {
					t.Errorf("%s: energy of [%v, %v] = %.2f J, want %.2f J ± 2 %%", c.Name, a, b, res.Energy.Joules(), want)
				}
			}

			if len(rep.Anomalies) != len(rep.Channels) || !rep.Anomalies[0].Reference || rep.Anomalies[0].Channel != rep.Reference {
				t.Fatalf("anomaly tests on %d of %d channels, the first on %s (reference %s)", len(rep.Anomalies), len(rep.Channels), rep.Anomalies[0].Channel, rep.Reference)
			}
			for _, an := range rep.Anomalies {
				t.Logf("anomalies on %-20s doubling %.4f (naive %.4f), back-to-back %+.4f (naive %+.4f), tail %.1f J (naive %.1f J)",
					an.Channel, an.DoublingCorrected, an.DoublingNaive, an.BackToBackCorrected, an.BackToBackNaive, an.TailCorrectedJ, an.TailNaiveJ)
				if !slices.Contains(boardChannels, an.Channel) {
					continue // memory power: the load hardly moves it
				}
				for _, e := range []Energies{an.SingleE, an.DoubleE, an.First, an.Second} {
					if e.TrueJ != nil {
						t.Logf("   corrected %.2f J naive %.2f J true %.2f J: %+.2f %%", e.CorrectedJ, e.NaiveJ, *e.TrueJ, 100*(e.CorrectedJ / *e.TrueJ - 1))
					}
				}
				if !an.DoublingPass || !an.BackToBackPass {
					t.Errorf("anomalies on %s: doubling %.4f, back-to-back %+.4f", an.Channel, an.DoublingCorrected, an.BackToBackCorrected)
				}
				if an.Reference && an.TailTrueJ != nil && !near(an.TailCorrectedJ, *an.TailTrueJ, 0.15, 2) {
					t.Errorf("%s: tail %.1f J, true %.1f J", an.Channel, an.TailCorrectedJ, *an.TailTrueJ)
				}
			}
			if an := rep.Anomalies[0]; p == "k20" && (an.DoublingNaive < 2.1 || an.BackToBackNaive < 0.03) {
				t.Errorf("k20: the naive figures should show seed 003's anomalies: doubling %.3f, back-to-back %+.3f", an.DoublingNaive, an.BackToBackNaive)
			}
			if err := rep.Page().Render(&bytes.Buffer{}); err != nil {
				t.Error(err)
			}
		})
	}
}

// boardChannels are the channels that see the board's power.
var boardChannels = []string{"power.usage", "power.instant", "power.average", "power.samples"}

func TestScheduleWeights(t *testing.T) {
	t.Parallel()
	s := newSchedule([][2]float64{{1, 2}, {3, 4}})
	w := s.boxWeights(1.5, 1) // [0.5, 1.5]: half pre, half on
	if !near(w[statePre], 0.5, 0, 1e-12) || !near(w[stateOn], 0.5, 0, 1e-12) || w[stateOff] != 0 {
		t.Errorf("boxWeights = %v", w)
	}
	w = s.boxWeights(3.5, 2) // [1.5, 3.5]: 1 on, 1 off
	if !near(w[stateOn], 0.5, 0, 1e-12) || !near(w[stateOff], 0.5, 0, 1e-12) {
		t.Errorf("boxWeights = %v", w)
	}
	r := s.rcWeights([]float64{0, 2}, 1)
	if r[0] != [3]float64{1, 0, 0} || !near(r[1][stateOn], 1-math.Exp(-1), 0, 1e-12) {
		t.Errorf("rcWeights = %v", r)
	}
}

// someChannels is a device that offers only the named ones of its sensors.
type someChannels struct {
	*sim.Device
	names []string
}

func (d someChannels) Sensors() []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range d.Device.Sensors() {
		if slices.Contains(d.names, s.Channel().Name) {
			out = append(out, s)
		}
	}
	return out
}

// TestWeakStep: a channel the load hardly moves (the h100 sim's memory power does not follow
// the load) is flagged as too weak to tell its model, not as a bad fit; one it moves is not.
//
// By default the h100 twin offers only those two channels (issue 30: 2.0 -> 0.4 s of CPU):
// each channel's step, noise and verdict are its own, so a weak channel is told from a moved
// one as in the whole characterisation, which (every channel, the square waves for each of
// their update periods) runs where the slow tests run (CI).
func TestWeakStep(t *testing.T) {
	t.Parallel()
	var rep *Result
	if testkit.SlowOn() {
		rep, _ = runPreset(t, "h100", true)
	} else {
		sm := simtest.Open(t, "h100")
		var err error
		rep, err = Measure(context.Background(), sm.Clock, someChannels{sm.Dev, []string{"power.memory.average", "power.usage"}}, sm.Dev, Options{Quick: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	has := func(c *Channel, s string) bool {
		return slices.ContainsFunc(c.Warnings, func(w status.Warning) bool { return strings.Contains(w.Message, s) })
	}
	seen := 0
	for i := range rep.Channels {
		c := rep.Channels[i]
		switch c.Name {
		case "power.memory.average":
			seen++
			if c.StepW >= 0.5 || !has(c, "too little to tell its model") || has(c, "no model fits well") {
				t.Errorf("%s: step %.3f W, noise %.3f W, warnings %v", c.Name, c.StepW, c.NoiseW, c.Warnings)
			}
		case "power.usage":
			seen++
			if c.StepW < 100 || c.NoiseW <= 0 || c.NoiseW > 1 || has(c, "too little") {
				t.Errorf("%s: step %.3f W, noise %.3f W, warnings %v", c.Name, c.StepW, c.NoiseW, c.Warnings)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d of the 2 channels found", seen)
	}
}

// TestAnomalyTable: the anomaly tests' table gives each figure with its verdict.
func TestAnomalyTable(t *testing.T) {
	t.Parallel()
	a := &Anomalies{Channel: "power.samples", Reference: true, Model: "rc:tau=14ms", DoublingCorrected: 2.0099, DoublingNaive: 2.0266, DoublingPass: true,
		BackToBackCorrected: 0.001036, BackToBackNaive: -0.0301, BackToBackPass: false, IdleW: 122.47,
		TailCorrectedJ: 1.95, TailCorrectedS: 0.25, TailShareOfKernel: 0.0054, KernelCorrectedJ: 363.4, TailNaiveJ: 5.27, TailNaiveS: 0.1}
	tab := AnomalyTable([]*Anomalies{a})
	want := [][]string{
		{"power.samples (reference)", "2.010× | 2.027×", "pass", "+0.10 % | -3.01 %", "FAIL", "1.9 J in 0.25 s | 5.3 J in 0.10 s", "–"},
	}
	for i, row := range want {
		if !slices.Equal(tab.Rows[i], row) {
			t.Errorf("row %d: %q, want %q", i, tab.Rows[i], row)
		}
	}
}

// TestAnomaliesLateAverage: the H200's 1 s average is published ~20 ms late, with about
// 1.5 W of noise (FACTS.md, results/nvidia-h200); on the twin with that delay and noise
// the corrected power.usage and power.average pass the doubling and back-to-back tests,
// the naive ones fail doubling, and so do models perturbed as far as the real card's
// fits spread. (The twin's step-shaped truth does not reproduce the real card's 1.91×:
// TestAnomaliesH200Trace holds that on the card's own recording.)
func TestAnomaliesLateAverage(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"power.usage", "power.average"} {
		sc := cfg.Sensors[n]
		sc.Model.Delay = 20 * time.Millisecond
		sc.Model.Noise = 1.5
		cfg.Sensors[n] = sc
	}
	sm := simtest.OpenConfig(t, cfg)
	rep, err := Measure(context.Background(), sm.Clock, sm.Dev, sm.Dev, Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range rep.Anomalies {
		if a.Channel != "power.usage" && a.Channel != "power.average" {
			continue
		}
		seen++
		t.Logf("%s (%s): doubling %.4f (naive %.4f), back-to-back %+.4f (naive %+.4f)", a.Channel, a.Model, a.DoublingCorrected, a.DoublingNaive, a.BackToBackCorrected, a.BackToBackNaive)
		if !a.DoublingPass || !a.BackToBackPass {
			t.Errorf("%s: corrected doubling %.4f, back-to-back %+.4f: want 2.00 ± 0.04 and ± 2 %%", a.Channel, a.DoublingCorrected, a.BackToBackCorrected)
		}
		if math.Abs(a.DoublingNaive-2) < 0.2 {
			t.Errorf("%s: naive doubling %.4f: a 1 s window should fail it", a.Channel, a.DoublingNaive)
		}
	}
	if seen != 2 {
		t.Fatalf("anomaly tests on %d of the 2 average channels", seen)
	}
	// The same with the fitted model perturbed as far as the real card's fits spread
	// (window ±0.7 %, delay ±15 %: twice the intervals that the characterisation states for them): the deconvolution must not amplify it.
	for _, c := range rep.Channels {
		if c.Name != "power.usage" {
			continue
		}
		for _, f := range []struct{ w, d float64 }{{0.993, 1}, {1.007, 1}, {1, 0.85}, {1, 1.15}} {
			p := *c
			p.model.Window = time.Duration(float64(c.model.Window) * f.w)
			p.model.Delay = time.Duration(float64(c.model.Delay) * f.d)
			p.Model = p.model.String()
			a := anomalies(rep.Trace(), 0, &p, rep.rec, sm.Dev)
			for _, e := range []Energies{a.SingleE, a.DoubleE, a.First, a.Second} {
				t.Logf("   corrected %.2f J naive %.2f J true×gain %.2f J: %+.2f %%", e.CorrectedJ, e.NaiveJ, 0.985*(*e.TrueJ), 100*(e.CorrectedJ/(0.985**e.TrueJ)-1))
			}
			t.Logf("%s (%s): doubling %.4f (naive %.4f), back-to-back %+.4f (naive %+.4f)", a.Channel, a.Model, a.DoublingCorrected, a.DoublingNaive, a.BackToBackCorrected, a.BackToBackNaive)
			if !a.DoublingPass || !a.BackToBackPass {
				t.Errorf("%s: corrected doubling %.4f, back-to-back %+.4f: want 2.00 ± 0.04 and ± 2 %%", a.Model, a.DoublingCorrected, a.BackToBackCorrected)
			}
		}
	}
}

// TestAnomaliesH200Trace runs the anomaly tests on real H200 recordings (the trace and the
// sensor.json fitted to it) on every power channel:
//
//   - results/nvidia-h200/2026-11-21-sensor (an older Sampler): its 1 s averages gave 1.91×
//     and −6.4 % corrected when the deconvolution ran back through every earlier load to
//     the start of the trace; it now stops where the power was steady, and doubling passes.
//     Back-to-back on them is held to ±5 % there (+3.5–3.8 %): the second run starts where the
//     first's average has just ended its ramp, both region edges sit on kinks of the
//     readings that a 100 ms update resolves only to about ΔP·T/4 each, and the card's power
//     is not a clean step (docs/sensor.md).
//   - results/nvidia-h200/2026-11-24-crosscheck run 4 sensor1 (GPU-ef442c51, c402207): both
//     tests pass on every channel, the 1 s averages within the tests' own bounds (doubling
//     2.00 ± 0.04, back-to-back ± 2 %: 1.996× and +1.13 %).
func TestAnomaliesH200Trace(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir        string
		backToBack float64 // the bound on the 1 s averages' corrected back-to-back
	}{
		{"../../results/nvidia-h200/2026-11-21-sensor/sensor", 0.05},
		{"../../results/nvidia-h200/2026-11-24-crosscheck/run4-GPU-ef442c51/sensor1", 0.02},
	} {
		t.Run(filepath.Base(filepath.Dir(c.dir))+"/"+filepath.Base(c.dir), func(t *testing.T) {
			anomaliesOnTrace(t, c.dir, c.backToBack)
		})
	}
}

func anomaliesOnTrace(t *testing.T, dir string, backToBack float64) {
	tr, err := trace.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dir + "/sensor.json")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := correct.ParseProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	marks := map[string]time.Duration{}
	for _, m := range tr.Meta.Marks {
		marks[m.Name] = time.Duration(math.Round(m.T * 1e9))
	}
	seg := func(name string) segment { return segment{name, marks[name+".start"], marks[name+".end"]} }
	rec := &recording{tr: tr, idle: seg("idle"), runs: map[string]segment{}, tailEnd: time.Duration(tr.Meta.Duration * 1e9)}
	for _, r := range []string{"A", "B", "C", "D"} {
		rec.runs[r] = seg("run." + r)
	}
	for _, name := range []string{"power.samples", "power.instant", "power.usage", "power.average"} {
		m := prof.Channels[name].Model
		s := correct.Channel(tr, 0, name)
		c := &Channel{Name: name, Model: m.String(), model: m, PeriodS: m.Period.Seconds(),
			IdleW: meanIn(s, rec.idle.start, rec.idle.end), LoadW: meanIn(s, marks["step.start"]+3*time.Second, marks["step.end"])}
		a := anomalies(tr, 0, c, rec, nil)
		t.Logf("%-14s doubling %.3f× (naive %.3f×), back-to-back %+.2f %% (naive %+.2f %%)", name, a.DoublingCorrected, a.DoublingNaive, 100*a.BackToBackCorrected, 100*a.BackToBackNaive)
		if name == "power.instant" {
			continue // shown: a 30 ms window every 100 ms samples a run's edges, it does not see them
		}
		if !a.DoublingPass {
			t.Errorf("%s: doubling %.3f× corrected, want 2.00 ± 0.04", name, a.DoublingCorrected)
		}
		if math.Abs(a.BackToBackCorrected) > backToBack {
			t.Errorf("%s: back-to-back %+.2f %% corrected, want within ± %.0f %%", name, 100*a.BackToBackCorrected, 100*backToBack)
		}
		if name != "power.samples" && math.Abs(a.DoublingNaive-2) < 0.3 {
			t.Errorf("%s: naive doubling %.3f×: the 1 s window should fail it", name, a.DoublingNaive)
		}
	}
}
