package call

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// CounterScale is the calls' energy above active idle on the energy counter over the whole
// run: its increase from a reading A before the calls to one B after them, less the active
// idle over [A, B],
//
//	E = ΔC − (ī + d)·T,
//
// where ī is the channel's idle line over the span T = B − A and d the counter's idle power
// less the channel's, measured over the idle stretches before and after the calls (the
// counter's least-squares rate over its readings there, read every 20 ms, less the
// channel's mean). Per call: E over every call run (those the channel's figures leave out
// included: the counter missed none). What is uncertain is plain: the readings at A and B
// may each be late by up to the counter's resolution (at the idle power there); d is known
// to its rates' standard errors and ī to the idle line's half-width, both times T. A
// least-squares fit of gain and offset over the whole recording (energy.FitCalibration)
// was no help: with the run idle most of the time the two are nearly collinear, and on the
// h200 twin, whose ring and counter share their gain, it fitted gains of 0.972-0.991 with
// standard errors of 0.004.
type CounterScale struct {
	// ActiveJ is the energy per call above active idle; Calls the calls it is over.
	ActiveJ float64 `json:"active_j"`
	Calls   int     `json:"calls"`
	// CounterJ is E, HalfWidthJ its 95 % half-width: EndsHalfWidthJ from the readings at
	// A and B, IdleHalfWidthJ from the idle (d and the line) over T.
	CounterJ       float64 `json:"counter_above_idle_j"`
	HalfWidthJ     float64 `json:"half_width_j"`
	EndsHalfWidthJ float64 `json:"ends_half_width_j"`
	IdleHalfWidthJ float64 `json:"idle_half_width_j"`
	// IdleDiffW is d (W) and IdleDiffSEW its standard error; SpanS is T, ChannelJ the
	// channel's energy above idle over it.
	IdleDiffW   float64 `json:"idle_diff_w"`
	IdleDiffSEW float64 `json:"idle_diff_se_w"`
	SpanS       float64 `json:"span_s"`
	ChannelJ    float64 `json:"channel_above_idle_j"`
	Readings    int     `json:"counter_readings"`
	// Gain is ActiveJ over ChannelActiveJ, the channel's own figure per call (its calls'
	// mean by phase): the counter's scale against the channel's for the calls.
	Gain           float64 `json:"gain"`
	ChannelActiveJ Figure  `json:"channel_active_j"`

	blocks []Block // the run split at its idle gaps (energies over each block, not yet per call)
}

func (c CounterScale) String() string {
	return fmt.Sprintf("%.1f J ± %.1f J above active idle over %.1f s (±%.1f J for its readings at the ends, ±%.1f J for the idle; the counter's idle %+.2f ± %.2f W from the channel's) over %d calls; the channel's own figure × %.4f",
		c.CounterJ, c.HalfWidthJ, c.SpanS, c.EndsHalfWidthJ, c.IdleHalfWidthJ, c.IdleDiffW, c.IdleDiffSEW, c.Calls, c.Gain)
}

// staleBound is how late a counter reading in the idle stretches may be against the update
// it shows: Run reads every channel every idlePoke there, and a read of every channel takes
// ~10 ms on an H200.
const staleBound = idlePoke + 10*time.Millisecond

// minScaleReadings is the fewest counter readings an idle stretch needs for its rate.
const minScaleReadings = 3

