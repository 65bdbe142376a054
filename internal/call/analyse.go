package call

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Format is the version of call.json.
const Format = "gpuwatt.call/1"

// AnalyseOptions are those of Analyse.
type AnalyseOptions struct {
	GPU   int
	Batch int // calls per span (default 1)
	// Channel and Sensor: the estimator's (energy.Options).
	Channel string
	Sensor  *correct.Spec
	// Target is the relative half-width asked for (0: none), for CallsNeeded.
	Target float64
	// Settle is how long after a call a reading may still see it (0: from the model), Pre
	// how long before a call's start the inverted power may already hold it (0: 1.25
	// update periods): each call's window is [start − Pre, end + Settle], the gaps between
	// the windows are the baseline. Tail is the idle recorded after the last call (its
	// gap).
	Settle, Pre, Tail time.Duration
	// Next is the start of a call after the last span that is not analysed (0: none): the
	// gap after the last span ends before its window.
	Next time.Duration
	// IdleBefore and IdleAfter are stretches of active idle recorded before the first call
	// and after the last (Run's lead and tail, the tail from IdleAfterCall after the last
	// call on): where given, the active idle is a line through their levels (the chip
	// warms as it goes) and each call's window runs to the next's, so the dip below idle
	// after a call (an H200's: 3-6 W for ~150 ms) is the call's; else the gaps between the
	// windows, as in a recording without them.
	IdleBefore, IdleAfter [2]time.Duration
	// IdleGaps are the stretches of active idle between the calls (Run's idle gaps at its
	// checks, from IdleAfterCall after the call before): the idle line goes through their
	// levels too, and on the counter's scale they split the run into blocks whose spread
	// gives the run-to-run part of the interval (RunToRun).
	IdleGaps [][2]time.Duration
	// RunToRunFloor, where > 0, is the least relative 95 % half-width of the run-to-run
	// part (a floor documented from repeated runs on a board): the part is the larger of it
	// and the blocks' measured spread.
	RunToRunFloor float64
	// IdleStale is how late a counter reading in those stretches may be against the update
	// it shows (0: staleBound, as Run reads every channel every idlePoke there; a
	// recording without those reads: the counter's resolution).
	IdleStale time.Duration
	// OwnScale keeps the figures on the channel's own scale (no calibration to the
	// energy counter).
	OwnScale bool
}

// IdleAfterCall is how long after the last call the idle after it is taken from: an H200
// draws 3-6 W below active idle for ~150 ms after each call (back at idle by ~180 ms,
// results/nvidia-h200/2026-11-28-call-2), and the sensor's lag and window come on top.
const IdleAfterCall = 400 * time.Millisecond

// Figure is a measured quantity with its 95 % interval.
type Figure struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// AbsLow and AbsHigh add the board's gain error (energies only; 0 otherwise).
	AbsLow  float64 `json:"absolute_low,omitempty"`
	AbsHigh float64 `json:"absolute_high,omitempty"`
}

// HalfWidth is half the interval's width.
func (f Figure) HalfWidth() float64 { return (f.High - f.Low) / 2 }

// Rel is the half-width relative to the value (Inf where the value is 0).
func (f Figure) Rel() float64 { return f.HalfWidth() / math.Abs(f.Value) }

// Part is one part of an interval.
type Part struct {
	Name       string  `json:"name"`
	HalfWidthJ float64 `json:"half_width_j"`
	Note       string  `json:"note"`
}

// CallFigure is one call's figure from the estimator.
type CallFigure struct {
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	EnergyJ float64 `json:"energy_j"` // the span's energy, on the counter's scale where calibrated
	ActiveJ float64 `json:"active_j"` // above active idle
	Method  string  `json:"method"`   // the estimator's, or "left_out" (no figure: a reading missing in its window)
}

// leftOut is the Method of a call left out of the figures.
const leftOut = "left_out"

// Measured says whether the call has a figure.
func (c CallFigure) Measured() bool { return c.Method != leftOut }

