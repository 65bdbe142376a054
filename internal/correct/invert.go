package correct

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// An inverter turns a channel's readings into the energy of the true power over intervals.
// Times are seconds on the trace's axis.
type inverter interface {
	// span is the part of the axis the readings describe.
	span() (lo, hi float64)
	// energy is the energy over [a, b] (lo <= a < b <= hi), in J.
	energy(a, b float64) float64
	// binEnergies is the energy of each interval, computed more cheaply (and less
	// carefully near power changes) than energy: for the idle floor.
	binEnergies(bins []interval) []float64
	// notes are warnings about the last energy call.
	notes() []string
}

// interval is [a, b] on the trace's axis, in seconds.
type interval struct{ a, b float64 }

func newInverter(s trace.Readings, m sensormodel.Model, period time.Duration, noise *noiseMemo) inverter {
	delay := m.Delay.Seconds()
	if m.Kind() == sensormodel.Boxcar {
		delay += m.Tau.Seconds() // a lag before the window: its mean delay (energy is kept)
	}
	switch {
	case m.Kind() == sensormodel.RC:
		return newRC(s, m.Tau.Seconds(), delay, shortLag(m, period), noise)
	case denseBoxcar(m, period):
		return newDense(collapseBursts(s, period/4), m.Window.Seconds(), delay)
	case m.Kind() == sensormodel.Boxcar:
		return newHold(collapseBursts(s, period/4), delay+m.Window.Seconds()/2, period.Seconds(), m.Window.Seconds())
	}
	return newLinear(s, 0)
}

// collapseBursts merges readings less than gap after the first of their burst into one:
// the last value, at the first one's time. A boxcar published every T sometimes shows one
// update as two changes a fraction of a millisecond apart (the H200's power.instant does:
// internal/nvml/REAL_GPU_NOTES.md); held over a period each, the first would take half of
// it. s is not modified; the result has no driver stamps where it merged any.
func collapseBursts(s trace.Readings, gap time.Duration) trace.Readings {
	if gap <= 0 {
		return s
	}
	T, V := s.T, s.V
	i := 1
	for i < len(T) && T[i]-T[i-1] >= gap {
		i++
	}
	if i >= len(T) {
		return s // none: no copy
	}
	out := trace.Readings{T: slices.Clone(T[:i]), V: slices.Clone(V[:i])}
	start := T[i-1]
	for ; i < len(T); i++ {
		if T[i]-start < gap {
			out.V[len(out.V)-1] = V[i]
			continue
		}
		out.T, out.V = append(out.T, T[i]), append(out.V, V[i])
		start = T[i]
	}
	return out
}

// linear is the piecewise-linear interpolant of readings, with its running integral.
type linear struct {
	t, v  []float64
	shift float64 // the readings' times less t
	// The running integral from t[0] to t[i], kept every holdStride readings (ck) and
	// summed from there (cum): the sums over the times ct it was made on (t, or the t of the
	// linear this one is shifted from: a sum of differences of t, shared).
	ck, ct []float64
}

// shifted is l with its readings placed at their times less shift instead: v and the
// running integral (a sum of differences of t) are shared, only t is new.
func (l *linear) shifted(shift float64) *linear {
	if shift == l.shift {
		return l
	}
	t := make([]float64, len(l.t))
	for i, x := range l.t {
		t[i] = x + l.shift - shift
	}
	return &linear{t: t, v: l.v, ck: l.ck, ct: l.ct, shift: shift}
}

// newLinear places reading i at s.T[i] − shift. The values are s's own (shared, not
// modified).
func newLinear(s trace.Readings, shift float64) *linear {
	n := s.Len()
	l := &linear{t: make([]float64, n), v: s.V, ck: make([]float64, 0, n/holdStride+1), shift: shift}
	for i, t := range s.T {
		l.t[i] = t.Seconds() - shift
	}
	l.ct = l.t
	var cum float64
	for i := 0; i < n; i++ {
		if i > 0 {
			cum += l.piece(i)
		}
		if i%holdStride == 0 {
			l.ck = append(l.ck, cum)
		}
	}
	return l
}

// piece is the integral from reading i−1 to reading i (on ct).
func (l *linear) piece(i int) float64 {
	return (l.ct[i] - l.ct[i-1]) * (l.v[i] + l.v[i-1]) / 2
}

// cum is the integral from t[0] to t[i]: the same sums in the same order as a running
// integral kept at every reading.
func (l *linear) cum(i int) float64 {
	c := l.ck[i/holdStride]
	for j := i/holdStride*holdStride + 1; j <= i; j++ {
		c += l.piece(j)
	}
	return c
}

func (l *linear) span() (float64, float64) { return l.t[0], l.t[len(l.t)-1] }

// seg returns i with t[i] <= x < t[i+1] (clamped to [0, n−2]); n >= 2.
func (l *linear) seg(x float64) int { return l.segFrom(x, nil) }

// segFrom is seg searching from cursor c (nil: a binary search).
func (l *linear) segFrom(x float64, c *cursor) int {
	i := c.ge(l.t, x) // first t >= x
	if i < len(l.t) && l.t[i] == x {
		return min(i, len(l.t)-2)
	}
	return min(max(i-1, 0), len(l.t)-2)
}

// at is the interpolated reading at x, held constant beyond the ends.
func (l *linear) at(x float64) float64 { return l.atFrom(x, nil) }

// atFrom is at searching from cursor c.
func (l *linear) atFrom(x float64, c *cursor) float64 {
	n := len(l.t)
	switch {
	case n == 1 || x <= l.t[0]:
		return l.v[0]
	case x >= l.t[n-1]:
		return l.v[n-1]
	}
	i := l.segFrom(x, c)
	dt := l.t[i+1] - l.t[i]
	if dt <= 0 {
		return l.v[i+1]
	}
	return l.v[i] + (l.v[i+1]-l.v[i])*(x-l.t[i])/dt
}

// cumAt is the integral from t[0] to x (t[0] <= x <= t[n−1]).
func (l *linear) cumAt(x float64) float64 {
	if len(l.t) == 1 || x <= l.t[0] {
		return 0
	}
	i := l.seg(x)
	return l.cum(i) + (x-l.t[i])*(l.v[i]+l.at(x))/2
}

