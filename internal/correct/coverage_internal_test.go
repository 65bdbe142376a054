package correct

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// TestCoverage: W/T for a boxcar, 2 tau/T for a lag (equal noise bandwidth), at most 1; the
// warning of a partly seen region says which.
func TestCoverage(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		m      sensormodel.Model
		period time.Duration
		want   float64
	}{
		{sensormodel.Model{Window: 25 * ms}, 100 * ms, 0.25},
		{sensormodel.Model{Window: time.Second}, 100 * ms, 1},
		{sensormodel.Model{Tau: 16500 * time.Microsecond}, 100 * ms, 0.33},
		{sensormodel.Model{Tau: 13 * ms}, 20 * ms, 1},
		{sensormodel.Model{Tau: 840 * ms}, 15 * ms, 1},
		{sensormodel.Model{Tau: 10 * ms}, 0, 1},
		{sensormodel.Model{}, 100 * ms, 1},
	} {
		if got := c.m.Coverage(c.period); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%v every %v: coverage %v, want %v", c.m, c.period, got, c.want)
		}
	}
	if got := seenAs(sensormodel.Model{Tau: 16 * ms}, 100*ms); got != "a lag of tau=16 ms read every 100 ms" {
		t.Errorf("seenAs = %q", got)
	}
}