// Result is the energy of one call.
type Result struct {
	Format    string `json:"format"`
	Device    string `json:"device"`
	GPUName   string `json:"gpu_name"`
	GPUUUID   string `json:"gpu_uuid"`
	Simulated bool   `json:"simulated"`
	// Calls is the number of measured repetitions; Batch the calls each ran back to back.
	Calls int `json:"calls"`
	Batch int `json:"batch"`
	// Channel is the channel the estimator read the calls from, Model its sensor model
	// and ModelSource where that came from (the model sets the windows: the readings
	// inside them are integrated as they are, see Analyse); Scale is the scale of the
	// figures: the channel's own (the board's gain error is in the absolute interval).
	Channel     string         `json:"channel"`
	Model       string         `json:"model"`
	ModelSource string         `json:"model_source"`
	Scale       string         `json:"scale"`
	Methods     map[string]int `json:"methods"`
	// Strata is the number of groups by phase the interval was computed over (1: none).
	Strata int `json:"strata"`
	// WindowPreS and WindowPostS: each call's window is [start − pre, end + post].
	WindowPreS  float64 `json:"window_pre_s"`
	WindowPostS float64 `json:"window_post_s"`
	// Plan says how the calls were placed; WaitS the range of the waits between them.
	Plan  string     `json:"plan,omitempty"`
	WaitS [2]float64 `json:"wait_s"`
	// TimeS is the time per call (the spans' mean over Batch).
	TimeS Figure `json:"time_s"`
	// EnergyJ is the energy per call over its span (active idle included), ActiveJ the
	// energy per call above active idle, ActiveIdleW the active-idle power measured
	// between the calls. ActiveParts and EnergyParts are the intervals' parts.
	EnergyJ     Figure `json:"energy_j"`
	ActiveJ     Figure `json:"active_j"`
	ActiveIdleW Figure `json:"active_idle_w"`
	EnergyParts []Part `json:"energy_parts"`
	ActiveParts []Part `json:"active_parts"`
	// CounterScale is the energy counter's scale against the channel's for the calls'
	// energy above idle over the whole run, which puts the figures on the counter's scale
	// (Scale says which; nil: on the channel's own). Idle says where the active idle was
	// taken from.
	CounterScale *CounterScale `json:"counter_scale,omitempty"`
	// CounterDeclined is the counter's figure where it was computed but not taken (wider
	// than ±2 %, or too far from the channel's): for the record.
	CounterDeclined *CounterScale `json:"counter_scale_declined,omitempty"`
	Idle            string        `json:"idle"`
	// IdleBeforeS and IdleAfterS are the stretches of active idle recorded before and after
	// the calls (s since the recording's origin; [0, 0]: none), so that the result can be
	// computed again from the trace (AnalyseOptions.IdleBefore, IdleAfter).
	IdleBeforeS [2]float64 `json:"idle_before_s"`
	IdleAfterS  [2]float64 `json:"idle_after_s"`
	// IdleGapsS are the idle gaps between the calls (AnalyseOptions.IdleGaps).
	IdleGapsS [][2]float64 `json:"idle_gaps_s,omitempty"`
	// RunToRun is the run-to-run part of the interval on the counter's scale: the spread of
	// the calls' energy between the blocks of the run (nil: not on the counter's scale).
	RunToRun *RunToRun `json:"run_to_run,omitempty"`
	// RunToRunFloor is AnalyseOptions.RunToRunFloor; RunToRunFloorSource where it came from
	// where it is the board's documented one (RunToRunFloorOf).
	RunToRunFloor       float64 `json:"run_to_run_floor,omitempty"`
	RunToRunFloorSource string  `json:"run_to_run_floor_source,omitempty"`
	// IdleStaleS is AnalyseOptions.IdleStale (0: Run's).
	IdleStaleS float64 `json:"idle_stale_s,omitempty"`
	// Target is the relative half-width asked for; RelHalfWidth the one reached (of
	// ActiveJ); Reached says whether it is within the target; CallsNeeded is how many
	// calls the spread says the target needs (0: it cannot be reached by more calls,
	// the parts that do not average out being wider than it).
	Target       float64 `json:"target"`
	RelHalfWidth float64 `json:"rel_half_width"`
	Reached      bool    `json:"reached"`
	CallsNeeded  int     `json:"calls_needed"`
	// LeftOut is the number of calls left out because a reading was missing in their window.
	LeftOut int `json:"left_out"`
	// PerCall are the calls' own figures.
	PerCall          []CallFigure     `json:"per_call"`
	Warnings         []status.Warning `json:"warnings"`
	Incomplete       bool             `json:"incomplete"`
	IncompleteReason string           `json:"incomplete_reason,omitempty"`

	Trace *trace.Trace `json:"-"`
}

func (r *Result) relHalfWidth() float64 { return r.RelHalfWidth }

// WindowPre and WindowPost: each call's window is [start − WindowPre, end + WindowPost].
func (r *Result) WindowPre() time.Duration  { return time.Duration(r.WindowPreS * 1e9) }
func (r *Result) WindowPost() time.Duration { return time.Duration(r.WindowPostS * 1e9) }
func (r *Result) reached() bool             { return r.Reached }

// prepareModel names the channel's model in res and takes the windows' lengths after and
// before each call from it where o does not give them; it returns the model's period (0
// where the channel has no model).
func prepareModel(tr *trace.Trace, o *AnalyseOptions, model energy.Options, res *Result) time.Duration {
	_, choice, err := energy.Prepared(tr, o.GPU, model)
	if err != nil {
		return 0
	}
	res.Model, res.ModelSource = choice.Model.Shape().String(), choice.Source
	m := withPeriod(choice.Model, tr, o.GPU, o.Channel)
	if o.Settle <= 0 {
		o.Settle = settleOf(m)
	}
	if o.Pre <= 0 {
		o.Pre = preOf(m)
	}
	return m.Period
}

