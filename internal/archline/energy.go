package archline

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gpuwatt/internal/loop"
	"gpuwatt/internal/trace"
)

// The energy of a point. The region's headline is the driver's energy counter, but on an
// H100/H200 the counter steps every 100 ms and costs ~3 ms of CPU a read, so the Sampler
// reads it every 0.5-1 s: a 1-2 s point has one to three readings inside, and its energy
// interpolated across readings outside it (in the warm-up of the next point) is off by up
// to ±12 % (the H200 run of 2026-11-21: every point had one reading inside). The driver's
// sample ring (power.samples) holds every 20 ms sample with the driver's timestamp: a
// 2 s point has ~100 of them. So a point's energy is the ring's mean power over the point
// × its duration, mapped onto the counter's scale by a calibration fitted over the whole
// sweep (counter = gain × ring integral + offset × time), and the counter's own figure is
// kept beside it.

// samplesChannel and counterChannel are the channels the calibration relates.
const (
	samplesChannel = "power.samples"
	counterChannel = "energy.total"
	// minSamples is the fewest ring samples inside a point for its energy to come from
	// the ring (a 1 s point has 50).
	minSamples = 10
	// minCalReadings is the fewest counter readings the calibration needs.
	minCalReadings = 10
)

// Calibration maps the sample ring's energy onto the energy counter's scale:
// E_counter = Gain × E_samples + OffsetW × T, fitted by least squares to the counter's
// readings over the sweep (each against the ring's integral up to that reading).
type Calibration struct {
	Gain     float64 `json:"gain"`
	OffsetW  float64 `json:"offset_w"`
	Readings int     `json:"counter_readings"`
	SpanS    float64 `json:"span_s"`
	// RMSJ is the RMS residual of the counter readings (J); RatioCounterToSamples the
	// plain ratio of the counter's increase to the ring's integral over the span.
	RMSJ                  float64 `json:"rms_j"`
	RatioCounterToSamples float64 `json:"ratio_counter_to_samples"`
	Method                string  `json:"method"`
}

// calibrate fits the calibration on GPU gpu's trace between from and to.
func calibrate(tr *trace.Trace, gpu int, from, to time.Duration) (Calibration, error) {
	ring := tr.Series(gpu, samplesChannel)
	ctr := tr.Series(gpu, counterChannel)
	if len(ring) < 2 {
		return Calibration{}, fmt.Errorf("no %s channel", samplesChannel)
	}
	from, to = max(from, ring[0].T), min(to, ring[len(ring)-1].T)
	var in []trace.Sample
	for _, s := range ctr {
		if s.T >= from && s.T <= to {
			if len(in) > 0 && s.Value < in[len(in)-1].Value {
				return Calibration{}, fmt.Errorf("%s was reset during the sweep", counterChannel)
			}
			in = append(in, s)
		}
	}
	if len(in) < minCalReadings {
		return Calibration{}, fmt.Errorf("only %d readings of %s during the sweep", len(in), counterChannel)
	}
	// The ring's integral from the first reading to each.
	t0 := in[0].T
	X := make([][]float64, len(in))
	y := make([]float64, len(in))
	for i, s := range in {
		e := trace.Integrate(ring, t0, s.T).Energy.Joules()
		X[i] = []float64{e, (s.T - t0).Seconds(), 1}
		y[i] = s.Value - in[0].Value
	}
	last := len(in) - 1
	c := Calibration{Readings: len(in), SpanS: (in[last].T - t0).Seconds()}
	if X[last][0] <= 0 {
		return Calibration{}, fmt.Errorf("%s integrates to nothing", samplesChannel)
	}
	c.RatioCounterToSamples = y[last] / X[last][0]
	b, err := ols(X, y)
	if err == nil && b[0] > 0.8 && b[0] < 1.25 && math.Abs(b[1]) < 50 {
		c.Gain, c.OffsetW, c.Method = b[0], b[1], "least squares: counter = gain × ring integral + offset × time (+ constant)"
		var ss float64
		for i := range y {
			r := y[i] - (b[0]*X[i][0] + b[1]*X[i][1] + b[2])
			ss += r * r
		}
		c.RMSJ = math.Sqrt(ss / float64(len(y)))
		return c, nil
	}
	// A fit that makes no sense (too little variation of power): the plain ratio.
	c.Gain, c.Method = c.RatioCounterToSamples, "ratio of the counter's increase to the ring's integral"
	if !(c.Gain > 0.8 && c.Gain < 1.25) {
		return Calibration{}, fmt.Errorf("%s and %s differ by a factor %.3g over the sweep", counterChannel, samplesChannel, c.Gain)
	}
	return c, nil
}

// pointEnergy is a measurement's energy (J, the whole measurement) and its provenance:
// the ring's, calibrated, where it has enough samples inside; else the region's headline.
type pointEnergy struct {
	J               float64
	Source          string
	Readings        int     // readings of the source inside the point
	CounterJ        float64 // the counter's figure (0: none)
	CounterReadings int
	SamplesJ        float64 // the ring's raw figure (0: none)
	SamplesReadings int
}

func energyOf(me *loop.Measurement, cal *Calibration) pointEnergy {
	r := me.Region
	pe := pointEnergy{J: r.EnergyJ, Source: r.EnergySource}
	ringOK := false
	for _, c := range r.Channels {
		switch c.Channel {
		case counterChannel:
			pe.CounterJ, pe.CounterReadings = c.EnergyJ, c.Samples
		case samplesChannel:
			pe.SamplesJ, pe.SamplesReadings = c.EnergyJ, c.Samples
			ringOK = c.Samples >= minSamples && c.Coverage >= 0.99 && c.EnergyJ > 0
		}
		if c.Channel == r.EnergySource {
			pe.Readings = c.Samples
		}
	}
	if ringOK {
		pe.J, pe.Source, pe.Readings = pe.SamplesJ, samplesChannel, pe.SamplesReadings
		if cal != nil {
			pe.J = cal.Gain*pe.SamplesJ + cal.OffsetW*(me.End-me.Start).Seconds()
			pe.Source = samplesChannel + " (calibrated to " + counterChannel + ")"
		}
	}
	return pe
}

// keepWarning says whether a region warning still applies to a point whose energy came
// from source: the counter's uncertainty and the channels' disagreement with it do not
// when the energy comes from the ring.
func keepWarning(w, source string) bool {
	if !strings.HasPrefix(source, samplesChannel) {
		return true
	}
	return !strings.Contains(w, "updates of "+counterChannel) && !strings.Contains(w, " disagree by ")
}

// sweepSpan is the span of the measurements: from the first start to the last end.
func sweepSpan(ms []*loop.Measurement) (from, to time.Duration, ok bool) {
	var ts []time.Duration
	for _, me := range ms {
		if me != nil {
			ts = append(ts, me.Start, me.End)
		}
	}
	if len(ts) == 0 {
		return 0, 0, false
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[0], ts[len(ts)-1], true
}
