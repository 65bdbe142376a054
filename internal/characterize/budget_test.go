package characterize

import (
	"context"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// quickBudgetS is what characterize --quick may take on the twin's clock: issue 35 asks for
// 180 s of GPU time on an H100 or H200, and a real board adds its own (the PTX JIT, the
// driver's calls; an H200 alone took 229 s where the twin's clock said 243 s before): 160 s
// leaves that room. Before issue 35 the twin's clock said 261 s on sim:h200.
const quickBudgetS = 160

// TestQuickFitsItsBudget: characterize --quick on the h100 and h200 twins runs every stage
// to its end within quickBudgetS of the twin's (virtual, deterministic) clock. Each stage's
// clock is logged: the before and after of issue 35 are in
// results/dev-vm/2026-11-28-quick-clock.
func TestQuickFitsItsBudget(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 22 s: two quick characterisations
	for _, preset := range []string{"h100", "h200"} {
		t.Run(preset, func(t *testing.T) {
			cfg, err := sim.Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			sm := simtest.OpenConfig(t, cfg)
			t.Cleanup(func() { sm.Sys.Close() })
			r, err := characterise(context.Background(), Options{Clock: sm.Clock, System: sm.Sys, Device: sm.Sys.Devices()[0], Quick: true})
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for _, s := range r.Stages {
				t.Logf("%s: %s %.1f s", s.Name, s.Status, s.ClockS)
				total += s.ClockS
				if s.Status != StatusDone {
					t.Errorf("stage %s: %s", s.Name, s.Status)
				}
			}
			t.Logf("total %.1f s on the twin's clock", total)
			if total > quickBudgetS || r.Incomplete {
				t.Errorf("characterize --quick took %.1f s of the twin's clock (budget %d s), incomplete %v", total, quickBudgetS, r.Incomplete)
			}
		})
	}
}
