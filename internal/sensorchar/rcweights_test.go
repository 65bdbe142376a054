package sensorchar

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// rcWeightsLag is rcWeights as it was, each indicator advanced by sensormodel.Lag: the
// reference TestRCWeightsSameBits holds the one-decay form to.
func (s *schedule) rcWeightsLag(qs []float64, tau float64) [][3]float64 {
	out := make([][3]float64, len(qs))
	bs := s.boundaries()
	x := [3]float64{1, 0, 0}
	u := statePre
	t := math.Inf(-1)
	bi := 0
	advance := func(to float64) {
		if math.IsInf(t, -1) {
			t = to
			return
		}
		for j := range x {
			target := 0.0
			if j == u {
				target = 1
			}
			x[j], _ = sensormodel.Lag(x[j], target, to-t, tau)
		}
		t = to
	}
	for i, q := range qs {
		for bi < len(bs) && bs[bi] <= q {
			advance(bs[bi])
			if bi%2 == 0 {
				u = stateOn
			} else {
				u = stateOff
			}
			bi++
		}
		advance(q)
		out[i] = x
	}
	return out
}

// TestRCWeightsSameBits: rcWeights gives, bit for bit, what advancing each indicator by
// sensormodel.Lag gave, on random schedules, query times and lags (tau 0 included).
func TestRCWeightsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 3))
	for trial := range 200 {
		var on [][2]float64
		x := rng.Float64()
		for range 1 + rng.IntN(20) {
			a := x + rng.Float64()*0.3
			b := a + 0.001 + rng.Float64()*0.5
			on = append(on, [2]float64{a, b})
			x = b
		}
		s := newSchedule(on)
		qs := make([]float64, 50+rng.IntN(300))
		for i := range qs {
			qs[i] = rng.Float64() * (x + 1)
		}
		slices.Sort(qs)
		tau := []float64{0, 1e-4, 0.003, 0.05, 0.84, 3}[trial%6] * (0.5 + rng.Float64())
		got, want := s.rcWeights(qs, tau), s.rcWeightsLag(qs, tau)
		for i := range got {
			for j := range 3 {
				if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
					t.Fatalf("trial %d (tau %g): weight %d of query %d: %v, with Lag %v", trial, tau, j, i, got[i][j], want[i][j])
				}
			}
		}
	}
}

// benchSchedule is 100 on-intervals and 2000 query times over them.
func benchSchedule() (*schedule, []float64) {
	var on [][2]float64
	for i := range 100 {
		a := float64(i) * 0.2
		on = append(on, [2]float64{a, a + 0.1})
	}
	qs := make([]float64, 2000)
	for i := range qs {
		qs[i] = float64(i) * 0.01
	}
	return newSchedule(on), qs
}

// BenchmarkRCWeights: the weights of 2000 readings under 100 loads (one candidate lag of
// the fit's grid).
func BenchmarkRCWeights(b *testing.B) {
	s, qs := benchSchedule()
	for b.Loop() {
		s.rcWeights(qs, 0.1)
	}
}

// BenchmarkRCWeightsLag is the same through sensormodel.Lag, for comparison.
func BenchmarkRCWeightsLag(b *testing.B) {
	s, qs := benchSchedule()
	for b.Loop() {
		s.rcWeightsLag(qs, 0.1)
	}
}