func (l *linear) energy(a, b float64) float64 { return l.cumAt(b) - l.cumAt(a) }

func (l *linear) binEnergies(bins []interval) []float64 {
	out := make([]float64, len(bins))
	for i, x := range bins {
		out[i] = l.energy(x.a, x.b)
	}
	return out
}

func (l *linear) notes() []string { return nil }

// hold stands each reading for its own update period: a cell centred on its window's centre,
// bounded by the midpoints to the neighbouring centres (half a period beyond the first and
// last). Exact for a boxcar whose windows tile the time (W = T); for W < T it samples W of
// every T and holds it, which is right for steady loads.
//
// A reading that lies between its neighbours, further from each than the noise, saw a change of
// power inside its window: if the power stepped once, from the previous reading's level to
// the next one's, the reading's value tells where in the window (a fraction f of it at the
// old level, f = (next − this)/(next − previous)). The cell is then split there instead of
// held at the mixed value. For W = T the cell's energy is unchanged and only its share on
// either side of a region's edge moves; for W < T it also puts the step where it was seen
// instead of at the midpoint of the unseen gap.
//
// The cells are worked out as they are asked, from the readings: a hold stores only the
// running integral at every holdStride-th edge (8 bytes per holdStride readings, where
// four arrays over every reading took 32 bytes a reading), and sums the cells from there
// on: the same sums in the same order as the integral over every cell, bit for bit.
type hold struct {
	s                   trace.Readings // collapsed (collapseBursts)
	shift, half, w, thr float64
	ck                  []float64 // ck[j] = the integral from the first edge to edge holdStride·j
	total               float64   // to the last edge
}

// holdStride is how many cells apart a hold keeps its running integral.
const holdStride = 64

// holdHalf is how far the first and last cells of a hold reach beyond their centres c0
// and cn (n readings): half the period, else half the mean interval.
func holdHalf(period, c0, cn float64, n int) float64 {
	half := period / 2
	switch {
	case half > 0:
	case n >= 2:
		half = (cn - c0) / float64(n-1) / 2
	default:
		half = 1e-3 // one reading and no period: a nominal millisecond
	}
	return half
}

// holdThreshold is the change between readings beyond which a hold splits a cell.
func holdThreshold(s trace.Readings) float64 {
	return 6*noiseSigma(s.Len(), func(i int) float64 { return s.V[i] }) + 1e-3
}

// holdSplit is where cell i of a hold changes level, or NaN (see hold): prev, cur and next
// the readings around it, c its centre, lo and hi its edges.
func holdSplit(prev, cur, next, c, lo, hi, w, thr float64) float64 {
	if math.Abs(cur-prev) <= thr || math.Abs(next-cur) <= thr || !(prev < cur && cur < next || prev > cur && cur > next) {
		return math.NaN()
	}
	f := (next - cur) / (next - prev)
	p := c - w/2 + f*w
	return min(max(p, lo), hi)
}

// holdCell is the energy of a hold's cell from its start e0 to x: at level cur, or from
// prev's level to next's at split.
func holdCell(prev, cur, next, split, e0, x float64) float64 {
	if !math.IsNaN(split) {
		return prev*(min(x, split)-e0) + next*max(0, x-split)
	}
	return cur * (x - e0)
}

// newHold centres reading i at s.T[i] − shift (shift = delay + W/2); period is used for the
// half cells beyond the ends (0: the mean interval). s is held, not copied.
func newHold(s trace.Readings, shift, period, w float64) *hold {
	n := s.Len()
	h := &hold{s: s, shift: shift, w: w, thr: holdThreshold(s), ck: make([]float64, 0, n/holdStride+1)}
	h.half = holdHalf(period, h.c(0), h.c(n-1), n)
	// One pass over the cells, each reading's centre and each edge worked out once.
	var cum float64
	cj, e := h.c(0), h.edge(0)
	for j := 0; j < n; j++ {
		if j%holdStride == 0 {
			h.ck = append(h.ck, cum)
		}
		var cNext, eNext float64
		if j+1 < n {
			cNext = h.c(j + 1)
			eNext = (cj + cNext) / 2
		} else {
			eNext = cj + h.half
		}
		cum += h.cellAt(j, cj, e, eNext, eNext)
		cj, e = cNext, eNext
	}
	h.total = cum
	return h
}

// c is reading i's centre.
func (h *hold) c(i int) float64 { return h.s.T[i].Seconds() - h.shift }

// edge is edge i of n+1: the midpoint of the centres around it, half a cell beyond the ends.
func (h *hold) edge(i int) float64 {
	switch n := h.s.Len(); i {
	case 0:
		return h.c(0) - h.half
	case n:
		return h.c(n-1) + h.half
	}
	return (h.c(i-1) + h.c(i)) / 2
}

// cellAt is the energy of cell j (its centre cj, its edges e0 and e1) from e0 to x.
func (h *hold) cellAt(j int, cj, e0, e1, x float64) float64 {
	V := h.s.V
	if j >= 1 && j+1 < len(V) {
		prev, cur, next := V[j-1], V[j], V[j+1]
		split := holdSplit(prev, cur, next, cj, e0, e1, h.w, h.thr)
		return holdCell(prev, cur, next, split, e0, x)
	}
	return holdCell(0, V[j], 0, math.NaN(), e0, x)
}

// cell is cellAt for cell j, its centre and edges worked out.
func (h *hold) cell(j int, x float64) float64 {
	return h.cellAt(j, h.c(j), h.edge(j), h.edge(j+1), x)
}

func (h *hold) span() (float64, float64) { return h.edge(0), h.edge(h.s.Len()) }

// cumAt is the integral from the first edge to x.
func (h *hold) cumAt(x float64) float64 {
	n := h.s.Len()
	if x <= h.edge(0) {
		return 0
	}
	if x >= h.edge(n) {
		return h.total
	}
	// k: the first edge >= x (x lies in cell k−1)
	lo, hi := 0, n+1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.edge(m) < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := min(max(lo-1, 0), n-1)
	cum := h.ck[k/holdStride]
	for j := k / holdStride * holdStride; j < k; j++ {
		cum += h.cell(j, h.edge(j+1))
	}
	return cum + h.cell(k, x)
}

