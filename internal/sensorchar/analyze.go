package sensorchar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Channel is what was learned about one power channel.
type Channel struct {
	Name          string  `json:"name"`
	Model         string  `json:"model"` // the spec sensormodel.Parse reads
	Kind          string  `json:"kind"`  // boxcar, rc or none
	CallLatencyUS float64 `json:"call_latency_us"`
	Readings      int     `json:"readings"`
	PeriodS       float64 `json:"update_period_s"`
	PeriodJitterS float64 `json:"update_period_jitter_s"` // standard deviation of the intervals (on a grid: RMS distance of the stamps from it)
	DelayS        float64 `json:"delay_s"`                // the fitted model's delay
	FirstMoveS    float64 `json:"first_move_s"`           // load start to the first reading that moved
	WindowS       float64 `json:"window_s,omitempty"`
	TauS          float64 `json:"tau_s,omitempty"`
	Coverage      float64 `json:"coverage"` // share of the time seen: W/T (boxcar), 2 tau/T (rc), at most 1
	// StepW is how far the load's step moved the channel (the boxcar fit's levels), NoiseW
	// the standard deviation of its idle readings.
	StepW  float64 `json:"step_w"`
	NoiseW float64 `json:"noise_w"`
	// RMS residuals of the best boxcar and the best RC fit, as a share of the step; and of
	// the best boxcar of a lagged signal, tried where neither fits within 2 %.
	ResidualBoxcar float64  `json:"residual_boxcar"`
	ResidualRC     float64  `json:"residual_rc"`
	ResidualBoxRC  *float64 `json:"residual_boxcar_rc,omitempty"`
	// Transients are readings dropped because the next update came less than T/8 later:
	// a value published mid-update (the H200's power.instant shows one 3 ms before about
	// a third of its updates).
	Transients int `json:"transients,omitempty"`
	// Grid: a buffered channel's sample times lie on a regular grid; those stamped off it
	// are put back on it before the fit (correct.Lattice).
	Grid           *Grid   `json:"grid,omitempty"`
	IdleW          float64 `json:"idle_w"`
	LoadW          float64 `json:"load_w"`
	SteadyW        float64 `json:"steady_w"`
	RatioToCounter float64 `json:"ratio_to_counter,omitempty"`
	RatioToRef     float64 `json:"ratio_to_reference,omitempty"`
	// Waves: the spread of the readings under each square wave (5th to 95th percentile,
	// as a share of the step) beside the fitted model's.
	Waves    []Wave           `json:"square_waves"`
	Warnings []status.Warning `json:"warnings"`

	fit    fitResult
	noiseN int       // second differences behind NoiseW
	ts     []float64 // readings used by the fit, s
	ys     []float64
	model  sensormodel.Model
}

// Grid is the sample grid of a buffered channel.
type Grid struct {
	PeriodS float64 `json:"period_s"`
	R       float64 `json:"r"`
	OnGrid  float64 `json:"on_grid"` // share of stamps within ±max(1 ms, T/20) of it
	EarlyS  float64 `json:"early_s"` // a stamp up to this before a grid instant, or up to T − this after it, is moved onto it
}

// Wave is one square wave's readings on one channel.
type Wave struct {
	LoadPeriodS float64 `json:"load_period_s"`
	Readings    int     `json:"readings"`
	Spread      float64 `json:"spread"`
	ModelSpread float64 `json:"model_spread"`
}

// Counter is the energy counter.
type Counter struct {
	Name          string  `json:"name"`
	CallLatencyUS float64 `json:"call_latency_us"`
	PeriodS       float64 `json:"update_period_s"`
	PeriodJitterS float64 `json:"update_period_jitter_s"`
	SteadyW       float64 `json:"steady_w"`
}

// Energies are one region's energy, corrected and naive (and true, on the sim).
type Energies struct {
	CorrectedJ float64  `json:"corrected_j"`
	NaiveJ     float64  `json:"naive_j"`
	TrueJ      *float64 `json:"true_j,omitempty"`
}

