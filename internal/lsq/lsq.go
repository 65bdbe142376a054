// Package lsq is gpuwatt's one least-squares solver: min ‖W^½(A x − b)‖ by Householder QR
// on column-scaled A, with the fit's residuals, R², and the coefficients' covariance and
// standard errors, plus a seeded bootstrap over rows for intervals that do not lean on
// the normal-error assumption.
//
// QR works on A itself, never on AᵀA: the normal equations square the condition number
// and lose twice the digits (a polynomial in t near t = 1000, or regressors W, Q and T
// that differ by 15 orders of magnitude, are the cases that matter here). Each column is
// scaled to unit RMS before the factorisation, so the rank test is relative to the
// column's own size and the result does not depend on the units of the regressors.
package lsq

import (
	"errors"
	"fmt"
	"math"
)

// Errors.
var (
	// ErrShape: A is empty, ragged, or does not match b (or w).
	ErrShape = errors.New("lsq: A, b and w do not match")
	// ErrTooFew: fewer rows than coefficients.
	ErrTooFew = errors.New("lsq: fewer points than coefficients")
	// ErrRank: a column is zero or (numerically) a combination of the others.
	ErrRank = errors.New("lsq: the columns are linearly dependent")
	// ErrWeight: a weight is negative, NaN or infinite.
	ErrWeight = errors.New("lsq: a weight is negative or not finite")
)

// rankTol is how small |R_jj| may be, relative to the largest, before the column is
// taken to be dependent on the others (after scaling each column to unit RMS).
const rankTol = 1e-10

// Result is one least-squares fit.
type Result struct {
	// Coef are the coefficients x.
	Coef []float64
	// Resid are b − A x, row by row (unweighted).
	Resid []float64
	// RSS is the weighted residual sum of squares Σ wᵢ residᵢ².
	RSS float64
	// R2 is the coefficient of determination 1 − RSS / TSS with TSS the weighted sum of
	// squares of b about its weighted mean (centred, as scikit-learn's score, whether or
	// not A has a constant column); 0 where TSS is 0.
	R2 float64
	// DoF is the residual degrees of freedom, rows − coefficients.
	DoF int
	// Sigma is the residual standard error √(RSS / DoF); NaN where DoF is 0.
	Sigma float64
	// Cov is the coefficients' covariance σ² (AᵀWA)⁻¹, and SE the square roots of its
	// diagonal; nil where DoF is 0 (an exact fit says nothing about its own error).
	Cov [][]float64
	SE  []float64

	unscaled [][]float64
}

// Unscaled is (AᵀWA)⁻¹, the covariance before it is multiplied by σ²: for callers that
// estimate σ otherwise (a known noise, or a floor on the degrees of freedom).
func (r *Result) Unscaled() [][]float64 {
	out := make([][]float64, len(r.unscaled))
	for i, row := range r.unscaled {
		out[i] = append([]float64(nil), row...)
	}
	return out
}

// Predict is a · x for one row a.
func (r *Result) Predict(a []float64) float64 {
	s := 0.0
	for j, c := range r.Coef {
		s += a[j] * c
	}
	return s
}

// Solve fits min ‖A x − b‖. A is row-major (one slice per point) and is not modified.
func Solve(A [][]float64, b []float64) (*Result, error) {
	return SolveWeighted(A, b, nil)
}

// SolveWeighted fits min Σ wᵢ (aᵢ·x − bᵢ)². A nil w weighs every row 1; a zero weight
// drops the row from the fit (it still gets a residual), and counts as no point for DoF.
func SolveWeighted(A [][]float64, b, w []float64) (*Result, error) {
	n := len(b)
	if n == 0 || len(A) != n || (w != nil && len(w) != n) {
		return nil, ErrShape
	}
	k := len(A[0])
	if k == 0 {
		return nil, ErrShape
	}
	for _, row := range A {
		if len(row) != k {
			return nil, ErrShape
		}
	}
	return solve(n, k, func(i, j int) float64 { return A[i][j] }, b, w)
}

// SolveColumns is Solve of the matrix whose columns are cols (each as long as b): the same
// figures, for a caller that holds its regressors as columns (no rows to build).
func SolveColumns(cols [][]float64, b []float64) (*Result, error) {
	n, k := len(b), len(cols)
	if n == 0 || k == 0 {
		return nil, ErrShape
	}
	for _, c := range cols {
		if len(c) != n {
			return nil, ErrShape
		}
	}
	return solve(n, k, func(i, j int) float64 { return cols[j][i] }, b, nil)
}