// recordIdle keeps the idle stretches the figure was given, in seconds.
func recordIdle(res *Result, o AnalyseOptions) {
	res.IdleBeforeS = [2]float64{o.IdleBefore[0].Seconds(), o.IdleBefore[1].Seconds()}
	res.IdleAfterS = [2]float64{o.IdleAfter[0].Seconds(), o.IdleAfter[1].Seconds()}
	res.IdleStaleS = o.IdleStale.Seconds()
	for _, g := range o.IdleGaps {
		res.IdleGapsS = append(res.IdleGapsS, [2]float64{g[0].Seconds(), g[1].Seconds()})
	}
}

// Analyse gives the energy per call of the calls whose spans are given, from the trace
// they were recorded in: each span's energy from the one estimator (energy.Region), on the
// energy counter's scale where the channel could be calibrated to it (energy.FitCalibration),
// averaged over the calls; the active-idle power from the gaps between the calls, Settle
// after each call's end.
func Analyse(tr *trace.Trace, spans []Span, o AnalyseOptions) *Result {
	if o.Batch <= 0 {
		o.Batch = 1
	}
	res := &Result{Format: Format, Device: tr.Meta.Device, Simulated: tr.Meta.Simulated, Calls: len(spans), Batch: o.Batch,
		Target: o.Target, Methods: map[string]int{}, PerCall: []CallFigure{}, Warnings: []status.Warning{},
		EnergyParts: []Part{}, ActiveParts: []Part{}}
	for _, g := range tr.Meta.GPUs {
		if g.Index == o.GPU {
			res.GPUName, res.GPUUUID = g.Name, g.UUID
		}
	}
	warn := func(code status.Code, f string, a ...any) {
		res.Warnings = append(res.Warnings, status.Warning{Code: code, Message: fmt.Sprintf(f, a...)})
	}
	if len(spans) < minCallsForSpread {
		warn(CodeFewCalls, "%d calls: at least %d are needed for an interval from their spread", len(spans), minCallsForSpread)
		return res
	}
	cache := &energy.Cache{}
	if o.Channel == "" {
		if n, err := correct.PickChannel(tr, o.GPU); err == nil {
			o.Channel = n
		}
	}
	model := energy.Options{Channel: o.Channel, Sensor: o.Sensor, Cache: cache}
	// The windows and gaps are read with the readings' own integral (model "none"): a
	// window that starts and ends where the sensor shows the baseline holds all of what
	// its lag or window moved (∫P = ∫reading + tau·Δreading, Δreading = 0 there), so undoing
	// the model would add only its noise and its errors at each phase (the rc inversion
	// of the h200 twin's ring: +3.6 % on 10 ms calls over 200 random phases).
	plain, _ := correct.ParseSpec("none")
	eo := energy.Options{Channel: o.Channel, Sensor: &plain, Cache: cache, Method: energy.Inversion}
	period := prepareModel(tr, &o, model, res)
	// The calibration to the counter, fitted once (not by every Region).
	fit, fitErr := energy.FitCalibration(tr, o.GPU, 0, 0)
	if fitErr == nil {
		eo.Calibration = &fit
	}
	// 1. Each call's window, and the gaps between them.
	pre, post := o.Pre, o.Settle
	if pre <= 0 {
		pre = 100 * time.Millisecond
	}
	res.WindowPreS, res.WindowPostS = pre.Seconds(), post.Seconds()
	region := func(from, to time.Duration, what string) (float64, string, bool) {
		est := energy.Region(tr, o.GPU, from, to, withWhat(eo, what))
		if est.Method == energy.NoFigure {
			return 0, "", false
		}
		return est.EnergyJ, string(est.Method), true
	}
	n := len(spans)
	recordIdle(res, o)
	res.RunToRunFloor = o.RunToRunFloor
	idle := idleLine(tr, o, region)
	windows := windowsOf(spans, o, pre, post, idle.ok)
	var gapP, gapL []float64
	if !idle.ok {
		gapP, gapL = gapsOf(spans, o, pre, post, region)
	}
	var e, a, dur, lens []float64
	var starts []time.Duration
	var idleE, idleL float64
	holes := missingReadings(tr, o.GPU, o.Channel, period)
	var holed []int
	for i, sp := range spans {
		d := sp.End - sp.Start
		from, to := windows[i][0], windows[i][1]
		if holes.meet(from, to) {
			holed = append(holed, i+1)
			res.PerCall = append(res.PerCall, CallFigure{StartS: sp.Start.Seconds(), EndS: sp.End.Seconds(), Method: leftOut})
			continue
		}
		x, method, ok := region(from, to, fmt.Sprintf("call %d", i+1))
		var base float64
		switch {
		case !ok:
		case idle.ok:
			base = idle.at((from + to) / 2)
		case gapL[i]+gapL[i+1] > 0:
			// The mean power of the gaps on either side (active idle where the GPU is
			// idle between the calls), so a drift of the idle level cancels.
			base = (gapP[i]*gapL[i] + gapP[i+1]*gapL[i+1]) / (gapL[i] + gapL[i+1])
			idleE += gapP[i] * gapL[i]
			idleL += gapL[i]
		default:
			ok = false
		}
		if !ok {
			warn(CodeCallFigure, "call %d [%s, %s]: no figure for its window or for the gaps beside it", i+1, fmtS(sp.Start), fmtS(sp.End))
			continue
		}
		res.Methods[method]++
		ai := x - base*(to-from).Seconds()
		e = append(e, ai+base*d.Seconds())
		a = append(a, ai)
		dur = append(dur, d.Seconds())
		lens = append(lens, (to - from).Seconds())
		starts = append(starts, sp.Start)
		res.PerCall = append(res.PerCall, CallFigure{StartS: sp.Start.Seconds(), EndS: sp.End.Seconds(), EnergyJ: ai + base*d.Seconds(), ActiveJ: ai, Method: method})
	}
	if len(holed) > 0 {
		warn(CodeMissingReading, "%d of %d calls left out: a reading of %s is missing inside their window (the next came more than %.1f periods after the one before; an H200's ring lost one in 1 of 6 to 1 of 2 windows of 40-50 ms repetitions), so its integral there would follow a straight line over the call's peak; first: %s",
			len(holed), len(spans), o.Channel, holeFactor, fmtCalls(holed))
	}
	res.LeftOut = len(holed)
	if res.Channel == "" {
		res.Channel = o.Channel
	}
	res.Scale = res.Channel
	n = len(e)
	if n < minCallsForSpread {
		warn(CodeFewCalls, "%d calls with a figure: at least %d are needed for an interval from their spread", n, minCallsForSpread)
		return res
	}
	b := float64(o.Batch)
	mD, sD := meanSD(dur)
	mL, _ := meanSD(lens)
	var idleW, idleHW float64 // the active idle and its 95 % half-width (W), on the channel's scale
	if idle.ok {
		idleW, idleHW = idle.at((spans[0].Start+spans[len(spans)-1].End)/2), idle.halfWidth
		res.Idle = idle.note
	} else {
		idleW = idleE / idleL
		res.Idle = "the gaps between the calls' windows (no idle recorded before and after them)"
	}

	// 2. The means, and their intervals from the calls' spread: each call's window less
	// the active idle, in which the sensor's resolution, its noise and the phases vary
	// from call to call and average out. A window's error is mostly a function of where
	// in the sensor's period the call started (a lag read every 20 ms sees a short call at
	// 0.45 to 1.9 times its energy), so the calls are grouped by that phase (post-
	// stratified: the plan spread them evenly) and the mean is the mean of the groups'
	// means, its standard error from the spread within each group.
	ph := phasesOf(tr, o.GPU, o.Channel, period, starts)
	k := strata(ph, n)
	mE, seE := stratifiedMean(e, ph, k)
	mA, seA := stratifiedMean(a, ph, k)
	tq := tQuantile975(n - k)
	rn := math.Sqrt(float64(n))
	res.TimeS = Figure{Value: mD / b, Low: (mD - tQuantile975(n-1)*sD/rn) / b, High: (mD + tQuantile975(n-1)*sD/rn) / b}
	res.Strata = k

	// 3. On the channel's own scale: the calls' mean, its spread, and the active idle.
	statE, statA := tq*seE, tq*seA
	note := fmt.Sprintf("the spread of the %d calls within %d groups by their phase in the sensor's period (t-quantile %.2f × the standard error of the groups' mean): each call's window less the active idle; what the sensor's resolution, its noise and the phases leave", n, k, tq)
	res.EnergyParts = []Part{{"calls", statE / b, note}}
	res.ActiveParts = []Part{{"calls", statA / b, note}}
	fixedA, fixedE := 0.0, 0.0 // the parts that do not average out over the calls, squared
	if idle.ok {
		ia := idleHW * mL / b
		ie := idleHW * (mL - mD) / b
		res.ActiveParts = append(res.ActiveParts, Part{"active idle", ia, idle.hwNote})
		res.EnergyParts = append(res.EnergyParts, Part{"active idle", ie, idle.hwNote})
		fixedA += ia * ia
		fixedE += ie * ie
	}
	vA, vE := mA/b, mE/b
	if f := o.RunToRunFloor * math.Abs(vA); f > 0 {
		// on the channel's scale there are no blocks: the floor alone (replaced below where
		// the counter's scale is taken)
		rr := runToRun(nil, spans, o.Batch, f)
		res.RunToRun = rr
		res.ActiveParts = append(res.ActiveParts, Part{"run to run", f, rr.Note})
		res.EnergyParts = append(res.EnergyParts, Part{"run to run", f, rr.Note})
		fixedA += f * f
		fixedE += f * f
	}
	hwA := math.Sqrt(statA*statA/(b*b) + fixedA)
	hwE := math.Sqrt(statE*statE/(b*b) + fixedE)
	res.EnergyJ = absolute(vE, hwE)
	res.ActiveJ = absolute(vA, hwA)
	res.RelHalfWidth = hwA / math.Abs(vA)
	res.ActiveIdleW = Figure{Value: idleW, Low: idleW - idleHW, High: idleW + idleHW}

	// 4. On the energy counter's scale, where the counter resolves the run: its energy over
	// the whole run above the active idle, per call (CounterScale). The channel's figures
	// would be scaled by the counter's energy against theirs over the same run, which
	// gives the same: the calls' mean cancels, and with it their spread by phase, so what
	// is uncertain is the counter's (its readings at the run's ends, its idle level) and
	// the idle line. An H200's ring read its calls' energy 0.9-2.4 % above the counter
	// while the two agreed at idle within 0.4 W (2026-11-28-call-2).
	if idle.ok && !o.OwnScale {
		c, err := fitCounterScale(tr, o, idle, windows[0][0], windows[len(windows)-1][1], region)
		if err == nil {
			c.Calls = len(spans) * o.Batch
			c.ActiveJ = c.CounterJ / float64(c.Calls)
			c.Gain = c.ActiveJ / vA
			c.ChannelActiveJ = res.ActiveJ
		}
		rel := c.HalfWidthJ / math.Abs(c.CounterJ)
		if err == nil {
			res.CounterDeclined = &c // until taken below
		}
		switch {
		case err != nil:
			if _, has := tr.Channel(o.GPU, energy.CounterChannel); has {
				warn(CodeScale, "the figures are on %s's own scale: %v", o.Channel, err)
			}
		case rel > maxCounterRel:
			warn(CodeScale, "the figures are on %s's own scale: the counter resolves the calls' energy over the run to ±%.1f %% only (%s), less well than the ±%.0f %% that is taken", o.Channel, 100*rel, c.String(), 100*maxCounterRel)
		case math.Abs(c.Gain-1) > maxScaleGain:
			warn(CodeScale, "the figures are on %s's own scale: the counter's figure (%s) lies more than %.0f %% from the channel's, more than one board's sensors differ", o.Channel, c.String(), 100*maxScaleGain)
		default:
			res.CounterScale, res.CounterDeclined = &c, nil
			res.Scale = energy.CounterChannel + " (over the run; " + o.Channel + " for the idle and the calls' timing)"
			hw := c.HalfWidthJ / float64(c.Calls)
			cnote := "the counter over the run: " + c.String()
			ci := idleW + c.IdleDiffW // the counter's active idle
			// in all: above idle, plus the counter's idle over the call's own span
			ie := rss(hw, 1.96*c.IdleDiffSEW*mD/b, idleHW*mD/b)
			res.ActiveParts = []Part{{"counter", hw, cnote}}
			res.EnergyParts = []Part{{"counter", ie, cnote + "; and its idle level over the call's span"}}
			rr := runToRun(c.blocks, spans, o.Batch, o.RunToRunFloor*math.Abs(c.ActiveJ))
			res.RunToRun = nil
			if len(rr.Blocks) > 0 || rr.FloorJ > 0 {
				res.RunToRun = rr
				res.ActiveParts = append(res.ActiveParts, Part{"run to run", rr.HalfWidthJ, rr.Note})
				res.EnergyParts = append(res.EnergyParts, Part{"run to run", rr.HalfWidthJ, rr.Note})
				hw, ie = rss(hw, rr.HalfWidthJ), rss(ie, rr.HalfWidthJ)
			}
			fixedA, fixedE, statA, statE = hw*hw, ie*ie, 0, 0
			res.ActiveJ = absolute(c.ActiveJ, hw)
			res.EnergyJ = absolute(c.ActiveJ+ci*mD/b, ie)
			res.RelHalfWidth = hw / math.Abs(c.ActiveJ)
			res.ActiveIdleW = Figure{Value: ci, Low: ci - rss(idleHW, 1.96*c.IdleDiffSEW), High: ci + rss(idleHW, 1.96*c.IdleDiffSEW)}
			vA = c.ActiveJ
		}
	}

	// 4. The calls the target needs: the calls' part shrinks as 1/√n, the others do not.
	// On the counter's scale, the readings at the ends weigh less as the calls add up
	// (their part shrinks as 1/n), the idle's grows with them (its part stays).
	if o.Target > 0 {
		res.Reached = res.RelHalfWidth <= o.Target
		shrinks, stays := statA/b, math.Sqrt(fixedA)
		if c := res.CounterScale; c != nil {
			shrinks, stays = c.EndsHalfWidthJ/float64(c.Calls), c.IdleHalfWidthJ/float64(c.Calls)
			if res.RunToRun != nil {
				stays = rss(stays, res.RunToRun.HalfWidthJ) // a property of the board: more calls do not shrink it
			}
		}
		if room := o.Target*o.Target*vA*vA - stays*stays; room > 0 {
			r := shrinks / math.Sqrt(room)
			if res.CounterScale != nil {
				res.CallsNeeded = int(math.Ceil(float64(len(spans)) * r)) // 1/n, not 1/√n
			} else {
				res.CallsNeeded = int(math.Ceil(float64(n) * r * r))
			}
		}
	}
	return res
}