// Anomalies are the tests of seed 003 on one channel.
type Anomalies struct {
	Channel string `json:"channel"`
	Model   string `json:"model"`
	// Reference: the reference channel (the best board channel present).
	Reference bool `json:"reference"`
	// Doubling: run B is twice as long as run A: B/A should be 2.00 ± 0.04.
	SingleE               Energies         `json:"single"`
	DoubleE               Energies         `json:"double"`
	DoublingCorrected     float64          `json:"doubling_corrected"`
	DoublingNaive         float64          `json:"doubling_naive"`
	DoublingPass          bool             `json:"doubling_pass"`
	First                 Energies         `json:"back_to_back_first"`
	Second                Energies         `json:"back_to_back_second"`
	BackToBackCorrected   float64          `json:"back_to_back_corrected"` // second/first − 1
	BackToBackNaive       float64          `json:"back_to_back_naive"`
	BackToBackPass        bool             `json:"back_to_back_pass"`
	IdleW                 float64          `json:"idle_w"`
	TailCorrectedJ        float64          `json:"tail_corrected_j"`
	TailCorrectedS        float64          `json:"tail_corrected_s"`
	TailNaiveJ            float64          `json:"tail_naive_j"`
	TailNaiveS            float64          `json:"tail_naive_s"`
	TailTrueJ             *float64         `json:"tail_true_j,omitempty"`
	KernelCorrectedJ      float64          `json:"kernel_corrected_j"`
	TailShareOfKernel     float64          `json:"tail_share_of_kernel"`
	Warnings              []status.Warning `json:"warnings"`
	tailFrom, tailCorrEnd float64
}

// The codes of the sensor characterisation's warnings.
const (
	CodeNoChannel       status.Code = "no_channel"
	CodeFewReadings     status.Code = "few_readings"
	CodeSmallStep       status.Code = "small_step"
	CodePartialCoverage status.Code = "sensor_coverage"
	CodeNoFit           status.Code = "no_model_fit"
	CodeNoResponse      status.Code = "no_response"
	CodeTailCut         status.Code = "tail_cut"
	CodeDoubling        status.Code = "doubling"
	CodeBackToBack      status.Code = "back_to_back"
)

// Result is a characterisation of the sensors (sensor.json).
type Result struct {
	Device    string     `json:"device"`
	Simulated bool       `json:"simulated"` // measured on the sim device
	GPU       int        `json:"gpu"`
	GPUName   string     `json:"gpu_name"`
	Quick     bool       `json:"quick"`
	Poll      string     `json:"poll"`
	DurationS float64    `json:"duration_s"`
	Periods   []float64  `json:"wave_periods_s"`
	Channels  []*Channel `json:"channels"`
	Counter   *Counter   `json:"energy_counter,omitempty"`
	Reference string     `json:"reference_channel"`
	// Anomalies are seed 003's tests on every characterised power channel, the reference
	// channel first.
	Anomalies AnomalyList      `json:"anomalies"`
	Warnings  []status.Warning `json:"warnings"`
	// Incomplete says a file of the output could not be written (Reason names it): the
	// figures here are whole, what is missing is elsewhere.
	Incomplete bool   `json:"incomplete"`
	Reason     string `json:"incomplete_reason,omitempty"`

	rec *recording
}

// Trace is the recording the report was made from.
func (r *Result) Trace() *trace.Trace { return r.rec.tr }

// Profile is the sensor.json of the report: every characterised channel's model, with
// its evidence.
func (r *Result) Profile() correct.Profile {
	p := correct.Profile{Device: r.GPUName, Channels: map[string]correct.ChannelModel{}}
	for _, c := range r.Channels {
		e := correct.ChannelModel{Model: c.model}
		e.Evidence, _ = json.Marshal(c)
		p.Channels[c.Name] = e
	}
	p.Meta, _ = json.Marshal(map[string]any{"tool": "gpuwatt sensor", "device": r.Device, "quick": r.Quick, "poll": r.Poll})
	return p
}

