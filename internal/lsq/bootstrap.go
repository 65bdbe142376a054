package lsq

import (
	"errors"
	"fmt"
	"math"
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

// Wild are the options of WildBootstrap. Every slice is per row and may be nil.
type Wild struct {
	// SD is each row's own standard error of b (a measurement's interval): where it is
	// larger than the row's residual, the row is drawn within it instead.
	SD []float64
	// Group numbers the independent repetitions a row belongs to (runs): the groups are
	// resampled with replacement first. Key names a row's place in the design, the same in
	// every group: one resample gives every group's row of one key the same residual sign
	// (a model's misfit repeats from group to group; it is no independent draw).
	Group []int
	Key   []string
	// Common scales every row of a resample by one draw of 1 + Common × N(0, 1): a relative
	// error the rows share (a calibration).
	Common float64
}

// WildBootstrap refits min ‖A x − b‖ on reps resamples (seeded) of a fixed design: every
// row keeps its place (its row of A) and gets the fit's prediction plus its own residual,
// leverage-corrected (r/√(1−h)), with a random sign (Rademacher), or a draw within its SD
// where that is larger, all of it scaled by the common draw; with groups, the groups are
// resampled first (Wild). It returns the resamples' coefficients, draws[j][i] being
// coefficient j of resample i (a resample that could not be fitted left out of all), and
// fails when more than a tenth of them could not be fitted or the fit has no residual.
// Resampling whole rows instead (Bootstrap) drops a designed experiment's corners.
func WildBootstrap(A [][]float64, b []float64, reps int, seed uint64, o Wild) ([][]float64, error) {
	full, err := Solve(A, b)
	if err != nil {
		return nil, err
	}
	n, k := len(b), len(full.Coef)
	if n <= k {
		return nil, fmt.Errorf("lsq: %d rows for %d coefficients: no residuals to resample", n, k)
	}
	at := func(s []float64, i int) float64 {
		if s == nil {
			return 0
		}
		return s[i]
	}
	inv := full.Unscaled()
	pred := make([]float64, n)
	adj := make([]float64, n)
	for i, row := range A {
		pred[i] = full.Predict(row)
		h := 0.0
		for p := range k {
			for q := range k {
				h += row[p] * inv[p][q] * row[q]
			}
		}
		adj[i] = b[i] - pred[i]
		if h < 0.999 {
			adj[i] /= math.Sqrt(1 - h)
		}
	}
	byGroup := map[int][]int{}
	var groups []int
	for i := range b {
		g := 0
		if o.Group != nil {
			g = o.Group[i]
		}
		if byGroup[g] == nil {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], i)
	}
	slices.Sort(groups)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	draws := make([][]float64, k)
	var ra [][]float64
	var rb []float64
	signs := map[string]float64{}
	failed := 0
	for range reps {
		ra, rb = ra[:0], rb[:0]
		clear(signs)
		scale := 1 + o.Common*rng.NormFloat64()
		for range groups {
			g := groups[0]
			if len(groups) > 1 {
				g = groups[rng.IntN(len(groups))]
			}
			for _, i := range byGroup[g] {
				key := ""
				if o.Key != nil {
					key = o.Key[i]
				}
				sign, ok := signs[key]
				if !ok || key == "" {
					sign = 1
					if rng.IntN(2) == 0 {
						sign = -1
					}
					signs[key] = sign
				}
				e := sign * adj[i]
				if sd := at(o.SD, i); sd > math.Abs(adj[i]) {
					e = sd * rng.NormFloat64()
				}
				ra, rb = append(ra, A[i]), append(rb, (pred[i]+e)*scale)
			}
		}
		r, err := Solve(ra, rb)
		if err != nil {
			failed++
			continue
		}
		for j, c := range r.Coef {
			draws[j] = append(draws[j], c)
		}
	}
	if failed*10 > reps {
		return nil, fmt.Errorf("lsq: wild bootstrap: %d of %d resamples could not be fitted", failed, reps)
	}
	return draws, nil
}