// fitCounterScale is CounterScale (but its per-call figures) for the calls inside (from, to)
// (their windows), with the idle line and stretches of Analyse, or why it cannot be had.
func fitCounterScale(tr *trace.Trace, o AnalyseOptions, idle idleLevel, from, to time.Duration,
	region func(from, to time.Duration, what string) (float64, string, bool)) (CounterScale, error) {
	var c CounterScale
	ctr := tr.Readings(o.GPU, energy.CounterChannel)
	if ctr.Len() < 2 {
		return c, fmt.Errorf("no %s readings", energy.CounterChannel)
	}
	if !idle.ok {
		return c, fmt.Errorf("no idle recorded before and after the calls")
	}
	// A: the last counter reading in the idle before the calls; B: the first in the idle
	// after them (Run reads every channel every idlePoke there, so each is at most that
	// late against the update it shows).
	i := ctr.Search(min(from, o.IdleBefore[1])) - 1
	j := ctr.Search(max(to, o.IdleAfter[0]))
	if i < 0 || j >= ctr.Len() || ctr.T[i] < o.IdleBefore[0] || ctr.T[j] > o.IdleAfter[1] {
		return c, fmt.Errorf("no %s reading in the idle before the calls or in the idle after them", energy.CounterChannel)
	}
	a, b := ctr.T[i], ctr.T[j]
	if ctr.V[j] < ctr.V[i] {
		return c, fmt.Errorf("%s went down over the calls (a reset)", energy.CounterChannel)
	}
	ring, _, ok := region(a, b, "the calls' run")
	if !ok {
		return c, fmt.Errorf("no figure of %s over the calls' run", o.Channel)
	}
	// The channel's idle line integrated over [A, B].
	span := (b - a).Seconds()
	idleJ, idleHWJ := idle.integral(a, b)
	stale := staleBound
	if o.IdleStale > 0 {
		stale = o.IdleStale
	}
	// d: the counter's rate less the channel's mean over each idle stretch.
	var ds, ses []float64
	stretches := append(append([][2]time.Duration{o.IdleBefore}, o.IdleGaps...), o.IdleAfter)
	for _, w := range stretches {
		if w[1]-w[0] < 200*time.Millisecond {
			continue
		}
		rate, n, se := energy.InsideRate(samplesOf(ctr), w[0], w[1])
		if n < minScaleReadings || se <= 0 {
			continue
		}
		x, _, ok := region(w[0], w[1], "an idle stretch")
		if !ok {
			continue
		}
		// Each reading late by up to staleBound against its update, independently: the
		// rate's standard error is at least that of a slope through readings so scattered
		// (a few readings' residuals said less than that on the twin, whose d was then off
		// by two of their standard errors).
		i0, i1 := ctr.After(w[0]), ctr.Search(w[1])
		var tm, stt float64
		for k := i0; k < i1; k++ {
			tm += ctr.T[k].Seconds()
		}
		tm /= float64(i1 - i0)
		for k := i0; k < i1; k++ {
			stt += (ctr.T[k].Seconds() - tm) * (ctr.T[k].Seconds() - tm)
		}
		if stt > 0 {
			sigma := rate * min(energy.CounterResolution(tr, o.GPU), stale).Seconds() / math.Sqrt(12)
			se = max(se, sigma/math.Sqrt(stt))
		}
		ds = append(ds, rate-x/(w[1]-w[0]).Seconds())
		ses = append(ses, se)
		c.Readings += n
	}
	switch {
	case len(ds) == 0:
		return c, fmt.Errorf("fewer than %d %s readings in the idle before and after the calls", minScaleReadings, energy.CounterChannel)
	case len(ds) == 1:
		c.IdleDiffW, c.IdleDiffSEW = ds[0], ses[0]
	case len(ds) == 2 && len(o.IdleGaps) == 0:
		c.IdleDiffW, c.IdleDiffSEW = (ds[0]+ds[1])/2, math.Sqrt(ses[0]*ses[0]+ses[1]*ses[1])/2
	default:
		// the idle gaps' too, each by its standard error (a 0.6 s gap's is ~3 times the
		// 2 s tail's): at a check, whose idle after the calls is a gap, d is then known
		// nearly as well as at the end
		var sw, swd float64
		for k := range ds {
			w := 1 / (ses[k] * ses[k])
			sw += w
			swd += w * ds[k]
		}
		c.IdleDiffW, c.IdleDiffSEW = swd/sw, 1/math.Sqrt(sw)
	}
	c.SpanS = span
	c.ChannelJ = ring - idleJ
	c.CounterJ = ctr.V[j] - ctr.V[i] - idleJ - c.IdleDiffW*span
	c.Readings += j - i + 1
	if c.CounterJ <= 0 {
		return c, fmt.Errorf("the calls drew nothing above idle on %s", energy.CounterChannel)
	}
	// Each end reading late by up to staleBound, at most the counter's resolution,
	// uniformly, at the idle power.
	res := min(energy.CounterResolution(tr, o.GPU), stale).Seconds()
	p := idle.at((a + b) / 2)
	c.EndsHalfWidthJ = 1.96 * math.Sqrt(2) * p * res / math.Sqrt(12)
	c.IdleHalfWidthJ = rss(1.96*span*c.IdleDiffSEW, idleHWJ)
	c.HalfWidthJ = rss(c.EndsHalfWidthJ, c.IdleHalfWidthJ)
	c.blocks = blocksOf(ctr, o, idle, i, j, c.IdleDiffW, p*res/math.Sqrt(12))
	return c, nil
}

// Block is one part of the run on the counter's scale: the calls between two counter
// readings at idle (the lead's, an idle gap's, the tail's), above the active idle line.
type Block struct {
	FromS   float64 `json:"from_s"`
	ToS     float64 `json:"to_s"`
	Calls   int     `json:"calls"`
	ActiveJ float64 `json:"active_j"` // per call above active idle
	// SigmaJ is the standard error per call of what is the block's own: its two counter
	// readings' lateness and its stretch of the idle line (not the counter's idle against
	// the channel's, which all blocks share).
	SigmaJ float64 `json:"sigma_j"`
}