func (h *hold) energy(a, b float64) float64 { return h.cumAt(b) - h.cumAt(a) }

func (h *hold) binEnergies(bins []interval) []float64 {
	out := make([]float64, len(bins))
	for i, x := range bins {
		out[i] = h.energy(x.a, x.b)
	}
	return out
}

func (h *hold) notes() []string { return nil }

// rcInv inverts a first-order lag: with tau·dy/dt = P − y, the energy of P over [a, b] is
// ∫y + tau·(y(b) − y(a)). No derivative of noisy readings is taken; only the readings at
// the two ends matter, and those are estimated by fitting the lag's own response to the
// readings around each end (see level).
//
// A lag short against the spacing of the readings (short: tau < rcShort × the update
// period, the H200's power.samples: 14 ms read every 20 ms) leaves too few readings within
// reach of an end for that fit, and a chord between readings is a poor stand-in for its
// exponential. There a region with an edge inside the readings is inverted exactly
// instead (see pieces): the power is taken to be constant between readings, except that
// the interval holding a region's edge is split there.
type rcInv struct {
	l     *linear
	tau   float64
	short bool
	noise *noiseMemo // of l.v, the Series' kept readings

	thr     float64 // stepThreshold, once computed
	haveThr bool
}

// rcSide is the number of readings on each side of an end that its fit uses, and rcReach
// the farthest (in units of tau) they may lie. A lag shorter than rcShort update periods
// is inverted interval by interval (fewer than about six readings would lie within reach of
// an end).
const (
	rcSide  = 12
	rcReach = 0.5
	rcShort = 6
)

// newRC places reading i at s.T[i] − delay; short selects the inversion interval by
// interval for regions with edges inside the readings (shortLag).
func newRC(s trace.Readings, tau, delay float64, short bool, noise *noiseMemo) *rcInv {
	return &rcInv{l: newLinear(s, delay), tau: tau, short: short, noise: noise}
}

// noiseMemo is NoiseSigma of one Series' kept readings, worked out once for the Series and
// every WithModel copy of it (they share the readings): the estimator's model corners
// (delay and lag at the ends of their intervals) each made a copy, and each took the
// readings' noise again: most of measure's CPU at its end (issue 35). nil: no memo.
type noiseMemo struct {
	once  sync.Once
	sigma float64
}

func (m *noiseMemo) of(v []float64) float64 {
	if m == nil {
		return NoiseSigma(v)
	}
	m.once.Do(func() { m.sigma = NoiseSigma(v) })
	return m.sigma
}

func (r *rcInv) span() (float64, float64) { return r.l.span() }

func (r *rcInv) energy(a, b float64) float64 {
	if r.short {
		// An edge within a microsecond of the readings' span is not a region's edge (the
		// whole trace, Span rounds inwards to the µs): that keeps its integral as it was.
		lo, hi := r.l.span()
		if a-lo > 1e-6 || hi-b > 1e-6 {
			if e, ok := r.pieces(a, b); ok {
				return e
			}
		}
	}
	return r.l.energy(a, b) + r.tau*(r.level(b, true)-r.level(a, true))
}

// pieces is the energy over [a, b] of the power that, constant between readings, the lag
// turns into the readings exactly: over an interval of length dt, y_k = q·y_(k−1) + (1 −
// q)·p with q = exp(−dt/tau), so p = (y_k − q·y_(k−1))/(1 − q).
//
// The interval holding a region's edge s is split there: y_k = q2·(q1·y_(k−1) + (1 −
// q1)·p1) + (1 − q2)·p2 with q1 = exp(−(s − t_(k−1))/tau), q2 = exp(−(t_k − s)/tau), one
// equation for the two powers. It is solved with the least change from the neighbouring
// intervals' powers L and R: p1 = L + α·λ, p2 = R + β·λ, with α = q2·(1 − q1), β = 1 − q2
// and λ = (r − α·L − β·R)/(α² + β²), r = y_k − q·y_(k−1). A step of the power exactly at
// the edge (a kernel's start or end, where regions begin and end) is recovered exactly (λ =
// 0), and so is a steady power (p1 = p2 = p): either way the energy falls on the right side
// of the edge. An edge in the first or last interval, without a neighbour there, is not
// split.
//
// Inside the region, an interval whose power lies between its neighbours', which differ
// by more than the noise, holds a step from L to R; the same equation with p1 = L and p2
// = R says where (see stepAt), and the interval's energy is L·d1 + R·d2 instead of p·dt,
// which would put the step early by up to 0.17·dt for tau = 0.7·dt. ok is false when a and
// b lie in one interval.
func (r *rcInv) pieces(a, b float64) (float64, bool) {
	t, v := r.l.t, r.l.v
	n := len(t)
	if n < 3 {
		return 0, false
	}
	// Interval k is [t(k−1), t(k)], k = 1..n−1.
	ka := min(max(searchF(t, a), 1), n-1) // first t >= a
	if t[ka] == a && ka < n-1 {
		ka++ // a on a reading: it starts the next interval
	}
	kb := min(max(searchF(t, b), 1), n-1) // first t >= b: b in interval kb
	if ka >= kb {
		return 0, false
	}
	// p[k−lo] is the power of interval k, for k = lo..hi (NaN outside 1..n−1).
	lo, hi := ka-1, kb+1
	p := make([]float64, hi-lo+1)
	q := make([]float64, hi-lo+1)
	for k := lo; k <= hi; k++ {
		i := k - lo
		if k < 1 || k >= n {
			p[i], q[i] = math.NaN(), math.NaN()
			continue
		}
		dt := t[k] - t[k-1]
		if !(dt > 0) {
			p[i], q[i] = v[k], 0
			continue
		}
		q[i] = math.Exp(-dt / r.tau)
		p[i] = (v[k] - q[i]*v[k-1]) / (1 - q[i])
	}
	// split returns the powers before and after s in interval k.
	split := func(k int, s float64) (float64, float64) {
		i := k - lo
		d1, d2 := s-t[k-1], t[k]-s
		if k < 2 || k > n-2 || !(d1 > 0 && d2 > 0) {
			return p[i], p[i]
		}
		L, R := p[i-1], p[i+1]
		q1, q2 := math.Exp(-d1/r.tau), math.Exp(-d2/r.tau)
		alpha, beta := q2*(1-q1), 1-q2
		res := v[k] - q1*q2*v[k-1] - alpha*L - beta*R
		den := alpha*alpha + beta*beta
		if !(den > 1e-300) {
			return p[i], p[i]
		}
		lam := res / den
		return L + alpha*lam, R + beta*lam
	}
	_, after := split(ka, a)
	before, _ := split(kb, b)
	e := after*(t[ka]-max(a, t[ka-1])) + before*(min(b, t[kb])-t[kb-1])
	thr := r.stepThreshold()
	for k := ka + 1; k < kb; k++ {
		i := k - lo
		dt := t[k] - t[k-1]
		if !(dt > 0) {
			continue
		}
		L, R := p[i-1], p[i+1]
		if d2, ok := stepAt(L, p[i], R, q[i], dt, r.tau, thr); ok {
			e += L*(dt-d2) + R*d2
			continue
		}
		e += p[i] * dt
	}
	// Beyond the readings (a before the first, b after the last): the end readings held.
	if a < t[0] {
		e += v[0] * (t[0] - a)
	}
	if b > t[n-1] {
		e += v[n-1] * (b - t[n-1])
	}
	return e, true
}

