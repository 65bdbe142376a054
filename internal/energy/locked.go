package energy

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// A load locked to a sensor's updates (a training step of ~100 ms read by a channel that
// updates every 100 ms) is seen at the same phase period after period: its readings are
// steady and the coverage component, made of their differences, stays near 0, while the
// figure is off by the load's swing at that phase (the H200's power.instant read a 100 ms
// square wave −14 % and −24 % against ±10–20 %, results/nvidia-h200/2026-11-28-intervals-
// shapes). A faster channel of the same board shows the load: the ring samples every
// 20 ms, so it resolves loads up to 25 Hz. lockedComponent looks in the ring's readings
// over the region for a periodic load near a multiple of the channel's update frequency
// and bounds what it can do to the channel's figure.

// lockedMinSigma: a periodic component of the ring's readings counts where its amplitude
// exceeds its own noise (the residuals' spread × √(2/n)) this many times.
const lockedMinSigma = 4

// lockedComponent bounds the error of a channel (model m, update period T, its updates'
// jitter) from a load locked to its updates, as the ring (ring, its model rm) shows the
// load over [from, to]. A periodic load of fundamental f whose k-th harmonic lies near a
// multiple of 1/T is read at a phase that hardly drifts: that harmonic's share of the
// figure does not average out. The fundamentals looked for are those near m/(k·T) for k up
// to LockedHarmonics (within 1/(k D): farther, the phase drifts through whole turns over
// the region and averages out) that the ring resolves, each the strongest
// sinusoid there in the ring's readings (least squares, with a straight line beside it so
// a ramp is not taken for one), restored through the ring's lag. The harmonic's amplitude
// is the fundamental's where k = 1; where the ring cannot see the harmonic (above its
// Nyquist frequency: a 100 ms square wave's fifth, at the ring's own 50 Hz), at most
// 2/(π k) × the load's swing (a two-level load's; the swing from the ring's readings, restored
// at f). A sensor averaging a window W after a lag tau reads the harmonic at k·f attenuated
// by |sinc(π k f W)| / √(1 + (2π k f tau)²), its phase drifting by (k f − m/T) per second
// and spread by the updates' jitter σ: over D its figure errs by at most
// A_k × that × |sinc(π (k f − m/T) D)| × exp(−(2π k f σ)²/2) × D. The terms found add.
// ok is false where nothing periodic is found or no ring can say (no ring, too few of its
// readings, a region under two update periods).
func lockedComponent(ring trace.Readings, rm sensormodel.Model, m sensormodel.Model, T, jitter time.Duration, from, to time.Duration, gain float64) (Component, bool) {
	pts := ring.Slice(ring.Search(from), ring.Search(to))
	n := pts.Len()
	D := (to - from).Seconds()
	if T <= 0 || n < 10 || D < 2*T.Seconds() {
		return Component{}, false
	}
	Tr := D / float64(n) // the ring's mean interval over the region
	nyq := 0.5 / Tr
	if m.Kind() == sensormodel.Boxcar && m.Window >= T {
		// A window that covers each period whole sees every phase alike: nothing to lock.
		return Component{}, false
	}
	t := make([]float64, n)
	cs := make([][2]float64, n) // sineAmplitude's scratch
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, x := range pts.T {
		t[i] = (x - from).Seconds()
		lo, hi = min(lo, pts.V[i]), max(hi, pts.V[i])
	}
	lag := func(f, tau float64) float64 { return 1 / math.Hypot(1, 2*math.Pi*f*tau) }
	fs := 1 / T.Seconds()
	var hw float64
	var found []string
	seen := map[int]bool{} // fundamentals already counted, by frequency in mHz
	for k := 1; k <= LockedHarmonics; k++ {
		for mm := 1; float64(mm)*fs/float64(k) < 0.9*nyq; mm++ {
			f0 := float64(mm) * fs / float64(k)
			if f0*D < 2 {
				continue // fewer than two cycles: no period to find
			}
			// Only a harmonic within 1/D of m/T stays in phase long enough to matter (its
			// drift factor below is 0 beyond): the fundamentals within 1/(k D) of f0.
			bestA, bestF, bestSE := 0.0, 0.0, 0.0
			band := 1 / (float64(k) * D)
			for f := f0 - band; f <= f0+band && f < 0.9*nyq; f += band / 4 {
				if a, se, ok := sineAmplitude(t, pts.V, f, cs); ok && a > bestA {
					bestA, bestF, bestSE = a, f, se
				}
			}
			if bestA == 0 || bestA <= lockedMinSigma*bestSE {
				continue
			}
			key := int(math.Round(bestF*1e3)) + 1000000*k
			if seen[key] {
				continue
			}
			seen[key] = true
			fk := float64(k) * bestF
			var Ak float64
			switch {
			case k == 1:
				Ak = bestA / lag(bestF, rm.Tau.Seconds())
			case fk < 0.9*nyq:
				continue // the ring resolves the harmonic: counted as a fundamental of its own
			default:
				swing := (hi - lo) / lag(bestF, rm.Tau.Seconds())
				Ak = 2 / (math.Pi * float64(k)) * swing
			}
			resp := math.Abs(sinc(math.Pi*fk*m.Window.Seconds())) * lag(fk, m.Tau.Seconds())
			drift := math.Abs(sinc(math.Pi * (fk - float64(mm)*fs) * D))
			x := 2 * math.Pi * fk * jitter.Seconds()
			term := Ak * resp * drift * math.Exp(-x*x/2) * D
			if term <= 0 {
				continue
			}
			hw += term
			found = append(found, fmt.Sprintf("%.3g Hz × %d near %.3g Hz: ±%.3g J", bestF, k, float64(mm)*fs, term))
		}
	}
	if len(found) == 0 {
		return Component{}, false
	}
	c := Component{Name: "locked", HalfWidthJ: math.Abs(gain) * hw, Known: true,
		Note: fmt.Sprintf("the ring shows a periodic load whose harmonics lie near multiples of this channel's %s update frequency (%s): read at a phase that hardly drifts, they do not average out",
			fmtDur(T), strings.Join(found, "; "))}
	return c, true
}