// solve is SolveWeighted of the n × k matrix whose entries at gives.
func solve(n, k int, at func(i, j int) float64, b, w []float64) (*Result, error) {
	sw, used, err := sqrtWeights(n, w)
	if err != nil {
		return nil, err
	}
	if used < k {
		return nil, fmt.Errorf("%w: %d points, %d coefficients", ErrTooFew, used, k)
	}
	// Q R of the weighted, column-scaled matrix, column-major for the Householder sweeps.
	scale, cols, err := scaledColumns(n, k, at, sw, used)
	if err != nil {
		return nil, err
	}
	y := make([]float64, n)
	for i := range n {
		y[i] = sw[i] * b[i]
	}
	rdiag := householder(cols, y)
	if err := checkRank(rdiag); err != nil {
		return nil, err
	}
	// R (upper triangle): R[i][j] = cols[j][i] for i < j, rdiag on the diagonal.
	R := func(i, j int) float64 {
		if i == j {
			return rdiag[i]
		}
		return cols[j][i]
	}
	xs := make([]float64, k)
	for i := k - 1; i >= 0; i-- {
		s := y[i]
		for j := i + 1; j < k; j++ {
			s -= R(i, j) * xs[j]
		}
		xs[i] = s / rdiag[i]
	}
	res := &Result{Coef: make([]float64, k), Resid: make([]float64, n), DoF: used - k}
	for j := range k {
		res.Coef[j] = xs[j] / scale[j]
	}
	res.unscaled = unscaledCovariance(R, rdiag, scale)
	res.goodness(n, at, b, sw)
	res.covariance()
	return res, nil
}

// sqrtWeights are √wᵢ (all 1 without weights) and the rows of non-zero weight.
func sqrtWeights(n int, w []float64) ([]float64, int, error) {
	used := n
	sw := make([]float64, n)
	for i := range sw {
		sw[i] = 1
		if w != nil {
			if !(w[i] >= 0) || math.IsInf(w[i], 0) {
				return nil, 0, fmt.Errorf("%w: row %d: %g", ErrWeight, i, w[i])
			}
			sw[i] = math.Sqrt(w[i])
			if w[i] == 0 {
				used--
			}
		}
	}
	return sw, used, nil
}

// scaledColumns are the weighted columns, each divided by its root mean square over the
// used rows (scale), so that the rank test does not depend on the regressors' units.
func scaledColumns(n, k int, at func(i, j int) float64, sw []float64, used int) (scale []float64, cols [][]float64, err error) {
	scale = make([]float64, k)
	cols = make([][]float64, k)
	for j := range k {
		c := make([]float64, n)
		s := 0.0
		for i := range n {
			c[i] = sw[i] * at(i, j)
			s += c[i] * c[i]
		}
		s = math.Sqrt(s / float64(used))
		if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			if s == 0 {
				return nil, nil, fmt.Errorf("%w: column %d is zero at every point", ErrRank, j)
			}
			return nil, nil, fmt.Errorf("%w: column %d is not finite", ErrShape, j)
		}
		for i := range c {
			c[i] /= s
		}
		scale[j], cols[j] = s, c
	}
	return scale, cols, nil
}

// householder turns cols into R (above the diagonal; the Householder vectors below it)
// and y into Qᵀy, in place, and returns R's diagonal.
func householder(cols [][]float64, y []float64) []float64 {
	n, k := len(y), len(cols)
	rdiag := make([]float64, k)
	for j := range k {
		c := cols[j]
		norm := columnNorm(c[j:])
		if norm == 0 {
			rdiag[j] = 0
			continue
		}
		if c[j] > 0 {
			norm = -norm
		}
		// v = c[j:] − norm e₁, stored in place; H = I − v vᵀ / (−norm v₁).
		c[j] -= norm
		beta := -norm * c[j] // = vᵀv / 2
		apply := func(x []float64) {
			s := 0.0
			for i := j; i < n; i++ {
				s += c[i] * x[i]
			}
			s /= beta
			for i := j; i < n; i++ {
				x[i] -= s * c[i]
			}
		}
		for jj := j + 1; jj < k; jj++ {
			apply(cols[jj])
		}
		apply(y)
		rdiag[j] = norm
	}
	return rdiag
}