// stepAt reports where in an interval of length dt (q = exp(−dt/tau)) whose power p lies
// between its neighbours' L and R, further than thr from each, the power stepped from L to
// R: d2 is the time from the step to the interval's end, from p·(1 − q) = (q2 − q)·L + (1 −
// q2)·R, q2 = exp(−d2/tau).
func stepAt(L, p, R, q, dt, tau, thr float64) (d2 float64, ok bool) {
	if math.IsNaN(L) || math.IsNaN(R) || math.Abs(R-L) <= thr || !(L < p && p < R || L > p && p > R) {
		return 0, false
	}
	q2 := (p*(1-q) - R + q*L) / (L - R)
	if !(q2 > q && q2 < 1) {
		return 0, false
	}
	return min(-tau*math.Log(q2), dt), true
}

// stepThreshold is how far apart the powers of neighbouring intervals must be to be taken
// for a step: 8 × their noise (the readings' noise, as the inversion amplifies it) + 1 mW.
func (r *rcInv) stepThreshold() float64 {
	if !r.haveThr {
		var dt float64
		if n := len(r.l.t); n > 1 {
			dt = (r.l.t[n-1] - r.l.t[0]) / float64(n-1)
		}
		q := math.Exp(-dt / r.tau)
		r.thr = 8*r.noise.of(r.l.v)*math.Sqrt(1+q*q)/(1-q) + 1e-3
		r.haveThr = true
	}
	return r.thr
}

func (r *rcInv) binEnergies(bins []interval) []float64 {
	out := make([]float64, len(bins))
	for i, x := range bins {
		out[i] = r.l.energy(x.a, x.b) + r.tau*(r.level(x.b, false)-r.level(x.a, false))
	}
	return out
}

func (r *rcInv) notes() []string { return nil }

// level estimates the lagged signal y at x from the readings around it. The lag of a
// power that is constant on an interval is y(t) = P + (y(x) − P)·(exp(−(t − x)/tau)): with
// tau known, linear in two parameters, y(x) and P. level fits that to the readings within
// rcSide readings and rcReach·tau of x on both sides (one power throughout), and, when scan
// is set, also every split of those readings in two with a power of its own on each side
// (the power changed once, between two readings), and keeps the model with the lowest BIC.
// A split's two curves meet where the power changed; the readings are then fitted once more
// with the curves joined there (y continuous, a power on each side) and y(x) read from it. A region's edge usually sits on a power change (a kernel's start):
// that change is found, and the noise of the readings at the ends, which tau multiplies,
// is averaged over a dozen readings instead of two.
func (r *rcInv) level(x float64, scan bool) float64 {
	t, v := r.l.t, r.l.v
	n := len(t)
	i := searchF(t, x)
	lo, hi := max(0, i-rcSide), min(n, i+rcSide)
	reach := rcReach * r.tau
	for lo < i && x-t[lo] > reach {
		lo++
	}
	for hi > i && t[hi-1]-x > reach {
		hi--
	}
	if hi-lo < 4 {
		return r.l.at(x)
	}
	ts, vs := t[lo:hi], v[lo:hi]
	u := make([]float64, len(ts))
	for k, tk := range ts {
		u[k] = -math.Expm1(-(tk - x) / r.tau)
	}
	y, _, rss, ok := fitLag(u, vs)
	if !ok {
		return r.l.at(x)
	}
	if !scan {
		return y
	}
	m := float64(len(ts))
	bic := func(rss float64, p int) float64 {
		return m*math.Log(max(rss, m*1e-10)/m) + float64(p)*math.Log(m)
	}
	best, split := bic(rss, 2), -1
	var at float64
	for j := 2; j+3 < len(ts); j++ { // readings 0..j on the left, j+1.. on the right: 3 or more each
		yl, dl, rl, okl := fitLag(u[:j+1], vs[:j+1])
		yr, dr, rr, okr := fitLag(u[j+1:], vs[j+1:])
		if !okl || !okr {
			continue
		}
		if b := bic(rl+rr, 5); b < best {
			// Where the two curves meet is when the power changed (within the gap).
			c := (ts[j] + ts[j+1]) / 2
			if dl != dr {
				if uc := (yr - yl) / (dl - dr); uc < 1 {
					c = min(max(x-r.tau*math.Log1p(-uc), ts[j]), ts[j+1])
				}
			}
			best, split, at = b, j, c
		}
	}
	if split >= 0 {
		// Fit again with the curves joined at the change: one y there, a power on each side.
		if yy, ok := fitChange(ts, vs, at, x, r.tau); ok {
			y = yy
		}
	}
	return y
}

