package correct_test

import (
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestWithModelReused: a Series gives one variant per model (the corrected power series
// asks for the same variants in every bin), and the variant asked for again gives, bit
// for bit, what a variant of a freshly prepared Series gives, region after region.
func TestWithModelReused(t *testing.T) {
	sm := simtest.Open(t, "h100")
	for s := time.Second; s < 5*time.Second; s += 1300 * time.Millisecond {
		sm.Dev.AddLoad(s, s+500*time.Millisecond, units.Power(450+30*float64(s/time.Second)))
	}
	tr := sm.Record(t, []string{"power.usage"}, sensor.Options{}, 6*time.Second)
	samples := correct.Channel(tr, 0, "power.usage")
	base := correct.Prepare(samples, sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond}, correct.Options{})
	for _, spec := range []string{"boxcar:window=950ms,period=100ms", "rc:tau=300ms"} {
		m, err := sensormodel.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		v := base.WithModel(m)
		if again := base.WithModel(m); again != v {
			t.Errorf("%s: a second WithModel prepared the variant again", spec)
		}
		for a := time.Second; a < 5*time.Second; a += 700 * time.Millisecond {
			fresh := correct.Prepare(samples, sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond}, correct.Options{}).WithModel(m)
			got, ok1 := base.WithModel(m).Joules(a, a+900*time.Millisecond)
			want, ok2 := fresh.Joules(a, a+900*time.Millisecond)
			if ok1 != ok2 || got != want {
				t.Errorf("%s [%v, +900ms]: reused variant %v J (%v), fresh %v J (%v)", spec, a, got, ok1, want, ok2)
			}
		}
	}
}