// maxCounterRel is the largest relative 95 % half-width of the counter's figure over the
// run that is taken (±2 %: the "per cent or two" issue 34 asks for): where the calls draw little above idle over the run (on the
// twin, 1-10 ms calls one at a time: 50-150 J over 6-12 s), the counter's steps at the
// run's ends and its idle level leave it uncertain by 1-4 %; the figures then stay on the
// channel's own scale (the board's gain error in the absolute interval), with a warning.
const maxCounterRel = 0.02

// maxScaleGain is how far from 1 the counter's scale against a channel may lie and still be
// taken: one board's channels differ from its counter by a few per cent at
// most (an H200's ring by 0.9-2.4 % for calls).
const maxScaleGain = 0.1

// idleLevel is the active idle recorded before and after the calls (and in the idle gaps
// Run inserts between them at its checks): a line through the levels (the chip warms as
// it goes), piecewise between them where there are more than two, with its 95 %
// half-width.
type idleLevel struct {
	ok                bool
	knots             []idleKnot
	halfWidth         float64
	note, hwNote      string
	before, after     float64
	seBefore, seAfter float64
}

// idleKnot is one stretch's level: its middle t (s), mean power p and the standard error
// of p.
type idleKnot struct{ t, p, se float64 }

// at is the line's level at t: piecewise linear through the knots, the first and last
// segments extended beyond them.
func (l idleLevel) at(t time.Duration) float64 {
	k := l.knots
	if len(k) == 1 || len(k) > 1 && k[len(k)-1].t <= k[0].t {
		return k[0].p
	}
	x := t.Seconds()
	j := 0
	for j+2 < len(k) && x > k[j+1].t {
		j++
	}
	a, b := k[j], k[j+1]
	return a.p + (x-a.t)/(b.t-a.t)*(b.p-a.p)
}