// fitChange fits a lag whose input steps at s: v_k = Y + D1·w_k for t_k <= s, Y + D2·w_k
// after, w_k = 1 − exp(−(t_k − s)/tau), Y being y(s), and returns the fit at x.
func fitChange(ts, vs []float64, s, x, tau float64) (float64, bool) {
	var n, sl, sr, sll, srr, sy, sly, sry float64
	for k, t := range ts {
		w := -math.Expm1(-(t - s) / tau)
		n++
		sy += vs[k]
		if t <= s {
			sl += w
			sll += w * w
			sly += w * vs[k]
		} else {
			sr += w
			srr += w * w
			sry += w * vs[k]
		}
	}
	if !(sll > 1e-300 && srr > 1e-300) {
		return 0, false
	}
	// D1 = (sly − Y·sl)/sll and D2 = (sry − Y·sr)/srr eliminated:
	den := n - sl*sl/sll - sr*sr/srr
	if !(den > 1e-12*n) {
		return 0, false
	}
	y := (sy - sl*sly/sll - sr*sry/srr) / den
	d := (sry - y*sr) / srr
	if x <= s {
		d = (sly - y*sl) / sll
	}
	return y + d*(-math.Expm1(-(x-s)/tau)), true
}

// fitLag fits v_k = y + d·u_k by least squares and returns y, d and the residual sum of
// squares.
func fitLag(u, v []float64) (y, d, rss float64, ok bool) {
	var su, sv, suu, suv float64
	m := float64(len(u))
	for k, uk := range u {
		su += uk
		sv += v[k]
		suu += uk * uk
		suv += uk * v[k]
	}
	den := m*suu - su*su
	if !(den > 1e-300) {
		return 0, 0, 0, false
	}
	d = (m*suv - su*sv) / den
	y = (sv - d*su) / m
	for k, uk := range u {
		e := v[k] - y - d*uk
		rss += e * e
	}
	return y, d, rss, true
}

// dense deconvolves a boxcar whose windows overlap (W >= 1.5 T). A reading r(t) is the mean
// power over [t − W, t], so W·r(t) = F(t) − F(t − W) for the cumulative energy F, and
//
//	E[a, b] = F(b) − F(a) = W·(r(b) − r(a)) + E[a − W, b − W].
//
// A region a window long or longer first sheds window-long pieces from its end, each
// W·r(end). The recursion steps back one window at a time until the readings around the shifted
// region are steady (then E = its length × their mean), or until it lies before the first
// reading (the power is taken to have been steady before it). r between readings is
// piecewise linear while the power is piecewise constant: at follows it into the kink a
// change of power makes between two readings. Where it cannot (kinks too close together),
// the chord's error at a change and the one it makes one window later, in the same chain of
// the recursion, are equal and opposite and cancel, except at the region's own edges.
type dense struct {
	l     *linear
	w     float64
	tol   float64 // readings within tol of each other are steady
	sigma float64 // their noise

	capped, unsteadyStart bool
	steps                 int // windows stepped one at a time (a test's count of the work)
}

// denseMaxLevels bounds the recursion of a region; binLevels that of the idle bins. Beyond
// it the rest is estimated by shifting the readings back by W/2.
const (
	denseMaxLevels = 1 << 20
	binLevels      = 4
	flatMost       = 512 // the most readings a steadiness check looks at
)

// with is d for another window and delay on the same readings: the noise, its tolerance
// and the readings' arrays shared (an interval's model part re-inverts per parameter).
func (d *dense) with(w, delay float64) *dense {
	return &dense{l: d.l.shifted(delay), w: w, tol: d.tol, sigma: d.sigma}
}

func newDense(s trace.Readings, w, delay float64) *dense {
	d := &dense{l: newLinear(s, delay), w: w}
	d.sigma = changesSigma(d.l.v)
	d.tol = 6*d.sigma + 1e-4*math.Abs(median(d.l.v)) + 1e-3
	return d
}

func (d *dense) span() (float64, float64) { return d.l.span() }

func (d *dense) energy(a, b float64) float64 {
	e, how := d.deconvolve(a, b, denseMaxLevels)
	d.capped = how == endCapped
	d.unsteadyStart = false
	if how == endStart {
		// The power must have been steady before the first reading. A change under way
		// then moves the readings from the very first one on: the first two differ by
		// more than the noise. (A change after the start moves the readings of the first
		// window too; it says nothing of the power before the first reading.)
		t := d.l.t
		_, steady := d.flat(t[0], t[min(1, len(t)-1)], nil, nil)
		d.unsteadyStart = !steady && len(t) > 1
	}
	return e
}

func (d *dense) binEnergies(bins []interval) []float64 {
	out := make([]float64, len(bins))
	var ca, cb cursor // the bins come in time order
	for i, x := range bins {
		out[i], _ = d.deconvolveFrom(x.a, x.b, binLevels, &ca, &cb)
	}
	return out
}

func (d *dense) notes() []string {
	var n []string
	if d.unsteadyStart {
		n = append(n, fmt.Sprintf("the deconvolution reached the start of the trace, where the power was changing: it took the power to have been steady before the first reading (start the recording at least %s before the region)", units.FormatDuration(sensormodel.Seconds(2*d.w), 4)))
	}
	if d.capped {
		n = append(n, "the deconvolution was cut short: the rest was estimated by shifting the readings back by half a window")
	}
	return n
}

type ending int

const (
	endSteady ending = iota
	endStart
	endCapped
)

func (d *dense) deconvolve(a, b float64, maxLevels int) (float64, ending) {
	var ca, cb cursor
	return d.deconvolveFrom(a, b, maxLevels, &ca, &cb)
}

