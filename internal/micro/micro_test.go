package micro

import (
	"context"
	"math"
	"strings"
	"testing"

	"gpuwatt/internal/gpu/sim"
	"gpuwatt/internal/kernels"
	"gpuwatt/internal/loop"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/testkit/simtest"
)

// runSim runs the suite (or the named kernels) on a sim preset on a virtual clock.
// ideal removes the boards' gain and offset errors from the energy counter.
func runSim(t *testing.T, preset string, ideal bool, only ...string) (*Report, sim.Config) {
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
	rep, _, err := Run(context.Background(), m, dev, suite, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, cfg
}

// TestSimPerClassEnergies: the suite on the sim device reproduces the sim's configured
// energy per instruction of every class within 2 %, once pi0 (from the baseline kernel) is
// taken apart; with the board's gain error left in, within 2 % of gain x truth.
func TestSimPerClassEnergies(t *testing.T) {
	type run struct {
		preset string
		ideal  bool
	}
	for _, tc := range []run{{"h100", true}, {"h100", false}, {"h200", true}, {"a100", true}, {"v100", true}} {
		preset, ideal := tc.preset, tc.ideal
		rep, cfg := runSim(t, preset, ideal)
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
	// An uncoalesced access moves a 32-byte sector for every 4 bytes a thread uses: each
	// used byte costs eight moved ones.
	un := byName["coalesce.1/32"]
	if un.UsefulPerLaunch == 0 || math.Abs(un.PJPerUsefulByte/un.PJPerUnit-8) > 1e-9 || math.Abs(un.PerSecond/un.UsefulPerSecond-8) > 1e-9 {
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
