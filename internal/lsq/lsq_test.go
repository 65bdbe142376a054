package lsq

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g (tol %g)", what, got, want, tol)
	}
}

// Noiseless data: the coefficients come back exactly (to rounding), the residuals are 0,
// R² is 1; the columns differ by 15 orders of magnitude, as archline's W, Q and T do.
func TestExactRecovery(t *testing.T) {
	want := []float64{3e-12, 7e-11, 55}
	rng := rand.New(rand.NewPCG(1, 2))
	var A [][]float64
	var b []float64
	for range 40 {
		row := []float64{rng.Float64() * 1e15, rng.Float64() * 1e13, rng.Float64() * 2}
		A = append(A, row)
		b = append(b, row[0]*want[0]+row[1]*want[1]+row[2]*want[2])
	}
	r, err := Solve(A, b)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		near(t, "coef", r.Coef[j], want[j], 1e-12)
	}
	for i, e := range r.Resid {
		if math.Abs(e) > 1e-10*math.Abs(b[i]) {
			t.Errorf("resid[%d] = %g", i, e)
		}
	}
	near(t, "R2", r.R2, 1, 1e-12)
	if r.DoF != 37 {
		t.Errorf("DoF = %d, want 37", r.DoF)
	}
}

// The textbook simple regression x = 1..5, y = 2 4 5 4 5: y = 2.2 + 0.6 x, R² = 0.6,
// RSS = 2.4; standard errors by the closed forms SE(slope) = σ/√Sxx and
// SE(intercept) = σ √(1/n + x̄²/Sxx), σ² = RSS/(n−2).
func TestSimpleRegression(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	ys := []float64{2, 4, 5, 4, 5}
	A := make([][]float64, len(xs))
	for i, x := range xs {
		A[i] = []float64{1, x}
	}
	r, err := Solve(A, ys)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "intercept", r.Coef[0], 2.2, 1e-14)
	near(t, "slope", r.Coef[1], 0.6, 1e-14)
	near(t, "R2", r.R2, 0.6, 1e-14)
	near(t, "RSS", r.RSS, 2.4, 1e-14)
	wantResid := []float64{-0.8, 0.6, 1, -0.6, -0.2}
	for i := range wantResid {
		near(t, "resid", r.Resid[i], wantResid[i], 1e-14)
	}
	sigma2 := 2.4 / 3
	sxx, xbar := 10.0, 3.0
	near(t, "Sigma", r.Sigma, math.Sqrt(sigma2), 1e-14)
	near(t, "SE slope", r.SE[1], math.Sqrt(sigma2/sxx), 1e-13)
	near(t, "SE intercept", r.SE[0], math.Sqrt(sigma2*(1.0/5+xbar*xbar/sxx)), 1e-13)
	near(t, "cov", r.Cov[0][1], -sigma2*xbar/sxx, 1e-13)
	near(t, "cov sym", r.Cov[1][0], r.Cov[0][1], 1e-15)
	u := r.Unscaled()
	near(t, "unscaled", u[1][1], 1/sxx, 1e-13)
}

// normalEquations is the solver lsq replaced (scaled columns, Gaussian elimination with
// partial pivoting on AᵀA), kept here to show what it loses.
func normalEquations(A [][]float64, b []float64) []float64 {
	n, k := len(A), len(A[0])
	scale := make([]float64, k)
	for j := range k {
		for i := range n {
			scale[j] += A[i][j] * A[i][j]
		}
		scale[j] = math.Sqrt(scale[j] / float64(n))
	}
	M := make([][]float64, k)
	for r := range k {
		M[r] = make([]float64, k+1)
		for c := range k {
			for i := range n {
				M[r][c] += A[i][r] / scale[r] * A[i][c] / scale[c]
			}
		}
		for i := range n {
			M[r][k] += A[i][r] / scale[r] * b[i]
		}
	}
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(M[r][c]) > math.Abs(M[p][c]) {
				p = r
			}
		}
		M[c], M[p] = M[p], M[c]
		for r := range k {
			if r != c {
				f := M[r][c] / M[c][c]
				for cc := c; cc <= k; cc++ {
					M[r][cc] -= f * M[c][cc]
				}
			}
		}
	}
	x := make([]float64, k)
	for j := range k {
		x[j] = M[j][k] / M[j][j] / scale[j]
	}
	return x
}

// An ill-conditioned fit: a quadratic in t over t = 1000..1001 in the basis 1, t, t²
// (nearly parallel columns even after scaling). QR keeps 8 digits of the coefficients
// (relative error ~4e-9); the normal equations square the condition number and keep one
// (~6e-2).
func TestIllConditioned(t *testing.T) {
	// y = 1 + 2 (t − 1000) + 3 (t − 1000)² = c0 + c1 t + c2 t².
	want := []float64{1 - 2000 + 3e6, 2 - 6000, 3}
	var A [][]float64
	var b []float64
	for i := range 21 {
		tt := 1000 + float64(i)/20
		d := tt - 1000
		A = append(A, []float64{1, tt, tt * tt})
		b = append(b, 1+2*d+3*d*d)
	}
	r, err := Solve(A, b)
	if err != nil {
		t.Fatal(err)
	}
	relErr := func(x []float64) float64 {
		e := 0.0
		for j := range want {
			e = max(e, math.Abs(x[j]-want[j])/math.Abs(want[j]))
		}
		return e
	}
	qr, ne := relErr(r.Coef), relErr(normalEquations(A, b))
	t.Logf("relative error of the coefficients: QR %.2g, normal equations %.2g", qr, ne)
	if qr > 1e-6 {
		t.Errorf("QR lost the coefficients: relative error %g", qr)
	}
	if !(ne > 100*qr) {
		t.Errorf("normal equations (%g) not clearly worse than QR (%g): the case is not ill-conditioned", ne, qr)
	}
}

