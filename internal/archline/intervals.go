package archline

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpuwatt/gpuwatt/internal/lsq"
)

// The bootstrap behind every fitted parameter's 95 % interval.
const (
	// BootstrapReps is the number of resamples (deterministic: seeded).
	BootstrapReps = 400
	bootstrapSeed = 19
	// ciLevel is the intervals' level.
	ciLevel = 0.95
)

// CIMethod says how the fitted parameters' intervals are made (Result.CIMethod).
const CIMethod = "95 % percentile wild bootstrap over the fitted points, 400 resamples: each point keeps its place in the sweep " +
	"and gets the fit's prediction plus its own residual with a random sign, or a draw within its own energy interval where that " +
	"is wider (over several runs, the runs resampled first); all of them scaled by one common draw of the median point's interval " +
	"(the calibration they share); on the board's scale (its gain error, ±5 % between boards, left out)"

// row is one point in a form of the model: regressors x, left-hand side y and y's
// standard error from the point's own energy interval; stratum and run group the
// resampling.
type row struct {
	x       []float64
	y, sd   float64
	stratum float64
	run     int
	// key names the point's place in the sweep (its kernel), the same in every run: a
	// resample gives every run's point of one key the same residual sign, since a misfit
	// of the model repeats from run to run and is no independent draw.
	key string
}

// rowsOf turns points into rows of form 5, 6 or 7 (eq 5 with the static term of occupied
// SMs when occTerm), for run number run.
func rowsOf(pts []Point, form int, occTerm bool, run int) []row {
	return rowsOfEnergy(pts, form, occTerm, run, func(p Point) (float64, float64) {
		sd := 0.0
		if p.HighJ > p.LowJ && p.LowJ > 0 {
			sd = (p.HighJ - p.LowJ) / (2 * 1.96)
		}
		return p.EnergyJ, sd
	})
}

// rowsOfEnergy is rowsOf with the energy (and its standard error) each point gives.
func rowsOfEnergy(pts []Point, form int, occTerm bool, run int, energy func(Point) (e, sd float64)) []row {
	var rs []row
	for _, p := range pts {
		e, sd := energy(p)
		r := row{stratum: p.Occupancy, run: run, key: p.Name}
		switch form {
		case 5:
			r.x, r.y, r.sd = []float64{p.W, p.Q, p.TimeS}, e, sd
			if occTerm {
				r.x = append(r.x, p.TimeS*p.Occupancy)
			}
		case 6:
			if p.W <= 0 {
				continue
			}
			r.x, r.y, r.sd = []float64{1, p.Q / p.W, p.TimeS / p.W}, e/p.W, sd/p.W
		case 7:
			if p.Q <= 0 {
				continue
			}
			r.x, r.y, r.sd = []float64{p.W / p.Q, 1, p.TimeS / p.Q}, e/p.Q, sd/p.Q
		}
		rs = append(rs, r)
	}
	return rs
}

func solveRows(rs []row) ([]float64, error) {
	X := make([][]float64, len(rs))
	y := make([]float64, len(rs))
	for i, r := range rs {
		X[i], y[i] = r.x, r.y
	}
	return ols(X, y)
}

// bootstrapRows is each coefficient's percentile interval by a wild bootstrap over the
// points: each resample keeps every point's place in the sweep (its W, Q and T: the sweep
// is a designed experiment, and resampling whole points would drop its corners, the
// points that pin eps_mem or pi0 down) and gives it the fit's prediction plus its own
// residual (leverage-corrected, r/√(1−h)) with a random sign, or, where the point's own
// energy interval is wider than its residual, a draw within that interval (its standard
// error); where there are several runs the runs are resampled first, and one point of
// the sweep gets one sign in every run (its misfit repeats). All the points are
// also scaled by one common draw of the median point's relative standard error (the
// calibration to the counter is one fit per session, shared by the points). It fails
// when more than a tenth of the resamples cannot be fitted.
func bootstrapRows(rs []row, reps int, seed uint64) ([][2]float64, error) {
	draws, err := bootstrapDraws(rs, reps, seed)
	if err != nil {
		return nil, err
	}
	out := make([][2]float64, len(draws))
	for j, d := range draws {
		d = slices.Clone(d)
		slices.Sort(d)
		out[j] = [2]float64{quantile(d, (1-ciLevel)/2), quantile(d, (1+ciLevel)/2)}
	}
	return out, nil
}

