package region_test

import (
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestChannelIntervalsHoldTruth: with ChannelIntervals (measure's table), every board power
// channel's corrected energy over a command of bursts on sim:h200 has a 95 % interval that
// holds the twin's true energy on that channel's scale (its gain and offset), while the raw
// integral of the 1 s averages misses it by more than 5 %.
func TestChannelIntervalsHoldTruth(t *testing.T) {
	t.Parallel()
	sm := simtest.Open(t, "h200")
	const s = time.Second
	start, end := 2*s, 5*s
	sm.Dev.AddLoad(start, start+1200*time.Millisecond, 650)
	sm.Dev.AddLoad(start+1200*time.Millisecond, start+2*s, 420)
	sm.Dev.AddLoad(start+2*s, end, 690)
	tr := sm.Record(t, nil, sensor.Options{}, 7*s)
	sum := region.Summarize(tr, tr.Meta.GPUs[0], start, end, 0, s, region.Options{What: "the command", ChannelIntervals: true, EnergyCache: &energy.Cache{}})
	n := 0
	for _, c := range sum.Channels {
		if c.CorrectedEnergyJ == nil {
			continue
		}
		n++
		m, _ := sm.Dev.Model(c.Channel)
		truth := m.Gain*sm.Dev.TrueEnergy(start, end).Joules() + float64(m.Offset)*(end-start).Seconds()
		if !(*c.CorrectedEnergyLowJ <= truth && truth <= *c.CorrectedEnergyHighJ) {
			t.Errorf("%s: truth %.2f J outside [%.2f, %.2f] J (corrected %.2f J)", c.Channel, truth, *c.CorrectedEnergyLowJ, *c.CorrectedEnergyHighJ, *c.CorrectedEnergyJ)
		}
		if c.Channel == trace.ChPowerUsage {
			if raw := c.EnergyJ/truth - 1; raw > -0.05 {
				t.Errorf("%s: raw %+.1f %%: the test wants a load the 1 s average lags", c.Channel, 100*raw)
			}
		}
	}
	if n < 4 {
		t.Errorf("%d channels with a corrected interval, want power.samples, power.instant, power.usage, power.average", n)
	}
}
