package profile

import (
	"math"
	"math/rand/v2"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// The regularised deconvolution (issue 13).
//
// The unknowns are the baseline b and the power s_1..s_m of m equal bins over the kernel.
// Plain least squares lets a sensor model a few per cent off (a lag of 13.3 ms against the
// board's 14 ms, a delay 0.3 ms late) turn into alternating bins hundreds of watts apart: the
// deconvolution of a lag has nearly unseen, alternating directions that absorb any misfit.
// Tikhonov regularisation penalises the first differences of neighbouring bins (not the
// kernel's edges against the baseline):
//
//	min ‖A x − y‖² + λ ‖L x‖²,   (L x)_j = s_{j+1} − s_j,
//
// with λ chosen from the data by generalised cross-validation, GCV(λ) = n RSS(λ) / (n −
// tr H(λ))², H the influence matrix A (AᵀA + λ LᵀL)⁻¹ Aᵀ (Golub, Heath and Wahba 1979). The
// normal equations are formed once per model (m ≤ 100 unknowns, readings of one scale:
// no column differs from another by orders of magnitude) and each λ is one Cholesky
// factorisation.

// bins are the profile's m bins of width h from a0 (s since the kernel's start): the
// kernel's run and a margin either side, so that a delay a little off, or power that
// outlasts the kernel, is not forced into the kernel's time.
type bins struct {
	a0, h float64
	m     int
}

func (g bins) start(j int) float64 { return g.a0 + float64(j)*g.h }

// normal holds AᵀA, Aᵀy and yᵀy of one model of the readings.
type normal struct {
	ata [][]float64
	aty []float64
	yy  float64
	n   int
}

// variant is a sensor model to build the design with: window, lag and a shift of the
// delay (dD > 0: the readings' windows end dD earlier than the nominal model says).
type variant struct {
	W, tau, dD float64
	name       string
}

// shifted returns p with every phase moved by −dD (a delay longer by dD).
func shifted(p Point, dD float64) Point {
	if dD == 0 {
		return p
	}
	q := p
	q.PhaseS -= dD
	q.others = make([]float64, len(p.others))
	for i, o := range p.others {
		q.others[i] = o - dD
	}
	return q
}

// buildNormal forms the normal equations of the readings y (nil: the points' own) under
// model v with the bins g.
func buildNormal(pts []Point, y []float64, g bins, v variant) normal {
	p := g.m + 1
	nm := normal{ata: make([][]float64, p), aty: make([]float64, p), n: len(pts)}
	for i := range nm.ata {
		nm.ata[i] = make([]float64, p)
	}
	var r []float64
	for i, pt := range pts {
		r = row(r, shifted(pt, v.dD), g, v.W, v.tau)
		yi := pt.PowerW
		if y != nil {
			yi = y[i]
		}
		nm.yy += yi * yi
		for a := 0; a < p; a++ {
			if r[a] == 0 {
				continue
			}
			nm.aty[a] += r[a] * yi
			ra := nm.ata[a]
			for b := a; b < p; b++ {
				ra[b] += r[a] * r[b]
			}
		}
	}
	for a := 0; a < p; a++ {
		for b := 0; b < a; b++ {
			nm.ata[a][b] = nm.ata[b][a]
		}
	}
	return nm
}

// penalty returns LᵀL for the first differences of neighbouring bins (indices 1..m), the
// first and last bin (in the margins) against the baseline (index 0) included, except
// across the kernel's own start and end: the boundaries between bins within `free` of
// t = 0 or t = tex are not penalised (the kernel's edges are steps, known to within the
// delay's uncertainty).
func penalty(g bins, tex, free float64) [][]float64 {
	m := g.m
	p := m + 1
	q := make([][]float64, p)
	for i := range q {
		q[i] = make([]float64, p)
	}
	diff := func(a, b int) {
		q[a][a]++
		q[b][b]++
		q[a][b]--
		q[b][a]--
	}
	for j := 1; j < m; j++ {
		t := g.start(j) // between bin j-1 and j (indices j and j+1)
		if math.Abs(t) <= free || math.Abs(t-tex) <= free {
			continue
		}
		diff(j, j+1)
	}
	if m > 1 {
		diff(0, 1)
		diff(0, m)
	}
	return q
}

// solution is one regularised solve.
type solution struct {
	x      []float64
	cov    [][]float64 // σ² G AᵀA G, G = (AᵀA + λ LᵀL)⁻¹
	lambda float64
	df     float64 // tr H: the effective number of parameters
	sigma  float64 // residual standard deviation, √(RSS / (n − df))
	gcv    float64
}

// solveAt solves the regularised normal equations at λ; it returns false where the system
// is singular.
func solveAt(nm normal, q [][]float64, lambda float64) (solution, bool) {
	p := len(nm.aty)
	a := make([][]float64, p)
	for i := range a {
		a[i] = make([]float64, p)
		for j := range a[i] {
			a[i][j] = nm.ata[i][j] + lambda*q[i][j]
		}
	}
	g, ok := invSPD(a)
	if !ok {
		return solution{}, false
	}
	x := make([]float64, p)
	for i := range x {
		for j := range x {
			x[i] += g[i][j] * nm.aty[j]
		}
	}
	// RSS = yᵀy − 2 xᵀAᵀy + xᵀAᵀA x; df = tr(G AᵀA)
	rss := nm.yy
	df := 0.0
	for i := 0; i < p; i++ {
		rss -= 2 * x[i] * nm.aty[i]
		for j := 0; j < p; j++ {
			rss += x[i] * nm.ata[i][j] * x[j]
			df += g[i][j] * nm.ata[j][i]
		}
	}
	rss = max(rss, 0)
	n := float64(nm.n)
	dof := max(1, n-df)
	s := solution{x: x, lambda: lambda, df: df, sigma: math.Sqrt(rss / dof), gcv: n * rss / (dof * dof)}
	// cov = σ² G AᵀA G
	ga := matMul(g, nm.ata)
	c := matMul(ga, g)
	for i := range c {
		for j := range c[i] {
			c[i][j] *= s.sigma * s.sigma
		}
	}
	s.cov = c
	return s, true
}

// gcvSolve picks λ by generalised cross-validation over a grid of 25 values, half a decade
// apart, from ten decades below to two above the scale of AᵀA's diagonal, and returns
// that solve.
func gcvSolve(nm normal, q [][]float64) (solution, bool) {
	p := len(nm.aty)
	scale := 0.0
	for i := 1; i < p; i++ {
		scale += nm.ata[i][i]
	}
	scale /= float64(max(1, p-1))
	if p <= 2 || scale <= 0 {
		return solveAt(nm, q, 0)
	}
	var best solution
	found := false
	for k := 0; k <= 24; k++ {
		lam := scale * math.Pow(10, -10+0.5*float64(k))
		s, ok := solveAt(nm, q, lam)
		if !ok {
			continue
		}
		if !found || s.gcv < best.gcv {
			best, found = s, true
		}
	}
	return best, found
}

// invSPD inverts a symmetric positive definite matrix by Cholesky; false if it is not
// (numerically) positive definite.
func invSPD(a [][]float64) ([][]float64, bool) {
	n := len(a)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
	}
	for j := 0; j < n; j++ {
		d := a[j][j]
		for k := 0; k < j; k++ {
			d -= l[j][k] * l[j][k]
		}
		if !(d > 1e-12*math.Abs(a[j][j])) || d <= 0 {
			return nil, false
		}
		l[j][j] = math.Sqrt(d)
		for i := j + 1; i < n; i++ {
			s := a[i][j]
			for k := 0; k < j; k++ {
				s -= l[i][k] * l[j][k]
			}
			l[i][j] = s / l[j][j]
		}
	}
	// inverse of L, then (L⁻¹)ᵀ L⁻¹
	li := make([][]float64, n)
	for i := range li {
		li[i] = make([]float64, n)
		li[i][i] = 1 / l[i][i]
		for j := 0; j < i; j++ {
			s := 0.0
			for k := j; k < i; k++ {
				s -= l[i][k] * li[k][j]
			}
			li[i][j] = s / l[i][i]
		}
	}
	inv := make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := i; k < n; k++ {
				s += li[k][i] * li[k][j]
			}
			inv[i][j], inv[j][i] = s, s
		}
	}
	return inv, true
}

