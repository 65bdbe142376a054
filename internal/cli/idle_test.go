package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/micro"
)

// TestIdleLevelsPerVerb checks each verb's idle figure against the twin's truth
// (gpu.Truth's TrueIdle) on sim:h200, whose idle at rest (78 W) and active idle (121 W)
// differ as the H200's do: measure's baseline, before the command opens its CUDA context,
// is idle at rest; micro's idle recording, with gpuwatt's context open, is active idle.
// Each names its level (idle_level). The figures are read through the board's sensors,
// whose gain and offset (and the counter's calibration) move them by a few per cent.
func TestIdleLevelsPerVerb(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clock.NewVirtual(time.Time{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	truth := sys.Devices()[0].(gpu.Truth).TrueIdle()
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.04*want }

	a, _, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "measure")
	if code := a.Main(ctx, []string{"measure", "--device", "sim:h200", "--out", out, "--", "fake", "3s"}); code != 0 {
		t.Fatalf("measure: exit %d: %s", code, stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if g := sum.GPUs[0]; !near(g.IdlePowerW, float64(truth.AtRest)) || g.IdleLevel != "idle at rest" {
		t.Errorf("measure: idle %.2f W (%q), want idle at rest %v (active idle is %v)", g.IdlePowerW, g.IdleLevel, truth.AtRest, truth.Active)
	}

	a, _, stderr, ctx = testApp(t)
	out = filepath.Join(t.TempDir(), "micro")
	if code := a.Main(ctx, []string{"micro", "--device", "sim:h200", "--only", "baseline", "--out", out}); code != 0 {
		t.Fatalf("micro: exit %d: %s", code, stderr)
	}
	var rep micro.Result
	readJSON(t, filepath.Join(out, "results.json"), &rep)
	if !near(rep.IdlePowerW, float64(truth.Active)) || rep.IdleLevel != "active idle" {
		t.Errorf("micro: idle %.2f W (%q), want active idle %v (idle at rest is %v)", rep.IdlePowerW, rep.IdleLevel, truth.Active, truth.AtRest)
	}
}

// TestEnergyHalfDoneValues: the twin's power.instant publishes a half-done value ~3 ms
// before 30 % of its updates, as the H200's does; a fast poller records them, and energy
// drops them and says how many, apart from the stale repeats.
func TestEnergyHalfDoneValues(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "measure")
	if code := a.Main(ctx, []string{"measure", "--device", "sim:h200", "--poll", "1ms", "--channels", "power.instant,energy.total", "--out", out, "--", "fake", "3s"}); code != 0 {
		t.Fatalf("measure: exit %d: %s", code, stderr)
	}
	v := energyJSON(t, "--trace", out, "--channel", "power.instant")
	n, _ := v["half_done_dropped"].(float64)
	d, _ := v["dropped"].(float64)
	// About 30 % of the ~50 updates of the recording.
	if n < 5 || n > 30 || d < n {
		t.Errorf("half-done values dropped %v (of %v dropped), want ~30 %% of the updates", n, d)
	}
	a, stdout, _, ctx := testApp(t)
	if code := a.Main(ctx, []string{"energy", "--trace", out, "--channel", "power.instant"}); code != 0 || !strings.Contains(stdout.String(), "half-done values dropped") {
		t.Errorf("exit %d, text:\n%s", code, stdout)
	}
}
