package correct

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// Lattice is a regular grid of sample instants, t_k = Phase + k·Period, learned from the
// timestamps of a buffered channel. On an H200 (driver 580) the driver's power samples
// (nvmlDeviceGetSamples) are taken on a rigid 20.000 ms grid, but about a quarter of their
// timestamps are off it: stamped up to ~14 ms late (the gaps then read 30 ms and 10 ms) or a
// few ms early, while the value belongs to the grid instant (results/nvidia-h200/
// 2026-11-21-sensor-run1: snapped to the grid, the step response fits a first-order lag to
// 0.9 % RMS of the step; on the raw stamps to 4.3 %). Snap puts each stamp back on the grid.
type Lattice struct {
	Period time.Duration
	Phase  time.Duration // an instant of the grid
	// R is the coherence of the stamps with the grid: the length of the mean phase vector,
	// 1 when every stamp lies on it, near 0 for stamps unrelated to it.
	R float64
	// OnGrid is the share of stamps within ±max(1 ms, T/20) of the grid.
	OnGrid float64
	// Early and Late bound how far off the grid a stamp is taken to be: a stamp within
	// (−Early, T−Early] of grid instant k belongs to instant k.
	Early time.Duration
	// Offsets are the local corrections of the phase (drift of the driver's clock against
	// ours), one per chunk of ChunkLen stamps from the first, in order.
	offsets []time.Duration
	starts  []time.Duration
}

// MinLatticeR is the coherence below which stamps are not taken to lie on a grid.
const MinLatticeR = 0.3

// FitLattice learns the grid of the sample stamps ts (sorted, on the trace's axis) near the
// period guess (±3 %). ok is false when there are fewer than 16 stamps or they do not lie on
// a grid (R < MinLatticeR).
func FitLattice(ts []time.Duration, guess time.Duration) (Lattice, bool) {
	if len(ts) < 16 || guess <= 0 {
		return Lattice{}, false
	}
	if l, ok, found := fitted.find(ts, guess); found {
		return l, ok
	}
	l, ok := fitLattice(ts, guess)
	fitted.keep(ts, guess, l, ok)
	return l, ok
}

// fitted keeps the last lattices FitLattice fitted. Every estimate that prepares a channel
// without a shared energy.Cache fits the channel's stamps again (region.Summarize's
// headline and each channel's corrected interval; a test's many windows over one trace:
// 158 fits of 2 distinct rings in internal/region's tests, 239 of 8 in internal/energy's),
// and a fit is hundreds of thousands of sines. A lattice is a function of the stamps and
// the guess alone (and is not modified once fitted), so a fit kept serves them bit for bit.
var fitted latticeMemo

// latticeMemoLen is how many fits latticeMemo keeps (the newest), and latticeMemoStamps
// how many stamps they may hold together (8 MB): the memo lives as long as the process (a
// long serve, a Python process using the library), so what it keeps is bounded; a fit of
// more stamps than that is not kept.
const (
	latticeMemoLen    = 16
	latticeMemoStamps = 1 << 20
)

type latticeMemo struct {
	mu   sync.Mutex
	fits []latticeFit // oldest first
}

type latticeFit struct {
	ts    []time.Duration // a copy of the stamps
	guess time.Duration
	l     Lattice
	ok    bool
}

// find is the fit kept for ts and guess, if any.
func (m *latticeMemo) find(ts []time.Duration, guess time.Duration) (Lattice, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.fits {
		if f.guess == guess && slices.Equal(f.ts, ts) {
			return f.l, f.ok, true
		}
	}
	return Lattice{}, false, false
}

// keep keeps the fit of ts and guess, dropping the oldest beyond latticeMemoLen fits or
// latticeMemoStamps stamps.
func (m *latticeMemo) keep(ts []time.Duration, guess time.Duration, l Lattice, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ts) > latticeMemoStamps {
		return
	}
	held := len(ts)
	for _, f := range m.fits {
		held += len(f.ts)
	}
	for len(m.fits) > 0 && (len(m.fits) >= latticeMemoLen || held > latticeMemoStamps) {
		held -= len(m.fits[0].ts)
		m.fits = slices.Delete(m.fits, 0, 1)
	}
	m.fits = append(m.fits, latticeFit{ts: slices.Clone(ts), guess: guess, l: l, ok: ok})
}

