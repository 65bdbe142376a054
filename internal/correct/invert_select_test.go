package correct

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectKthIsSortedIndex: selectKth gives what sorting and indexing give, on random
// values, on values with long runs of equal ones (held readings), sorted and reversed.
func TestSelectKthIsSortedIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		n := 1 + r.IntN(5000)
		v := make([]float64, n)
		for i := range v {
			switch trial % 4 {
			case 0:
				v[i] = r.NormFloat64()
			case 1:
				v[i] = float64(r.IntN(3)) // mostly equal
			case 2:
				v[i] = float64(i)
			default:
				v[i] = float64(n - i)
			}
		}
		want := slices.Clone(v)
		slices.Sort(want)
		k := r.IntN(n)
		if got := selectKth(slices.Clone(v), k); got != want[k] {
			t.Fatalf("trial %d n %d k %d: %g, want %g", trial, n, k, got, want[k])
		}
		if got, w := median(v), want[n/2]; got != w {
			t.Fatalf("trial %d: median %g, want %g", trial, got, w)
		}
	}
}

func BenchmarkNoiseSigma(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 100000)
	for i := range v {
		v[i] = 120 + r.NormFloat64()
	}
	for b.Loop() {
		NoiseSigma(v)
	}
}