// deconvolveFrom is deconvolve searching the readings from cursors ca (near a) and cb
// (near b): each window back moves them a window's readings back, where a binary search
// over the whole trace at every step made most of the cost of a long trace.
func (d *dense) deconvolveFrom(a, b float64, maxLevels int, ca, cb *cursor) (float64, ending) {
	var e float64
	t0 := d.l.t[0]
	// A window-long piece at the region's end is one reading: E[b − W, b] = W·r(b). Peeled
	// off, it leaves a region shorter than a window, whose recursion lands in an idle gap
	// (and stops there) far sooner than the whole region's would: a region of 2.4 s shifted
	// by whole windows straddles some earlier burst at every step, and each step adds two
	// interpolations' error (on the H200's 2 s bursts, +4.5 % against the counter; peeled,
	// 0.4 %: docs/energy.md).
	for b-a >= d.w && b-d.w > t0 {
		if _, ok := d.steady(a, b, ca, cb); ok {
			break
		}
		if n, sum := d.peelInGap(a, b, cb); n > 0 {
			e += d.w * sum
			b -= float64(n) * d.w
			continue
		}
		e += d.w * d.at(b, cb)
		b -= d.w
		d.steps++
	}
	for j := 0; ; j++ {
		if b <= t0 {
			return e + d.l.v[0]*(b-a), endStart
		}
		if mean, ok := d.steady(a, b, ca, cb); ok {
			return e + mean*(b-a), endSteady
		}
		if j == maxLevels {
			return e + d.shifted(a, b), endCapped
		}
		if n, sum := d.stepInGap(a, b, maxLevels-j, ca); n > 0 {
			e += d.w * sum
			a -= float64(n) * d.w
			b -= float64(n) * d.w
			j += n - 1
			continue
		}
		e += d.w * (d.at(b, cb) - d.at(a, ca))
		a -= d.w
		b -= d.w
		d.steps++
	}
}

// Work bounded by the readings, not by the time: inside a gap between two readings far
// more than a window apart, window after window of the recursion sees the same readings,
// so it is not steady at any of them, and adds the same linear pieces of r; those windows
// are summed at once (a region inside a 3·10⁶ s gap of a 100 ms trace took 2 s of CPU,
// 32 s for a longer gap: issue 29). gapMinLevels: fewer windows than this are stepped.
const gapMinLevels = 8

// gapJumps: windows in a gap are summed at once (false: stepped, for a test to compare).
var gapJumps = true

// peelInGap sums the peeling loop's next windows at once where b lies inside a gap: n
// windows back from b (n > 0) stay on one linear piece of r, more than two windows after
// a (steady's readings are the same: from the reading at or before a + W to the first at
// or after b), and sum is Σ r(b − kW) over them. n = 0: step one at a time.
func (d *dense) peelInGap(a, b float64, cb *cursor) (int, float64) {
	lo, x0, v0, s, ok := d.piece(b, cb)
	if !ok || !gapJumps {
		return 0, 0
	}
	n := min(int((b-lo)/d.w), int((b-a-2*d.w)/d.w)) - 1
	if n < gapMinLevels {
		return 0, 0
	}
	return n, sumLine(n, b, d.w, x0, v0, s)
}

// stepInGap sums the recursion's next windows at once where the region [a, b] lies deep
// inside a gap: no reading within four windows before a to five after b (what steady and
// atFloor look at), for each of n windows back (n > 0, at most most), a and b each on one
// linear piece of r; sum is Σ r(b − kW) − r(a − kW) over them. n = 0: step one at a time.
func (d *dense) stepInGap(a, b float64, most int, ca *cursor) (int, float64) {
	t := d.l.t
	k := d.l.segFrom(a, ca) // t[k] <= a < t[k+1]
	if !gapJumps || k+1 >= len(t) || !(t[k] < a-4*d.w) || !(t[k+1] > b+5*d.w) {
		return 0, 0
	}
	loA, xa, va, sa, okA := d.piece(a, ca)
	loB, xb, vb, sb, okB := d.piece(b, nil)
	if !okA || !okB {
		return 0, 0
	}
	n := min(int((a-4*d.w-t[k])/d.w), int((a-loA)/d.w), int((b-loB)/d.w), most) - 1
	if n < gapMinLevels {
		return 0, 0
	}
	return n, sumLine(n, b, d.w, xb, vb, sb) - sumLine(n, a, d.w, xa, va, sa)
}

// sumLine is Σ_{k<n} of v0 + s·(x − kW − x0).
func sumLine(n int, x, w, x0, v0, s float64) float64 {
	m := float64(n)
	return m*(v0+s*(x-x0)) - s*w*m*(m-1)/2
}

// piece is the linear piece of at around x: at(y) = v0 + s·(y − x0) for y in (lo, x]; ok
// where x lies strictly inside a segment between two readings (at's cases, its kink
// included).
func (d *dense) piece(x float64, c *cursor) (lo, x0, v0, s float64, ok bool) {
	t, v := d.l.t, d.l.v
	n := len(t)
	if n < 2 || x <= t[0] || x >= t[n-1] {
		return 0, 0, 0, 0, false
	}
	k := d.l.segFrom(x, c)
	if !(t[k] < x && x < t[k+1]) {
		return 0, 0, 0, 0, false
	}
	chord := func() (float64, float64, float64, float64, bool) {
		return t[k], t[k], v[k], (v[k+1] - v[k]) / (t[k+1] - t[k]), true
	}
	if n < 6 || x <= t[2] || x >= t[n-3] {
		return chord()
	}
	kink, sl, sr, ok := d.kink(k)
	switch {
	case !ok:
		return chord()
	case x <= kink:
		return t[k], t[k], v[k], sl, true
	default:
		return kink, t[k+1], v[k+1], sr, true
	}
}

// at is the reading interpolated at x. r is piecewise linear, with a kink wherever the
// power changes (and one window later): where the lines through the readings before and
// after an interval cross inside it, r follows them to that kink instead of the chord, which
// cuts the corner by up to ΔP·T/4 (times W in the energy). One of the two sides must show
// a straight line over three readings (within the noise or a sixteenth of the bend): when
// both bend too, the kinks lie closer together than the readings can resolve, and it is
// the chord, as it is for a bend within the noise.
func (d *dense) at(x float64, c *cursor) float64 {
	t, v := d.l.t, d.l.v
	n := len(t)
	if n < 6 || x <= t[2] || x >= t[n-3] {
		return d.l.atFrom(x, c)
	}
	k := d.l.segFrom(x, c) // t[k] <= x < t[k+1]
	kink, sl, sr, ok := d.kink(k)
	if !ok {
		return d.l.atFrom(x, c)
	}
	if x <= kink {
		return v[k] + sl*(x-t[k])
	}
	return v[k+1] + sr*(x-t[k+1])
}