// RunToRun is the run-to-run part of the interval: how far the calls' energy moves from
// one stretch of the run to the next beyond what the blocks' own errors explain (a board
// warming or cooling, its clocks moving), which a run seconds or minutes later meets too
// and no interval over one stretch includes.
type RunToRun struct {
	Blocks []Block `json:"blocks"`
	// Q is Cochran's Q of the blocks' figures against their errors (about blocks − 1 where
	// the errors explain the spread); TauJ the spread per call between blocks beyond their
	// errors (DerSimonian and Laird's estimate: 0 where Q is below blocks − 1).
	Q    float64 `json:"q"`
	TauJ float64 `json:"tau_j"`
	// Measured says whether there were blocks enough (minBlocks) for TauJ; HalfWidthJ is
	// the part's 95 % half-width per call: FloorJ where there is one (the board's documented
	// floor or the one asked for), else from the blocks: their trend beyond its error × the
	// run's length and 1.96 TauJ, in quadrature.
	Measured bool `json:"measured"`
	// SlopeJPerS is the blocks' weighted trend (J per call per s) and SlopeSEJPerS its
	// standard error; SpanS the run's length from the first block's start to the last's end.
	SlopeJPerS   float64 `json:"slope_j_per_s"`
	SlopeSEJPerS float64 `json:"slope_se_j_per_s"`
	SpanS        float64 `json:"span_s"`
	HalfWidthJ   float64 `json:"half_width_j"`
	FloorJ       float64 `json:"floor_j,omitempty"`
	Note         string  `json:"note"`
}

// minBlocks is the fewest blocks whose spread gives a run-to-run part: with two, Q has
// one degree of freedom and TauJ exceeds the blocks' own error one time in ten on a board
// whose calls do not move at all.
const minBlocks = 3

// blocksOf splits the run [ctr.T[i], ctr.T[j]] at a counter reading in each idle gap (the
// one nearest its middle) into blocks, each the counter's increase less the idle line and
// d over it, per call; nil without gaps.
func blocksOf(ctr trace.Readings, o AnalyseOptions, idle idleLevel, i, j int, d, sdRead float64) []Block {
	if len(o.IdleGaps) == 0 {
		return nil
	}
	cuts := []int{i}
	for _, g := range o.IdleGaps {
		mid := (g[0] + g[1]) / 2
		k := ctr.Search(mid)
		if k > 0 && (k >= ctr.Len() || mid-ctr.T[k-1] < ctr.T[k]-mid) {
			k--
		}
		if k <= cuts[len(cuts)-1] || k >= j || ctr.T[k] < g[0] || ctr.T[k] > g[1] {
			continue
		}
		cuts = append(cuts, k)
	}
	cuts = append(cuts, j)
	var out []Block
	for c := 0; c+1 < len(cuts); c++ {
		a, b := ctr.T[cuts[c]], ctr.T[cuts[c+1]]
		idleJ, idleHW := idle.integral(a, b)
		out = append(out, Block{FromS: a.Seconds(), ToS: b.Seconds(),
			ActiveJ: ctr.V[cuts[c+1]] - ctr.V[cuts[c]] - idleJ - d*(b-a).Seconds(),
			SigmaJ:  rss(math.Sqrt(2)*sdRead, idleHW/1.96)})
	}
	return out
}

