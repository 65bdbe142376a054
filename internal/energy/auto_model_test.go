package energy_test

import (
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestAutoModelInterval: with no sensor.json, the inversion of a channel through the model
// guessed from the board's name (correct.Auto) carries that model's intervals, so the
// estimate's "model" component is known and not zero; it holds a board whose sensor
// differs from the guess within them (here the 1 s average published 20 ms late, which the
// H100 guess does not assume: its delay interval reaches 30 ms).
func TestAutoModelInterval(t *testing.T) {
	t.Parallel()
	cfg := simtest.Preset(t, "h100")
	sc := cfg.Sensors[trace.ChPowerUsage]
	sc.Model.Delay = 20 * ms
	cfg.Sensors[trace.ChPowerUsage] = sc
	tr, d := record(t, cfg, []string{trace.ChPowerUsage}, 8*time.Second, func(d *sim.Device) {
		d.AddLoad(2*time.Second, 3500*ms, 500)
	})
	from, to := 2*time.Second, 3500*ms
	est := energy.Region(tr, 0, from, to, energy.Options{})
	if est.Method != energy.Inversion || est.Choice == nil || !est.Choice.Guess {
		t.Fatalf("method %s, choice %+v: want the inversion of a guessed model", est.Method, est.Choice)
	}
	known := false
	for _, c := range est.Uncertainty.Components {
		if c.Name == "model" {
			known = c.Known && c.HalfWidthJ > 0
			t.Logf("model component ±%.2f J (%s)", c.HalfWidthJ, c.Note)
		}
	}
	if !known {
		t.Errorf("the guessed model's intervals are not in the estimate: %+v", est.Uncertainty.Components)
	}
	m, _ := d.Model(trace.ChPowerUsage)
	truth := m.Gain*d.TrueEnergy(from, to).Joules() + float64(m.Offset)*(to-from).Seconds()
	if !(est.LowJ <= truth && truth <= est.HighJ) {
		t.Errorf("truth (as the channel sees it) %.2f J outside [%.2f, %.2f] J (estimate %.2f J)", truth, est.LowJ, est.HighJ, est.EnergyJ)
	}
}
