package correct_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestWithModel: Series.WithModel(m) (the same readings, another model: how an interval's
// model part re-inverts without deduplicating again) gives what Prepare with m gives, for
// a long window (its readings' arrays shared), a window's period and delay, and a lag.
func TestWithModel(t *testing.T) {
	sm := simtest.Open(t, "h100")
	for s := time.Second; s < 9*time.Second; s += 1700 * time.Millisecond {
		sm.Dev.AddLoad(s, s+600*time.Millisecond, units.Power(500+20*float64(s/time.Second)))
	}
	tr := sm.Record(t, []string{"power.usage"}, sensor.Options{}, 10*time.Second)
	samples := correct.Channel(tr, 0, "power.usage")
	base := correct.Prepare(samples, sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond}, correct.Options{})
	for _, spec := range []string{"boxcar:window=950ms,period=100ms", "boxcar:window=1.05s,period=100ms,delay=20ms", "boxcar:window=1s,period=97ms", "rc:tau=300ms", "boxcar:window=25ms,period=100ms"} {
		m, err := sensormodel.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range [][2]time.Duration{{1500 * time.Millisecond, 2200 * time.Millisecond}, {3 * time.Second, 8 * time.Second}} {
			got, ok1 := base.WithModel(m).Joules(rg[0], rg[1])
			want, ok2 := correct.Prepare(samples, m, correct.Options{}).Joules(rg[0], rg[1])
			if ok1 != ok2 || math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s [%v, %v]: WithModel %.9f J (%v), Prepare %.9f J (%v)", spec, rg[0], rg[1], got, ok1, want, ok2)
			}
		}
	}
}