// kink is where r, between readings k and k+1, follows the lines through the readings
// either side (slopes sl before, sr after) instead of the chord; ok false: the chord.
func (d *dense) kink(k int) (kink, sl, sr float64, ok bool) {
	t, v := d.l.t, d.l.v
	n := len(t)
	if k < 2 || k+3 >= n {
		return 0, 0, 0, false
	}
	dl, dm, dr := t[k]-t[k-1], t[k+1]-t[k], t[k+2]-t[k+1]
	if !(dl > 0 && dm > 0 && dr > 0 && t[k-1] > t[k-2] && t[k+3] > t[k+2]) {
		return 0, 0, 0, false
	}
	sl, sm, sr := (v[k]-v[k-1])/dl, (v[k+1]-v[k])/dm, (v[k+2]-v[k+1])/dr
	bend := math.Abs(sl-sr) * min(dl, dr)
	// A bend: the chord's slope between the outer ones, and more than the noise can make.
	if !(sl < sm && sm < sr || sl > sm && sm > sr) || bend < 4*d.sigma {
		return 0, 0, 0, false
	}
	tol := max(3*d.sigma, bend/16)
	if off(t[k-2], v[k-2], t[k-1], v[k-1], t[k], v[k]) > tol && off(t[k+1], v[k+1], t[k+2], v[k+2], t[k+3], v[k+3]) > tol {
		return 0, 0, 0, false
	}
	kink = (v[k+1] - v[k] - sr*t[k+1] + sl*t[k]) / (sl - sr)
	if !(kink > t[k] && kink < t[k+1]) {
		return 0, 0, 0, false
	}
	return kink, sl, sr, true
}

// off is how far the middle of three readings lies from the line through the outer two.
func off(t0, v0, t1, v1, t2, v2 float64) float64 {
	return math.Abs(v1 - (v0 + (v2-v0)*(t1-t0)/(t2-t0)))
}

// steady reports whether the power was steady over [a, b], and its level: the readings are
// flat over a stretch [x, y] at least a window long that ends at or after b and starts no
// later than a + W. Flat readings there mean P(t) = P(t − W) for every t in [x, y], so the
// power over [x − W, y] ⊇ [a, b] repeats itself every W; a load that repeats exactly every
// window is not taken for one, and the power was constant there, at the readings' level.
// (Readings flat over less than a window do not say it: after a burst shorter than W they
// stay flat, above the power, until the burst leaves the window.)
func (d *dense) steady(a, b float64, ca, cb *cursor) (float64, bool) {
	if b-a > 2*d.w {
		lo, hi := d.bracket(a+d.w, b, ca, cb)
		return d.flat(lo, hi, ca, cb)
	}
	// Any window-long stretch [x, x + W] with b − W <= x <= a + W will do: the region lies
	// in [x − W, x + W]. Try its ends, then the readings between them.
	lo, hi := b-d.w, a+d.w
	try := func(x float64) (float64, bool) {
		lo, hi := d.bracket(x, x+d.w, ca, cb)
		return d.flat(lo, hi, ca, cb)
	}
	if mean, ok := try(lo); ok {
		return mean, true
	}
	if mean, ok := try(hi); ok {
		return mean, true
	}
	// The readings between lo and hi + W: a flat run among them at least a window long
	// (bracketed: from the last reading at or before its start) that starts in (lo, hi].
	t, v := d.l.t, d.l.v
	i := ca.ge(t, lo)
	j := cb.ge(t, hi+d.w)
	if j < len(t) {
		j++ // the reading at or after hi + W brackets the last window
	}
	for k := i; k < j; k++ {
		if t[k] <= lo || t[k] > hi {
			continue
		}
		// the window [t[k], t[k] + W], bracketed: from reading k−1 (at or before t[k]:
		// t[k] itself) to the first reading at or after t[k] + W
		mn, mx, sum, n := v[k], v[k], 0.0, 0
		ok := false
		for q := k; q < len(t); q++ {
			mn, mx = min(mn, v[q]), max(mx, v[q])
			if mx-mn > d.tol || n >= flatMost {
				break
			}
			sum += v[q]
			n++
			if t[q] >= t[k]+d.w {
				ok = n >= 2
				break
			}
		}
		if ok {
			return sum / float64(n), true
		}
	}
	return d.atFloor(a, b, ca, cb)
}

// atFloor reports whether [a, b] lies in an idle gap too short for a full window of flat
// readings: readings flat (within tol) over a stretch at least a window less two update
// periods long (readings every T place the ends of a flat stretch of r only to within T
// each), whose windows cover [a, b], at the lowest level the readings reach within four
// windows either side (the power sits at its floor there, so it was not above it in one
// part of a window and below in another). A burst's tail leaving the window late and the
// next burst entering it early leave such gaps on an H200 between bursts 2 s apart.
func (d *dense) atFloor(a, b float64, ca, cb *cursor) (float64, bool) {
	t, v := d.l.t, d.l.v
	if len(t) < 3 {
		return 0, false
	}
	T := (t[len(t)-1] - t[0]) / float64(len(t)-1)
	i := ca.ge(t, a-4*d.w)
	j := cb.ge(t, b+4*d.w)
	if j-i < 3 || j-i > 4*flatMost {
		return 0, false
	}
	floor := math.Inf(1)
	for _, x := range v[i:j] {
		floor = min(floor, x)
	}
	// The run of readings at the floor around the first reading at or after b.
	k := cb.ge(t, b)
	if k >= len(t) || math.Abs(v[k]-floor) > d.tol {
		return 0, false
	}
	lo, hi := k, k
	for lo > 0 && math.Abs(v[lo-1]-floor) <= d.tol {
		lo--
	}
	for hi+1 < len(t) && math.Abs(v[hi+1]-floor) <= d.tol {
		hi++
	}
	if t[hi]-t[lo] < d.w-2*T || t[lo]-d.w > a {
		return 0, false
	}
	var sum float64
	for _, x := range v[lo : hi+1] {
		sum += x
	}
	return sum / float64(hi-lo+1), true
}

// bracket widens [a, b] to the readings around it: from the last reading at or before a to
// the first at or after b, the readings that the interpolated r on [a, b] is made of.
func (d *dense) bracket(a, b float64, ca, cb *cursor) (float64, float64) {
	t := d.l.t
	i := ca.ge(t, a) // first t >= a
	if i < len(t) && t[i] > a && i > 0 {
		i--
	}
	j := cb.ge(t, b) // first t >= b
	j = min(j, len(t)-1)
	return t[min(i, len(t)-1)], t[j]
}