func matMul(a, b [][]float64) [][]float64 {
	n, m, p := len(a), len(b), len(b[0])
	c := make([][]float64, n)
	for i := range c {
		c[i] = make([]float64, p)
		for k := 0; k < m; k++ {
			if a[i][k] == 0 {
				continue
			}
			for j := 0; j < p; j++ {
				c[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return c
}

// segment is a stretch [a, b) of a known shape at power w above the baseline.
type segment struct{ a, b, w float64 }

// synth is what point p reads of a kernel of the shape segs (in every run it sees) over
// baseline b, through model v, plus noise.
func synth(p Point, segs []segment, base float64, v variant) float64 {
	q := shifted(p, v.dD)
	y := base
	add := func(ph float64) {
		for _, s := range segs {
			r := sensormodel.StepResponse(ph-s.a, v.W, v.tau) - sensormodel.StepResponse(ph-s.b, v.W, v.tau)
			y += s.w * r
		}
	}
	add(q.PhaseS)
	for _, o := range q.others {
		add(o)
	}
	return y
}

// stepTest is the resolution measured on a known shape: a step in the middle of the kernel.
type stepTest struct {
	width  float64 // 10-90 % width of the reproduced step, s (the largest over the models)
	offset float64 // largest |middle of the reproduced step − true step|, s
	worst  string  // the model that gave the widest step
	models int
}

// StepPositions is how many places within a bin the step test puts its step at (a step
// on a bin's boundary is reproduced sharper than one across a bin's middle).
const StepPositions = 4

// measureStep generates readings at the points' own phases of a kernel whose power steps
// down by a quarter of its height, from the baseline plus `above` to the baseline plus
// 3/4 of it, near the kernel's middle, through each model in truths (the nominal one and
// the ends of each parameter's interval), adds noise of the fit's σ, deconvolves them with
// the nominal model exactly as the measured readings were (same bins, λ again by GCV) and
// measures the 10-90 % width of the step in the result. The step is put at StepPositions
// places across a bin, each with its own noise; the widest is the resolution. A small step
// is the hard case: GCV smooths it more than a large one.
func measureStep(pts []Point, tex, free float64, g bins, nominal variant, truths []variant, base, above, sigma float64, seed uint64) stepTest {
	q := penalty(g, tex, free)
	out := stepTest{}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	y := make([]float64, len(pts))
	// the bin boundary nearest the kernel's middle
	b0 := g.start(int(math.Round((tex/2 - g.a0) / g.h)))
	for _, tv := range truths {
		for k := range StepPositions {
			tstep := b0 + (float64(k)+0.5)/StepPositions*g.h
			segs := []segment{{0, tstep, above}, {tstep, tex, 0.75 * above}}
			for i, p := range pts {
				y[i] = synth(p, segs, base, tv) + sigma*rng.NormFloat64()
			}
			s, ok := gcvSolve(buildNormal(pts, y, g, nominal), q)
			if !ok {
				continue
			}
			// A model's error in the lag scales what the profile shows (by about the ratio
			// of the lags): the step's levels are taken at that scale, from the profile's
			// energy above its baseline against the shape's.
			got := 0.0
			for j := 0; j < g.m; j++ {
				got += (s.x[j+1] - s.x[0]) * g.h
			}
			r := got / (tstep*above + (tex-tstep)*0.75*above)
			w, mid := stepWidth(s.x[1:], g, s.x[0]+r*above, s.x[0]+r*0.75*above, tstep, 0, tex)
			out.models++
			if w > out.width {
				out.width, out.worst = w, tv.name
			}
			out.offset = max(out.offset, math.Abs(mid-tstep))
		}
	}
	return out
}

// stepWidth measures, on the profile x (the bins g, read as a line through the bins'
// centres), the 10-90 % width of a step from level p1 to level p2 near t0, and where it
// crosses halfway. The halfway crossing nearest t0 is found first; from it the width runs
// left to the last point at or below 10 % of the step and right to the first at or above
// 90 %, searched within [lo, hi] (which bound it where none is).
func stepWidth(x []float64, g bins, p1, p2, t0, lo, hi float64) (width, mid float64) {
	m, h := g.m, g.h
	if m == 1 || p1 == p2 {
		return hi - lo, t0
	}
	u := make([]float64, m)
	c := make([]float64, m)
	for j := range x {
		u[j] = (x[j] - p1) / (p2 - p1)
		c[j] = g.start(j) + h/2
	}
	cross := func(j int, lvl float64) float64 { // between j and j+1
		d := u[j+1] - u[j]
		if d == 0 {
			return c[j]
		}
		return c[j] + (lvl-u[j])/d*h
	}
	mid, best := math.NaN(), math.Inf(1)
	jm := -1
	for j := 0; j+1 < m; j++ {
		if c[j+1] < lo || c[j] > hi {
			continue
		}
		if (u[j] < 0.5) != (u[j+1] < 0.5) {
			t := cross(j, 0.5)
			if d := math.Abs(t - t0); d < best {
				mid, best, jm = t, d, j
			}
		}
	}
	if jm < 0 {
		return hi - lo, t0
	}
	a, b := lo, hi
	for j := jm; j >= 0 && c[j] >= lo; j-- {
		if u[j] <= 0.1 {
			a = c[j]
			if j < m-1 && u[j+1] > 0.1 {
				a = cross(j, 0.1)
			}
			break
		}
	}
	for j := jm + 1; j < m && c[j] <= hi; j++ {
		if u[j] >= 0.9 {
			b = c[j]
			if j > 0 && u[j-1] < 0.9 {
				b = cross(j-1, 0.9)
			}
			break
		}
	}
	return max(b-a, h), mid
}