// segHW is segment j's 95 % half-width (W): its two levels' standard errors at its middle,
// and half their difference (how far a warming that is not linear can move the line).
func (l idleLevel) segHW(j int) float64 {
	a, b := l.knots[j], l.knots[j+1]
	return rss(1.96*math.Sqrt(a.se*a.se+b.se*b.se)/2, math.Abs(b.p-a.p)/2)
}

// integral is the line's integral over [a, b] (J) and its 95 % half-width: each segment's
// half-width × the time of [a, b] it covers, added (the segments share their levels).
func (l idleLevel) integral(a, b time.Duration) (j, hw float64) {
	k := l.knots
	if len(k) < 2 {
		return l.at(a) * (b - a).Seconds(), l.halfWidth * (b - a).Seconds()
	}
	if len(k) == 2 {
		return l.at((a+b)/2) * (b - a).Seconds(), l.halfWidth * (b - a).Seconds()
	}
	x0, x1 := a.Seconds(), b.Seconds()
	for s := 0; s+1 < len(k); s++ {
		lo, hi := k[s].t, k[s+1].t
		if s == 0 {
			lo = math.Inf(-1)
		}
		if s+2 == len(k) {
			hi = math.Inf(1)
		}
		u, v := max(lo, x0), min(hi, x1)
		if v <= u {
			continue
		}
		mid := time.Duration((u + v) / 2 * 1e9)
		j += l.at(mid) * (v - u)
		hw += l.segHW(s) * (v - u)
	}
	return j, hw
}

