package energy

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// A region the counter does not resolve (too few readings inside) still lies inside a span
// of the counter's readings, over which the counter's increase is known to its timing. The
// calibrated ring's figure can be anchored to it: the ring's error over the span, diff =
// ring − counter, is the sum of its errors inside the region and outside it, and the
// region takes a share s of it. Where the load the ring misreads is in the region (a load
// locked to its 20 ms sampling: the H200's ring read a 20 ms square wave +21 %, a ramp in
// 20 ms slots +4 %, a 100 ms square wave −5 %, results/nvidia-h200/2026-11-28-intervals-
// shapes-2) and the rest of the span is idle, the anchored figure is the counter's.
//
// With A = ring_in − s × diff and the truth ring_in − e_in, diff = e_in + e_out − τ (τ the
// counter's timing error over the span):
//
//	A − truth = (1 − s) × diff + τ − e_out
//
// whatever the ring misread inside the region: the anchored figure's error is the share of
// the discrepancy it did not take, the counter's timing and the ring's error outside the
// region, which is bounded by what the power did there (the range of the ring's and the
// instant field's readings there × its length: a channel reads a load's mean no further
// off than its swing; a 20 ms square wave locked to the ring shows in the instant field)
// and by the calibration over it. The share s is the region's part of the span's energy
// above the span's lowest power (a misreading needs a load). anchor gives A and that bound;
// takeCalibrated keeps the ring's own figure where its own interval is narrower.

// anchored is the ring's figure anchored to the counter's increase over a span.
type anchored struct {
	shift float64 // J added to the ring's figure (−s × diff)
	share float64 // s
	comp  Component
}

// MinAnchorShare is the share of a span's load above which a region takes the anchored
// figure whatever the ring's own interval says: the counter's increase is then nearly all
// the region's, and the ring's own interval does not see a load locked to its own 20 ms
// period (the H200's ring read a 20 ms square wave −1.2 % against ±0.65 %, its share 100 %).
// At half, a region took half of a ramp's misreading beside it (+5.2 %, on a span of 10 s).
const MinAnchorShare = 0.9

// anchor is the narrower of the two anchors the counter's readings allow: over the span
// around the region (spanAnchor) and, where they lie close around its edges, the dense
// anchor (denseAnchor). ok is false where neither can be had.
func (r *regionRun) anchor() (anchored, bool) {
	an, ok := r.spanAnchor()
	if d, dok := r.denseAnchor(); dok && (!ok || d.comp.HalfWidthJ < an.comp.HalfWidthJ) {
		return d, true
	}
	return an, ok
}

// spanAnchor anchors the calibrated ring's figure over the region (r.est.EnergyJ) to the
// counter's increase over the readings that bracket it. ok is false where the counter does
// not bracket the region (or resets inside the span) or the ring has no figure over it.
func (r *regionRun) spanAnchor() (anchored, bool) {
	if r.cal == nil {
		return anchored{}, false
	}
	// The Sampler stamps each counter reading in the middle of the interval its update lay
	// in (sensor's stamp): its increase between two readings is the energy between their
	// stamps, each end within res/2 of it (the timing, tol below). Moving the span back by
	// another res/2 counted the lag twice: a bias of res/2 × the power step across the span.
	half := r.res / 2
	i, j, ok := counterBracket(r.ctrSeries, r.from, r.to)
	if !ok {
		return anchored{}, false
	}
	T, V := r.ctrSeries.T, r.ctrSeries.V
	a, b := T[i], T[j]
	eSpan, _, ok := r.o.spanFigure(r.tr, r.gpu, CalibratedRing, "")(a, b)
	if !ok {
		return anchored{}, false
	}
	eCtr := V[j] - V[i]
	diff := eSpan - eCtr
	ring := r.o.Cache.series(r.tr, r.gpu, r.cal.Channel)
	// The counter's timing: each end within res/2 of its stamp, uniformly and
	// independently, at the power drawn there (the ring's highest reading, on the counter's
	// scale).
	pa, pb := r.cal.Power(highest(ring, T[i]-half, T[i]+half)), r.cal.Power(highest(ring, T[j]-half, T[j]+half))
	tol := counterTiming(r.res, pa, pb)
	s := activeShare(ring, r.cal, r.est.EnergyJ, eSpan, a, b, r.from, r.to)
	share, how := s, "its share of the span's energy above the span's lowest power"
	if d, ok := r.agreedShare(a, b, diff); ok && d < s {
		s, how = d, fmt.Sprintf("its share of where %s and %s disagree: they agree over the region", r.cal.Channel, trace.ChPowerUsage)
	}
	// The ring's error outside the region: its own interval there (calibration included).
	var out float64
	var outNotes []string
	for _, p := range [][2]time.Duration{{a, r.from}, {r.to, b}} {
		if p[1] <= p[0] {
			continue
		}
		hw, ok := r.ownOver(p[0], p[1])
		if !ok {
			// Too short for the ring's own figure (a counter reading 37 ms after the
			// region: the H200's 20 ms square wave, +10 % unanchored, results/nvidia-h200/
			// 2026-11-28-intervals-shapes-4): the ring misreads it by at most the power's
			// swing there for as long as it lasts.
			hw = loadSwing(r.tr, r.gpu, r.o, p[0], p[1]) * (p[1] - p[0]).Seconds()
			if hw <= 0 {
				return anchored{}, false
			}
		}
		out += hw
		outNotes = append(outNotes, fmt.Sprintf("±%.3g J over %s", hw, fmtDur(p[1]-p[0])))
	}
	// (1 − s) × |diff| where the ring misread the region; s × |diff| where what it misread
	// lies outside the region, in a load its own interval there does not see (a 20 ms
	// square wave beside a steady burst: the region took s of a misreading not its own).
	hw := math.Max(s, 1-s)*math.Abs(diff) + tol + out
	c := Component{Name: "anchor", HalfWidthJ: hw, Known: true,
		Note: fmt.Sprintf("anchored to %s over %s (%s to %s): %s read %+.3g J (%+.2f %%) against it; the region took %.0f %% of that (%s); bound: the larger of the %.3g J it did not take and the %.3g J it took (the ring's error may lie on either side), the counter's timing (±%.3g J) and %s's own interval outside the region (%s), added",
			counterChannel, fmtDur(b-a), correct.FmtS(a.Seconds()), correct.FmtS(b.Seconds()), r.cal.Channel, diff, 100*diff/math.Max(math.Abs(eCtr), 1e-9),
			100*s, how, (1-s)*math.Abs(diff), s*math.Abs(diff), tol, r.cal.Channel, strings.Join(outNotes, ", "))}
	return anchored{shift: -s * diff, share: share, comp: c}, true
}