// Measure characterises the sensors of dev, which must run kernels (exec), on clk.
func Measure(ctx context.Context, clk clock.Clock, dev gpu.Device, exec gpu.Executor, opt Options) (*Result, error) {
	rec, err := record(ctx, clk, dev, exec, opt)
	if err != nil {
		if rec != nil && rec.tr != nil {
			return nil, &Cut{Trace: rec.tr, Err: err}
		}
		return nil, err
	}
	info := dev.Info()
	rep := &Result{GPU: info.Index, GPUName: info.Name, Quick: opt.Quick, Poll: "max", rec: rec, Warnings: []status.Warning{}}
	if opt.Poll != nil {
		rep.Poll = opt.Poll.String()
	}
	rep.DurationS = rec.tr.Meta.Duration
	for _, T := range rec.periods {
		rep.Periods = append(rep.Periods, T.Seconds())
	}
	truth, _ := dev.(gpu.Truth)
	analyze(rep, info.Index, truth)
	return rep, nil
}

// Cut is Run's error when its context ended the recording part-way (a signal): the
// recording so far, which is kept but cannot be analysed (the analysis needs every phase).
type Cut struct {
	Trace *trace.Trace
	Err   error
}

func (c *Cut) Error() string { return "the recording was cut short: " + c.Err.Error() }
func (c *Cut) Unwrap() error { return c.Err }

func secs(s float64) time.Duration { return time.Duration(math.Round(s*1e6)) * time.Microsecond }

func analyze(rep *Result, g int, truth gpu.Truth) {
	rec := rep.rec
	tr := rec.tr
	sch := newSchedule(slices.Clone(rec.on))
	steadyFrom := rec.step.start + (rec.step.end-rec.step.start)*6/10
	for _, ch := range tr.Meta.Channels {
		if ch.GPU != g {
			continue
		}
		samples := correct.Channel(tr, g, ch.Name)
		if ch.Cumulative {
			c := &Counter{Name: ch.Name}
			if ch.Stats != nil {
				c.CallLatencyUS = ch.Stats.CallLatency * 1e6
			}
			c.PeriodS, c.PeriodJitterS = period(samples, rec.idle.start, rec.step.end)
			if e0, ok0 := counterAt(samples, steadyFrom); ok0 {
				if e1, ok1 := counterAt(samples, rec.step.end); ok1 {
					c.SteadyW = (e1 - e0) / (rec.step.end - steadyFrom).Seconds()
				}
			}
			rep.Counter = c
			continue
		}
		c := characterise(ch, samples, rec, sch)
		c.SteadyW = meanIn(samples, steadyFrom, rec.step.end)
		rep.Channels = append(rep.Channels, c)
	}
	if len(rep.Channels) == 0 {
		rep.Warnings = append(rep.Warnings, status.Warnf(CodeNoChannel, "no power channel could be read"))
		return
	}
	// The reference: the best board channel present.
	for _, n := range correct.BoardChannels {
		for _, c := range rep.Channels {
			if c.Name == n && rep.Reference == "" {
				rep.Reference = n
			}
		}
	}
	if rep.Reference == "" {
		rep.Reference = rep.Channels[0].Name
	}
	var ref *Channel
	for _, c := range rep.Channels {
		if c.Name == rep.Reference {
			ref = c
		}
	}
	for _, c := range rep.Channels {
		if rep.Counter != nil && rep.Counter.SteadyW > 0 {
			c.RatioToCounter = c.SteadyW / rep.Counter.SteadyW
		}
		if ref.SteadyW > 0 {
			c.RatioToRef = c.SteadyW / ref.SteadyW
		}
	}
	rep.Anomalies = AnomalyList{anomalies(tr, g, ref, rec, truth)}
	rep.Anomalies[0].Reference = true
	for _, c := range rep.Channels {
		if c != ref {
			rep.Anomalies = append(rep.Anomalies, anomalies(tr, g, c, rec, truth))
		}
	}
}

// AnomalyList is the anomaly tests of several channels. It reads the single object that
// results.json held before the tests ran on every channel (one channel, the reference).
type AnomalyList []*Anomalies

