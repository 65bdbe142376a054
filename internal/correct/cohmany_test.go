package correct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCohManyIsTheDirectSum: on a long ring of stamps like the H200's (a 20 ms grid, a
// quarter of the stamps up to 14 ms late or 6 ms early, µs resolution, a clock 30 ppm off),
// cohMany gives the coherence of each of the 121 periods FitLattice's search over the whole
// recording tries to within 1e-10 of the direct sum (whose own rounding, at phases of 4e5 rad, is some 1e-12), and the same best period.
func TestCohManyIsTheDirectSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = manyStamps + 1000
	sec := make([]float64, n)
	for i := range sec {
		x := float64(i) * 0.02 * (1 + 30e-6)
		switch r.IntN(8) {
		case 0:
			x += 0.014 * r.Float64()
		case 1:
			x -= 0.006 * r.Float64()
		}
		sec[i] = math.Round(x*1e6) / 1e6
	}
	c := 0.02 * (1 + 29e-6)
	span := sec[n-1]
	step := c * c / span / 50
	var Ts []float64
	for i := -60; i <= 60; i++ {
		Ts = append(Ts, c+step*float64(i))
	}
	got := cohMany(sec, Ts, c)
	bestD, bestM := 0, 0
	want := make([]float64, len(Ts))
	for i, T := range Ts {
		var cs, sn float64
		for _, x := range sec {
			a := 2 * math.Pi * x / T
			cs += math.Cos(a)
			sn += math.Sin(a)
		}
		want[i] = math.Hypot(cs, sn) / n
		if math.Abs(got[i]-want[i]) > 1e-10 {
			t.Errorf("T = %.12f: %.15f, the direct sum %.15f", T, got[i], want[i])
		}
		if want[i] > want[bestD] {
			bestD = i
		}
		if got[i] > got[bestM] {
			bestM = i
		}
	}
	if bestD != bestM || bestD == 0 || bestD == len(Ts)-1 {
		t.Errorf("best period %d of %d (cohMany) against %d (direct)", bestM, len(Ts), bestD)
	}
}
