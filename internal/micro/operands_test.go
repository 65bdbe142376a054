package micro

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// TestSimOperandPatterns: under every operand pattern, micro's energy per instruction above
// pi0 recovers the twin's truth for that pattern (the class's energy times the twin's
// operand-data factor for the kernel's data) within its interval and 2 %, on a board with its
// gain and offset errors in (truth on the counter's scale); the data effect random/zeros holds
// the twin's ratio in its interval, and zeros is resolved from random.
func TestSimOperandPatterns(t *testing.T) {
	t.Parallel()
	cfg, err := sim.LoadConfig(strings.NewReader(`{"preset":"h200"}`))
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	p := sm.Dev.Props()
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kernels.Device{CC: p.ComputeCapability, SMs: p.SMs, ClockHz: p.MaxSMClockHz},
		Operands: kernels.OperandPatterns})
	if err != nil {
		t.Fatal(err)
	}
	if suite, err = kernels.ByName(suite, "baseline", "fp32.fma", "fp64.fma", "int32.add", "bf16.fma"); err != nil {
		t.Fatal(err)
	}
	if len(suite) != 1+3+3+2+3 {
		t.Fatalf("%d kernels, want 12 (each class under each of its patterns)", len(suite))
	}
	descs := map[string]kernels.Descriptor{}
	for _, d := range suite {
		descs[d.Name] = d
	}
	m, err := loop.Start(context.Background(), sm.Clock, sm.Sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Measure(context.Background(), m, sm.Dev, suite, Options{Loop: loop.Options{MinUpdates: 20}})
	if err != nil {
		t.Fatal(err)
	}
	ctr, _ := sm.Dev.Model("energy.total")
	truth := func(r Row) float64 {
		e, _ := cfg.OpEnergy(kernels.OpClass(r.What))
		return ctr.Gain * e.Joules() * 1e12 * cfg.DataFactor(descs[r.Name].Data)
	}
	n := 0
	for _, r := range rep.Rows {
		if r.Unit != "op" {
			continue
		}
		n++
		if r.Operands == "" || r.Operands != string(descs[r.Name].Data.Pattern) {
			t.Errorf("%s: operands %q", r.Name, r.Operands)
		}
		want := truth(r)
		if rel := r.PJPerUnitAbovePi0/want - 1; math.Abs(rel) > 0.02 || r.PJPerUnitAbovePi0Low > want || want > r.PJPerUnitAbovePi0High {
			t.Errorf("%s: %.3f pJ above pi0 [%.3f, %.3f], truth %.3f (%+.1f %%)", r.Name, r.PJPerUnitAbovePi0,
				r.PJPerUnitAbovePi0Low, r.PJPerUnitAbovePi0High, want, 100*rel)
		}
	}
	if n != 11 {
		t.Errorf("%d arithmetic rows, want 11", n)
	}
	if len(rep.Data) != 4 {
		t.Fatalf("data effect of %d classes, want 4: %+v", len(rep.Data), rep.Data)
	}
	for _, d := range rep.Data {
		var zeros, random Row
		for _, r := range rep.Rows {
			if r.What == d.Class && r.Operands == "zeros" {
				zeros = r
			}
			if r.What == d.Class && r.Operands == "random" {
				random = r
			}
		}
		want := truth(random) / truth(zeros)
		lo, hi := d.RandomOverZerosAbovePi0CI[0], d.RandomOverZerosAbovePi0CI[1]
		if !(lo <= want && want <= hi) || math.Abs(d.RandomOverZerosAbovePi0/want-1) > 0.03 {
			t.Errorf("%s: random/zeros above pi0 %.3f [%.3f, %.3f], truth %.3f", d.Class, d.RandomOverZerosAbovePi0, lo, hi, want)
		}
		if zeros.PJPerUnitAbovePi0High >= random.PJPerUnitAbovePi0Low {
			t.Errorf("%s: zeros [%.3f, %.3f] and random [%.3f, %.3f] overlap", d.Class, zeros.PJPerUnitAbovePi0Low, zeros.PJPerUnitAbovePi0High,
				random.PJPerUnitAbovePi0Low, random.PJPerUnitAbovePi0High)
		}
		if want < 1.5 {
			t.Errorf("%s: the twin's data effect %.2f is too small to test", d.Class, want)
		}
		t.Logf("%s: random/zeros %.3f [%.3f, %.3f] above pi0, in all %.3f; truth %.3f", d.Class, d.RandomOverZerosAbovePi0, lo, hi, d.RandomOverZeros, want)
	}
}
