package correct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCursorIsSearchF: a cursor's search gives searchF's answer wherever it starts from,
// on slices with repeated values, for targets before, inside, between and after them.
func TestCursorIsSearchF(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		a := make([]float64, n)
		x := 0.0
		for i := range a {
			if r.IntN(4) > 0 {
				x += float64(r.IntN(3))
			}
			a[i] = x
		}
		var c cursor
		for q := range 400 {
			y := float64(r.IntN(int(x)+5)) - 2
			if q%3 == 0 {
				y += 0.5
			}
			if q%97 == 0 {
				y = math.NaN()
			}
			want := searchF(a, y)
			if got := c.ge(a, y); got != want {
				t.Fatalf("n %d, %v: ge(%v) = %d from %d, want %d", n, a, y, got, c.i, want)
			}
		}
	}
}