// runToRun is the run-to-run part from the blocks (their energies made per call over
// the calls inside each: batch calls per span), at least floor (J per call).
func runToRun(blocks []Block, spans []Span, batch int, floor float64) *RunToRun {
	r := &RunToRun{FloorJ: floor}
	for _, b := range blocks {
		n := 0
		for _, sp := range spans {
			if s := sp.Start.Seconds(); s > b.FromS && s < b.ToS {
				n += batch
			}
		}
		if n == 0 {
			continue
		}
		b.Calls, b.ActiveJ, b.SigmaJ = n, b.ActiveJ/float64(n), b.SigmaJ/float64(n)
		r.Blocks = append(r.Blocks, b)
	}
	k := len(r.Blocks)
	var s1, s2, m float64 // the blocks' weights' sum, their squares' sum, the weighted mean
	for _, b := range r.Blocks {
		w := 1 / (b.SigmaJ * b.SigmaJ)
		s1 += w
		s2 += w * w
		m += w * b.ActiveJ
	}
	m /= s1
	if k >= 2 && s1 > 0 && !math.IsInf(s1, 0) {
		for _, b := range r.Blocks {
			r.Q += (b.ActiveJ - m) * (b.ActiveJ - m) / (b.SigmaJ * b.SigmaJ)
		}
		r.TauJ = math.Sqrt(max(0, (r.Q-float64(k-1))/(s1-s2/s1)))
	}
	r.Measured = k >= minBlocks
	if r.Measured {
		// The calls' energy may move steadily (a board warming): the blocks' weighted
		// trend, beyond its own error, times the run's length is how far a run as long,
		// right before or after, would lie; the spread about the trend is the rest.
		var tm float64
		for _, b := range r.Blocks {
			tm += (b.FromS + b.ToS) / 2 / (b.SigmaJ * b.SigmaJ)
		}
		tm /= s1
		var stt, stx float64
		for _, b := range r.Blocks {
			w, dt := 1/(b.SigmaJ*b.SigmaJ), (b.FromS+b.ToS)/2-tm
			stt += w * dt * dt
			stx += w * dt * (b.ActiveJ - m)
		}
		if stt > 0 {
			r.SlopeJPerS = stx / stt
			r.SlopeSEJPerS = 1 / math.Sqrt(stt)
			var qr float64
			for _, b := range r.Blocks {
				e := b.ActiveJ - m - r.SlopeJPerS*((b.FromS+b.ToS)/2-tm)
				qr += e * e / (b.SigmaJ * b.SigmaJ)
			}
			r.TauJ = math.Sqrt(max(0, (qr-float64(k-2))/(s1-s2/s1)))
		}
		r.SpanS = r.Blocks[k-1].ToS - r.Blocks[0].FromS
		shift := math.Sqrt(max(0, r.SlopeJPerS*r.SlopeJPerS-r.SlopeSEJPerS*r.SlopeSEJPerS)) * r.SpanS
		r.HalfWidthJ = rss(1.96*r.TauJ, shift)
		r.Note = fmt.Sprintf("the calls' energy between the run's %d blocks (split at its idle gaps) beyond the blocks' own errors: a trend of %.3g ± %.2g J per call per s over the run's %.1f s (%.4g J beyond its error) and a spread of 1.96 × %.4g J about it (Q = %.2f about the mean, on %d degrees of freedom)",
			k, r.SlopeJPerS, r.SlopeSEJPerS, r.SpanS, shift, r.TauJ, r.Q, k-1)
	} else {
		r.Note = fmt.Sprintf("not measured: %d blocks (at least %d are needed)", k, minBlocks)
	}
	if floor > 0 {
		// Measured over repeated runs, the floor holds what the calls' energy moves within
		// a run as well (a run's mean carries it): the blocks, a few per run, say the same
		// far less surely (on an H200 their trend alone read ±1.2-5.3 %, runs 2026-11-28-call-5),
		// so they are kept for the record and not added.
		r.Note = fmt.Sprintf("the run-to-run floor, %.4g J (the board's from its recorded repeated runs, or the one asked for: run_to_run_floor); the run's own blocks, for the record (not added): %s", floor, r.Note)
		r.HalfWidthJ = floor
	}
	return r
}

// samplesOf is r as Samples (times and values alone).
func samplesOf(r trace.Readings) []trace.Sample {
	out := make([]trace.Sample, r.Len())
	for i := range out {
		out[i] = trace.Sample{T: r.T[i], Value: r.V[i]}
	}
	return out
}

// boardRunToRun are the run-to-run floors of boards whose repeated runs were recorded
// (RunToRunFloor's default there): the 95 % half-width of one run's figure against the
// calls' energy over other runs minutes apart, 1.96 × the per-run standard deviation the
// pairs showed beyond their own intervals.
var boardRunToRun = []struct {
	name   string // a part of the board's name
	floor  float64
	source string
}{
	// results/nvidia-h200/2026-11-28-call-5-repeats: five bf16 GEMMs of 0.18-52 ms run
	// twice 3.5 min apart on each of two H200s, each run with a replay of its calls by the
	// counter alone: 10 pairs of gpuwatt's figures and 10 of the replays, 1.10 % (sd) per
	// run beyond the intervals (0.84 % gpuwatt's, 1.31 % the replays'). The figure against
	// a separate run's reference, as TestRunToRunFloor makes a floor on the twin, over the
	// 31 runs with their own replay on four H200s (-call-4, -call-5-repeats, -call-5):
	// 1.07 % beyond both intervals, 2.11 %: the same.
	{"H200", 0.0215, "results/nvidia-h200/2026-11-28-call-5-repeats: 1.10 % per run (sd) between runs 3.5 min apart on two H200s, 20 pairs"},
}

// RunToRunFloorOf is the documented run-to-run floor of a board by its name (0 and "" where
// none was recorded).
func RunToRunFloorOf(name string) (float64, string) {
	for _, b := range boardRunToRun {
		if strings.Contains(name, b.name) {
			return b.floor, b.source
		}
	}
	return 0, ""
}