// columnNorm is ‖c‖₂. The columns are scaled to unit RMS and a reflection keeps their
// norm, so every entry is at most √n: the plain sum of squares cannot overflow, and is as
// accurate as a running math.Hypot (one rounding per term) at a fraction of its cost (it
// was 12 % of internal/cli's test CPU). A tail so small that its squares underflow (below
// 1e-150) fails the rank test either way; it is still measured with Hypot.
func columnNorm(c []float64) float64 {
	ss := 0.0
	for _, x := range c {
		ss += x * x
	}
	if ss >= 0x1p-1000 && ss <= 0x1p1000 {
		return math.Sqrt(ss)
	}
	norm := 0.0 // zero, tiny, huge or NaN: the careful way
	for _, x := range c {
		norm = math.Hypot(norm, x)
	}
	return norm
}

// checkRank fails where a diagonal element of R is negligible against the largest.
func checkRank(rdiag []float64) error {
	maxR := 0.0
	for _, d := range rdiag {
		maxR = max(maxR, math.Abs(d))
	}
	for j, d := range rdiag {
		if !(math.Abs(d) > rankTol*maxR) {
			return fmt.Errorf("%w: column %d", ErrRank, j)
		}
	}
	return nil
}

// unscaledCovariance is (AᵀWA)⁻¹ = D⁻¹ R⁻¹ R⁻ᵀ D⁻¹, from R⁻¹ (upper triangular).
func unscaledCovariance(R func(i, j int) float64, rdiag, scale []float64) [][]float64 {
	k := len(rdiag)
	ri := make([][]float64, k)
	for i := range ri {
		ri[i] = make([]float64, k)
	}
	for j := range k {
		ri[j][j] = 1 / rdiag[j]
		for i := j - 1; i >= 0; i-- {
			s := 0.0
			for l := i + 1; l <= j; l++ {
				s += R(i, l) * ri[l][j]
			}
			ri[i][j] = -s / rdiag[i]
		}
	}
	u := make([][]float64, k)
	for i := range k {
		u[i] = make([]float64, k)
		for j := range k {
			s := 0.0
			for l := max(i, j); l < k; l++ {
				s += ri[i][l] * ri[j][l]
			}
			u[i][j] = s / (scale[i] * scale[j])
		}
	}
	return u
}

// goodness fills the residuals, the weighted RSS and R² of the fit.
func (r *Result) goodness(n int, at func(i, j int) float64, b, sw []float64) {
	var sumW, mean float64
	for i := range n {
		wi := sw[i] * sw[i]
		sumW += wi
		mean += wi * b[i]
	}
	mean /= sumW
	var tss float64
	for i := range n {
		wi := sw[i] * sw[i]
		p := 0.0 // r.Predict of row i
		for j, c := range r.Coef {
			p += at(i, j) * c
		}
		r.Resid[i] = b[i] - p
		r.RSS += wi * r.Resid[i] * r.Resid[i]
		tss += wi * (b[i] - mean) * (b[i] - mean)
	}
	if tss > 0 {
		r.R2 = 1 - r.RSS/tss
	}
}

// covariance fills Sigma, Cov and SE where there are degrees of freedom (Sigma NaN else).
func (r *Result) covariance() {
	r.Sigma = math.NaN()
	if r.DoF <= 0 {
		return
	}
	k := len(r.Coef)
	r.Sigma = math.Sqrt(r.RSS / float64(r.DoF))
	v := r.Sigma * r.Sigma
	r.Cov = make([][]float64, k)
	r.SE = make([]float64, k)
	for i := range k {
		r.Cov[i] = make([]float64, k)
		for j := range k {
			r.Cov[i][j] = v * r.unscaled[i][j]
		}
		r.SE[i] = math.Sqrt(r.Cov[i][i])
	}
}

// MaxAutocorrelation caps the lag-1 autocorrelation SerialInflation uses, so that a short
// series whose residuals are nearly a line inflates by a bounded factor (√19 ≈ 4.4).
const MaxAutocorrelation = 0.9

// SerialInflation is the factor by which the standard errors of a fit over a time series
// (rows in time order) understate the truth when the residuals are serially correlated:
// √((1+ρ)/(1−ρ)) for the lag-1 autocorrelation ρ of Resid (the AR(1) effective-sample-size
// correction), 1 when ρ ≤ 0. Counter readings against an integral are such a series: each
// reading's error carries over to the next.
func (r *Result) SerialInflation() float64 {
	var num, den float64
	for i, e := range r.Resid {
		den += e * e
		if i > 0 {
			num += e * r.Resid[i-1]
		}
	}
	if den == 0 || num <= 0 {
		return 1
	}
	rho := min(num/den, MaxAutocorrelation)
	return math.Sqrt((1 + rho) / (1 - rho))
}
