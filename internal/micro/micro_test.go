package micro

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// runSim runs the suite (or the named kernels) on a sim preset on a virtual clock.
// ideal removes the boards' gain and offset errors from the energy counter.
func runSim(t *testing.T, preset string, ideal bool, only ...string) (*Result, sim.Config) {
	t.Helper()
	rep, cfg, _ := runSimDev(t, preset, ideal, only...)
	return rep, cfg
}

// runSimDev is runSim that also returns the device, for its truth.
func runSimDev(t *testing.T, preset string, ideal bool, only ...string) (*Result, sim.Config, *sim.Device) {
	t.Helper()
	js := `{"preset":"` + preset + `"}`
	if ideal {
		js = `{"preset":"` + preset + `","sensors":{"energy.total":{"gain":1}}}`
	}
	cfg, err := sim.LoadConfig(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys, dev := sm.Clock, sm.Sys, sm.Dev
	p := dev.Props()
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kernels.Device{CC: p.ComputeCapability, SMs: p.SMs, ClockHz: p.MaxSMClockHz}})
	if err != nil {
		t.Fatal(err)
	}
	if len(only) > 0 {
		if suite, err = kernels.ByName(suite, only...); err != nil {
			t.Fatal(err)
		}
	}
	m, err := loop.Start(context.Background(), clk, sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Measure(context.Background(), m, dev, suite, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, cfg, dev
}

// h200Run is the whole suite on the h200 twin with its board errors in (runSimDev(t,
// "h200", false)), shared by TestRowIntervalsHoldTruth and TestSimPerClassEnergies (issue
// 30): they check different figures of it (the rows' intervals against the truth; the
// energies per instruction within 2 % of gain × truth), and one suite run is a third of
// the package's CPU.
var h200Run struct {
	once sync.Once
	rep  *Result
	cfg  sim.Config
	dev  *sim.Device
}

func sharedH200Run(t *testing.T) (*Result, sim.Config, *sim.Device) {
	t.Helper()
	r := &h200Run
	r.once.Do(func() { r.rep, r.cfg, r.dev = runSimDev(t, "h200", false) })
	if r.rep == nil {
		t.Fatal("the shared h200 suite run failed (see the first test that ran it)")
	}
	return r.rep, r.cfg, r.dev
}

// TestRowIntervalsHoldTruth: each row's energy interval holds the twin's true energy on
// the counter's scale (its board gain: the interval leaves the gain error out), and each
// arithmetic row's pJ per instruction above pi0 interval holds the configured truth × gain,
// on a board with its gain and offset errors in.
func TestRowIntervalsHoldTruth(t *testing.T) {
	t.Parallel()
	rep, cfg, dev := sharedH200Run(t)
	ctr, _ := dev.Model("energy.total")
	n, in, opIn, ops := 0, 0, 0, 0
	for _, r := range rep.Rows {
		if r.HighJ <= r.LowJ {
			t.Errorf("%s: no energy interval [%g, %g]", r.Name, r.LowJ, r.HighJ)
			continue
		}
		from, to := time.Duration(r.StartS*1e9), time.Duration(r.EndS*1e9)
		truth := ctr.Gain * dev.TrueEnergy(from, to).Joules()
		n++
		if r.LowJ <= truth && truth <= r.HighJ {
			in++
		} else {
			t.Logf("%s: truth %.4f J outside [%.4f, %.4f] J (%+.3f %%)", r.Name, truth, r.LowJ, r.HighJ, 100*(r.EnergyJ/truth-1))
		}
		if !(r.MeanPowerLowW < r.MeanPowerW && r.MeanPowerW < r.MeanPowerHighW) {
			t.Errorf("%s: mean power %.2f W outside its interval [%.2f, %.2f]", r.Name, r.MeanPowerW, r.MeanPowerLowW, r.MeanPowerHighW)
		}
		if r.Unit != "op" {
			continue
		}
		if e, ok := cfg.OpEnergy(kernels.OpClass(r.What)); ok {
			ops++
			want := ctr.Gain * e.Joules() * 1e12
			if r.PJPerUnitAbovePi0Low <= want && want <= r.PJPerUnitAbovePi0High {
				opIn++
			} else {
				t.Logf("%s: %.4f pJ above pi0, interval [%.4f, %.4f], truth %.4f", r.Name, r.PJPerUnitAbovePi0, r.PJPerUnitAbovePi0Low, r.PJPerUnitAbovePi0High, want)
			}
		}
	}
	if n < 20 || float64(in) < 0.9*float64(n) {
		t.Errorf("truth inside the row's energy interval in %d of %d rows, want at least 90 %%", in, n)
	}
	if ops < 14 || float64(opIn) < 0.9*float64(ops) {
		t.Errorf("truth inside the pJ-above-pi0 interval in %d of %d arithmetic rows, want at least 90 %%", opIn, ops)
	}
}

// TestSimPerClassEnergies: the suite on the sim device reproduces the sim's configured
// energy per instruction of every class within 2 %, once pi0 (from the baseline kernel) is
// taken apart; with the board's gain error left in, within 2 % of gain x truth.
//
// By default (issue 30: 2.4 -> 0.6 s of CPU) on h100 with an exact counter and on h200 with
// its board errors in (TestRowIntervalsHoldTruth's run, shared): the method, pi0 taken apart
// and the gain carried, is the same on every board, and these two hold both of its cases;
// the other boards and cases (h100 with its errors, h200 exact, a100, v100) run where the
// slow tests run (CI).
func TestSimPerClassEnergies(t *testing.T) {
	t.Parallel()
	type run struct {
		preset string
		ideal  bool
		slow   bool
	}
	for _, tc := range []run{{"h100", true, false}, {"h100", false, true}, {"h200", true, true}, {"a100", true, true}, {"v100", true, true}, {"h200", false, false}} {
		if tc.slow && !testkit.SlowOn() {
			continue
		}
		preset, ideal := tc.preset, tc.ideal
		var rep *Result
		var cfg sim.Config
		if preset == "h200" && !ideal {
			rep, cfg, _ = sharedH200Run(t)
		} else {
			rep, cfg = runSim(t, preset, ideal)
		}
		gain := 1.0
		if !ideal {
			m, _ := sim.Preset(preset)
			gain = m.Sensors["energy.total"].Model.Gain
		}
		if math.Abs(rep.Pi0W/(gain*cfg.Pi0.Watts())-1) > 0.01 {
			t.Errorf("%s ideal=%v: pi0 %.2f W from %s, truth %.2f W", preset, ideal, rep.Pi0W, rep.Pi0Source, gain*cfg.Pi0.Watts())
		}
		n := 0
		for _, r := range rep.Rows {
			if r.Unit != "op" {
				continue
			}
			truth, ok := cfg.OpEnergy(kernels.OpClass(r.What))
			if !ok {
				t.Errorf("%s: no configured energy", r.What)
				continue
			}
			want := gain * truth.Joules() * 1e12
			if rel := r.PJPerUnitAbovePi0/want - 1; math.Abs(rel) > 0.02 {
				t.Errorf("%s ideal=%v %s: %.3f pJ per instruction above pi0, truth %.3f (%+.1f %%)", preset, ideal, r.Name, r.PJPerUnitAbovePi0, want, 100*rel)
			}
			n++
		}
		if n < 14 {
			t.Errorf("%s: only %d arithmetic rows", preset, n)
		}
	}
}

func TestSimThroughputAndMemory(t *testing.T) {
	t.Parallel()
	rep, cfg := runSim(t, "h200", true, "baseline", "fp32.fma", "fp64.fma", "dram.copy", "coalesce.1/32")
	byName := map[string]Row{}
	for _, r := range rep.Rows {
		byName[r.Name] = r
	}
	fma := byName["fp32.fma"]
	if fma.SpecPerCycleSM != 128 || math.Abs(fma.PerCycleSM/128-1) > 0.02 {
		t.Errorf("fp32.fma: %.1f per cycle per SM, spec %.0f", fma.PerCycleSM, fma.SpecPerCycleSM)
	}
	if peak := 2 * 128 * float64(cfg.SMs) * cfg.MaxSMClock.Hz(); math.Abs(fma.FlopsPerSecond/peak-1) > 0.02 {
		t.Errorf("fp32.fma %.2f TFLOP/s, sim peak %.2f", fma.FlopsPerSecond/1e12, peak/1e12)
	}
	// An uncoalesced access moves a 64-byte DRAM unit on sm_90 (kernels.DRAMFetchBytes) for
	// every 4 bytes a thread uses: each used byte costs sixteen moved ones.
	un := byName["coalesce.1/32"]
	if un.UsefulPerLaunch == 0 || math.Abs(un.PJPerUsefulByte/un.PJPerUnit-16) > 1e-9 || math.Abs(un.PerSecond/un.UsefulPerSecond-16) > 1e-9 {
		t.Errorf("coalesce.1/32: %d useful bytes, %.4g pJ per useful byte vs %.4g per moved byte", un.UsefulPerLaunch, un.PJPerUsefulByte, un.PJPerUnit)
	}
	if byName["dram.copy"].UsefulPerLaunch != 0 {
		t.Error("dram.copy moves only what it uses: no useful-byte figures")
	}
	cp := byName["dram.copy"]
	if cp.Unit != "B" || cp.What != "dram" {
		t.Fatalf("dram.copy row %+v", cp)
	}
	bw := cfg.Bandwidth[kernels.DRAM]
	if math.Abs(cp.PerSecond/bw-1) > 0.02 {
		t.Errorf("dram.copy %.3g B/s, sim bandwidth %.3g", cp.PerSecond, bw)
	}
	be, _ := cfg.ByteEnergy(kernels.DRAM)
	if rel := cp.PJPerUnitAbovePi0/(be.Joules()*1e12) - 1; math.Abs(rel) > 0.02 {
		t.Errorf("dram.copy %.2f pJ/B above pi0, truth %.2f", cp.PJPerUnitAbovePi0, be.Joules()*1e12)
	}
}

// TestRowReadsOldPartialKey: a results.json written before issue 27 said a partial
// interval under "interval_partial"; it still reads as Partial, and a row writes it as
// "partial" beside the interval.
func TestRowReadsOldPartialKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"energy_j": 2, "energy_low_j": 1, "energy_high_j": 3, "interval_partial": true}`, true},
		{`{"energy_j": 2, "interval_partial": false}`, false},
		{`{"energy_j": 2, "partial": true}`, true},
		{`{"energy_j": 2}`, false},
	} {
		var r Row
		if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
			t.Fatal(err)
		}
		if r.Partial != tc.want || r.EnergyJ != 2 {
			t.Errorf("%s: partial %v, energy %g; want %v, 2", tc.in, r.Partial, r.EnergyJ, tc.want)
		}
	}
	b, err := json.Marshal(Row{Interval: energy.Interval{EnergyJ: 2, Partial: true}})
	if err != nil || !strings.Contains(string(b), `"partial":true`) || strings.Contains(string(b), "interval_partial") {
		t.Errorf("written as %s (%v)", b, err)
	}
}
