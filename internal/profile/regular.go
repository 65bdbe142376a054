package profile

import (
	"math"
	"math/rand/v2"
	"sort"

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

// addNormal returns a + f·b (f = ±1: two sets of readings joined, or one taken out).
func addNormal(a, b normal, f float64) normal {
	p := len(b.aty)
	out := normal{ata: make([][]float64, p), aty: make([]float64, p), yy: a.yy + f*b.yy, n: a.n + int(f)*b.n}
	for i := range p {
		out.ata[i] = make([]float64, p)
		for j := range p {
			if a.ata != nil {
				out.ata[i][j] = a.ata[i][j]
			}
			out.ata[i][j] += f * b.ata[i][j]
		}
		if a.aty != nil {
			out.aty[i] = a.aty[i]
		}
		out.aty[i] += f * b.aty[i]
	}
	return out
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
	inv    [][]float64 // G = (AᵀA + λ LᵀL)⁻¹
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
	s := solution{x: x, lambda: lambda, df: df, sigma: math.Sqrt(rss / dof), gcv: n * rss / (dof * dof), inv: g}
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
	lams := lambdaGrid(nm)
	if lams == nil {
		return solveAt(nm, q, 0)
	}
	var best solution
	found := false
	for _, lam := range lams {
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

// lambdaGrid is gcvSolve's grid of λ: 25 values half a decade apart, from ten decades
// below to two above the scale of AᵀA's diagonal; nil where there is nothing to regularise.
func lambdaGrid(nm normal) []float64 {
	p := len(nm.aty)
	scale := 0.0
	for i := 1; i < p; i++ {
		scale += nm.ata[i][i]
	}
	scale /= float64(max(1, p-1))
	if p <= 2 || scale <= 0 {
		return nil
	}
	out := make([]float64, 25)
	for k := range out {
		out[k] = scale * math.Pow(10, -10+0.5*float64(k))
	}
	return out
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
	width  float64 // 10-90 % width of the reproduced step, s: the 95th percentile over the noise draws, the widest model's
	offset float64 // |middle of the reproduced step − true step|, s: likewise
	worst  string  // the model that gave the widest step
	models int
	draws  int // noise draws per model and place
}

// StepPositions is how many places within a bin the step test puts its step at (a step
// on a bin's boundary is reproduced sharper than one across a bin's middle).
const StepPositions = 4

// StepDraws is how many noise draws the step test makes at each place and model: the
// stated width is the 95th percentile over them, so that a step the profile shows is
// no wider than stated in 19 of 20 profiles.
const StepDraws = 10

// stepper measures how the deconvolution at this profile's λ reproduces known shapes:
// the readings' own phases, the nominal model's design and its regularised inverse G.
type stepper struct {
	pts     []Point
	g       bins
	tex     float64
	fits    []lamFit    // (AᵀA + λ LᵀL)⁻¹ of the nominal design at each λ of gcvSolve's grid
	ata     [][]float64 // AᵀA
	rows    [][]float64 // the nominal design A, one row per reading
	truths  []variant   // the models the readings may have come through
	base    float64     // baseline, W
	sigma   float64     // the fit's residual scatter, W
	seed    uint64
	nominal variant
	shift   float64 // the delay's interval: how far it moves the whole profile, s
}

// lamFit is the regularised inverse at one λ, and its effective number of parameters.
type lamFit struct {
	inv [][]float64
	df  float64
}

// newStepper prepares the step test on the nominal design nm of the readings pts: the
// regularised inverse at every λ GCV may choose (the design is the same for every
// synthetic set of readings; only Aᵀy changes).
func newStepper(pts []Point, tex float64, g bins, nominal variant, truths []variant, nm normal, q [][]float64, base, sigma float64, seed uint64) *stepper {
	st := &stepper{pts: pts, g: g, tex: tex, ata: nm.ata, truths: truths, base: base, sigma: sigma, seed: seed, nominal: nominal}
	st.rows = make([][]float64, len(pts))
	for i, p := range pts {
		st.rows[i] = row(nil, shifted(p, nominal.dD), g, nominal.W, nominal.tau)
	}
	lams := lambdaGrid(nm)
	if lams == nil {
		lams = []float64{0}
	}
	for _, lam := range lams {
		s, ok := solveAt(nm, q, lam)
		if ok {
			st.fits = append(st.fits, lamFit{inv: s.inv, df: s.df})
		}
	}
	return st
}

// solve returns the profile (baseline first) the deconvolution gives for readings y, λ
// chosen by GCV as for the readings themselves.
func (st *stepper) solve(y []float64) []float64 {
	p := st.g.m + 1
	aty := make([]float64, p)
	yy := 0.0
	for i, r := range st.rows {
		yy += y[i] * y[i]
		for a, v := range r {
			if v != 0 {
				aty[a] += v * y[i]
			}
		}
	}
	n := float64(len(y))
	var best []float64
	bestG := math.Inf(1)
	x := make([]float64, p)
	for _, f := range st.fits {
		for i := range x {
			x[i] = 0
			for j, v := range aty {
				x[i] += f.inv[i][j] * v
			}
		}
		rss := yy
		for i := range x {
			rss -= 2 * x[i] * aty[i]
			for j := range x {
				rss += x[i] * st.ata[i][j] * x[j]
			}
		}
		dof := max(1, n-f.df)
		if gv := n * max(rss, 0) / (dof * dof); gv < bestG || best == nil {
			bestG, best = gv, append(best[:0], x...)
		}
	}
	return best
}

// shape measures the reproduction of the shape segs (levels above the baseline) whose
// step from level p1 to p2 (above the baseline) lies at t0, over every truth model and
// StepDraws noise draws of the fit's σ: per model the 95th percentile of the 10-90 %
// width and of the middle's distance from t0, and the widest model. The step's levels are
// taken at the scale the profile shows them (a model's error in the lag scales the power
// above the baseline by about the ratio of the lags): from the profile's energy above its
// baseline against the shape's.
func (st *stepper) shape(segs []segment, p1, p2, t0, lo, hi float64, rng *rand.Rand, widths, offsets map[string][]float64) {
	y0 := make([]float64, len(st.pts))
	y := make([]float64, len(st.pts))
	want := 0.0
	for _, s := range segs {
		want += (s.b - s.a) * s.w
	}
	for _, tv := range st.truths {
		for i, p := range st.pts {
			y0[i] = synth(p, segs, st.base, tv)
		}
		for range StepDraws {
			for i := range y {
				y[i] = y0[i] + st.sigma*rng.NormFloat64()
			}
			x := st.solve(y)
			got := 0.0
			for j := 0; j < st.g.m; j++ {
				got += (x[j+1] - x[0]) * st.g.h
			}
			r := 1.0
			if want > 0 && got > 0 {
				r = got / want
			}
			w, mid := stepWidth(x[1:], st.g, x[0]+r*p1, x[0]+r*p2, t0, lo, hi)
			widths[tv.name] = append(widths[tv.name], w)
			offsets[tv.name] = append(offsets[tv.name], math.Abs(mid-t0))
		}
	}
}

// p95 is the 95th percentile of v (the value below which 95 % of them lie).
func p95(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[max(0, int(math.Ceil(0.95*float64(len(s))))-1)]
}

// worst returns the widest model's 95th percentiles of widths and offsets.
func (st *stepper) worst(widths, offsets map[string][]float64) stepTest {
	out := stepTest{models: len(widths), draws: StepDraws}
	for _, tv := range st.truths {
		w, ok := widths[tv.name]
		if !ok {
			continue
		}
		if pw := p95(w); pw > out.width || out.worst == "" {
			out.width, out.worst = pw, tv.name
		}
		out.offset = max(out.offset, p95(offsets[tv.name]))
	}
	return out
}

// measureStep generates readings at the points' own phases of a kernel whose power steps
// down by a quarter of its height, from the baseline plus `above` to the baseline plus
// 3/4 of it, near the kernel's middle, through each model in truths (the nominal one and
// the ends of each parameter's interval), adds noise of the fit's σ (StepDraws draws),
// deconvolves them with the nominal model as the readings were (the same bins, λ by GCV)
// and measures the 10-90 % width of the step in the result. The step is put at StepPositions places
// across a bin; the stated width is the widest model's 95th percentile over places and
// draws. A small step is the hard case: noise moves its 10 and 90 % crossings more.
func (st *stepper) measureStep(above float64) stepTest {
	rng := rand.New(rand.NewPCG(st.seed, 0x5eed))
	g := st.g
	// the bin boundary nearest the kernel's middle
	b0 := g.start(int(math.Round((st.tex/2 - g.a0) / g.h)))
	widths, offsets := map[string][]float64{}, map[string][]float64{}
	for k := range StepPositions {
		tstep := b0 + (float64(k)+0.5)/StepPositions*g.h
		segs := []segment{{0, tstep, above}, {tstep, st.tex, 0.75 * above}}
		st.shape(segs, above, 0.75*above, tstep, 0, st.tex, rng, widths, offsets)
	}
	return st.worst(widths, offsets)
}

// measureTransition is the step test for a two-phase kernel's own transition: levels hA
// until t0 and hB after it (above the baseline), t0 where the profile places it.
func (st *stepper) measureTransition(hA, hB, t0 float64) stepTest {
	rng := rand.New(rand.NewPCG(st.seed, 0x7a5e))
	widths, offsets := map[string][]float64{}, map[string][]float64{}
	segs := []segment{{0, t0, hA}, {t0, st.tex, hB}}
	for range StepPositions { // as many draws as the quarter step's
		st.shape(segs, hA, hB, t0, 0, st.tex, rng, widths, offsets)
	}
	return st.worst(widths, offsets)
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
