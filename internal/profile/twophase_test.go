package profile_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// TestTwoPhaseKnownShape (issue 13): the two-phase kernel (fp32.fma, then dram.read) on the
// h200 twin's power.samples, profiled through a model 5 % off in tau and 10 % in delay
// (offModel: 13.3 ms and 3.3 ms against the twin's 14 and 3, with ±15 % intervals), over a
// sweep of phase lengths. Where a phase has bins clear of its edges, its profile lies
// within 5 % of its steady power (measured apart, over long back-to-back runs of that
// phase alone); the transition is reproduced within the stated resolution and placed
// within the stated placement plus half the resolution. With the delay known to ±0.5 ms
// (the model's interval), phases of 2 ms are resolved and of 1 ms not (a phase needs bins
// clear of both its edges by the placement plus half the resolution); the shortest
// resolved is logged (docs/profile.md).
func TestTwoPhaseKnownShape(t *testing.T) {
	t.Parallel()
	shortest := math.Inf(1)
	// By default the two shortest, which decide the shortest phase resolved; 4+4 ms (the
	// same checks on phases with twice the bins clear of their edges) where the slow tests
	// run (CI), issue 30 (0.8 -> 0.5 s of CPU). TestTransitionWithinStatedResolution profiles
	// 4+4 ms by default.
	kernels := []string{"2ms+2ms", "1ms+1ms"}
	if testkit.SlowOn() {
		kernels = append([]string{"4ms+4ms"}, kernels...)
	}
	for _, k := range kernels {
		cfg, err := sim.Preset("h200")
		if err != nil {
			t.Fatal(err)
		}
		sm := simtest.OpenConfig(t, cfg)
		base, _ := sm.Dev.Model("power.samples")
		spec := correct.ModelSpec(offModel(t, base.Shape(), 0.95, 1.10), "a model 5 % off in tau and 10 % in delay")
		o := profile.DefaultOptions()
		o.Kernel, o.Sensor, o.SensorFrom = k, &spec, "test"
		res, err := o.Run(context.Background(), device.Env{System: sm.Sys, Clock: sm.Clock})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Phases) != 2 || res.Transition == nil {
			t.Fatalf("%s: phases %+v, transition %+v, warnings %v", k, res.Phases, res.Transition, res.Warnings)
		}
		tr := res.Transition
		t.Logf("%s: resolution %.3g ms, placement %.3g ms, bins %.3g ms; transition at %.3f ms, shown at %.3f ms over %.3g ms; energy %.4f J [%.4f, %.4f], long runs %.4f J",
			k, res.ResolutionS*1e3, res.PlacementS*1e3, res.BinS*1e3, tr.AtS*1e3, tr.MidS*1e3, tr.WidthS*1e3, res.EnergyJ, res.LowJ, res.HighJ, res.LongRun.EnergyPerLaunchJ)
		both := true
		for _, p := range res.Phases {
			t.Logf("  %s [%.3f, %.3f] ms: steady %.1f W, profile %.1f W ±%.1f W over %d bins (%+.2f %%), resolved %v", p.Name, p.StartS*1e3, p.EndS*1e3, p.SteadyW, p.ProfileW, p.BandW, p.Bins, 100*p.Diff, p.Resolved)
			if p.Bins > 0 && math.Abs(p.Diff) > profile.MaxPhaseDiff {
				t.Errorf("%s: phase %s: profile %.1f W against steady %.1f W (%+.1f %%)", k, p.Name, p.ProfileW, p.SteadyW, 100*p.Diff)
			}
			both = both && p.Resolved
		}
		if k == "4ms+4ms" || k == "2ms+2ms" {
			if !both {
				t.Errorf("%s: the phases are not resolved", k)
			}
		}
		if both {
			shortest = min(shortest, res.Phases[0].EndS-res.Phases[0].StartS, res.Phases[1].EndS-res.Phases[1].StartS)
			if tr.WidthS > res.ResolutionS || math.Abs(tr.MidS-tr.AtS) > res.PlacementS+res.ResolutionS/2 {
				t.Errorf("%s: the transition at %.3f ms shown at %.3f ms over %.3g ms: beyond the stated resolution %.3g ms and placement %.3g ms", k, tr.AtS*1e3, tr.MidS*1e3, tr.WidthS*1e3, res.ResolutionS*1e3, res.PlacementS*1e3)
			}
		}
	}
	t.Logf("shortest phase resolved: %.3g ms", shortest*1e3)
	if shortest < 1.2e-3 || shortest > 2.1e-3 {
		t.Errorf("shortest phase resolved %.3g ms: want 2 ms phases resolved and 1 ms ones not (docs/profile.md)", shortest*1e3)
	}
}