// fitLattice is FitLattice's fit itself.
func fitLattice(ts []time.Duration, guess time.Duration) (Lattice, bool) {
	sec := make([]float64, len(ts))
	for i, t := range ts {
		sec[i] = (t - ts[0]).Seconds()
	}
	coh := func(T float64, from, to int) (float64, float64) {
		var c, s float64
		for _, x := range sec[from:to] {
			// (Sincos: Sin's and Cos's figures bit for bit, one argument reduction:
			// TestSincosIsSinCos)
			sa, ca := math.Sincos(2 * math.Pi * x / T)
			c += ca
			s += sa
		}
		n := float64(to - from)
		return math.Hypot(c, s) / n, math.Atan2(s, c)
	}
	g := guess.Seconds()
	// Coarse: the first 2 s (about 100 samples), where a period error moves the phase little.
	n0 := len(sec)
	for n0 > 16 && sec[n0-1] > 2 {
		n0--
	}
	bestT, bestR := g, -1.0
	for i := -300; i <= 300; i++ {
		T := g * (1 + 0.0001*float64(i))
		if r, _ := coh(T, 0, n0); r > bestR {
			bestT, bestR = T, r
		}
	}
	// Finer and finer: over longer and longer spans, in steps that move the last phase by
	// 1/50 of a period.
	for _, lim := range []float64{8, 32, 128, math.Inf(1)} {
		n := len(sec)
		for n > 16 && sec[n-1] > lim {
			n--
		}
		span := sec[n-1]
		if span <= 0 {
			break
		}
		step := bestT * bestT / span / 50
		c := bestT
		bestR = -1
		if n >= manyStamps {
			// A long ring: the 121 sums at once from the stamps' moments (cohMany).
			Ts := make([]float64, 0, 121)
			for i := -60; i <= 60; i++ {
				Ts = append(Ts, c+step*float64(i))
			}
			for i, r := range cohMany(sec[:n], Ts, c) {
				if r > bestR {
					bestT, bestR = Ts[i], r
				}
			}
		} else {
			for i := -60; i <= 60; i++ {
				T := c + step*float64(i)
				if r, _ := coh(T, 0, n); r > bestR {
					bestT, bestR = T, r
				}
			}
		}
		if n == len(sec) {
			break
		}
	}
	R, ph := coh(bestT, 0, len(sec))
	if R < MinLatticeR {
		return Lattice{R: R}, false
	}
	T := sensormodel.Seconds(bestT)
	phase := ts[0] + sensormodel.Seconds(ph/(2*math.Pi)*bestT)
	l := Lattice{Period: T, Phase: phase, R: R}
	// Where do the off-grid stamps lie? The histogram of offsets from the grid decides the
	// cut: the emptiest stretch of the period (in 1/40 steps) is where early meets late.
	const nb = 40
	var hist [nb]int
	for _, t := range ts {
		hist[l.bin(t, nb)]++
	}
	// The cut is the bin (away from the grid) with the fewest stamps in it and its two
	// neighbours; among equals, the one nearest half a period.
	cut, best := nb/2, math.MaxInt
	for i := nb / 8; i < nb-nb/8; i++ {
		c := hist[i-1] + hist[i] + hist[i+1]
		if c < best || c == best && abs(i-nb/2) < abs(cut-nb/2) {
			cut, best = i, c
		}
	}
	l.Early = T - time.Duration(float64(T)*float64(cut)/nb)
	// Local phase corrections: the mean offset of on-grid stamps in chunks of ChunkLen.
	tol := max(time.Millisecond, T/20)
	on := 0
	for i := 0; i < len(ts); i += ChunkLen {
		j := min(len(ts), i+ChunkLen)
		var sum time.Duration
		k := 0
		for _, t := range ts[i:j] {
			if d := l.offset(t); d >= -tol && d <= tol {
				sum += d
				k++
			}
		}
		on += k
		var off time.Duration
		if k > 0 {
			off = sum / time.Duration(k)
		}
		l.starts = append(l.starts, ts[i])
		l.offsets = append(l.offsets, off)
	}
	l.OnGrid = float64(on) / float64(len(ts))
	return l, true
}

// manyStamps: from this many stamps on, FitLattice's searches over the longer spans sum
// the coherence of its candidate periods the fast way (cohMany), to float noise the same.
const manyStamps = 1 << 12

