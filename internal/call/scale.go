package call

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// CounterScale is the scale of the calls' energy above idle on the energy counter against
// the channel: the counter's increase over the whole run of calls less its active idle,
// over the channel's integral over the same span less the channel's active idle,
//
//	g = (ΔC − ∫idle − d·T) / (ΔR − ∫idle),
//
// where ∫idle is the channel's idle line over the span [A, B] between two counter readings
// around the calls, and d the counter's idle power less the channel's, measured over the
// idle stretches before and after the calls (the counter's least-squares rate over its
// readings there less the channel's mean). A least-squares fit of gain and offset over the
// whole recording (energy.FitCalibration) leaves the two nearly collinear when the run is
// idle most of the time: on the h200 twin, whose ring and counter share their gain, it
// fitted gains of 0.972-0.991 with standard errors of 0.004. Here what is uncertain is
// plain: the counter's readings at A and B may each be late by up to its resolution (at the
// idle power there), and d is known to its rates' standard errors, which the span T
// multiplies: on an H200 read every ~0.4 s over 2 s stretches that is most of it.
type CounterScale struct {
	Gain   float64 `json:"gain"`
	GainSE float64 `json:"gain_se"`
	// IdleDiffW is d (W) and IdleDiffSEW its standard error; SpanS is T, ChannelJ the
	// channel's energy above idle over it and CounterJ the counter's.
	IdleDiffW   float64 `json:"idle_diff_w"`
	IdleDiffSEW float64 `json:"idle_diff_se_w"`
	SpanS       float64 `json:"span_s"`
	ChannelJ    float64 `json:"channel_above_idle_j"`
	CounterJ    float64 `json:"counter_above_idle_j"`
	Readings    int     `json:"counter_readings"`
}

func (c CounterScale) String() string {
	return fmt.Sprintf("gain %.4f ± %.4f (standard error): over %.1f s of calls the counter's %.1f J above active idle against the channel's %.1f J; the counter's idle %+.2f ± %.2f W from the channel's (%d counter readings)",
		c.Gain, c.GainSE, c.SpanS, c.CounterJ, c.ChannelJ, c.IdleDiffW, c.IdleDiffSEW, c.Readings)
}

// minScaleReadings is the fewest counter readings an idle stretch needs for its rate.
const minScaleReadings = 3

// fitCounterScale is CounterScale for the calls inside (from, to) (their windows), with the
// idle line and stretches of Analyse; ok false with the reason where it cannot be had.
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
	// A: the last counter reading before the calls' windows; B: the first after them.
	i := ctr.Search(from) - 1
	j := ctr.After(to)
	if i < 0 || j >= ctr.Len() {
		return c, fmt.Errorf("no %s reading before the calls or after them", energy.CounterChannel)
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
	if c.ChannelJ <= 0 {
		return c, fmt.Errorf("the calls drew nothing above idle on %s", o.Channel)
	}
	c.Gain = c.CounterJ / c.ChannelJ
	// Each end reading late by up to the counter's resolution, uniformly, at the idle power.
	res := energy.CounterResolution(tr, o.GPU).Seconds()
	p := idle.at((a + b) / 2)
	ends := math.Sqrt(2) * p * res / math.Sqrt(12)
	c.GainSE = math.Sqrt(ends*ends+span*span*c.IdleDiffSEW*c.IdleDiffSEW) / c.ChannelJ
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