// UnmarshalJSON reads a list, or the older single object.
func (l *AnomalyList) UnmarshalJSON(data []byte) error {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var a Anomalies
		if err := json.Unmarshal(t, &a); err != nil {
			return err
		}
		a.Reference = true
		*l = AnomalyList{&a}
		return nil
	}
	var as []*Anomalies
	if err := json.Unmarshal(data, &as); err != nil {
		return err
	}
	*l = as
	return nil
}

// AnomalyWarnings are the anomaly tests' warnings, each about its channel.
func (r *Result) AnomalyWarnings() []status.Warning {
	var ws []status.Warning
	for _, a := range r.Anomalies {
		ws = append(ws, status.WithSubject(a.Channel, a.Warnings)...)
	}
	return ws
}

// period returns the median interval between new readings in [from, to] and the standard
// deviation of the intervals.
func period(s []trace.Sample, from, to time.Duration) (float64, float64) {
	var iv []float64
	for i := 1; i < len(s); i++ {
		if s[i-1].T >= from && s[i].T <= to {
			iv = append(iv, (s[i].T - s[i-1].T).Seconds())
		}
	}
	if len(iv) < 2 {
		return 0, 0
	}
	med := quantile(iv, 0.5)
	// Intervals of about two periods or more are missed updates (equal values): left out.
	var keep []float64
	for _, x := range iv {
		if x < 1.6*med {
			keep = append(keep, x)
		}
	}
	_, sd := meanSD(keep)
	return med, sd
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	x := q * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

func meanSD(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	if len(v) < 2 {
		return m, 0
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

func meanIn(s []trace.Sample, from, to time.Duration) float64 {
	sum, n := 0.0, 0
	for _, x := range s {
		if x.T >= from && x.T <= to {
			sum += x.Value
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// counterAt interpolates a cumulative counter at t.
func counterAt(s []trace.Sample, t time.Duration) (float64, bool) {
	i, _ := slices.BinarySearchFunc(s, t, func(x trace.Sample, t time.Duration) int {
		return int(x.T - t)
	})
	if i == 0 || i >= len(s) {
		return 0, false
	}
	a, b := s[i-1], s[i]
	f := float64(t-a.T) / float64(b.T-a.T)
	return a.Value + f*(b.Value-a.Value), true
}

// characterise fits the boxcar and the RC model to one channel's readings from half a
// second before the step to the end of the square waves, and picks the better.
func characterise(ch trace.Channel, samples []trace.Sample, rec *recording, sch *schedule) *Channel {
	c := &Channel{Name: ch.Name, Readings: len(samples), Warnings: []status.Warning{}}
	if ch.Stats != nil {
		c.CallLatencyUS = ch.Stats.CallLatency * 1e6
	}
	c.PeriodS, c.PeriodJitterS = period(samples, rec.idle.start, rec.step.end)
	if ch.Buffered && c.PeriodS > 0 {
		samples = c.snap(samples, secs(c.PeriodS))
	} else if c.PeriodS > 0 {
		samples = c.dropTransients(samples)
		c.PeriodS, c.PeriodJitterS = period(samples, rec.idle.start, rec.step.end)
	}
	from := rec.step.start - 500*time.Millisecond
	for _, x := range samples {
		if x.T >= from && x.T <= rec.charEnd {
			c.ts = append(c.ts, x.T.Seconds())
			c.ys = append(c.ys, x.Value)
		}
	}
	c.IdleW = meanIn(samples, rec.idle.start+rec.idle.Dur()/4, rec.idle.end)
	if len(c.ts) < 8 || c.PeriodS <= 0 {
		c.Kind, c.Model = "none", "none"
		c.Warnings = append(c.Warnings, status.Warnf(CodeFewReadings, "only %d readings: not characterised", len(c.ts)))
		return c
	}
	T := c.PeriodS
	dMax := math.Max(T, 0.02)
	box := sch.fit(false, c.ts, c.ys, 1e-4, 3, dMax)
	rc := sch.fit(true, c.ts, c.ys, 1e-3, 5, dMax)
	step := math.Abs(box.levels[stateOn] - box.levels[statePre])
	c.StepW = step
	c.NoiseW, c.noiseN = noiseOf(samples, [][2]time.Duration{{rec.idle.start + rec.idle.Dur()/4, rec.idle.end},
		{rec.step.start + rec.step.Dur()*6/10, rec.step.end}, {rec.tailEnd - (rec.tailEnd-rec.runs["D"].end)/2, rec.tailEnd}})
	if step <= 0 {
		step = 1
	}
	weak := step < MinStepSNR*c.NoiseW || step < 0.5
	if weak {
		c.Warnings = append(c.Warnings, status.Warnf(CodeSmallStep, "the load moves it by only %.2f W (noise %.2f W at idle): too little to tell its model; the fit is shown, not to be trusted", c.StepW, c.NoiseW))
	}
	c.ResidualBoxcar, c.ResidualRC = box.rms()/step, rc.rms()/step
	best := box
	if rc.rss < box.rss {
		best = rc
	}
	resid := math.Min(c.ResidualBoxcar, c.ResidualRC)
	if resid > 0.02 {
		// Neither pure shape fits within 2 %: a boxcar of a lagged signal (both at once).
		br := sch.fitBoxRC(c.ts, c.ys, 1e-3, 3, 1e-3, 0.3, dMax)
		r := br.rms() / step
		c.ResidualBoxRC = &r
		if br.rss < 0.7*best.rss {
			best, resid = br, r
		}
	}
	c.fit = best
	c.LoadW = best.levels[stateOn]
	c.DelayS = best.delay
	if best.rc {
		c.Kind, c.TauS = "rc", best.p
		c.model = sensormodel.Model{Tau: secs(best.p), Period: secs(T), Delay: secs(best.delay), Noise: units.Power(c.NoiseW)}
	} else {
		c.Kind, c.WindowS, c.TauS = "boxcar", best.p, best.tau
		c.model = sensormodel.Model{Window: max(secs(best.p), time.Microsecond), Tau: secs(best.tau), Period: secs(T), Delay: secs(best.delay), Noise: units.Power(c.NoiseW)}
	}
	// The 95 % intervals of the fitted parameters travel with the model.
	res := TimeResolution.Seconds() + FitResolution*(best.p+best.tau)
	if iv, ok := sch.intervals(best, c.ts, c.ys, T, res); ok != [3]bool{} {
		key := "window_s"
		if best.rc {
			key = "tau_s"
		}
		if ok[0] {
			_ = c.model.CI.Set(key, iv[0][0], iv[0][1])
		}
		if ok[1] {
			_ = c.model.CI.Set("tau_s", iv[1][0], iv[1][1])
		}
		if ok[2] {
			_ = c.model.CI.Set("delay_s", iv[2][0], iv[2][1])
		}
	}
	if lo, hi, ok := c.periodCI(samples, rec); ok {
		_ = c.model.CI.Set("period_s", lo, hi)
	}
	if lo, hi, ok := noiseCI(c.NoiseW, c.noiseN); ok {
		_ = c.model.CI.Set("noise_w", lo, hi)
	}
	c.Model = c.model.String()
	c.Coverage = c.model.Coverage(secs(T))
	if c.Coverage < PartialCoverage {
		c.Warnings = append(c.Warnings, status.Warnf(CodePartialCoverage, "sees about %.0f %% of the time (%s): a load that varies faster than its %.0f ms update period is sampled, not integrated; its energy over short or varying regions is uncertain",
			100*c.Coverage, seenAs(c), 1e3*T))
	}
	if resid > 0.05 && !weak {
		c.Warnings = append(c.Warnings, status.Warnf(CodeNoFit, "no model fits well: RMS residual %.1f %% of the step", 100*resid))
	}
	// First reading that moved after the load started.
	pre := []float64{}
	for i, t := range c.ts {
		if t < rec.step.start.Seconds() {
			pre = append(pre, c.ys[i])
		}
	}
	_, sd := meanSD(pre)
	lvl := quantile(pre, 0.5)
	thr := math.Max(5*sd, 0.02*step)
	c.FirstMoveS = math.NaN()
	for i, t := range c.ts {
		if t >= rec.step.start.Seconds() && math.Abs(c.ys[i]-lvl) > thr {
			c.FirstMoveS = t - rec.step.start.Seconds()
			break
		}
	}
	if math.IsNaN(c.FirstMoveS) {
		c.FirstMoveS = 0
		c.Warnings = append(c.Warnings, status.Warnf(CodeNoResponse, "no reading moved after the load started"))
	}
	// The square waves' spread.
	pred := sch.predict(best, c.ts)
	for i, w := range rec.waves {
		var ys, ps []float64
		for j, t := range c.ts {
			if t >= w.start.Seconds() && t <= w.end.Seconds() {
				ys = append(ys, (c.ys[j]-best.levels[stateOff])/step)
				ps = append(ps, (pred[j]-best.levels[stateOff])/step)
			}
		}
		if len(ys) == 0 {
			continue
		}
		c.Waves = append(c.Waves, Wave{LoadPeriodS: rec.waveLoad[i], Readings: len(ys),
			Spread: quantile(ys, 0.95) - quantile(ys, 0.05), ModelSpread: quantile(ps, 0.95) - quantile(ps, 0.05)})
	}
	return c
}

// snap puts a buffered channel's sample times back on their grid, where they lie on one.
func (c *Channel) snap(samples []trace.Sample, guess time.Duration) []trace.Sample {
	ts := make([]time.Duration, len(samples))
	for i, x := range samples {
		ts[i] = x.T
	}
	g, ok := correct.FitLattice(ts, guess)
	if !ok {
		return samples
	}
	c.Grid = &Grid{PeriodS: g.Period.Seconds(), R: g.R, OnGrid: g.OnGrid, EarlyS: g.Early.Seconds()}
	c.PeriodS = g.Period.Seconds()
	out := make([]trace.Sample, len(samples))
	for i, x := range samples {
		x.T = g.Snap(x.T)
		out[i] = x
	}
	// Two stamps moved onto one instant: keep the later reading.
	k := 0
	for i := range out {
		if k > 0 && out[i].T == out[k-1].T {
			out[k-1] = out[i]
			continue
		}
		out[k] = out[i]
		k++
	}
	out = out[:k]
	// The jitter: the RMS distance of the stamps from their grid instants.
	var sq float64
	for i := range samples {
		d := (samples[i].T - g.Snap(samples[i].T)).Seconds()
		sq += d * d
	}
	c.PeriodJitterS = math.Sqrt(sq / float64(len(samples)))
	return out
}

// dropTransients drops every reading that the next update follows within T/8 (a value
// published mid-update), and counts them.
func (c *Channel) dropTransients(samples []trace.Sample) []trace.Sample {
	gap := secs(c.PeriodS / 8)
	out := make([]trace.Sample, 0, len(samples))
	for i, x := range samples {
		if i+1 < len(samples) && samples[i+1].T-x.T < gap {
			c.Transients++
			continue
		}
		out = append(out, x)
	}
	return out
}

// Dur is the segment's length.
func (s segment) Dur() time.Duration { return s.end - s.start }

// anomalies runs seed 003's tests on one channel with its identified model.
func anomalies(tr *trace.Trace, g int, ref *Channel, rec *recording, truth gpu.Truth) *Anomalies {
	a := &Anomalies{Channel: ref.Name, Model: ref.Model, Warnings: []status.Warning{}}
	samples := correct.Channel(tr, g, ref.Name)
	if len(samples) == 0 {
		a.Warnings = append(a.Warnings, status.Warnf(CodeFewReadings, "no readings"))
		return a
	}
	idle := correct.Prepare(samples, ref.model, correct.Options{}).Energy(rec.idle.start+rec.idle.Dur()/4, rec.idle.end).MeanPower
	a.IdleW = float64(idle)
	ser := correct.Prepare(samples, ref.model, correct.Options{Idle: idle, IdleSet: true})
	board := !strings.Contains(ref.Name, "memory") // the sim's truth is the board's power
	energy := func(s segment) Energies {
		r := ser.Energy(s.start, s.end)
		e := Energies{CorrectedJ: r.Energy.Joules(), NaiveJ: r.EnergyRaw.Joules()}
		if board && truth != nil {
			t := truth.TrueEnergy(s.start, s.end).Joules()
			e.TrueJ = &t
		}
		return e
	}
	A, B, C, D := rec.runs["A"], rec.runs["B"], rec.runs["C"], rec.runs["D"]
	a.SingleE, a.DoubleE = energy(A), energy(B)
	a.DoublingCorrected = a.DoubleE.CorrectedJ / a.SingleE.CorrectedJ
	a.DoublingNaive = a.DoubleE.NaiveJ / a.SingleE.NaiveJ
	a.DoublingPass = math.Abs(a.DoublingCorrected-2) <= 0.04
	a.First, a.Second = energy(C), energy(D)
	a.BackToBackCorrected = a.Second.CorrectedJ/a.First.CorrectedJ - 1
	a.BackToBackNaive = a.Second.NaiveJ/a.First.NaiveJ - 1
	a.BackToBackPass = math.Abs(a.BackToBackCorrected) <= 0.02
	a.KernelCorrectedJ = a.Second.CorrectedJ

	// Tail: energy above idle after the last kernel, until the power is back at idle.
	step := math.Max(math.Abs(ref.LoadW-ref.IdleW), 1)
	tol := math.Max(0.01*step, 1)
	bin := max(secs(ref.PeriodS), 50*time.Millisecond)
	back := func(mean func(a, b time.Duration) float64) time.Duration {
		last := D.end
		for t := D.end; t+bin <= rec.tailEnd; t += bin {
			if math.Abs(mean(t, t+bin)-float64(idle)) > tol {
				last = t + bin
			}
		}
		return last
	}
	corrMean := func(x, y time.Duration) float64 { return float64(ser.Energy(x, y).MeanPower) }
	naiveMean := func(x, y time.Duration) float64 { return meanIn(samples, x, y) }
	ce := back(corrMean)
	ne := back(naiveMean)
	if ce+bin > rec.tailEnd || ne+bin > rec.tailEnd {
		a.Warnings = append(a.Warnings, status.Warnf(CodeTailCut, "the power was not back at idle (± %.1f W) %s after the kernel: the tail is cut there", tol, (rec.tailEnd-D.end).Round(time.Millisecond)))
	}
	if ce > D.end {
		a.TailCorrectedJ = ser.Energy(D.end, ce).Energy.Joules() - float64(idle)*(ce-D.end).Seconds()
	}
	if ne > D.end {
		a.TailNaiveJ = ser.Energy(D.end, ne).EnergyRaw.Joules() - float64(idle)*(ne-D.end).Seconds()
	}
	a.TailCorrectedS, a.TailNaiveS = (ce - D.end).Seconds(), (ne - D.end).Seconds()
	if board && truth != nil {
		t := truth.TrueEnergy(D.end, rec.tailEnd).Joules() - truth.TrueEnergy(rec.idle.start+rec.idle.Dur()/4, rec.idle.end).Joules()/(rec.idle.Dur()*3/4).Seconds()*(rec.tailEnd-D.end).Seconds()
		a.TailTrueJ = &t
	}
	if a.KernelCorrectedJ != 0 {
		a.TailShareOfKernel = a.TailCorrectedJ / a.KernelCorrectedJ
	}
	a.tailFrom, a.tailCorrEnd = D.end.Seconds(), ce.Seconds()
	if !a.DoublingPass {
		a.Warnings = append(a.Warnings, status.Warnf(CodeDoubling, "doubling: %.3f× the energy for twice the run (want 2.00 ± 0.04)", a.DoublingCorrected))
	}
	if !a.BackToBackPass {
		a.Warnings = append(a.Warnings, status.Warnf(CodeBackToBack, "back-to-back: the second run took %+.1f %% (want ± 2 %%)", 100*a.BackToBackCorrected))
	}
	return a
}

// ErrNoExecutor is returned when the device cannot run gpuwatt's kernels.
var ErrNoExecutor = errors.New("the GPU cannot run gpuwatt's kernels")

// MinStepSNR is how many times its idle noise the load's step must move a channel for its
// model to be told.
const MinStepSNR = 5

// TimeResolution widens every fitted time's interval on either side: readings are stamped
// to within the poller's resolution (on the virtual clock it polls every 0.1 ms), and a fit
// cannot place a time finer than that.
const TimeResolution = 200 * time.Microsecond

// FitResolution is how finely, as a share of the response's length (W + tau), the fit can
// split it between the window (or lag) and the delay, which trade off along a valley of
// the residuals: on the twin's 1 s averages it lands up to 0.1 % off (1.0011 s with 19.97
// ms for 1 s and 20.5 ms, 0.9993 s with 0.3 ms for 1 s and 0), beyond what the residuals'
// statistics say. Every interval of a time is widened by it on either side.
const FitResolution = 1.5e-3

// noiseOf is the standard deviation of the readings' noise over the spans where the power
// is steady (the idle before the load, the end of the step, the end of the tail): the RMS
// of the second differences of consecutive readings, over √6, leaving out those beyond 5
// times a robust first estimate (a change of power, a ramp's kink). It returns the
// estimate and how many second differences it rests on.
func noiseOf(s []trace.Sample, spans [][2]time.Duration) (float64, int) {
	var d2 []float64
	for _, sp := range spans {
		var v []float64
		for _, x := range s {
			if x.T >= sp[0] && x.T <= sp[1] {
				v = append(v, x.Value)
			}
		}
		for i := 1; i+1 < len(v); i++ {
			d2 = append(d2, v[i+1]-2*v[i]+v[i-1])
		}
	}
	if len(d2) == 0 {
		return 0, 0
	}
	abs := make([]float64, len(d2))
	for i, x := range d2 {
		abs[i] = math.Abs(x)
	}
	s0 := 1.4826 * quantile(abs, 0.5)
	var ss float64
	n := 0
	for _, x := range d2 {
		if s0 > 0 && math.Abs(x) > 5*s0 {
			continue
		}
		ss += x * x
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(n) / 6), n
}

// noiseCI is the 95 % interval of a noise figure from n second differences: neighbouring
// ones share a reading, so they count as n/2 independent squares (χ² with n/2 degrees of
// freedom, in its normal approximation).
func noiseCI(sigma float64, n int) (lo, hi float64, ok bool) {
	if n < 4 || !(sigma > 0) {
		return 0, 0, false
	}
	h := 1.96 / math.Sqrt(float64(n))
	return sigma / (1 + h), sigma * (1 + h), true
}

// periodCI is the 95 % interval of the update period: the median interval's standard
// error (1.25 σ/√n of the intervals that are not missed updates) for a polled channel; for
// a buffered one on its grid, that of the grid's period over the samples' span. At least
// ±1 µs, the trace's resolution.
func (c *Channel) periodCI(s []trace.Sample, rec *recording) (lo, hi float64, ok bool) {
	T := c.PeriodS
	if T <= 0 {
		return 0, 0, false
	}
	var iv []float64
	for i := 1; i < len(s); i++ {
		if s[i-1].T >= rec.idle.start && s[i].T <= rec.step.end {
			if d := (s[i].T - s[i-1].T).Seconds(); d < 1.6*T {
				iv = append(iv, d)
			}
		}
	}
	if len(iv) < 3 {
		return 0, 0, false
	}
	_, sd := meanSD(iv)
	half := 1.96 * 1.2533 * sd / math.Sqrt(float64(len(iv)))
	if c.Grid != nil {
		n := float64(len(s))
		half = 1.96 * c.PeriodJitterS * math.Sqrt(12/(n*n*n))
	}
	half = max(half, 1e-6)
	return T - half, T + half, true
}

// PartialCoverage is the coverage below which a channel is flagged as seeing part of the time.
const PartialCoverage = 0.9

// seenAs says what a channel's readings see: "a 36 ms window every 101 ms".
func seenAs(c *Channel) string {
	if c.Kind == "rc" {
		return fmt.Sprintf("a lag of tau %.3g ms read every %.4g ms", 1e3*c.TauS, 1e3*c.PeriodS)
	}
	return fmt.Sprintf("a %.3g ms window every %.4g ms", 1e3*c.WindowS, 1e3*c.PeriodS)
}
