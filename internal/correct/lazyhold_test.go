package correct

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestLazyHoldIsHold: a lazyHold gives newHold's energies bit for bit (regions inside,
// across and beyond the readings, on cells that split at a step and ones that hold), its
// span and its bins, with and without a period.
func TestLazyHoldIsHold(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 7, 400} {
		s := make([]trace.Sample, n)
		tt := time.Duration(0)
		for i := range s {
			tt += time.Duration(15+r.IntN(10)) * time.Millisecond
			w := 100.0
			if i/20%2 == 1 {
				w = 400
			}
			if i%20 == 0 {
				w = 250 // a reading mid-step: its cell splits
			}
			s[i] = trace.Sample{T: tt, Value: w + r.Float64()}
		}
		for _, period := range []float64{0.02, 0} {
			h := newHold(s, 0.0125+0.002, period, 0.025)
			l := newLazyHold(s, 0.0125+0.002, period, 0.025)
			if a, b := h.span(); true {
				if c, d := l.span(); a != c || b != d {
					t.Fatalf("n %d: span %v %v, lazy %v %v", n, a, b, c, d)
				}
			}
			lo, hi := h.span()
			var bins []interval
			for q := 0; q < 300; q++ {
				a := lo - 0.05 + r.Float64()*(hi-lo+0.1)
				b := a + r.Float64()*(hi-lo)/3
				if q%50 == 0 {
					a, b = lo, hi
				}
				if got, want := l.energy(a, b), h.energy(a, b); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("n %d, period %v: energy(%v, %v) = %v, hold's %v", n, period, a, b, got, want)
				}
				bins = append(bins, interval{a, b})
			}
			gb, wb := l.binEnergies(bins), h.binEnergies(bins)
			for i := range gb {
				if gb[i] != wb[i] {
					t.Fatalf("bin %d: %v, hold's %v", i, gb[i], wb[i])
				}
			}
		}
	}
}