// idleLine is the active idle from o's stretches before and after the calls (and its idle
// gaps between them): each one's mean power (the estimator's integral over it), its
// standard error from the spread of the means of its 100 ms blocks; the line's 95 %
// half-width from those and half the difference of neighbouring levels. With one stretch,
// its level, and no drift known.
func idleLine(tr *trace.Trace, o AnalyseOptions, region func(from, to time.Duration, what string) (float64, string, bool)) idleLevel {
	var l idleLevel
	type lvl struct {
		ok     bool
		t, p   float64
		se     float64
		length time.Duration
	}
	measure := func(w [2]time.Duration, what string) lvl {
		if w[1]-w[0] < 200*time.Millisecond {
			return lvl{}
		}
		x, _, ok := region(w[0], w[1], what)
		if !ok {
			return lvl{}
		}
		var ps []float64
		const blk = 100 * time.Millisecond
		for t := w[0]; t+blk <= w[1]; t += blk {
			if y, _, ok := region(t, t+blk, what); ok {
				ps = append(ps, y/blk.Seconds())
			}
		}
		se := 0.0
		if len(ps) >= 3 {
			_, sd := meanSD(ps)
			se = sd / math.Sqrt(float64(len(ps)))
		}
		return lvl{ok: true, t: ((w[0] + w[1]) / 2).Seconds(), p: x / (w[1] - w[0]).Seconds(), se: se, length: w[1] - w[0]}
	}
	b := measure(o.IdleBefore, "the idle before the calls")
	a := measure(o.IdleAfter, "the idle after the calls")
	var mids []idleKnot
	for i, g := range o.IdleGaps {
		if m := measure(g, fmt.Sprintf("idle gap %d", i+1)); m.ok {
			mids = append(mids, idleKnot{m.t, m.p, m.se})
		}
	}
	switch {
	case b.ok && a.ok:
		l = idleLevel{ok: true, knots: append(append([]idleKnot{{b.t, b.p, b.se}}, mids...), idleKnot{a.t, a.p, a.se})}
		if len(l.knots) == 2 {
			// the line's standard error at the run's middle, and the drift's bound
			se := math.Sqrt(b.se*b.se+a.se*a.se) / 2
			l.halfWidth = rss(1.96*se, math.Abs(a.p-b.p)/2)
		} else {
			_, hw := l.integral(sec(b.t), sec(a.t))
			l.halfWidth = hw / (a.t - b.t)
		}
		l.note = fmt.Sprintf("a line from %.2f W (the %s before the calls) to %.2f W (the %s after them, from %s after the last)", b.p, units.FormatSeconds(b.length.Seconds(), 2), a.p, units.FormatSeconds(a.length.Seconds(), 2), units.FormatSeconds(IdleAfterCall.Seconds(), 2))
		if len(mids) > 0 {
			l.note += fmt.Sprintf(", through the levels of %d idle gaps between the calls", len(mids))
		}
	case b.ok || a.ok:
		x := b
		if a.ok {
			x = a
		}
		l = idleLevel{ok: true, knots: []idleKnot{{x.t, x.p, x.se}}, halfWidth: 1.96 * x.se}
		l.note = fmt.Sprintf("%.2f W over the %s of idle recorded beside the calls (one stretch: no drift known)", x.p, units.FormatSeconds(x.length.Seconds(), 2))
	default:
		return idleLevel{}
	}
	l.before, l.after, l.seBefore, l.seAfter = b.p, a.p, b.se, a.se
	l.hwNote = fmt.Sprintf("the active idle's 95 %% half-width, %.2f W (its levels' standard errors and half their differences, %.2f W end to end), × the mean window", l.halfWidth, math.Abs(a.p-b.p)/2)
	return l
}

