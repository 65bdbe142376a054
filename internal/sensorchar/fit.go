package sensorchar

import (
	"math"
	"sort"

	"github.com/gpuwatt/gpuwatt/internal/lsq"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// The fit: the load's schedule is known (every kernel's start and end on the trace's
// axis), so a candidate sensor model predicts every reading as a linear mix of three power
// levels: "pre" (the idle before the first load), "on" (a load runs) and "off" (between
// loads after the first: active idle). For a boxcar the weights are the shares of the
// window [t−D−W, t−D] spent in each state; for an RC lag they are the first-order low-pass
// of each state's indicator at t−D. The levels are solved by least squares for each
// candidate; the shape (W, D) or (tau, D) by a grid search refined by coordinate descent.

const (
	statePre = iota
	stateOn
	stateOff
)

// schedule is the known load: on-intervals (sorted, disjoint) after the start s0 of the
// first load; before s0 the GPU is in the pre state.
type schedule struct {
	on  [][2]float64 // seconds
	cum []float64    // cum[i]: on-time before on[i] starts
	s0  float64
}

func newSchedule(on [][2]float64) *schedule {
	sort.Slice(on, func(i, j int) bool { return on[i][0] < on[j][0] })
	s := &schedule{on: on, cum: make([]float64, len(on)+1)}
	for i, iv := range on {
		s.cum[i+1] = s.cum[i] + iv[1] - iv[0]
	}
	if len(on) > 0 {
		s.s0 = on[0][0]
	}
	return s
}

// onTime is the time spent on in (−∞, t].
func (s *schedule) onTime(t float64) float64 {
	i := sort.Search(len(s.on), func(i int) bool { return s.on[i][0] > t }) // on[i-1] starts <= t
	if i == 0 {
		return 0
	}
	iv := s.on[i-1]
	return s.cum[i-1] + math.Min(t, iv[1]) - iv[0]
}

// state returns the state at t.
func (s *schedule) state(t float64) int {
	if t < s.s0 {
		return statePre
	}
	i := sort.Search(len(s.on), func(i int) bool { return s.on[i][0] > t })
	if i > 0 && t < s.on[i-1][1] {
		return stateOn
	}
	return stateOff
}

// boxWeights are the shares of [b−w, b] spent in each state (a point sample for w ≈ 0).
func (s *schedule) boxWeights(b, w float64) [3]float64 {
	if w < 1e-6 {
		var f [3]float64
		f[s.state(b)] = 1
		return f
	}
	a := b - w
	pre := math.Max(0, math.Min(b, s.s0)-a)
	pre = math.Min(pre, w)
	on := s.onTime(b) - s.onTime(a)
	off := w - pre - on
	return [3]float64{pre / w, on / w, math.Max(0, off) / w}
}

// boundaries returns the times the state changes, sorted.
func (s *schedule) boundaries() []float64 {
	out := make([]float64, 0, 2*len(s.on))
	for _, iv := range s.on {
		out = append(out, iv[0], iv[1])
	}
	return out
}

// rcWeights returns, for each query time q (sorted ascending), the RC low-pass (time
// constant tau) of each state's indicator at q, starting steady in the pre state.
func (s *schedule) rcWeights(qs []float64, tau float64) [][3]float64 {
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
		// sensormodel.Lag's state (its integral is not wanted here), with its decay
		// e^{−d/tau} worked out once for the three indicators: Lag's own products and
		// sums, without its five other transcendental calls per step.
		decay := 0.0
		if tau > 0 {
			decay = math.Exp(-(to - t) / tau)
		}
		for j := range x {
			target := 0.0
			if j == u {
				target = 1
			}
			if tau > 0 {
				x[j] = target + (x[j]-target)*decay
			} else {
				x[j] = target
			}
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

// solveLevels returns the levels minimising Σ (y − w·L)² and the residual sum of squares.
// A state never seen gets a small ridge towards the mean of the readings: one extra row
// √r·(L_j − mean) per level, with r a 1e-9 of the weights' total square, so the fit is
// always defined and barely moved where the states are seen.
func solveLevels(ws [][3]float64, ys []float64) ([3]float64, float64) {
	mean, tr := 0.0, 0.0
	for i, w := range ws {
		mean += ys[i]
		tr += w[0]*w[0] + w[1]*w[1] + w[2]*w[2]
	}
	if len(ys) > 0 {
		mean /= float64(len(ys))
	}
	r := math.Sqrt(1e-9*tr + 1e-12)
	A := make([][]float64, 0, len(ws)+3)
	b := make([]float64, 0, len(ws)+3)
	for i := range ws {
		A, b = append(A, ws[i][:]), append(b, ys[i])
	}
	for j := range 3 {
		row := make([]float64, 3)
		row[j] = r
		A, b = append(A, row), append(b, r*mean)
	}
	var l [3]float64
	if fit, err := lsq.Solve(A, b); err == nil {
		copy(l[:], fit.Coef)
	}
	rss := 0.0
	for i, w := range ws {
		d := ys[i] - (w[0]*l[0] + w[1]*l[1] + w[2]*l[2])
		rss += d * d
	}
	return l, rss
}

// fitResult is the best model of one shape.
type fitResult struct {
	rc     bool
	p      float64 // window (boxcar) or tau (rc), s
	tau    float64 // a boxcar's lag in front of its window (0: none), s
	delay  float64 // s
	levels [3]float64
	rss    float64
	n      int
}

func (f fitResult) rms() float64 {
	if f.n == 0 {
		return math.Inf(1)
	}
	return math.Sqrt(f.rss / float64(f.n))
}

// weights evaluates the model's weights at the reading times ts (sorted).
func (s *schedule) weights(rc bool, p, delay float64, ts []float64) [][3]float64 {
	return s.weightsLag(rc, p, 0, delay, ts)
}

// weightsLag is weights for a boxcar with a lag tau in front of it.
func (s *schedule) weightsLag(rc bool, p, tau, delay float64, ts []float64) [][3]float64 {
	if !rc && tau > 0 {
		ws := make([][3]float64, len(ts))
		for i, t := range ts {
			ws[i] = s.boxRCWeights(t-delay, p, tau)
		}
		return ws
	}
	if rc {
		qs := make([]float64, len(ts))
		for i, t := range ts {
			qs[i] = t - delay
		}
		return s.rcWeights(qs, p)
	}
	ws := make([][3]float64, len(ts))
	for i, t := range ts {
		ws[i] = s.boxWeights(t-delay, p)
	}
	return ws
}

// predict returns the model's reading at each time of ts (sorted).
func (s *schedule) predict(f fitResult, ts []float64) []float64 {
	ws := s.weightsLag(f.rc, f.p, f.tau, f.delay, ts)
	out := make([]float64, len(ts))
	for i, w := range ws {
		out[i] = w[0]*f.levels[0] + w[1]*f.levels[1] + w[2]*f.levels[2]
	}
	return out
}

// fit finds the best shape of one kind: p in [pLo, pHi] (log grid), delay in [0, dMax].
func (s *schedule) fit(rc bool, ts, ys []float64, pLo, pHi, dMax float64) fitResult {
	eval := func(p, d float64) fitResult {
		l, rss := solveLevels(s.weights(rc, p, d, ts), ys)
		return fitResult{rc: rc, p: p, delay: d, levels: l, rss: rss, n: len(ts)}
	}
	const np, nd = 48, 32
	best := fitResult{rss: math.Inf(1)}
	for i := range np {
		p := pLo * math.Pow(pHi/pLo, float64(i)/float64(np-1))
		for j := range nd {
			d := dMax * float64(j) / float64(nd-1)
			if r := eval(p, d); r.rss < best.rss {
				best = r
			}
		}
	}
	// Coordinate descent with shrinking steps: p multiplicatively, delay additively.
	pStep := math.Pow(pHi/pLo, 1.0/float64(np-1))
	dStep := dMax / float64(nd-1)
	for range 40 {
		improved := false
		// Besides each coordinate, moves along the valley where p and the delay trade off:
		// the response's centre (D + W/2 for a boxcar, D + tau for a lag) kept.
		share := 0.5
		if rc {
			share = 1
		}
		for _, c := range [][2]float64{{pStep, 0}, {1 / pStep, 0}, {1, dStep}, {1, -dStep},
			{pStep, -share * best.p * (pStep - 1)}, {1 / pStep, share * best.p * (1 - 1/pStep)}} {
			p, d := best.p*c[0], best.delay+c[1]
			if p < pLo/2 || p > pHi*2 || d < 0 || d > dMax*1.5 {
				continue
			}
			if r := eval(p, d); r.rss < best.rss {
				best, improved = r, true
			}
		}
		if !improved {
			pStep = math.Sqrt(pStep)
			dStep /= 2
			if pStep < 1.0005 && dStep < 20e-6 {
				break
			}
		}
	}
	return best
}

// boxRCWeights are the shares of each state in the mean over [b−w, b] of the state
// indicators passed through a lag tau: a boxcar of a low-passed signal (the H200's
// power.instant).
func (s *schedule) boxRCWeights(b, w, tau float64) [3]float64 {
	a := b - w
	// the lagged pre indicator is 1 − lag(step at s0)
	pre := 1 - (sensormodel.StepIntegral(b-s.s0, tau)-sensormodel.StepIntegral(a-s.s0, tau))/w
	// on-intervals ending more than 40 tau before a contribute nothing: their lagged
	// indicator is back at 0 by then.
	from := sort.Search(len(s.on), func(i int) bool { return s.on[i][1] > a-40*tau })
	on := 0.0
	for i := from; i < len(s.on) && s.on[i][0] < b; i++ {
		st, e := s.on[i][0], s.on[i][1]
		on += sensormodel.StepIntegral(b-st, tau) - sensormodel.StepIntegral(a-st, tau) - sensormodel.StepIntegral(b-e, tau) + sensormodel.StepIntegral(a-e, tau)
	}
	on /= w
	return [3]float64{pre, on, math.Max(0, 1-pre-on)}
}

// fitBoxRC finds the best boxcar-of-a-lag: window in [wLo, wHi], tau in [tLo, tHi] (log
// grids), delay in [0, dMax].
func (s *schedule) fitBoxRC(ts, ys []float64, wLo, wHi, tLo, tHi, dMax float64) fitResult {
	eval := func(w, tau, d float64) fitResult {
		ws := make([][3]float64, len(ts))
		for i, t := range ts {
			ws[i] = s.boxRCWeights(t-d, w, tau)
		}
		l, rss := solveLevels(ws, ys)
		return fitResult{p: w, tau: tau, delay: d, levels: l, rss: rss, n: len(ts)}
	}
	const nw, nt, nd = 16, 10, 12
	best := fitResult{rss: math.Inf(1)}
	for i := range nw {
		w := wLo * math.Pow(wHi/wLo, float64(i)/float64(nw-1))
		for j := range nt {
			tau := tLo * math.Pow(tHi/tLo, float64(j)/float64(nt-1))
			for k := range nd {
				d := dMax * float64(k) / float64(nd-1)
				if r := eval(w, tau, d); r.rss < best.rss {
					best = r
				}
			}
		}
	}
	wStep := math.Pow(wHi/wLo, 1.0/float64(nw-1))
	tStep := math.Pow(tHi/tLo, 1.0/float64(nt-1))
	dStep := dMax / float64(nd-1)
	for range 60 {
		improved := false
		for _, c := range [][3]float64{{wStep, 1, 0}, {1 / wStep, 1, 0}, {1, tStep, 0}, {1, 1 / tStep, 0}, {1, 1, dStep}, {1, 1, -dStep}} {
			w, tau, d := best.p*c[0], best.tau*c[1], best.delay+c[2]
			if w < wLo/2 || w > wHi*2 || tau < tLo/2 || tau > tHi*2 || d < 0 || d > dMax*1.5 {
				continue
			}
			if r := eval(w, tau, d); r.rss < best.rss {
				best, improved = r, true
			}
		}
		if !improved {
			wStep, tStep = math.Sqrt(wStep), math.Sqrt(tStep)
			dStep /= 2
			if wStep < 1.0005 && tStep < 1.0005 && dStep < 20e-6 {
				break
			}
		}
	}
	return best
}

// intervals returns the 95 % profile-likelihood intervals of a fit's shape parameters:
// p (window or tau), the lag in front of a boxcar's window where it has one, and the delay.
// Each is the range where the least residual sum of squares over the other parameters (and
// the levels) stays within rss·(1 + k²·3.84/(n − m)), the F-test of one parameter of m
// (three levels and the shape's), with k the AR(1) inflation of the fit's residuals in
// time order (lsq.SerialInflation): a model that misses the readings misses neighbouring
// ones alike, and n such readings say less than n independent ones. The other parameters
// are re-fitted on a coarse grid around their best values, so the intervals are nearly the
// profile ones. Each is then widened by res on either side: the readings are stamped to
// within the poller's resolution, and a fit cannot place a time finer than that. ok[i] is
// false for a bound not reached within p/4 to 4p (or 4 update periods of delay): the data
// do not pin the parameter down there.
func (s *schedule) intervals(f fitResult, ts, ys []float64, period, res float64) (iv [3][2]float64, ok [3]bool) {
	if f.n <= 6 || !(f.rss > 0) {
		return iv, ok
	}
	box := !f.rc && f.tau > 0
	np := 5.0
	if box {
		np = 6
	}
	// The residuals of the best fit, in time order, for their serial correlation.
	pred := s.predict(f, ts)
	r := lsq.Result{Resid: make([]float64, len(ts))}
	for i := range ts {
		r.Resid[i] = ys[i] - pred[i]
	}
	k := r.SerialInflation()
	limit := f.rss * (1 + k*k*3.84/(float64(f.n)-np))
	rss := func(x [3]float64) float64 {
		var ws [][3]float64
		if box {
			ws = s.weightsLag(false, x[0], x[1], max(x[2], 0), ts)
		} else {
			ws = s.weights(f.rc, x[0], max(x[2], 0), ts)
		}
		_, r := solveLevels(ws, ys)
		return r
	}
	best := [3]float64{f.p, f.tau, f.delay}
	// around returns the coarse grid of the parameters other than j around best.
	steps := [3]float64{f.p * 0.01, f.tau * 0.02, max(f.delay/20, 1e-4)}
	prof := func(j int, x float64) float64 {
		lo := math.Inf(1)
		var others []int
		for i := range 3 {
			if i != j && (i != 1 || box) {
				others = append(others, i)
			}
		}
		grid := []float64{-4, -2, -1, 0, 1, 2, 4}
		if len(others) == 2 {
			grid = []float64{-2, -1, 0, 1, 2}
		}
		var walk func(i int, cur [3]float64)
		walk = func(i int, cur [3]float64) {
			if i == len(others) {
				cur[j] = x
				lo = min(lo, rss(cur))
				return
			}
			o := others[i]
			for _, g := range grid {
				c := cur
				c[o] = best[o] + g*steps[o]
				if c[o] < 0 || (o != 2 && c[o] <= 0) {
					continue
				}
				walk(i+1, c)
			}
		}
		walk(0, best)
		return lo
	}
	// edge finds, from x0 in direction dir, the last value whose profile stays within the
	// limit: steps doubling from first until one leaves it (or reaches span: false), then
	// bisection.
	edge := func(j int, x0, dir, first, span float64) (float64, bool) {
		in, step := 0.0, first
		for {
			if step > span {
				return x0 + dir*span, false
			}
			if prof(j, x0+dir*step) > limit {
				break
			}
			in, step = step, 2*step
		}
		out := step
		for range 24 {
			mid := (in + out) / 2
			if prof(j, x0+dir*mid) > limit {
				out = mid
			} else {
				in = mid
			}
		}
		return x0 + dir*in, true
	}
	for j := range 3 {
		x0 := best[j]
		switch {
		case j == 1 && !box:
			continue
		case j == 2:
			lo, okLo := edge(j, x0, -1, 1e-8, x0)
			if !okLo {
				lo, okLo = 0, true // the delay's lower bound is 0 itself
			}
			hi, okHi := edge(j, x0, 1, 1e-8, 4*period)
			iv[j], ok[j] = [2]float64{max(0, lo-res), hi + res}, okLo && okHi
		default:
			lo, okLo := edge(j, x0, -1, x0*1e-7, 0.75*x0)
			hi, okHi := edge(j, x0, 1, x0*1e-7, 3*x0)
			iv[j], ok[j] = [2]float64{max(0, lo-res), hi + res}, okLo && okHi
		}
	}
	return iv, ok
}