// MaxDenseStraddle is the longest stretch between two of the counter's readings that the
// dense anchor splits at a region's edge (denseAnchor): a counter read every 100 ms
// (measure --counter-every 100ms) leaves a tenth of a second's energy at each edge to
// apportion; the lean default's readings, 2-10 s apart on an H200, leave too much.
const MaxDenseStraddle = time.Second

// denseAnchor is the region's energy from the counter's readings around it, less the
// energy of the two pieces between those readings and the region, bounded by the counter
// alone. The Sampler stamps a new value in the middle of the interval its update lay in
// (between the call that still saw the old value and this one, at most an update period
// long: sensor's stamp), so the update u of a reading stamped T lies within h of it, h
// half an update period (and more for a dithered poll or a long step). With i the last
// reading at least h before the start and j the first at least h after the end,
// u_i ≤ from and u_j ≥ to, so the region's energy is exactly C_j − C_i − E(u_i, from) −
// E(to, u_j); with k the first reading at least h after the start (m the last at least h
// before the end), E(u_i, from) lies between 0 and the counter's increase C_k − C_i
// (E(to, u_j) between 0 and C_j − C_m), whatever a power channel misread there. The
// ring's energy over each piece (clipped to those bounds) is the figure's; the bound is
// the larger of its distances to them. No timing term: the readings' lateness is in the
// bounds. With readings every 100 ms a region padded into idle is bounded by 0.1-0.3 s of
// idle power at each edge, where spanAnchor's bound over a span of 2 s or more is the whole of
// the ring's error there (h200 twin: 20 ms square waves and 20 ms-slot ramps,
// TestDenseCounterLockedLoads). ok is false where the counter does not bracket the region
// so, resets there, or a straddle is longer than MaxDenseStraddle.
func (r *regionRun) denseAnchor() (anchored, bool) {
	if r.cal == nil || r.calSer == nil || r.res <= 0 {
		return anchored{}, false
	}
	// Half an update period, and a quarter more for a poll dithered by ±25 % and the
	// H200's steps of 96-104 ms (results/nvidia-h200/2026-11-28-counter-cost).
	h := r.res * 13 / 20
	ctr := r.ctrSeries
	T, V, n := ctr.T, ctr.V, ctr.Len()
	last := func(t time.Duration) int { // the last reading at or before t (-1: none)
		x := ctr.Search(t)
		if x < n && T[x] == t {
			return x
		}
		return x - 1
	}
	i, m := last(r.from-h), last(r.to-h)
	k, j := ctr.Search(r.from+h), ctr.Search(r.to+h)
	if i < 0 || j >= n || k >= n || m < 0 || T[k]-T[i] > MaxDenseStraddle || T[j]-T[m] > MaxDenseStraddle {
		return anchored{}, false
	}
	for x := i + 1; x <= j; x++ {
		if V[x] < V[x-1] {
			return anchored{}, false
		}
	}
	e := V[j] - V[i]
	hw := 2 * CounterQuantumJ
	var notes []string
	for _, side := range []struct {
		a, b     int // the straddling readings
		from, to time.Duration
	}{{i, k, T[i], r.from}, {m, j, r.to, T[j]}} {
		straddle := V[side.b] - V[side.a]
		out := 0.0
		if side.to > side.from {
			raw := r.calSer.Energy(side.from, side.to).Energy.Joules()
			out = min(max(r.cal.Energy(raw, side.to-side.from), 0), straddle)
		}
		bound := max(out, straddle-out)
		e -= out
		hw += bound
		notes = append(notes, fmt.Sprintf("%.3g J of the %.3g J between readings %s apart (±%.3g J)", out, straddle, fmtDur(T[side.b]-T[side.a]), bound))
	}
	c := Component{Name: "anchor", HalfWidthJ: hw, Known: true,
		Note: fmt.Sprintf("%s's increase over %s (%s to %s) less %s's energy between those readings and the region (%s): each between 0 and the counter's increase over the readings that straddle the edge, whatever the ring misread; added",
			counterChannel, fmtDur(T[j]-T[i]), correct.FmtS(T[i].Seconds()), correct.FmtS(T[j].Seconds()), r.cal.Channel, strings.Join(notes, "; "))}
	return anchored{shift: e - r.est.EnergyJ, share: 1, comp: c}, true
}