// LockedHarmonics is the highest harmonic of a periodic load lockedComponent follows.
const LockedHarmonics = 10

// sineAmplitude fits v ≈ a cos(2π f t) + b sin(2π f t) + c + d t by least squares and
// returns √(a² + b²) with its standard error (from the residuals). cs is scratch space for
// len(t) points (the caller's, reused over the frequencies it tries).
//
// It was 76 % of internal/call's test CPU: math.Cos and math.Sin twice per point, and the
// normal equations as a 4 × 4 loop. Now one math.Sincos per point (the same bits as
// math.Cos and math.Sin: the same reduction and polynomials) and the ten distinct sums of
// AᵀA written out; every product and every sum is the one it was, in the same order, so
// the figures are bit for bit those of the loop.
func sineAmplitude(t, v []float64, f float64, cs [][2]float64) (amp, se float64, ok bool) {
	n := len(t)
	if n < 6 {
		return 0, 0, false
	}
	const p = 4
	cs = cs[:n]
	// Row i of A is (c, s, 1, x); a product with the 1 is the other factor itself.
	var cc, csn, c1, cx, ss, s1, sx, n1, x1, xx float64
	var bc, bs, b1, bx float64
	for i, x := range t {
		sin, cos := math.Sincos(2 * math.Pi * f * x)
		cs[i] = [2]float64{cos, sin}
		y := v[i]
		bc += cos * y
		bs += sin * y
		b1 += y
		bx += x * y
		cc += cos * cos
		csn += cos * sin
		c1 += cos
		cx += cos * x
		ss += sin * sin
		s1 += sin
		sx += sin * x
		n1++
		x1 += x
		xx += x * x
	}
	ata := [p][p]float64{
		{cc, csn, c1, cx},
		{csn, ss, s1, sx},
		{c1, s1, n1, x1},
		{cx, sx, x1, xx},
	}
	x, ok := solve4(ata, [p]float64{bc, bs, b1, bx})
	if !ok {
		return 0, 0, false
	}
	var rss float64
	for i, ti := range t {
		e := v[i]
		e -= cs[i][0] * x[0]
		e -= cs[i][1] * x[1]
		e -= x[2]
		e -= ti * x[3]
		rss += e * e
	}
	sigma := math.Sqrt(rss / float64(max(n-p, 1)))
	return math.Hypot(x[0], x[1]), sigma * math.Sqrt(2/float64(n)), true
}

