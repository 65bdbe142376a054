package region

import (
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// TestSharedWarningsToldOnce: a run of many kernels where every kernel missed updates of
// the energy counter and several disagree with the 1 s moving average gives one line for
// each (with the count out of the kernels and the range of the figures), not one per kernel;
// a warning only one kernel has keeps its own full line.
func TestSharedWarningsToldOnce(t *testing.T) {
	t.Parallel()
	const src = "power.samples (calibrated to energy.total)"
	var ws []status.Warning
	kernels := []string{"int32.add", "int32.mad", "fp32.fma", "fp64.fma", "dram.copy", "l2.read"}
	for i, k := range kernels {
		own := []status.Warning{missedUpdates("energy.total", 12+i, 95, 0.73, 0.1)}
		if i%2 == 0 { // three of six kernels
			dur := energy.FmtDur(2 + float64(i)/100)
			own = append(own, disagreement("power.usage", src, 1000+30*float64(i), 1000, lagReason("power.usage", dur), lagReason("power.usage", "short")))
		}
		if k == "l2.read" {
			own = append(own, status.Warning{Code: CodeThrottling, Key: "throttling: x", Message: "throttling: the board hit its power limit during 4 % of the run (sw_power_cap)"})
		}
		ws = append(ws, status.WithSubject(k, own)...)
	}
	got := status.Group(ws, len(kernels))
	want := []string{
		"energy.total: updates were missed (poll interval 730 ms, update period 100 ms) (on 6 of 6, 12 … 17 missed updates: int32.add, int32.mad, fp32.fma, fp64.fma, dram.copy, l2.read)",
		"power.usage and " + src + " disagree by more than 5 %: power.usage is a moving average over about 1 s: it lags the load, so over a short run energy drawn at the start is seen late and energy drawn at the end falls after the run (on 3 of 6, 0.0 … 12.0 %: int32.add, fp32.fma, dram.copy)",
		"l2.read: throttling: the board hit its power limit during 4 % of the run (sw_power_cap)",
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestLegacy: the two warnings of an old results.json that runs repeat per kernel get the
// code, key and figure a new run gives them (so they group alike); others stay as they are.
func TestLegacy(t *testing.T) {
	t.Parallel()
	old := []status.Warning{
		{Message: "power.usage and power.samples (calibrated to energy.total) disagree by -9.1 % (988.1 J vs 1086.9 J): power.usage is a moving average over about 1 s: it lags the load, so over a 2.01 s run energy drawn at the start is seen late and energy drawn at the end falls after the run"},
		{Message: "energy.total: about 12 of 107 updates were missed (poll interval 730 ms, update period 100 ms)"},
		{Message: "throttling: clocks were lowered during 3 % of the run (hw_slowdown)"},
		{Code: CodeMissedUpdates, Key: "kept", Message: "energy.total: about 1 of 2 updates were missed (poll interval 1 s, update period 100 ms)"},
	}
	got := Legacy(old)
	newDis := disagreement("power.usage", "power.samples (calibrated to energy.total)", 988.1, 1086.9, lagReason("power.usage", "2.01 s"), lagReason("power.usage", "short"))
	newMiss := missedUpdates("energy.total", 12, 95, 0.73, 0.1)
	if got[0] != newDis {
		t.Errorf("disagreement\n got %+v\nwant %+v", got[0], newDis)
	}
	if got[1] != newMiss {
		t.Errorf("missed updates\n got %+v\nwant %+v", got[1], newMiss)
	}
	if got[2] != old[2] || got[3] != old[3] {
		t.Errorf("changed: %+v %+v", got[2], got[3])
	}
	if old[0].Code != "" {
		t.Error("Legacy changed its input")
	}
}
