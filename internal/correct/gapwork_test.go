package correct

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// gapReadings: a boxcar's readings every 100 ms for 10 s (a 50 W step at 5 s), then none
// for gap seconds, then 10 s more at another level.
func gapReadings(gap float64) trace.Readings {
	var r trace.Readings
	add := func(t, v float64) {
		r.T = append(r.T, time.Duration(t*float64(time.Second)))
		r.V = append(r.V, v)
	}
	for i := 0; i <= 100; i++ {
		v := 100.0
		if i > 50 {
			v = 150
		}
		add(float64(i)/10, v+0.3*math.Sin(float64(i)))
	}
	for i := 0; i <= 100; i++ {
		add(10+gap+float64(i)/10, 220+0.3*math.Sin(float64(i)))
	}
	return r
}

// TestGapWorkBoundedByReadings: a region inside a long gap, or across it, costs work in
// proportion to the readings, not to the gap over the window (a region inside a 3·10⁶ s gap
// of a 100 ms trace took 2 s of CPU, a longer gap 32 s: issue 29); the energy is the one
// stepping window by window gives.
func TestGapWorkBoundedByReadings(t *testing.T) {
	const w = 1.0 // the boxcar's window, s
	for _, tc := range []struct {
		name string
		a, b float64 // the region, as a fraction of the gap from its start
	}{
		{"inside", 0.5, 0.5 + 1e-4},
		{"longer inside", 0.3, 0.6},
		{"from before the gap into it", -1, 0.5},
		{"from inside the gap past it", 0.5, 2},
		{"across the gap", -1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gap := range []float64{2e4, 1e9} {
				r := gapReadings(gap)
				at := func(f float64) float64 {
					switch {
					case f < 0:
						return 2 // before the gap, among the first readings
					case f > 1:
						return 10 + gap + 5 // after it
					}
					return 10 + f*gap
				}
				a, b := at(tc.a), at(tc.b)
				d := newDense(r, w, 0)
				e := d.energy(a, b)
				if d.steps > 4*r.Len() {
					t.Errorf("gap %g s: %d windows stepped for %d readings", gap, d.steps, r.Len())
				}
				if gap > 1e5 {
					continue // stepping 10⁹ windows one by one is what the test forbids
				}
				gapJumps = true
				ref := newDense(r, w, 0)
				want := ref.energy(a, b)
				gapJumps = true
				if math.Abs(e-want) > 1e-9*math.Abs(want)+1e-9 {
					t.Errorf("gap %g s: %.12g J, window by window %.12g J", gap, e, want)
				}
			}
		})
	}
}
