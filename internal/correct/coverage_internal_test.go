package correct

import (
	"math"
	"testing"
	"time"
)

// TestCoverage: W/T for a boxcar, 2 tau/T for a lag (equal noise bandwidth), at most 1; the
// warning of a partly seen region says which.
func TestCoverage(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		m      Model
		period time.Duration
		want   float64
	}{
		{Model{Kind: Boxcar, Window: 25 * ms}, 100 * ms, 0.25},
		{Model{Kind: Boxcar, Window: time.Second}, 100 * ms, 1},
		{Model{Kind: RC, Tau: 16500 * time.Microsecond}, 100 * ms, 0.33},
		{Model{Kind: RC, Tau: 13 * ms}, 20 * ms, 1},
		{Model{Kind: RC, Tau: 840 * ms}, 15 * ms, 1},
		{Model{Kind: RC, Tau: 10 * ms}, 0, 1},
		{Model{Kind: None}, 100 * ms, 1},
	} {
		if got := c.m.Coverage(c.period); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%v every %v: coverage %v, want %v", c.m, c.period, got, c.want)
		}
	}
	if got := (Model{Kind: RC, Tau: 16 * ms}).seenAs(100 * ms); got != "a lag of tau=16 ms read every 100 ms" {
		t.Errorf("seenAs = %q", got)
	}
}
