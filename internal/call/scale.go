package call

import (
	"fmt"
	"math"
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
	// The channel's idle line integrated over [A, B] (a line: its value at the middle).
	span := (b - a).Seconds()
	idleJ := idle.at((a+b)/2) * span
	stale := staleBound
	if o.IdleStale > 0 {
		stale = o.IdleStale
	}
	// d: the counter's rate less the channel's mean over each idle stretch.
	var ds, ses []float64
	for _, w := range [][2]time.Duration{o.IdleBefore, o.IdleAfter} {
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
	switch len(ds) {
	case 0:
		return c, fmt.Errorf("fewer than %d %s readings in the idle before and after the calls", minScaleReadings, energy.CounterChannel)
	case 1:
		c.IdleDiffW, c.IdleDiffSEW = ds[0], ses[0]
	default:
		c.IdleDiffW, c.IdleDiffSEW = (ds[0]+ds[1])/2, math.Sqrt(ses[0]*ses[0]+ses[1]*ses[1])/2
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
	c.IdleHalfWidthJ = rss(1.96*span*c.IdleDiffSEW, idle.halfWidth*span)
	c.HalfWidthJ = rss(c.EndsHalfWidthJ, c.IdleHalfWidthJ)
	return c, nil
}

// samplesOf is r as Samples (times and values alone).
func samplesOf(r trace.Readings) []trace.Sample {
	out := make([]trace.Sample, r.Len())
	for i := range out {
		out[i] = trace.Sample{T: r.T[i], Value: r.V[i]}
	}
	return out
}