// AgreeFraction: over a region where the ring and the 1 s average (power.usage, which
// samples the power on its own) differ by at most this fraction of its energy, the ring is
// taken to read the load as it is: steady loads agree within 1 % on the H200, while a load
// locked to the ring's 20 ms sampling is misread by both, differently (a 20 ms square wave
// +10 to +26 % by the ring, −5 to +20 % by the 1 s average; results/nvidia-h200/
// 2026-11-28-intervals-shapes-2 to -4).
const AgreeFraction = 0.015

// agreedShare is the region's share of the ring's error over the span [a, b] where the
// ring and the 1 s average agree over the region (AgreeFraction): its part of their
// disagreement over the span, which lies where the ring misreads a load the other reads
// otherwise. A steady burst anchored beside a 20 ms square wave the ring read +11 % took
// 68 % of that by its energy, −4.5 % (intervals-shapes-4); by where they disagree, +0.2 %.
// The bound (anchor) holds whatever the share: the larger of the share taken and left.
// ok is false where the 1 s average has no figure, the region's channels disagree, or
// their disagreement over the span is too small to place diff (under a fifth of it).
func (r *regionRun) agreedShare(a, b time.Duration, diff float64) (float64, bool) {
	ring := r.o.spanFigure(r.tr, r.gpu, CalibratedRing, "")
	usage := r.o.usageFigure(r.tr, r.gpu)
	apart := func(x, y time.Duration) (d, e float64, ok bool) {
		if y <= x {
			return 0, 0, true
		}
		e1, _, ok1 := ring(x, y)
		e2, _, ok2 := usage(x, y)
		return math.Abs(e1 - e2), e1, ok1 && ok2
	}
	dIn, eIn, ok1 := apart(r.from, r.to)
	dBefore, _, ok2 := apart(a, r.from)
	dAfter, _, ok3 := apart(r.to, b)
	if !ok1 || !ok2 || !ok3 || dIn > AgreeFraction*math.Abs(eIn) {
		return 0, false
	}
	all := dIn + dBefore + dAfter
	if all < 0.2*math.Abs(diff) {
		return 0, false
	}
	return dIn / all, true
}

// highest is the highest of s's readings in [from, to] and the one before it (the power
// held there), 0 where there is none.
func highest(s trace.Readings, from, to time.Duration) float64 {
	i, j := s.Search(from), s.Search(to)
	if i > 0 {
		i--
	}
	if j < s.Len() {
		j++
	}
	hi := 0.0
	for _, v := range s.V[i:j] {
		hi = max(hi, v)
	}
	return hi
}

// activeShare is the region's share of the span's energy above the span's lowest power
// (the ring's lowest reading there, on the counter's scale): where a channel misreads, a
// load is. Where the span hardly rises above its lowest power (under 5 % of its energy),
// the region's share of its time.
func activeShare(ring trace.Readings, cal *Calibration, eIn, eSpan float64, a, b, from, to time.Duration) float64 {
	tIn, tSpan := (to - from).Seconds(), (b - a).Seconds()
	lo := math.Inf(1)
	for _, v := range ring.Slice(ring.Search(a), ring.Search(b)).V {
		lo = min(lo, cal.Power(v))
	}
	if math.IsInf(lo, 1) {
		return tIn / tSpan
	}
	actSpan, actIn := eSpan-lo*tSpan, eIn-lo*tIn
	if actSpan <= 0.05*math.Abs(eSpan) {
		return tIn / tSpan
	}
	return math.Min(math.Max(actIn/actSpan, 0), 1)
}

// ownOver is the calibrated ring's own half-width over [from, to] (every known component,
// a periodic load's bound included; no reference or anchor of its own): ok false where it
// has no figure there.
func (r *regionRun) ownOver(from, to time.Duration) (float64, bool) {
	so := r.o.spanOptions()
	so.Method = CalibratedRing
	e := Region(r.tr, r.gpu, from, to, so)
	if e.Method != CalibratedRing {
		return 0, false
	}
	return knownHalfWidth(e.Uncertainty.Components), true
}