// flat reports whether the readings in [lo, hi] (at least two, at most flatMost) lie within
// tol of each other, and their mean.
func (d *dense) flat(lo, hi float64, ca, cb *cursor) (float64, bool) {
	t, v := d.l.t, d.l.v
	i := ca.ge(t, lo)
	j := cb.ge(t, hi) // readings i..j−1 (t < hi), plus one at hi
	if j < len(t) && t[j] == hi {
		j++
	}
	if j-i < 2 || j-i > flatMost {
		return 0, false
	}
	mn, mx, sum := v[i], v[i], 0.0
	for _, x := range v[i:j] {
		mn, mx = min(mn, x), max(mx, x)
		if mx-mn > d.tol {
			return 0, false
		}
		sum += x
	}
	return sum / float64(j-i), true
}

// shifted is ∫ from a + W/2 to b + W/2 of the readings: the energy of [a, b] when the power
// changes slowly compared with W.
func (d *dense) shifted(a, b float64) float64 {
	lo, hi := d.l.span()
	h := d.w / 2
	x, y := a+h, b+h
	var e float64
	if x < lo { // before the first reading: its value
		e += d.l.v[0] * (min(y, lo) - x)
		x = min(y, lo)
	}
	if y > hi {
		e += d.l.v[len(d.l.v)-1] * (y - max(x, hi))
		y = max(x, hi)
	}
	if y > x {
		e += d.l.energy(x, y)
	}
	return e
}

// changes returns v without the values that repeat the one before them: stale repeats (a
// poller faster than the sensor, kept once per dedupe interval) would make most second
// differences 0 and NoiseSigma of v far below the noise of the updates.
func changes(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// changesSigma is NoiseSigma(changes(v)) without the copy: the second differences it samples
// are taken from the changes as they are met.
func changesSigma(v []float64) float64 {
	nc := 0
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			nc++
		}
	}
	if nc < 3 {
		return 0
	}
	step := max(1, (nc-2)/4096)
	d := make([]float64, 0, min(nc-2, 4097))
	// c0, c1, c2: changes k−1, k, k+1 (k the middle one), as noiseSigma's at(i−1), at(i), at(i+1)
	var c0, c1, c2 float64
	k := -2
	for i, x := range v {
		if i > 0 && x == v[i-1] {
			continue
		}
		c0, c1, c2 = c1, c2, x
		k++
		if k >= 1 && (k-1)%step == 0 {
			d = append(d, math.Abs(c2-2*c1+c0))
		}
	}
	return 1.4826 * median(d) / math.Sqrt(6)
}

// NoiseSigma estimates the standard deviation of the readings' noise from their second
// differences (insensitive to ramps): 1.4826 × median |d2| / √6, from at most 4096 of them.
func NoiseSigma(v []float64) float64 {
	return noiseSigma(len(v), func(i int) float64 { return v[i] })
}

// noiseSigma is NoiseSigma of the n values at(0), ..., at(n−1).
func noiseSigma(n int, at func(int) float64) float64 {
	if n < 3 {
		return 0
	}
	step := max(1, (n-2)/4096)
	d := make([]float64, 0, min(n-2, 4097))
	for i := 1; i+1 < n; i += step {
		d = append(d, math.Abs(at(i+1)-2*at(i)+at(i-1)))
	}
	return 1.4826 * median(d) / math.Sqrt(6)
}

// median of v (v is reordered when it is not a copy: callers pass scratch or tolerate it).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	if len(v) > 4096 {
		step := len(v) / 4096
		s := make([]float64, 0, 4097)
		for i := 0; i < len(v); i += step {
			s = append(s, v[i])
		}
		v = s
	} else {
		v = slices.Clone(v)
	}
	return selectKth(v, len(v)/2)
}

// selectKth is the k-th smallest of v (slices.Sort(v); v[k], NaN-free v), in linear time:
// measure's end sorted the second differences of every inverted series for its noise
// (0.5-0.9 s of CPU on an H200 run, issue 35). v is reordered. Three-way partitions, so
// that a run of equal values (a held reading's zero differences) costs one pass.
func selectKth(v []float64, k int) float64 {
	lo, hi := 0, len(v) // the k-th lies in v[lo:hi]
	for hi-lo > 16 {
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi-1]
		p := max(min(a, b), min(max(a, b), c)) // the median of three
		lt, i, gt := lo, lo, hi                // v[lo:lt] < p, v[lt:i] == p, v[gt:hi] > p
		for i < gt {
			switch x := v[i]; {
			case x < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case x > p:
				gt--
				v[gt], v[i] = v[i], v[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(v[lo:hi])
	return v[k]
}

// searchF is sort.SearchFloat64s without its closure (the deconvolution's hot path): the
// first index i with a[i] >= x, len(a) if none.
func searchF(a []float64, x float64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// cursor remembers where the last search in a sorted slice ended, so that a search near it
// (the deconvolution steps back a window's readings at a time) looks there first and
// gallops out: a few comparisons instead of a binary search over the whole trace. A nil
// cursor searches the whole slice. Its answers are searchF's.
type cursor struct{ i int }

// ge is searchF(a, x) (the first index i with a[i] >= x, len(a) if none), starting from
// where c ended last.
func (c *cursor) ge(a []float64, x float64) int {
	if c == nil || x != x { // (NaN: searchF's answer)
		return searchF(a, x)
	}
	n := len(a)
	i := min(c.i, n)
	var lo, hi int // the answer lies in [lo, hi]
	switch {
	case i < n && a[i] < x: // forward: the answer is past i
		lo, hi = i+1, n
		for step := 1; i+step < n; step *= 2 {
			if a[i+step] >= x {
				hi = i + step
				break
			}
			lo = i + step + 1
		}
	case i > 0 && a[i-1] >= x: // backward: the answer is at or before i−1
		lo, hi = 0, i-1
		for step := 2; i-step >= 0; step *= 2 {
			if a[i-step] < x {
				lo = i - step + 1
				break
			}
			hi = i - step
		}
	default:
		return i
	}
	c.i = lo + searchF(a[lo:hi], x)
	return c.i
}
