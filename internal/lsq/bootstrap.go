package lsq

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Interval is a two-sided interval [Lo, Hi].
type Interval struct {
	Lo, Hi float64
}

// Resample returns reps resamples of n row indices, each n rows drawn with replacement;
// the same seed gives the same resamples.
func Resample(n, reps int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]int, reps)
	for r := range out {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		out[r] = idx
	}
	return out
}

// Bootstrap refits min Σ wᵢ (aᵢ·x − bᵢ)² on reps resamples of the rows (seeded) and returns
// each coefficient's percentile interval at the given level (0.95 for a 95 % interval).
// Resamples whose fit fails (a resample that lost a column's support) are skipped; it
// fails when more than a tenth of them do, or when reps < 20.
func Bootstrap(A [][]float64, b, w []float64, reps int, seed uint64, level float64) ([]Interval, error) {
	if reps < 20 {
		return nil, fmt.Errorf("lsq: bootstrap needs at least 20 resamples, not %d", reps)
	}
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("lsq: bootstrap level %g is not in (0, 1)", level)
	}
	full, err := SolveWeighted(A, b, w)
	if err != nil {
		return nil, err
	}
	k := len(full.Coef)
	draws := make([][]float64, k)
	ra := make([][]float64, len(b))
	rb := make([]float64, len(b))
	var rw []float64
	if w != nil {
		rw = make([]float64, len(b))
	}
	failed := 0
	for _, idx := range Resample(len(b), reps, seed) {
		for i, j := range idx {
			ra[i], rb[i] = A[j], b[j]
			if w != nil {
				rw[i] = w[j]
			}
		}
		r, err := SolveWeighted(ra, rb, rw)
		if err != nil {
			failed++
			continue
		}
		for j, c := range r.Coef {
			draws[j] = append(draws[j], c)
		}
	}
	if failed*10 > reps {
		return nil, errors.New("lsq: bootstrap: more than a tenth of the resamples could not be fitted")
	}
	out := make([]Interval, k)
	for j, d := range draws {
		slices.Sort(d)
		out[j] = Interval{Lo: quantile(d, (1-level)/2), Hi: quantile(d, (1+level)/2)}
	}
	return out, nil
}

// quantile is the q-quantile of sorted s, linearly interpolated (type 7).
func quantile(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	i := int(h)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}