// A weight of 2 is the same as the row twice; a weight of 0 drops the row.
func TestWeighted(t *testing.T) {
	A := [][]float64{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}}
	b := []float64{1, 3, 2, 5, 4}
	w := []float64{2, 1, 0, 1, 3}
	r, err := SolveWeighted(A, b, w)
	if err != nil {
		t.Fatal(err)
	}
	var A2 [][]float64
	var b2 []float64
	for i := range b {
		for range int(w[i]) {
			A2 = append(A2, A[i])
			b2 = append(b2, b[i])
		}
	}
	r2, err := Solve(A2, b2)
	if err != nil {
		t.Fatal(err)
	}
	for j := range r.Coef {
		near(t, "coef", r.Coef[j], r2.Coef[j], 1e-13)
	}
	near(t, "RSS", r.RSS, r2.RSS, 1e-13)
	near(t, "R2", r.R2, r2.R2, 1e-13)
	near(t, "resid of the dropped row", r.Resid[2], b[2]-r.Predict(A[2]), 1e-15)
	if r.DoF != 2 {
		t.Errorf("DoF = %d, want 2 (four weighted rows, two coefficients)", r.DoF)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		A    [][]float64
		b, w []float64
		want error
	}{
		{"empty", nil, nil, nil, ErrShape},
		{"ragged", [][]float64{{1, 2}, {1}}, []float64{1, 2}, nil, ErrShape},
		{"b length", [][]float64{{1}, {2}}, []float64{1}, nil, ErrShape},
		{"too few", [][]float64{{1, 2}}, []float64{1}, nil, ErrTooFew},
		{"zero column", [][]float64{{1, 0}, {2, 0}, {3, 0}}, []float64{1, 2, 3}, nil, ErrRank},
		{"dependent", [][]float64{{1, 2}, {2, 4}, {3, 6}}, []float64{1, 2, 3}, nil, ErrRank},
		{"negative weight", [][]float64{{1}, {2}}, []float64{1, 2}, []float64{1, -1}, ErrWeight},
		{"NaN column", [][]float64{{1}, {math.NaN()}}, []float64{1, 2}, nil, ErrShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := SolveWeighted(c.A, c.b, c.w); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// An exact fit (as many points as coefficients) has no standard errors.
func TestExactFitNoErrors(t *testing.T) {
	r, err := Solve([][]float64{{1, 0}, {1, 1}}, []float64{2, 5})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "c0", r.Coef[0], 2, 1e-15)
	near(t, "c1", r.Coef[1], 3, 1e-15)
	if r.SE != nil || r.Cov != nil || !math.IsNaN(r.Sigma) {
		t.Errorf("exact fit: SE %v Cov %v Sigma %v, want nil, nil, NaN", r.SE, r.Cov, r.Sigma)
	}
}

func TestSerialInflation(t *testing.T) {
	// Independent residuals: no inflation to speak of.
	rng := rand.New(rand.NewPCG(3, 4))
	white := make([]float64, 4000)
	for i := range white {
		white[i] = rng.NormFloat64()
	}
	if k := (&Result{Resid: white}).SerialInflation(); k > 1.1 {
		t.Errorf("white residuals inflate by %.3f, want about 1", k)
	}
	// AR(1) residuals with rho 0.8: sqrt(1.8/0.2) = 3.
	ar := make([]float64, 20000)
	for i := 1; i < len(ar); i++ {
		ar[i] = 0.8*ar[i-1] + rng.NormFloat64()
	}
	if k := (&Result{Resid: ar}).SerialInflation(); math.Abs(k-3) > 0.25 {
		t.Errorf("AR(1) rho 0.8 residuals inflate by %.3f, want about 3", k)
	}
	// Alternating residuals (negative rho): 1; a constant offset is capped.
	if k := (&Result{Resid: []float64{1, -1, 1, -1}}).SerialInflation(); k != 1 {
		t.Errorf("alternating: %g, want 1", k)
	}
	same := make([]float64, 40) // rho 0.975: capped at 0.9
	for i := range same {
		same[i] = 1
	}
	if k := (&Result{Resid: same}).SerialInflation(); math.Abs(k-math.Sqrt(19)) > 1e-9 {
		t.Errorf("a constant offset: %g, want the cap sqrt(19)", k)
	}
}

// TestSolveColumnsIsSolve: the regressors as columns give Solve's figures on the rows, bit
// for bit.
func TestSolveColumnsIsSolve(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 500
	cols := [][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	A, b := make([][]float64, n), make([]float64, n)
	for i := range n {
		x, z := r.Float64()*10, r.Float64()*3
		cols[0][i], cols[1][i], cols[2][i] = x, z, 1
		A[i] = []float64{x, z, 1}
		b[i] = 2*x - z + 5 + r.NormFloat64()
	}
	want, err := Solve(A, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SolveColumns(cols, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SolveColumns %+v, Solve %+v", got, want)
	}
}