// solve4 solves a 4×4 system by Gaussian elimination with partial pivoting.
func solve4(a [4][4]float64, b [4]float64) ([4]float64, bool) {
	const n = 4
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		if math.Abs(a[piv][c]) < 1e-12 {
			return [4]float64{}, false
		}
		a[c], a[piv] = a[piv], a[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < n; r++ {
			k := a[r][c] / a[c][c]
			for j := c; j < n; j++ {
				a[r][j] -= k * a[c][j]
			}
			b[r] -= k * b[c]
		}
	}
	var x [4]float64
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for j := r + 1; j < n; j++ {
			s -= a[r][j] * x[j]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}

func sinc(x float64) float64 {
	if math.Abs(x) < 1e-9 {
		return 1
	}
	return math.Sin(x) / x
}

// ringLocked is lockedComponent for channel name's inversion (ser, model m, result r), from
// the trace's ring where it has one and name is not it; the channel's jitter is the spread
// of the intervals between its readings around the region.
func ringLocked(tr *trace.Trace, gpu int, o Options, name string, ser *correct.Series, m sensormodel.Model, r correct.Result, from, to time.Duration, gain float64) (Component, bool) {
	ring := o.Cache.series(tr, gpu, trace.ChPowerSamples)
	if ring.Len() == 0 {
		return Component{}, false
	}
	_, choice, _, _, err := prepare(tr, gpu, trace.ChPowerSamples, o, true)
	rm := sensormodel.Model{}
	if err == nil {
		rm = choice.Model
	}
	T := r.Period
	jit := time.Duration(intervalSpread(ser.Readings(from-10*T, to+10*T)) * float64(time.Second))
	return lockedComponent(ring, rm, m, T, jit, from, to, gain)
}

// CodeLocked: a periodic load locked to the channel's sampling (lockedComponent).
const CodeLocked status.Code = "load_locked_to_sensor"

func (est *Estimate) warnLocked(c Component, warn func(status.Code, string, string, ...any)) {
	warn(CodeLocked, est.Channel, "%s: a periodic load locked to its sampling, whose error does not average out: the interval includes ±%.3g J for it (%s)", est.Channel, c.HalfWidthJ, c.Note)
}

// rippleComponent is what a long window's readings carry from a periodic load whose period
// does not divide the window (a 150 ms square wave in a 1 s average: each reading holds
// 6.67 periods, so the readings ripple by the part period): the deconvolution of a window
// W ≥ T takes a region's energy from the readings at its edges (E[a, b] = W·Δr + E[a−W,
// b−W]), so their ripple σ, W times, is in the figure at each edge and at each window before
// them (as seriesEdges follows them back). σ at an edge is the readings' second differences
// over five periods either side, robustly (their median absolute value: a ripple is in
// every reading, a load's start or end in a few; for independent ripple var(Δ²r/2) = 1.5 σ²). On the
// twin's 1 s average, square waves of 75–200 ms read −3 % to −10 % over 0.5 s with ±2 %
// before it. ok is false for any other model (a window under two periods
// gives each period's mean itself).
func rippleComponent(ser *correct.Series, m sensormodel.Model, T time.Duration, from, to time.Duration, gain float64) (Component, bool) {
	if m.Kind() != sensormodel.Boxcar || T <= 0 || m.Window < 2*T {
		// a window of about a period gives each period's mean itself: nothing amplified
		return Component{}, false
	}
	local := func(t time.Duration) float64 {
		r := ser.Readings(t-5*T, t+5*T)
		v := r.V
		if len(v) < 3 {
			return 0
		}
		d := make([]float64, 0, len(v)-2)
		for i := 1; i+1 < len(v); i++ {
			d = append(d, math.Abs(v[i]-(v[i-1]+v[i+1])/2))
		}
		// robust: a ripple is in every reading, a load's start or end in a few corners
		return 1.4826 * medianInPlace(d) / math.Sqrt(1.5)
	}
	W := m.Window
	a, b := local(from), local(to)
	hw := 1.96 * math.Abs(gain) * W.Seconds() * math.Hypot(a, b)
	return Component{Name: "ripple", HalfWidthJ: hw, Known: true,
		Note: fmt.Sprintf("the readings' ripple at the edges (the robust spread of their second differences), which the deconvolution takes %s times: a periodic load whose period does not divide the window", fmtDur(W))}, true
}