// windowsOf is each call's window: [start − pre, end + post], or, where the active idle is
// known from outside the calls (tile), from start − pre to the next call's window (the last
// one as long after its call as the others are on average), so that everything a call
// leaves behind, the dip below idle after it included, is its own.
func windowsOf(spans []Span, o AnalyseOptions, pre, post time.Duration, tile bool) [][2]time.Duration {
	n := len(spans)
	out := make([][2]time.Duration, n)
	var after time.Duration // the mean time from a call's end to its window's end
	var ends []int          // the calls an idle gap follows, and the last
	for i, sp := range spans {
		out[i] = [2]time.Duration{sp.Start - pre, sp.End + post}
		if tile && i+1 < n && !gapBetween(o.IdleGaps, sp.End, spans[i+1].Start) {
			out[i][1] = max(sp.End+post, spans[i+1].Start-pre)
			after += out[i][1] - sp.End
		} else if tile {
			ends = append(ends, i)
		}
	}
	if tile && n > len(ends) {
		after /= time.Duration(n - len(ends))
		for _, i := range ends {
			w := &out[i]
			w[1] = max(w[1], spans[i].End+after)
			if i+1 < n {
				w[1] = max(spans[i].End+post, min(w[1], spans[i+1].Start-pre))
			}
		}
		if o.Next > 0 {
			last := &out[n-1]
			last[1] = max(spans[n-1].End+post, min(last[1], o.Next-pre))
		}
	}
	return out
}

// gapBetween says whether one of the idle gaps lies between a call's end and the next's start.
func gapBetween(gaps [][2]time.Duration, end, next time.Duration) bool {
	for _, g := range gaps {
		if g[0] >= end && g[1] <= next {
			return true
		}
	}
	return false
}

// gapsOf is the mean power and length of the gaps between the calls' windows (gap k lies
// before call k, gap n after the last): the baseline of a recording without idle before
// and after the calls.
func gapsOf(spans []Span, o AnalyseOptions, pre, post time.Duration, region func(from, to time.Duration, what string) (float64, string, bool)) (gapP, gapL []float64) {
	n := len(spans)
	gapP, gapL = make([]float64, n+1), make([]float64, n+1)
	for k := 0; k <= n; k++ {
		from, to := time.Duration(0), time.Duration(0)
		switch {
		case k == 0: // as long as the gap after it (before it ran the warm-up)
			to = spans[0].Start - pre
			from = to - (spans[min(1, n-1)].Start - pre - spans[0].End - post)
		case k == n:
			from, to = spans[n-1].End+post, spans[n-1].End+post+o.Tail
			if o.Next > 0 {
				to = min(to, o.Next-pre)
			}
		default:
			from, to = spans[k-1].End+post, spans[k].Start-pre
		}
		if to-from < time.Millisecond {
			continue
		}
		if x, _, ok := region(from, to, fmt.Sprintf("the gap before call %d", k+1)); ok {
			gapP[k], gapL[k] = x/(to-from).Seconds(), (to - from).Seconds()
		}
	}
	return gapP, gapL
}