// percentile is the 95 % percentile interval of f over the resamples' coefficients.
func percentile(draws [][]float64, f func(b []float64) float64) [2]float64 {
	if len(draws) == 0 {
		return [2]float64{}
	}
	var v []float64
	b := make([]float64, len(draws))
	for i := range draws[0] {
		for j := range draws {
			b[j] = draws[j][i]
		}
		if x := f(b); !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	return [2]float64{quantile(v, (1-ciLevel)/2), quantile(v, (1+ciLevel)/2)}
}

// bootstrapDraws are the resamples' coefficients (draws[j][i]: coefficient j of resample
// i): lsq.WildBootstrap over the rows, grouped by run, keyed by the point's place in the
// sweep, each with its own standard error, the common scale the median relative one.
func bootstrapDraws(rs []row, reps int, seed uint64) ([][]float64, error) {
	if len(rs) == 0 {
		return nil, fmt.Errorf("no points")
	}
	n := len(rs)
	A, y := make([][]float64, n), make([]float64, n)
	o := lsq.Wild{SD: make([]float64, n), Group: make([]int, n), Key: make([]string, n)}
	var rel []float64
	for i, r := range rs {
		A[i], y[i] = r.x, r.y
		o.SD[i], o.Group[i], o.Key[i] = r.sd, r.run, r.key
		if r.y != 0 {
			rel = append(rel, r.sd/math.Abs(r.y))
		}
	}
	slices.Sort(rel)
	o.Common = quantile(rel, 0.5)
	return lsq.WildBootstrap(A, y, reps, seed, o)
}

// quantile is the q-quantile of sorted s, linearly interpolated.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	h := q * float64(len(s)-1)
	i := int(h)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// scaleCI converts a coefficient interval to the parameter's unit (pJ for the energies).
func scaleCI(ci [2]float64, f float64) [2]float64 { return [2]float64{ci[0] * f, ci[1] * f} }

// Runs is the points of one precision from several runs of one card (one slice per run),
// for a pooled fit whose intervals resample the runs too.
type Runs [][]Point

// fitted returns the fitted roofline points.
func fitted(pts []Point) []Point {
	var out []Point
	for _, p := range pts {
		if p.Kernel == "roofline" && p.Fitted {
			out = append(out, p)
		}
	}
	return out
}

// FitIntervals fits eq 5 to the fitted roofline points of every run together and returns
// the fit with each parameter's 95 % interval (bootstrap over points, and over runs where
// there are several).
func FitIntervals(runs Runs) (Fit, Intervals, error) {
	var all []Point
	var rs []row
	for i, pts := range runs {
		f := fitted(pts)
		all = append(all, f...)
		rs = append(rs, rowsOf(f, 5, false, i)...)
	}
	fit := fitPoints(all, 5)
	if fit.Error != "" {
		return fit, Intervals{}, fmt.Errorf("%s", fit.Error)
	}
	draws, err := bootstrapDraws(rs, BootstrapReps, bootstrapSeed)
	if err != nil {
		return fit, Intervals{}, err
	}
	iv := Intervals{Runs: len(runs), Points: len(rs)}
	iv.EpsFlopPJ = percentile(draws, func(b []float64) float64 { return b[0] * 1e12 })
	iv.EpsMemPJPerByte = percentile(draws, func(b []float64) float64 { return b[1] * 1e12 })
	iv.Pi0W = percentile(draws, func(b []float64) float64 { return b[2] })
	iv.BEps = percentile(draws, func(b []float64) float64 { return b[1] / b[0] })
	return fit, iv, nil
}

// Intervals are the 95 % intervals of one fit's parameters, as [low, high].
type Intervals struct {
	EpsFlopPJ       [2]float64 `json:"eps_flop_pj_ci"`
	EpsMemPJPerByte [2]float64 `json:"eps_mem_pj_per_byte_ci"`
	Pi0W            [2]float64 `json:"pi0_w_ci"`
	// BEps is the energy balance eps_mem / eps_flop's.
	BEps   [2]float64 `json:"b_eps_flop_per_byte_ci"`
	Runs   int        `json:"runs"`
	Points int        `json:"points"`
}

// relWidth is an interval's full width relative to v.
func relWidth(ci [2]float64, v float64) float64 {
	if v == 0 {
		return math.Inf(1)
	}
	return (ci[1] - ci[0]) / math.Abs(v)
}

// derivedCIs are the intervals of eta_flop and the effective balance point: derive on each
// resample of the fitted points (the same resamples as FitIntervals'), the peaks as
// measured; zero where they cannot be had.
func derivedCIs(pts []Point, peakFlops, peakBytes float64) (eta, beff [2]float64) {
	if peakFlops <= 0 || peakBytes <= 0 {
		return eta, beff
	}
	draws, err := bootstrapDraws(rowsOf(fitted(pts), 5, false, 0), BootstrapReps, bootstrapSeed)
	if err != nil {
		return eta, beff
	}
	d := func(b []float64) Derived {
		return derive(Fit{EpsFlopPJ: b[0] * 1e12, EpsMemPJPerByte: b[1] * 1e12, Pi0W: b[2]}, peakFlops, peakBytes, 0, 4, 0)
	}
	eta = percentile(draws, func(b []float64) float64 { return d(b).EtaFlop })
	beff = percentile(draws, func(b []float64) float64 { return d(b).BEffective })
	return eta, beff
}
