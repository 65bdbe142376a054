package loadlevel

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// The GPU meter on the sim device (virtual clock): each recording period's corrected mean
// power against the sim's true energy over the period, under load and at idle.
func TestGPUMeterOnSim(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, dev := sm.Clock, sm.Dev
	dev.AddLoad(time.Second, 12*time.Second, units.Power(300))
	m := &GPUMeter{Dev: dev, Clock: clk}
	for _, p := range []struct{ from, to time.Duration }{{4 * time.Second, 10 * time.Second}, {20 * time.Second, 26 * time.Second}} {
		clk.AdvanceTo(p.from)
		if err := m.Begin("_x_rc_"); err != nil {
			t.Fatal(err)
		}
		clk.AdvanceTo(p.to)
		got, err := m.End(Window{Length: p.to - p.from})
		if err != nil {
			t.Fatal(err)
		}
		want := dev.TrueEnergy(p.from, p.to).Joules() / (p.to - p.from).Seconds()
		t.Logf("%v-%v: %.1f W (true %.1f W): %s", p.from, p.to, got, want, m.Detail())
		if math.Abs(got/want-1) > 0.05 {
			t.Errorf("%v-%v: %.1f W, true %.1f W", p.from, p.to, got, want)
		}
		if !strings.Contains(m.Detail(), "steady-load mean") {
			t.Errorf("detail %q", m.Detail())
		}
	}
	if _, err := m.End(Window{}); err == nil {
		t.Error("End without Begin accepted")
	}
	if !strings.HasPrefix(m.Name(), "nvml (GPU 0 board") {
		t.Error(m.Name())
	}
}