// cohMany is, for each period T in Ts (all within a few peak widths of c: |1/T − 1/c| ×
// the stamps' span of order one), the coherence of the stamps sec with the grid of period
// T: |Σ exp(2πi·x/T)| / n, what FitLattice's coh sums directly, at one sine and cosine per
// stamp for all of Ts instead of one per stamp and period. With d = 1/T − 1/c,
// exp(2πi·x/T) = exp(2πi·x/c) · exp(2πi·d·x); the stamps are cut into chunks short
// enough that 2π·|d|·u stays under 0.05 for u, a stamp's time from its chunk's start, and
// the chunk's sum is exp(2πi·d·x0) · Σ_k (2πi·d)^k/k! · M_k with the chunk's moments
// M_k = Σ exp(2πi·x/c)·u^k: ten terms leave an error under 1e-19 of the sum.
func cohMany(sec []float64, Ts []float64, c float64) []float64 {
	const terms = 10
	ds := make([]float64, len(Ts))
	dmax := 0.0
	for i, T := range Ts {
		ds[i] = 1/T - 1/c
		dmax = max(dmax, math.Abs(ds[i]))
	}
	u := math.Inf(1)
	if dmax > 0 {
		u = 0.05 / (2 * math.Pi * dmax)
	}
	type chunk struct {
		x0 float64
		m  [terms]complex128
	}
	var chunks []chunk
	for i := 0; i < len(sec); {
		ch := chunk{x0: sec[i]}
		j := i
		for ; j < len(sec) && sec[j]-ch.x0 <= u; j++ {
			sa, ca := math.Sincos(2 * math.Pi * sec[j] / c)
			e := complex(ca, sa)
			p := 1.0
			for k := range terms {
				ch.m[k] += e * complex(p, 0)
				p *= sec[j] - ch.x0
			}
		}
		chunks = append(chunks, ch)
		i = j
	}
	out := make([]float64, len(Ts))
	for ti, d := range ds {
		w := 2 * math.Pi * d
		var coef [terms]complex128
		coef[0] = 1
		for k := 1; k < terms; k++ {
			coef[k] = coef[k-1] * complex(0, w) / complex(float64(k), 0)
		}
		var sum complex128
		for _, ch := range chunks {
			var t complex128
			for k := terms - 1; k >= 0; k-- {
				t += coef[k] * ch.m[k]
			}
			sp, cp := math.Sincos(w * ch.x0)
			sum += t * complex(cp, sp)
		}
		out[ti] = math.Hypot(real(sum), imag(sum)) / float64(len(sec))
	}
	return out
}

// ChunkLen is how many stamps share one local phase correction (about 2 s at 20 ms).
const ChunkLen = 100

// offset is t's signed distance from the nearest grid instant (no local correction).
func (l Lattice) offset(t time.Duration) time.Duration {
	T := l.Period
	d := (t - l.Phase) % T
	if d < 0 {
		d += T
	}
	if d > T/2 {
		d -= T
	}
	return d
}

// bin is the histogram bin (of nb over the period, 0 at the grid) of t.
func (l Lattice) bin(t time.Duration, nb int) int {
	d := l.offset(t)
	if d < 0 {
		d += l.Period
	}
	return min(nb-1, int(float64(d)/float64(l.Period)*float64(nb)+0.5)%nb)
}

// local is the grid's phase near t, with the drift correction of t's chunk.
func (l Lattice) local(t time.Duration) time.Duration {
	if len(l.starts) == 0 {
		return l.Phase
	}
	i, found := slices.BinarySearch(l.starts, t)
	if !found {
		i--
	}
	i = max(0, min(i, len(l.offsets)-1))
	return l.Phase + l.offsets[i]
}

// Snap returns the grid instant that the stamp t belongs to.
func (l Lattice) Snap(t time.Duration) time.Duration {
	if l.Period <= 0 {
		return t
	}
	ph := l.local(t)
	k := math.Floor(float64(t-ph+l.Early) / float64(l.Period))
	return ph + time.Duration(k)*l.Period
}

// Next returns the first grid instant at or after t.
func (l Lattice) Next(t time.Duration) time.Duration {
	if l.Period <= 0 {
		return t
	}
	var ph time.Duration
	if n := len(l.offsets); n > 0 {
		ph = l.Phase + l.offsets[n-1] // the newest correction: t is usually in the future
	} else {
		ph = l.Phase
	}
	k := math.Ceil(float64(t-ph) / float64(l.Period))
	return ph + time.Duration(k)*l.Period
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