// holeFactor: two consecutive readings of a periodic channel further apart than this many
// periods have a reading missing between them. The H200's ring stamps a sample up to 14 ms
// late (a gap of 34 ms on its 20 ms grid, then a short one): that is not a missing sample.
const holeFactor = 1.8

// holes are the stretches between consecutive readings that have a reading missing.
type holes [][2]time.Duration

func missingReadings(tr *trace.Trace, gpu int, ch string, period time.Duration) holes {
	if period <= 0 {
		return nil
	}
	ts := tr.Readings(gpu, ch).T
	var out holes
	lim := time.Duration(holeFactor * float64(period))
	for i := 1; i < len(ts); i++ {
		if ts[i]-ts[i-1] > lim {
			out = append(out, [2]time.Duration{ts[i-1], ts[i]})
		}
	}
	return out
}

// meet says whether a hole lies (partly) inside [from, to].
func (h holes) meet(from, to time.Duration) bool {
	i := sort.Search(len(h), func(k int) bool { return h[k][1] > from })
	return i < len(h) && h[i][0] < to
}

func fmtCalls(ks []int) string {
	if len(ks) > 8 {
		return fmt.Sprint(ks[:8]) + " …"
	}
	return fmt.Sprint(ks)
}

// phasesOf is where in the channel's update period each start fell, in [0, 1): against
// the grid fitted to its readings' stamps (correct.FitLattice), else against the latest
// reading before it; nil where the period is not known.
func phasesOf(tr *trace.Trace, gpu int, ch string, period time.Duration, starts []time.Duration) []float64 {
	if period <= 0 {
		return nil
	}
	ts := tr.Readings(gpu, ch).T
	out := make([]float64, len(starts))
	if g, ok := correct.FitLattice(ts, period); ok && g.Period > 0 {
		for i, s := range starts {
			x := math.Mod(float64(s-g.Phase)/float64(g.Period), 1)
			if x < 0 {
				x++
			}
			out[i] = x
		}
		return out
	}
	for i, s := range starts {
		j := sort.Search(len(ts), func(k int) bool { return ts[k] > s }) - 1
		if j < 0 {
			return nil
		}
		out[i] = math.Mod(float64(s-ts[j])/float64(period), 1)
	}
	return out
}

// strata is how many groups of phase the calls are split into: the most, up to 16, that
// leaves every group at least 5 calls, so that the spread within each is itself known
// well enough (1: no phases known).
func strata(ph []float64, n int) int {
	if len(ph) != n {
		return 1
	}
	for k := min(16, n/5); k > 1; k-- {
		c := make([]int, k)
		for _, x := range ph {
			c[min(int(x*float64(k)), k-1)]++
		}
		if slices.Min(c) >= 5 {
			return k
		}
	}
	return 1
}

// stratifiedMean is the mean of the k groups' means of x by phase (equal weights: every
// phase is equally likely), and its standard error from the spread within the groups.
func stratifiedMean(x, ph []float64, k int) (mean, se float64) {
	if k <= 1 {
		m, sd := meanSD(x)
		return m, sd / math.Sqrt(float64(len(x)))
	}
	groups := make([][]float64, k)
	for i, v := range x {
		h := min(int(ph[i]*float64(k)), k-1)
		groups[h] = append(groups[h], v)
	}
	var v2 float64
	for _, g := range groups {
		m, sd := meanSD(g)
		mean += m
		v2 += sd * sd / float64(len(g))
	}
	kf := float64(k)
	return mean / kf, math.Sqrt(v2) / kf
}

func withWhat(o energy.Options, what string) energy.Options {
	o.What = what
	return o
}

// absolute is a figure of half-width hw, with the board's gain error added for the
// absolute interval.
func absolute(v, hw float64) Figure {
	abs := rss(hw, energy.BoardGainError*math.Abs(v))
	return Figure{Value: v, Low: v - hw, High: v + hw, AbsLow: v - abs, AbsHigh: v + abs}
}

func rss(x ...float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func meanSD(x []float64) (m, sd float64) {
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	for _, v := range x {
		sd += (v - m) * (v - m)
	}
	return m, math.Sqrt(sd / float64(len(x)-1))
}

// tQuantile975 is Student's t 97.5 % quantile for df degrees of freedom (a Cornish-Fisher
// expansion about the normal's 1.96: within 0.1 % for df >= 3).
func tQuantile975(df int) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	const z = 1.959963984540054
	v := float64(df)
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*v) + (5*z5+16*z3+3*z)/(96*v*v) + (3*z7+19*z5+17*z3-15*z)/(384*v*v*v)
}

func fmtS(d time.Duration) string { return fmt.Sprintf("%.4f s", d.Seconds()) }

func sec(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }

// idleGapsOf is IdleGapsS as durations.
func idleGapsOf(g [][2]float64) [][2]time.Duration {
	var out [][2]time.Duration
	for _, x := range g {
		out = append(out, [2]time.Duration{sec(x[0]), sec(x[1])})
	}
	return out
}
