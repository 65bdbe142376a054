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
}

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
	var period time.Duration
	// The windows and gaps are read with the readings' own integral (model "none"): a
	// window that starts and ends where the sensor shows the baseline holds all of what
	// its lag or window moved (∫P = ∫reading + tau·Δreading, Δreading = 0 there), so undoing
	// the model would add only its noise and its errors at each phase (the rc inversion
	// of the h200 twin's ring: +3.6 % on 10 ms calls over 200 random phases).
	plain, _ := correct.ParseSpec("none")
	eo := energy.Options{Channel: o.Channel, Sensor: &plain, Cache: cache, Method: energy.Inversion}
	if _, choice, err := energy.Prepared(tr, o.GPU, model); err == nil {
		res.Model, res.ModelSource = choice.Model.Shape().String(), choice.Source
		m := withPeriod(choice.Model, tr, o.GPU, o.Channel)
		period = m.Period
		if o.Settle <= 0 {
			o.Settle = settleOf(m)
		}
		if o.Pre <= 0 {
			o.Pre = preOf(m)
		}
	}
	// The figures stay on the channel's own scale: a gain against the energy counter
	// fitted over a recording that is idle most of the time is not to be trusted (on
	// the twin, gains of 0.94–1.04 for a true 1.00, with standard errors of a fraction of
	// that). The board's gain error is in the absolute interval.
	if c, err := energy.FitCalibration(tr, o.GPU, 0, 0); err == nil {
		eo.Calibration = &c // fitted once, not by every Region
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
	gapP := make([]float64, n+1) // gap k lies before call k (gap n after the last): its mean power
	gapL := make([]float64, n+1)
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
	var e, a, dur []float64
	var starts []time.Duration
	var idleE, idleL float64
	holes := missingReadings(tr, o.GPU, o.Channel, period)
	var holed []int
	for i, sp := range spans {
		d := sp.End - sp.Start
		from, to := sp.Start-pre, sp.End+post
		if holes.meet(from, to) {
			holed = append(holed, i+1)
			res.PerCall = append(res.PerCall, CallFigure{StartS: sp.Start.Seconds(), EndS: sp.End.Seconds(), Method: leftOut})
			continue
		}
		x, method, ok := region(from, to, fmt.Sprintf("call %d", i+1))
		if !ok || gapL[i]+gapL[i+1] == 0 {
			warn(CodeCallFigure, "call %d [%s, %s]: no figure for its window or for the gaps beside it", i+1, fmtS(sp.Start), fmtS(sp.End))
			continue
		}
		res.Methods[method]++
		// The baseline: the mean power of the gaps on either side (active idle where the
		// GPU is idle between the calls), so a drift of the idle level cancels.
		base := (gapP[i]*gapL[i] + gapP[i+1]*gapL[i+1]) / (gapL[i] + gapL[i+1])
		ai := x - base*(to-from).Seconds()
		e = append(e, ai+base*d.Seconds())
		a = append(a, ai)
		dur = append(dur, d.Seconds())
		starts = append(starts, sp.Start)
		idleE += gapP[i] * gapL[i]
		idleL += gapL[i]
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
	idle := idleE / idleL
	res.ActiveIdleW = Figure{Value: idle, Low: idle, High: idle}

	// 2. The means, and their intervals from the calls' spread: each call's window less
	// the gaps' power beside it, in which the sensor's resolution, its noise, the phases
	// and the baseline vary from call to call and average out. A window's error is mostly
	// a function of where in the sensor's period the call started (a lag read every 20 ms
	// sees a short call at 0.45 to 1.9 times its energy), so the calls are grouped by that
	// phase (post-stratified: the plan spread them evenly) and the mean is the mean of the
	// groups' means, its standard error from the spread within each group.
	b := float64(o.Batch)
	ph := phasesOf(tr, o.GPU, o.Channel, period, starts)
	k := strata(ph, n)
	mE, seE := stratifiedMean(e, ph, k)
	mA, seA := stratifiedMean(a, ph, k)
	mD, sD := meanSD(dur)
	tq := tQuantile975(n - k)
	rn := math.Sqrt(float64(n))
	res.TimeS = Figure{Value: mD / b, Low: (mD - tQuantile975(n-1)*sD/rn) / b, High: (mD + tQuantile975(n-1)*sD/rn) / b}
	res.Strata = k

	statE, statA := tq*seE, tq*seA
	note := fmt.Sprintf("the spread of the %d calls within %d groups by their phase in the sensor's period (t-quantile %.2f × the standard error of the groups' mean): each call's window [start − %s, end + %s] less the power of the gaps beside it; what the sensor's resolution, its noise, the phases and the baseline leave", n, k, tq, units.FormatSeconds(pre.Seconds(), 3), units.FormatSeconds(post.Seconds(), 3))
	res.EnergyParts = []Part{{"calls", statE / b, note}}
	res.ActiveParts = []Part{{"calls", statA / b, note}}
	res.EnergyJ = absolute(mE/b, statE/b)
	res.ActiveJ = absolute(mA/b, statA/b)
	res.RelHalfWidth = statA / math.Abs(mA)

	// 3. The calls the target needs: the interval shrinks as 1/√n.
	if o.Target > 0 {
		res.Reached = res.RelHalfWidth <= o.Target
		r := res.RelHalfWidth / o.Target
		res.CallsNeeded = int(math.Ceil(float64(n) * r * r))
	}
	return res
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
