package energy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Method is how a region's energy was found.
type Method string

// Methods, in the order of preference.
const (
	Counter             Method = "counter"
	CalibratedRing      Method = "calibrated_ring"
	Inversion           Method = "inversion"
	CounterInterpolated Method = "counter_interpolated"
	NoFigure            Method = "none"
)

// Warning codes of the estimator.
const (
	CodeNoFigure     status.Code = "no_energy_figure"
	CodeInterpolated status.Code = "counter_interpolated"
	CodeUncalibrated status.Code = "uncalibrated_channel"
	CodeInversion    status.Code = "sensor_model"
)

// Options of Region. The zero value gives the defaults.
type Options struct {
	// What names the region in notes and warnings ("the command"; default "the region").
	What string
	// Steady says the power was constant over the region (a kernel launched back to back):
	// the counter's figure is then its rate over the readings inside, the calibrated
	// channel's its mean over the readings inside, times the region's length.
	Steady bool
	// Calibration maps the ring onto the counter's scale; nil: Region fits one over the
	// whole trace (the measurement loop fits it once per GPU and passes it on).
	Calibration *Calibration
	// Channel is the power channel to invert (default: the best board channel present,
	// correct.PickChannel).
	Channel string
	// Sensor names its model (nil: "auto", a guess from the names).
	Sensor *correct.Spec
	// Correct are the options of the inversion (idle level, dedupe); Period is taken from
	// the channel's metadata where it is unset.
	Correct correct.Options
	// Invert computes the inversion of Channel even where a preferred method gives the
	// figure, for comparison (Estimate.Inversion).
	Invert bool
	// Cache, where given, keeps the channels prepared for tr (see Cache).
	Cache *Cache
	// Method forces a method (Counter, CalibratedRing or Inversion); "" picks the first
	// that can be had, in the order of preference.
	Method Method
	// Named says the user named Channel (`energy --channel C`): with Method "", the figure
	// is that channel's own (its model inverted, its interval), not the counter's or the
	// ring's; the counter, where the trace has one, checks it (the reference component).
	Named bool
	// Late is how late the region's edges may be placed, both together, where their times
	// are not exact (a marker stamped when it was read, up to marks.ArrivalPoll after it
	// was written); LateNote says why. That time at the region's mean power is a component
	// of the interval ("markers").
	Late     time.Duration
	LateNote string
	// CounterEdges, where the region's edges are readings of the energy counter themselves
	// (a job's begin and end), bounds the energy across them in place of the estimator's
	// own edges component, on the counter's figures (see CounterEdges).
	CounterEdges *CounterEdges

	// noReference: the figure over the span the reference component checks (spanFigure),
	// which is not itself checked.
	noReference bool
}

// CounterEdges says a region's edges are readings of the energy counter taken at them (job
// begin and end read it at their calls): each value may be up to Period late against the
// energy it reports, and the board draws meanwhile at most the region's mean power (on the
// counter's own figure: the power there is the region's) or at most LimitW (interpolated
// across readings outside the region, where the power is not known).
type CounterEdges struct {
	// Period is the counter's update period; PeriodAssumed says it is not the trace's own.
	Period        time.Duration
	PeriodAssumed bool
	// LimitW is the board's power limit (0: not known, the bound is then absent).
	LimitW float64
	// Readings names them for the note ("begin's and end's counter readings").
	Readings string
}

// Component is the "edges" component of a figure whose edges are these readings, the
// board drawing at most powerW (powerWhat names it: "its power limit") meanwhile: ±
// powerW × Period, absent (not known) where powerW is not.
func (ce CounterEdges) Component(powerW float64, powerWhat string) Component {
	what := "the counter's update period"
	if ce.PeriodAssumed {
		what += ", assumed"
	}
	readings := ce.Readings
	if readings == "" {
		readings = "the edges' counter readings"
	}
	c := Component{Name: "edges", Known: powerW > 0,
		Note: fmt.Sprintf("each of %s may be up to %s (%s) late, the board drawing at most %s (%.0f W) meanwhile", readings, fmtDur(ce.Period), what, powerWhat, powerW)}
	if powerW > 0 {
		c.HalfWidthJ = powerW * ce.Period.Seconds()
	}
	return c
}

// spanFigure is the reference component's view of the figure being checked: over [a, b]
// (the counter's readings around the region), the same method on the same channel, its
// energy and its own half-width (without a reference component of its own); ok false
// where it has no figure or does not cover [a, b].
func (o Options) spanFigure(tr *trace.Trace, gpu int, m Method, channel string) func(a, b time.Duration) (float64, float64, bool) {
	return func(a, b time.Duration) (float64, float64, bool) {
		k := spanKey{gpu, a, b, m, channel, o.Named, o.Sensor, o.Correct, o.Calibration}
		if f, ok := o.Cache.span(tr, k); ok {
			return f.e, f.own, f.ok
		}
		e, own, ok := o.figureOver(tr, gpu, m, channel, a, b)
		o.Cache.keepSpan(tr, k, spanFig{e, own, ok})
		return e, own, ok
	}
}

// span is the figure kept for k on tr (ok false: none kept, or c is nil or another trace's).
func (c *Cache) span(tr *trace.Trace, k spanKey) (spanFig, bool) {
	if c == nil {
		return spanFig{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tr != tr {
		return spanFig{}, false
	}
	f, ok := c.spans[k]
	return f, ok
}

func (c *Cache) keepSpan(tr *trace.Trace, k spanKey, f spanFig) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tr != tr {
		return
	}
	if c.spans == nil {
		c.spans = map[spanKey]spanFig{}
	}
	c.spans[k] = f
}

// spanOptions are o for a figure over the counter's span around a region: no reference
// check or anchor of its own, not inverted, and without the region's own edges.
func (o Options) spanOptions() Options {
	so := o
	so.noReference, so.What, so.Invert = true, "the span", false
	so.Late, so.LateNote, so.CounterEdges = 0, "", nil // the region's own edges, not the span's
	return so
}

// figureOver is spanFigure's figure, uncached.
func (o Options) figureOver(tr *trace.Trace, gpu int, m Method, channel string, a, b time.Duration) (float64, float64, bool) {
	so := o.spanOptions()
	if m == Inversion {
		so.Channel = channel
	}
	if !o.Named {
		so.Method = m
	}
	e := Region(tr, gpu, a, b, so)
	if e.Method != m {
		return 0, 0, false
	}
	// Its own interval but the bounds of a periodic load (locked, ripple): a bound on a
	// lock somewhere in the span (a 100 ms square wave) would excuse any error elsewhere
	// in it (the H200's ramp). Nor the calibration's: its error over the span is the
	// region's in proportion (the region's own calibration component), so it cannot excuse
	// a difference 5 times the region's share (the ring's −117 J on a 3 s ramp of the H200,
	// a fifth of a 19 s span whose calibration allowed ±115 J).
	var ss float64
	for _, c := range e.Uncertainty.Components {
		if c.Known && c.Name != "locked" && c.Name != "ripple" && c.Name != "calibration" {
			ss += c.HalfWidthJ * c.HalfWidthJ
		}
	}
	return e.EnergyJ, math.Sqrt(ss), true
}

// ParseMethod reads a method's name as the flags give it: auto (""), counter, calibrated
// (or calibrated_ring), inversion.
func ParseMethod(s string) (Method, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "counter":
		return Counter, nil
	case "calibrated", "calibrated_ring":
		return CalibratedRing, nil
	case "inversion":
		return Inversion, nil
	}
	return "", fmt.Errorf("%q: want auto, counter, calibrated or inversion", s)
}

// BoardGainError is the board's power sensor's gain error at 95 %, the absolute part of
// every figure: NVML documents ±5 % of the power draw for nvmlDeviceGetPowerUsage (stated
// for Fermi and Kepler, none stated since), and Yang et al. (SC'24) found boards of one
// SKU ±5 % apart. The energy counter and every power channel of a board share it.
const BoardGainError = 0.05

// Cache keeps the channels Region prepares (their readings through the sensor model, over
// the whole trace) so that the regions of one trace prepare each channel once: give one
// Cache to every Region on one trace (a Cache first used on one trace is bypassed for any
// other). Safe for concurrent use.
type Cache struct {
	mu  sync.Mutex
	tr  *trace.Trace
	m   map[prepKey]prepared
	ser map[serKey]prepared // by the model resolved: two specs that name one model share it

	scales map[serKey]scaleFit // a named channel's scale (FitScale), by the model resolved
	spans  map[spanKey]spanFig // the reference component's figures over the counter's spans

	// The channels' readings as columns (a compact trace's own, shared; a trace of Samples
	// copied once), with their own lock: prepare holds mu.
	smu     sync.Mutex
	str     *trace.Trace
	samples map[trace.Key]trace.Readings
	rows    map[trace.Key][]trace.Sample // Samples' (a trace of Samples only)
}

// Samples is tr.Series(gpu, name), kept in c for every region of tr where c is given
// (callers share the slice and must not modify it): region.Summarize asks for each
// channel once per region, and each Series scans the whole trace. A compact trace's are
// not kept (it is compact to hold its readings once).
func (c *Cache) Samples(tr *trace.Trace, gpu int, name string) []trace.Sample {
	if c == nil || tr.Compact() {
		return tr.Series(gpu, name)
	}
	return column(c, tr, &c.rows, trace.Key{GPU: gpu, Name: name}, func() []trace.Sample { return tr.Series(gpu, name) })
}

// series is the readings of channel name of GPU gpu in tr (trace.Readings), from c where
// given: callers share the columns and must not modify them.
func (c *Cache) series(tr *trace.Trace, gpu int, name string) trace.Readings {
	if c == nil || tr.Compact() {
		return tr.Readings(gpu, name) // a compact trace's columns: no copy to keep
	}
	return column(c, tr, &c.samples, trace.Key{GPU: gpu, Name: name}, func() trace.Readings { return tr.Readings(gpu, name) })
}

// column is the column k of tr kept in *m, got on first use; a trace other than the one c
// first served is not kept.
func column[V any](c *Cache, tr *trace.Trace, m *map[trace.Key]V, k trace.Key, get func() V) V {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.str == nil {
		c.str = tr
	}
	if c.str != tr {
		return get()
	}
	if *m == nil {
		*m = map[trace.Key]V{}
	}
	v, ok := (*m)[k]
	if !ok {
		v = get()
		(*m)[k] = v
	}
	return v
}

// spanKey names a figure over a span of the counter's readings (spanFigure): the regions
// between two readings share it.
type spanKey struct {
	gpu     int
	a, b    time.Duration
	method  Method
	channel string
	named   bool
	sensor  *correct.Spec
	copt    correct.Options
	cal     *Calibration
}

type spanFig struct {
	e, own float64
	ok     bool
}

type scaleFit struct {
	c   Calibration
	err error
}

// scale is FitScale(ser, ctr), once per channel and model where c is given.
func (c *Cache) scale(k serKey, ser *correct.Series, ctr trace.Readings, res time.Duration) (Calibration, error) {
	if c == nil {
		return FitScale(ser, ctr, res)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scales == nil {
		c.scales = map[serKey]scaleFit{}
	}
	f, ok := c.scales[k]
	if !ok {
		f.c, f.err = FitScale(ser, ctr, res)
		c.scales[k] = f
	}
	return f.c, f.err
}

// serKey names a prepared channel by what the inversion depends on.
type serKey struct {
	gpu   int
	name  string
	model sensormodel.Model
	copt  correct.Options
}

type prepKey struct {
	gpu      int
	name     string
	sensor   *correct.Spec
	copt     correct.Options
	fallback bool
}

type prepared struct {
	ser     *correct.Series
	choice  correct.Choice
	samples trace.Readings
	copt    correct.Options
	err     error
}

// Component is one part of an estimate's 95 % interval.
type Component struct {
	// Name: "readings" (noise of the readings), "calibration" (the gain and offset fitted
	// against the counter), "model" (the sensor model's parameter intervals), "edges" (a
	// power change near an edge placed within the readings' resolution), "coverage" (the
	// time a windowed sensor does not see), "sparse" (too few readings inside), "gaps"
	// (holes in the readings, across which the power is interpolated: never known).
	Name string `json:"name"`
	// HalfWidthJ is the component's 95 % half-width; meaningful only when Known.
	HalfWidthJ float64 `json:"half_width_j"`
	// Known is false for a component the code cannot compute: it is not in the interval.
	Known bool   `json:"known"`
	Note  string `json:"note"`
}

// Uncertainty is an estimate's 95 % uncertainty budget.
type Uncertainty struct {
	// HalfWidthJ is the relative interval's half-width, the root sum of squares of the known
	// Components: how far the figure may be from what this board's own sensors would give
	// with perfect timing and no noise. Partial: a component is absent (not known), so the
	// interval is a floor.
	HalfWidthJ float64     `json:"half_width_j"`
	Partial    bool        `json:"partial"`
	Components []Component `json:"components"`
	// GainErrorFraction is the board's gain error (BoardGainError) and GainHalfWidthJ its
	// share of the energy; AbsoluteLowJ and AbsoluteHighJ the interval with it added (root
	// sum of squares): the bounds of the true energy. GainNote says where the figure is from.
	GainErrorFraction float64 `json:"gain_error_fraction"`
	GainHalfWidthJ    float64 `json:"gain_half_width_j"`
	AbsoluteLowJ      float64 `json:"absolute_low_j"`
	AbsoluteHighJ     float64 `json:"absolute_high_j"`
	GainNote          string  `json:"gain_note"`
}

// Estimate is the energy of a region and how it was found: its Figure, with the
// candidates the estimator weighed.
type Estimate struct {
	From, To time.Duration `json:"-"`
	Figure
	Readings int `json:"readings"` // readings of Channel inside the region

	// The candidates: the counter's own figure and its readings strictly inside (with
	// their span), the calibrated channel's figure and its readings inside (0: none).
	CounterJ           float64       `json:"counter_energy_j"`
	CounterReadings    int           `json:"counter_readings"`
	CounterSpan        time.Duration `json:"-"`
	CalibratedJ        float64       `json:"calibrated_energy_j"`
	CalibratedReadings int           `json:"calibrated_readings"`
	Calibration        *Calibration  `json:"calibration,omitempty"`
	// Inversion is the inverted channel's result where it was computed (the figure under
	// Inversion, or Options.Invert); its model in Choice.
	Inversion *correct.Result `json:"-"`
	Choice    *correct.Choice `json:"-"`
	// InversionUncertainty is the inverted channel's own budget (nil: not computed).
	InversionUncertainty *Uncertainty `json:"-"`
	// Scale is the named channel's own scale fitted to the counter (nil: its own scale).
	Scale *Calibration `json:"scale,omitempty"`
}

// Region estimates the energy of GPU gpu over [from, to] of tr: see the package comment.
// It weighs the candidates (the counter's own figure, the calibrated ring's), takes the
// first the order of preference and Options.Method allow, and finishes its interval.
func Region(tr *trace.Trace, gpu int, from, to time.Duration, o Options) Estimate {
	r := &regionRun{tr: tr, gpu: gpu, from: from, to: to, dur: to - from, o: o, what: o.What}
	if r.what == "" {
		r.what = "the region"
	}
	r.est = Estimate{From: from, To: to, Figure: Figure{Method: NoFigure, Uncertainty: Uncertainty{Components: []Component{}}, Warnings: []status.Warning{}}}
	if r.dur <= 0 {
		r.warn(CodeNoFigure, "", "%s is empty: no energy figure", r.what)
		return r.est
	}
	r.weighCounter()
	r.weighCalibrated()
	r.named = r.o.Named && r.o.Method == ""
	if r.named {
		r.o.Method = Inversion // the channel asked for, whatever else the trace holds
	}
	switch {
	case r.ctrEnough && r.allows(Counter):
		r.takeCounter()
	case r.calOK && r.allows(CalibratedRing):
		r.takeCalibrated()
	case r.o.Method == "" || r.o.Method == Inversion:
		r.takeInversion()
		if r.est.Method == NoFigure && r.ctrOK && r.o.Method == "" {
			r.takeInterpolatedCounter()
		}
	}
	if r.o.Method != "" && r.est.Method != r.o.Method {
		r.refuseForced()
		return r.est
	}
	if r.o.Invert && r.est.Inversion == nil {
		r.invertForComparison()
	}
	if r.est.Method == NoFigure {
		r.warn(CodeNoFigure, "", "no power channel or energy counter could be read: no energy figure")
		return r.est
	}
	if r.o.Late > 0 {
		r.est.add(Component{Name: "markers", Known: true, HalfWidthJ: math.Abs(r.est.EnergyJ) / r.dur.Seconds() * r.o.Late.Seconds(), Note: r.o.LateNote})
	}
	r.est.interval()
	if r.est.Method == Inversion {
		u := r.est.Uncertainty
		r.est.InversionUncertainty = &u
	}
	return r.est
}

// regionRun is one Region call: its inputs, the candidates weighed, and the estimate
// being built.
type regionRun struct {
	tr       *trace.Trace
	gpu      int
	from, to time.Duration
	dur      time.Duration
	o        Options
	what     string
	named    bool // the user named the channel: its own figure
	est      Estimate

	// The counter: its readings, whether its increase over the region can be told (ctrOK)
	// and whether it resolves the region for its own figure (ctrEnough); ctrSE the steady
	// rate's standard error, res how late a reading may be.
	ctrSeries trace.Readings
	ctrOK     bool
	ctrEnough bool
	ctrSE     float64
	res       time.Duration

	// The calibrated ring: its calibration (or why none), its own figure (calRaw), its
	// series through the sensor model, and whether its figure can be had (calOK).
	cal       *Calibration
	calErr    error
	calRaw    float64
	calSer    *correct.Series
	calChoice correct.Choice
	calRes    correct.Result
	calOK     bool
}

func (r *regionRun) warn(code status.Code, key, f string, a ...any) {
	r.est.Warnings = append(r.est.Warnings, status.Warning{Code: code, Key: key, Message: fmt.Sprintf(f, a...)})
}

// allows says whether Options.Method lets method m give the figure.
func (r *regionRun) allows(m Method) bool { return r.o.Method == "" || r.o.Method == m }

// weighCounter reads the counter's candidate: its increase over the region (or its steady
// rate × the duration), and whether its readings inside resolve the region.
func (r *regionRun) weighCounter() {
	if ch, ok := r.tr.Channel(r.gpu, counterChannel); ok && ch.Quantity == trace.QEnergy && ch.Cumulative {
		r.ctrSeries = r.o.Cache.series(r.tr, r.gpu, counterChannel)
	}
	if r.ctrSeries.Len() == 0 {
		return
	}
	est := &r.est
	e, ok := trace.CounterDeltaReadings(r.ctrSeries, r.from, r.to)
	est.CounterJ, r.ctrOK = e.Joules(), ok
	if r.o.Steady {
		if rate, n, se := InsideRate(insideSamples(r.ctrSeries, r.from, r.to), r.from, r.to); n >= 2 {
			est.CounterJ, r.ctrOK, r.ctrSE = rate*r.dur.Seconds(), true, se
		}
	}
	r.res = CounterResolution(r.tr, r.gpu)
	r.ctrEnough, est.CounterReadings, est.CounterSpan = counterResolves(r.ctrSeries, r.from, r.to, r.res)
	r.ctrEnough = r.ctrEnough && r.ctrOK
}

// ctrWhy says why the counter does not give its own figure.
func (r *regionRun) ctrWhy() string {
	est := &r.est
	if !r.ctrOK && est.CounterReadings >= MinCounterReadings {
		// Enough readings inside, but none before the start or after the end (a region
		// that is the whole trace), or a reset: the edges cannot be interpolated.
		return fmt.Sprintf("%s has %d readings inside %s but none outside both its edges (or it reset), so its increase over %s cannot be told",
			counterChannel, est.CounterReadings, r.what, r.what)
	}
	return fmt.Sprintf("%s has %d readings inside %s spanning %s of its %s (its own figure wants %d spanning %.0f %% of it and %d steps of %s)",
		counterChannel, est.CounterReadings, r.what, fmtDur(est.CounterSpan), fmtDur(r.dur), MinCounterReadings, 100*MinCounterSpan, MinCounterSteps, fmtDur(r.res))
}

// weighCalibrated reads the calibrated ring's candidate: the calibration (given, or fitted
// over the whole trace), the ring through its own sensor model over the region, and
// whether it has the readings for a figure.
func (r *regionRun) weighCalibrated() {
	r.cal = r.o.Calibration
	if r.cal == nil && r.ctrSeries.Len() > 0 {
		if c, err := fitCalibration(r.tr, r.gpu, 0, 0, func(name string) trace.Readings { return r.o.Cache.series(r.tr, r.gpu, name) }); err == nil {
			r.cal = &c
		} else {
			r.calErr = err
		}
	}
	r.est.Calibration = r.cal
	if r.cal == nil {
		return
	}
	// The ring through its own sensor model (a boxcar's readings centred on their
	// windows, a lag inverted), then onto the counter's scale: the calibration fixes
	// the scale, the model the timing.
	ser, choice, _, _, err := prepare(r.tr, r.gpu, r.cal.Channel, r.o, true)
	if err != nil {
		return
	}
	r.calSer, r.calChoice = ser, choice
	r.calRes = ser.Energy(r.from, r.to)
	e, n, cov := r.calRes.Energy.Joules(), r.calRes.Samples, r.calRes.DataCoverage
	if r.o.Steady {
		if mean, k := InsideMean(insideSamples(r.o.Cache.series(r.tr, r.gpu, r.cal.Channel), r.from, r.to), r.from, r.to); k >= 2 {
			e, cov = mean*r.dur.Seconds(), 1
		}
	}
	if n >= MinChannelReadings && cov >= 0.99 && e > 0 {
		r.calOK, r.calRaw = true, e
		r.est.CalibratedJ, r.est.CalibratedReadings = r.cal.Energy(e, r.dur), n
	}
}

// takeCounter gives the counter's own figure, with its readings' and edges' components.
func (r *regionRun) takeCounter() {
	est := &r.est
	est.Method, est.Channel, est.Source, est.EnergyJ, est.Readings = Counter, counterChannel, counterChannel, est.CounterJ, est.CounterReadings
	est.Note = fmt.Sprintf("%s: %d readings inside, spanning %s of %s", counterChannel, est.CounterReadings, fmtDur(est.CounterSpan), fmtDur(r.dur))
	if r.o.Steady && r.ctrSE > 0 {
		est.add(Component{Name: "readings", HalfWidthJ: 1.96 * r.ctrSE * r.dur.Seconds(), Known: true,
			Note: "the standard error of the counter's rate over its readings inside (widened for their serial correlation), × the duration"})
		// The rate's span: each end reading may be late by up to res, uniformly and
		// independently (a poll that drifts against the counter's updates tilts the slope).
		est.add(Component{Name: "timing", HalfWidthJ: 1.96 * math.Sqrt(1.0/6) * r.res.Seconds() * math.Abs(est.CounterJ) / est.CounterSpan.Seconds(), Known: est.CounterSpan > 0,
			Note: fmt.Sprintf("the first and last readings inside may each be late by up to %s against the energy they report, which tilts the rate", fmtDur(r.res))})
	} else {
		est.add(Component{Name: "readings", HalfWidthJ: 2 * CounterQuantumJ, Known: true,
			Note: "the counter counts in mJ (NVML's unit): a quantum at each end"})
	}
	switch {
	case r.o.CounterEdges != nil:
		// The edges are the counter's own readings, stamped at their calls: each value is
		// the counter's last update, up to a period before, at the power drawn there
		// (the region's mean; a twin's job missed its truth by 2 % without this:
		// internal/cli TestJobCounterChannel).
		est.add(r.o.CounterEdges.Component(est.CounterJ/r.dur.Seconds(), r.what+"'s mean power"))
	case !r.o.Steady:
		est.add(Component{Name: "edges", HalfWidthJ: counterEdge(r.ctrSeries, r.from, r.res) + counterEdge(r.ctrSeries, r.to, r.res), Known: true,
			Note: fmt.Sprintf("at each end, a power change between the readings around it (placed within a quarter of their gap) and the reading's lateness (up to %s)", fmtDur(r.res))})
	}
}

// takeCalibrated gives the calibrated ring's figure, with its noise, calibration, model,
// edges and coverage components, checked against the counter (reference).
func (r *regionRun) takeCalibrated() {
	est, cal := &r.est, r.cal
	est.Method, est.Channel, est.EnergyJ, est.Readings = CalibratedRing, cal.Channel, est.CalibratedJ, est.CalibratedReadings
	est.Source = cal.Channel + " (calibrated to " + counterChannel + ")"
	if r.o.Steady {
		est.Note = fmt.Sprintf("%s: mean power × duration, × %.4f %+.2f W × duration", cal.Channel, cal.Gain, cal.OffsetW)
	} else {
		est.Note = fmt.Sprintf("%s: integral (%s inverted) × %.4f %+.2f W × duration", cal.Channel, r.calChoice.Model, cal.Gain, cal.OffsetW)
	}
	if r.ctrSeries.Len() > 0 {
		est.Note += "; " + r.ctrWhy()
	} else {
		est.Note += "; " + counterChannel + " does not cover " + r.what
	}
	est.add(noiseComponent(r.o.Cache.series(r.tr, r.gpu, cal.Channel), r.from, r.to, cal.Gain))
	est.add(Component{Name: "calibration", HalfWidthJ: cal.EnergyHalfWidth(r.calRaw, r.dur), Known: cal.GainSE > 0,
		Note: "the standard errors of the gain and offset fitted against the counter"})
	if r.o.Steady {
		return
	}
	est.add(modelComponent(r.calSer, r.calChoice.Model, r.calRes, r.from, r.to, cal.Gain))
	est.add(seriesEdges(r.calSer, r.calChoice.Model, r.calRes.Period, r.from, r.to, cal.Gain))
	est.add(coverageComponent(r.calSer, r.calChoice.Model, r.calRes, r.from, r.to, cal.Gain))
	if c, ok := ringLocked(r.tr, r.gpu, r.o, cal.Channel, r.calSer, r.calChoice.Model, r.calRes, r.from, r.to, cal.Gain); ok {
		est.add(c)
		est.warnLocked(c, r.warn)
	}
	if r.o.noReference {
		return
	}
	ref, refOK := referenceComponent(r.ctrSeries, r.res, r.from, r.to, r.o.spanFigure(r.tr, r.gpu, CalibratedRing, ""), loadSwing(r.tr, r.gpu, r.o, r.from, r.to), false)
	own := knownHalfWidth(est.Uncertainty.Components)
	if refOK {
		own = math.Hypot(own, ref.HalfWidthJ)
	}
	// The ring's figure anchored to the counter's increase around the region, where that
	// bound is the narrower (anchor.go).
	if an, ok := r.anchor(); ok && (an.comp.HalfWidthJ < own || an.share >= MinAnchorShare) {
		est.EnergyJ += an.shift
		est.CalibratedJ = est.EnergyJ
		est.Uncertainty.Components = []Component{an.comp}
		est.Note += fmt.Sprintf("; anchored to %s's increase around %s: %+.3g J", counterChannel, r.what, an.shift)
		if refOK && ref.HalfWidthJ > 0 {
			r.warn(CodeOffCounter, est.Channel, "%s disagrees with %s around %s beyond its own interval and the counter's timing (%s): a load locked to its sampling or a change its model misreads; the figure is anchored to the counter's increase there (%+.3g J), its interval (±%.3g J) bounds what the anchor cannot place",
				est.Channel, counterChannel, r.what, ref.Note, an.shift, an.comp.HalfWidthJ)
		}
		return
	}
	if refOK {
		est.add(ref)
		est.warnOffCounter(ref, r.warn)
	}
	if c, ok := r.samplersComponent(); ok {
		est.add(c)
		est.warnLocked(c, r.warn)
	}
}

// takeInversion gives the inverted channel's figure, on the counter's scale where the
// channel was named and the counter can fit one, checked against the counter; where the
// default fell to it, a warning says why the counter and the ring could not be had.
func (r *regionRun) takeInversion() {
	est := &r.est
	est.invert(r.tr, r.gpu, r.o, r.what, r.warn)
	if est.Method == Inversion && r.ctrSeries.Len() > 0 {
		r.checkInversionAgainstCounter()
	}
	if r.named && est.Method == Inversion {
		est.Note += fmt.Sprintf("; asked for by name: the channel's own figure (the default would be %s)", defaultWhy(r.ctrEnough, r.calOK, est.CounterJ, est.CalibratedJ))
	}
	if est.Method == Inversion && r.ctrSeries.Len() > 0 && r.o.Method == "" {
		r.warnUncalibrated()
	}
}

// checkInversionAgainstCounter puts a named channel's figure on the counter's scale
// (issue 28) and adds the reference component: the inversion against the counter (not
// where this is the reference's own figure over a span, Options.noReference).
func (r *regionRun) checkInversionAgainstCounter() {
	est := &r.est
	ser, choice, _, copt, err := prepare(r.tr, r.gpu, est.Channel, r.o, false)
	if err != nil {
		return
	}
	if r.named {
		// The channel's own figure on the counter's scale (issue 28).
		sc, err := r.o.Cache.scale(serKey{r.gpu, est.Channel, choice.Model, copt}, ser, r.ctrSeries, r.res)
		if err == nil && (math.Abs(sc.Gain-1) > MaxScaleGainError || math.Abs(sc.OffsetW) > MaxScaleOffsetW) {
			// One board's channel and counter differ by tenths of a percent; a fit
			// further off was led by aliased readings (a load locked to a partial
			// window): not a scale.
			err = fmt.Errorf("the fit says × %.4f %+.2f W, more than one board's channels differ", sc.Gain, sc.OffsetW)
		}
		if err == nil {
			est.applyScale(sc, r.dur)
		} else {
			est.Note += "; its scale is its own (" + counterChannel + " could not calibrate it: " + err.Error() + ")"
		}
	}
	if r.o.noReference {
		return
	}
	if c, ok := referenceComponent(r.ctrSeries, r.res, r.from, r.to, r.o.spanFigure(r.tr, r.gpu, Inversion, est.Channel), loadSwing(r.tr, r.gpu, r.o, r.from, r.to), true); ok {
		est.add(c)
		est.warnOffCounter(c, r.warn)
	}
}

// warnUncalibrated says why the default fell to the inversion where a counter is there:
// too few readings for the calibrated figure, or no calibration and why.
func (r *regionRun) warnUncalibrated() {
	est := &r.est
	why := "no calibration"
	if r.calErr != nil {
		why = r.calErr.Error()
	}
	est.Note += "; " + r.ctrWhy()
	if r.cal != nil && r.cal.Channel == est.Channel && r.calSer != nil {
		// A calibration there is, but not enough readings for its figure: say so,
		// not "no calibration" (marked regions of 20 ms steps were told that).
		r.warn(CodeUncalibrated, est.Channel, "%s has %d readings inside %s (its calibrated figure wants %d covering it), and %s: the energy is %s's own, with its gain and offset errors",
			est.Channel, r.calRes.Samples, r.what, MinChannelReadings, r.ctrWhy(), est.Channel)
		return
	}
	r.warn(CodeUncalibrated, est.Channel, "%s could not be calibrated to %s (%s), and %s: the energy is %s's own, with its gain and offset errors",
		est.Channel, counterChannel, why, r.ctrWhy(), est.Channel)
}

// takeInterpolatedCounter gives the counter interpolated across readings outside the
// region, the last resort: the power across the edges is not known (the interval
// partial) unless Options.CounterEdges bounds it.
func (r *regionRun) takeInterpolatedCounter() {
	est := &r.est
	est.Method, est.Channel, est.Source, est.EnergyJ, est.Readings = CounterInterpolated, counterChannel, counterChannel, est.CounterJ, est.CounterReadings
	est.Note = counterChannel + ", interpolated across readings outside " + r.what
	if p := pollInterval(r.tr, r.gpu, counterChannel); p > 0 {
		r.warn(CodeInterpolated, counterChannel, "%s: the energy is interpolated across readings up to %s outside it (the counter is read every %s), where the power may differ", r.ctrWhy(), fmtDur(p), fmtDur(p))
	} else {
		r.warn(CodeInterpolated, counterChannel, "%s: the energy is interpolated across readings outside it, where the power may differ", r.ctrWhy())
	}
	if r.o.CounterEdges != nil {
		// The power outside is not known; the board draws at most its limit.
		est.add(r.o.CounterEdges.Component(r.o.CounterEdges.LimitW, "its power limit"))
		return
	}
	est.add(Component{Name: "edges", Note: "the power outside the region, across which the counter is interpolated, is not known"})
}

// refuseForced empties the estimate where the method Options.Method forces cannot be had,
// with a warning that says why.
func (r *regionRun) refuseForced() {
	why := ""
	switch r.o.Method {
	case Counter:
		why = "no counter"
		if r.ctrSeries.Len() > 0 {
			why = r.ctrWhy()
		}
	case CalibratedRing:
		why = "no calibrated channel"
		if r.calErr != nil {
			why = r.calErr.Error()
		} else if r.cal != nil {
			why = r.cal.Channel + " has too few readings inside " + r.what + " or does not cover it"
		}
	case Inversion:
		why = "no power channel's model could be inverted over " + r.what
		if r.named {
			why = r.o.Channel + "'s model could not be inverted over " + r.what
		}
	}
	r.est.Method, r.est.EnergyJ, r.est.Uncertainty.Components = NoFigure, 0, []Component{}
	r.warn(CodeNoFigure, "", "the method %s was asked for and cannot be had: %s", r.o.Method, why)
}

// invertForComparison computes the inversion beside a preferred method's figure
// (Options.Invert), its warnings dropped.
func (r *regionRun) invertForComparison() {
	sub := Estimate{From: r.from, To: r.to}
	sub.invert(r.tr, r.gpu, r.o, r.what, func(status.Code, string, string, ...any) {})
	r.est.Inversion, r.est.Choice = sub.Inversion, sub.Choice
	if sub.Method == Inversion {
		sub.interval()
		r.est.InversionUncertainty = &sub.Uncertainty
	}
}

// invert sets est from the inversion of the channel's sensor model.
func (est *Estimate) invert(tr *trace.Trace, gpu int, o Options, what string, warn func(status.Code, string, string, ...any)) {
	name := o.Channel
	if name == "" {
		n, err := correct.PickChannel(tr, gpu)
		if err != nil {
			return
		}
		name = n
	}
	ser, choice, samples, _, err := prepare(tr, gpu, name, o, false)
	if err != nil {
		if samples.Len() > 0 {
			warn(CodeInversion, name, "%v", err)
		}
		return
	}
	r := ser.Energy(est.From, est.To)
	est.Inversion, est.Choice = &r, &choice
	if r.Covered == 0 {
		return
	}
	est.Method, est.Channel, est.EnergyJ, est.Readings = Inversion, name, r.Energy.Joules(), r.Samples
	est.Source = name + " (" + choice.Model.String() + " inverted)"
	est.Note = fmt.Sprintf("%s with its sensor model %s (%s) inverted", name, choice.Model, choice.Source)
	for _, w := range r.Warnings {
		warn(CodeInversion, name, "%s: %s", name, w)
	}
	if choice.Defaulted != "" {
		warn(CodeModelDefault, name, "%s's model (%s) came without intervals: gpuwatt assumed %s and propagated them (a sensor.json from gpuwatt sensor states measured ones)",
			name, choice.Source, choice.Defaulted)
	}
	est.add(noiseComponent(samples, est.From, est.To, 1))
	m := choice.Model
	est.add(modelComponent(ser, m, r, est.From, est.To, 1))
	if r.Period > 0 {
		est.add(seriesEdges(ser, m, r.Period, est.From, est.To, 1))
	}
	if len(r.Gaps) > 0 {
		est.add(gapsComponent(ser, r, est.From, est.To))
	}
	est.add(coverageComponent(ser, m, r, est.From, est.To, 1))
	if c, ok := rippleComponent(ser, m, r.Period, est.From, est.To, 1); ok {
		est.add(c)
	}
	if c, ok := ringLocked(tr, gpu, o, name, ser, m, r, est.From, est.To, 1); ok {
		est.add(c)
		est.warnLocked(c, warn)
	}
	if d, ok := ser.StepSpread(est.From, est.To); ok {
		est.add(Component{Name: "shape", HalfWidthJ: d, Known: true,
			Note: "the inversion's steps between readings against the plain inversion, which assumes no shape"})
	}
	if c, ok := blindComponent(tr, gpu, ser, r, est.From, est.To); ok {
		est.add(c)
	}
	if c, ok := sparseComponent(ser, r, est.From, est.To, 1); ok {
		est.add(c)
		warn(CodeFewReadings, name, "only %d readings of %s inside %s (%s of it, update period %s): the figure rests on them; the interval spans what the readings around it allow",
			r.Samples, name, what, fmtDur(est.To-est.From), fmtDur(r.Period))
	}
}

// The most a named channel's scale fitted to the counter may differ from 1 × + 0 W and
// still be taken as its scale (FitScale): the H200's ring and counter agree within 0.14 %.
const (
	MaxScaleGainError = 0.03
	MaxScaleOffsetW   = 15
)

// applyScale puts an inverted channel's figure on the counter's scale (sc, fitted by
// FitScale over the recording): its components scale with the gain, and the fit's own
// uncertainty is one more.
func (est *Estimate) applyScale(sc Calibration, dur time.Duration) {
	raw := est.EnergyJ
	est.EnergyJ = sc.Energy(raw, dur)
	for i := range est.Uncertainty.Components {
		est.Uncertainty.Components[i].HalfWidthJ *= math.Abs(sc.Gain)
	}
	est.add(Component{Name: "calibration", HalfWidthJ: sc.EnergyHalfWidth(raw, dur), Known: sc.GainSE > 0,
		Note: "the standard errors of the scale (gain and offset) fitted against the counter"})
	est.Source += fmt.Sprintf(", on %s's scale (× %.4f %+.2f W)", counterChannel, sc.Gain, sc.OffsetW)
	sc.Channel = est.Channel
	est.Scale = &sc
}

// defaultWhy says what the default method would have given: "energy.total, 812.3 J".
func defaultWhy(ctrEnough, calOK bool, ctrJ, calJ float64) string {
	switch {
	case ctrEnough:
		return fmt.Sprintf("%s's own, %.4g J", counterChannel, ctrJ)
	case calOK:
		return fmt.Sprintf("the calibrated ring's, %.4g J", calJ)
	}
	return "this inversion too"
}

// MinReferenceSpan is the least span of the counter's readings a channel's figure is
// checked against (referenceComponent): over shorter spans the counter's own timing
// (each reading up to its resolution late) swamps what the check could find.
const MinReferenceSpan = 2 * time.Second

// counterBracket returns the counter readings i < j that bracket [from, to] (the last at
// or before from, the first at or after to), widened to MinReferenceSpan where the readings
// allow; ok is false where they do not bracket it or the counter resets between them (no
// increase to compare).
func counterBracket(ctr trace.Readings, from, to time.Duration) (i, j int, ok bool) {
	T, V := ctr.T, ctr.V
	n := len(T)
	if n < 2 {
		return 0, 0, false
	}
	j = ctr.Search(to) // first reading at or after to
	i = ctr.Search(from)
	if i < n && T[i] > from {
		i--
	}
	if i < 0 || j >= n || i >= j {
		return 0, 0, false
	}
	for T[j]-T[i] < MinReferenceSpan && (i > 0 || j < n-1) {
		if i > 0 {
			i--
		}
		if T[j]-T[i] < MinReferenceSpan && j < n-1 {
			j++
		}
	}
	for k := i + 1; k <= j; k++ {
		if V[k] < V[k-1] {
			return 0, 0, false
		}
	}
	return i, j, true
}

// referenceComponent checks a channel's figure against the energy counter of the same
// board: over the counter's readings that bracket the region (widened to MinReferenceSpan),
// the channel's energy (energyOf, on the figure's scale) and the counter's increase should
// agree within the counter's own timing (each end's value up to res late, at the power
// there). What they differ by beyond that is an error of the channel that its own
// components did not bound: a load locked in phase with the sensor (every reading sees
// the same part of a repeating load: a 100 ms square wave read +27 % by the twin's
// power.instant against ±3.8 %), a ramp or an edge the model misreads. It is added whole,
// since where in the span the error lies is not known. The span is checked in pieces of
// at least MinReferenceSpan between the counter's readings (referencePieces), each piece's
// error counted on its own: errors of opposite signs in two pieces would cancel over the
// whole span, and the region may hold one of them whole (the H200's power.usage read a
// 20 ms-slot ramp −12.2 %; its span +1.4 % and −9.8 % in two pieces, −5.8 % whole, which
// fell short: results/nvidia-h200/2026-11-28-intervals-shapes-4). ok is false where the counter does not bracket the region.
//
// The calibrated ring's check (inPieces false) takes the span in one piece: its anchor
// (anchor.go) weighs the ring's own interval against this one, and the default's figures
// were tuned on the recorded runs with the span whole.
func referenceComponent(ctr trace.Readings, res, from, to time.Duration, energyOf func(a, b time.Duration) (float64, float64, bool), swing float64, inPieces bool) (Component, bool) {
	i, j, ok := counterBracket(ctr, from, to)
	if !ok {
		return Component{}, false
	}
	pieces := [][2]int{{i, j}}
	if inPieces {
		pieces = referencePieces(ctr.T, i, j)
	}
	c := Component{Name: "reference", Known: true}
	var notes []string
	var whole float64 // Σ |diff| + tol over the pieces
	beyond := false
	for _, p := range pieces {
		d, ok := referencePiece(ctr, res, p[0], p[1], energyOf)
		if !ok {
			return Component{}, false
		}
		notes = append(notes, d.note)
		whole += d.whole
		beyond = beyond || d.beyond
	}
	where := strings.Join(notes, "; ")
	if !beyond {
		c.Note = where + ": nothing added"
		return c, true
	}
	// Somewhere in the span the channel's components missed an error (a load locked to
	// its sampling, a ramp its model misreads), by diff ± tol, all of which may lie in the
	// region; and where one piece shows it misread, another's difference within its own
	// interval is no longer only noise (the H200's power.usage read a 20 ms square wave
	// +9.5 %: +8.3 % over one piece, +3.8 % over the next, just inside its ±3.8 %:
	// results/nvidia-h200/2026-11-28-intervals-shapes-3), so every piece counts. Beyond the timing alone
	// (|diff| − tol, as before) it missed the H200's 3 s ramp, −8.5 % against ±7.0 %
	// (results/nvidia-h200/2026-11-28-intervals-shapes); added whenever it exceeded the
	// timing, it widened every region of a sparse counter's 10–20 s spans.
	c.HalfWidthJ = whole
	c.Note = fmt.Sprintf("%s: its error there, up to %.3g J, may all lie in the region: added whole", where, c.HalfWidthJ)
	// But no more than the load's swing over the region allows: a channel misreads a
	// load's shape (a lock, a ramp) by at most what the power spans there, for as long as
	// the region lasts (a 35 ms region in a 10 s span was given ±58 J on its 7 J).
	if lim := swing * (to - from).Seconds(); swing > 0 && lim < c.HalfWidthJ {
		c.HalfWidthJ = lim
		c.Note += fmt.Sprintf(", at most the power's swing around the region (%.3g W, the board's channels) × its length: %.3g J", swing, lim)
	}
	return c, true
}

// referencePieces splits the counter's readings i..j (times T) into consecutive pieces
// [k0, k1] of at least MinReferenceSpan each (the last one joined to the one before where
// shorter); one piece where the span is shorter than two.
func referencePieces(T []time.Duration, i, j int) [][2]int {
	var out [][2]int
	k0 := i
	for k := i + 1; k <= j; k++ {
		if T[k]-T[k0] >= MinReferenceSpan && T[j]-T[k] >= MinReferenceSpan {
			out = append(out, [2]int{k0, k})
			k0 = k
		}
	}
	return append(out, [2]int{k0, j})
}

// counterTiming is the 95 % bound (J) on the counter's increase between two readings from
// their timing: each up to res late, uniformly and independently, at power pa and pb (W)
// there, and each value no better than the counter's unit.
func counterTiming(res time.Duration, pa, pb float64) float64 {
	return 1.96*res.Seconds()*math.Sqrt((pa*pa+pb*pb)/12) + 2*CounterQuantumJ
}

// referenceCheck is one piece of the reference check: what the channel is off the
// counter by there, with the counter's timing (|diff| + tol), whether that is beyond its
// own interval and the timing, and a note saying so.
type referenceCheck struct {
	whole  float64
	beyond bool
	note   string
}

// referencePiece checks the channel against the counter between its readings i < j.
func referencePiece(ctr trace.Readings, res time.Duration, i, j int, energyOf func(a, b time.Duration) (float64, float64, bool)) (referenceCheck, bool) {
	T, V, n := ctr.T, ctr.V, len(ctr.T)
	a, b := T[i], T[j]
	ech, own, ok := energyOf(a, b)
	if !ok {
		return referenceCheck{}, false
	}
	ectr := V[j] - V[i]
	// the counter's timing: each end's value may be up to res late, at the power there
	// (the counter's own rate over the readings around it), uniform and independent
	rate := func(k int) float64 {
		lo, hi := max(k-1, 0), min(k+1, n-1)
		if T[hi] <= T[lo] {
			return 0
		}
		return max(0, (V[hi]-V[lo])/(T[hi]-T[lo]).Seconds())
	}
	pa, pb := rate(i), rate(j)
	tol := counterTiming(res, pa, pb)
	diff := ech - ectr
	where := fmt.Sprintf("against %s over %s (%s to %s): the channel %+.3g J (%+.2f %%)",
		counterChannel, fmtDur(b-a), correct.FmtS(a.Seconds()), correct.FmtS(b.Seconds()), diff, 100*diff/math.Max(math.Abs(ectr), 1e-9))
	// What the channel's own interval over the piece and the counter's timing allow.
	c := referenceCheck{whole: math.Abs(diff) + tol, beyond: math.Abs(diff) > math.Hypot(own, tol)}
	c.note = fmt.Sprintf("%s, within the channel's own interval there (±%.3g J) and the counter's timing (±%.3g J)", where, own, tol)
	if c.beyond {
		c.note = fmt.Sprintf("%s, beyond the channel's own interval there (±%.3g J) and the counter's timing (±%.3g J)", where, own, tol)
	}
	return c, true
}

// loadSwing is the range of every board power channel's readings over [from, to] widened
// by a second's worth of the 100 ms channels (two of their updates) either side: how far
// the power went there, as the sensors saw it (0 where none has a reading). A load locked
// to one channel's sampling shows in another's (the ring's 20 ms points, the instant's
// windows, jittered against the load).
func loadSwing(tr *trace.Trace, gpu int, o Options, from, to time.Duration) float64 {
	const pad = 200 * time.Millisecond
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, name := range trace.PowerPreference {
		s := o.Cache.series(tr, gpu, name)
		if s.Len() == 0 {
			continue
		}
		for _, v := range s.Slice(s.Search(from-pad), s.Search(to+pad)).V {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if !(hi > lo) {
		return 0
	}
	return hi - lo
}

// CodeOffCounter: the figure's channel disagrees with the energy counter around the
// region beyond the counter's timing (referenceComponent).
const CodeOffCounter status.Code = "channel_off_counter"

// warnOffCounter says where the reference component found the channel off the counter: a
// load locked to the sensor's sampling (the H200's ring read a 3 s ramp of 20 ms duty
// cycles −9 %) or a change its model misreads; the figure may be off by as much.
func (est *Estimate) warnOffCounter(c Component, warn func(status.Code, string, string, ...any)) {
	if c.HalfWidthJ <= 0 {
		return
	}
	warn(CodeOffCounter, est.Channel, "%s disagrees with %s around the region beyond the counter's timing (%s): a load locked to the sensor's sampling (a period near a multiple of its update period) or a change its model misreads; the interval includes it (±%.3g J), the figure may be off by as much",
		est.Channel, counterChannel, c.Note, c.HalfWidthJ)
}

// gapsComponent widens the interval over the gaps in the readings inside the region: the
// power there is interpolated, and may be anything the region's readings span, so each
// gap adds its length × half that range (summed: one gap's error does not cancel
// another's). Where the readings do not vary, nothing bounds it: not known (partial).
func gapsComponent(ser *correct.Series, r correct.Result, from, to time.Duration) Component {
	var lost time.Duration
	for _, g := range r.Gaps {
		lost += g.Len()
	}
	c := Component{Name: "gaps", Note: fmt.Sprintf("%d gap(s) in the readings (%s in all, the first at %s): the power there may be anything the region's readings span",
		len(r.Gaps), fmtDur(lost), correct.FmtS(r.Gaps[0].From.Seconds()))}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range ser.Readings(from, to).V {
		lo, hi = min(lo, v), max(hi, v)
	}
	if !(lo < hi) {
		c.Note += "; the readings around it do not vary, so nothing bounds it: not included"
		return c
	}
	c.HalfWidthJ, c.Known = lost.Seconds()*(hi-lo)/2, true
	return c
}

// CodeModelDefault: a sensor model given without intervals got the default ones
// (correct.DefaultIntervals).
const CodeModelDefault status.Code = "model_default_uncertainty"

// CounterQuantumJ is the energy counter's unit (NVML counts mJ).
const CounterQuantumJ = 1e-3

// CodeFewReadings: a region with too few readings of the channel inside.
const CodeFewReadings status.Code = "few_readings_in_region"

// modelComponent is the sensor model's parameters propagated: the energy again with each
// parameter that carries an interval at either end of it (the largest change, × gain).
func modelComponent(ser *correct.Series, m sensormodel.Model, r correct.Result, from, to time.Duration, gain float64) Component {
	hw, known := 0.0, false
	for _, v := range modelVariants(m) {
		if e, ok := ser.WithModel(v).Joules(from, to); ok {
			hw, known = max(hw, math.Abs(e-r.Energy.Joules())), true
		}
	}
	c := Component{Name: "model", HalfWidthJ: math.Abs(gain) * hw, Known: known,
		Note: "the energy again at each end of the model's parameter intervals (" + ciNames(m) + ")"}
	if !known {
		if m.Kind() == sensormodel.None && m.Delay == 0 {
			c.Known, c.Note = true, "the model has no parameter to propagate"
		} else {
			c.Note = "the model's parameters carry no interval (this model's own uncertainty is not included: pass a sensor.json from gpuwatt sensor)"
		}
	}
	return c
}

// ciNames names the parameters of m that carry an interval: "tau, delay".
func ciNames(m sensormodel.Model) string {
	var n []string
	for _, p := range []struct {
		name string
		ok   bool
	}{{"period", m.CI.Period.Known()}, {"window", m.CI.Window.Known()}, {"tau", m.CI.Tau.Known()}, {"delay", m.CI.Delay.Known()}} {
		if p.ok {
			n = append(n, p.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// coverageComponent bounds what the readings do not resolve: in each update period T the
// sensor sees a share c of the time (a boxcar's window W, a lag's 2·tau, W + 2·tau for a
// window behind a lag; sensormodel.Model.Coverage) and its update instants jitter by σ
// (the robust spread of the intervals between readings), so a share u = 1 − c + 2σ/T of
// each period is unresolved. The load's power in that part is a fresh draw of its
// fluctuation, whose spread the neighbouring readings' difference estimates (σ = |ΔP|/√2:
// a power-capped load on an H200 swings 570–740 W between 100 ms readings, beyond the
// readings on either side), independently from period to period. A load that changes
// faster than T shows as readings that differ, and widens it; a steady load leaves it near
// zero; a load locked in phase with the sensor is not bounded (docs/energy.md).
func coverageComponent(ser *correct.Series, m sensormodel.Model, r correct.Result, from, to time.Duration, gain float64) Component {
	T := r.Period
	c := Component{Name: "coverage"}
	if T <= 0 {
		c.Note = "the update period is unknown: what the sensor does not resolve is not bounded"
		return c
	}
	pts := ser.Readings(from-T, to+T)
	if pts.Len() < 2 {
		c.Note = "too few readings to bound what the sensor does not resolve"
		return c
	}
	if m.Kind() == sensormodel.None {
		return betweenReadings(ser, from, to, gain)
	}
	seen := m.Coverage(T)
	switch {
	case m.Kind() == sensormodel.Boxcar && m.Tau > 0:
		seen = min(1, float64(m.Window+2*m.Tau)/float64(T))
	case m.Kind() == sensormodel.RC:
		// point readings of a lagged power: the lag smooths what falls between readings,
		// the more the longer tau is against T
		k := 2 * m.Tau.Seconds() / T.Seconds()
		seen = 1 - 1/(1+k*k)
	}
	jit := max(intervalSpread(ser.Readings(from-10*T, to+10*T))/T.Seconds(), MinTimingSpread)
	if m.Kind() == sensormodel.Boxcar && m.Tau == 0 && float64(m.Window) >= float64(T)*(1+2*jit) {
		// Windows that overlap by more than their updates jitter see every instant: nothing
		// is unresolved (a 1 s average had ±100 J of coverage on 2 s regions; issue 28).
		c.HalfWidthJ, c.Known = 0, true
		c.Note = fmt.Sprintf("the %s window covers each %s period whole, with room for its updates' jitter (%.1f %%): nothing is unseen", fmtDur(m.Window), fmtDur(T), 100*jit)
		return c
	}
	u := min(1, 1-seen+2*jit)
	c.Note = fmt.Sprintf("%.0f %% of each %s period is not resolved (the sensor sees %.0f %% of it; its updates jitter by %.1f %%): the power there varies as much as the readings around it do (a load locked in phase with the sensor is not bounded)",
		100*u, fmtDur(T), 100*seen, 100*jit)
	unseen := u * T.Seconds()
	var ss float64
	held := 0
	partial := m.Kind() == sensormodel.Boxcar && m.Window < T
	pt, pv := pts.T, pts.V
	for i := 1; i < len(pt); i++ {
		un := unseen
		// A partial window's value held for more than 1.5 periods (not read, or not updating:
		// an H200's power.instant at idle repeats its value for up to 400 ms) leaves the
		// whole interval but its last window unseen: a step there may lie anywhere in it
		// (a 1 s burst's start placed 110 ms early, +13.5 %: docs/energy.md).
		if dt := pt[i] - pt[i-1]; partial && dt*2 > 3*T {
			un = max(un, dt.Seconds()-seen*T.Seconds()+2*jit*T.Seconds())
			if pv[i] != pv[i-1] {
				held++
			}
		}
		d := (pv[i] - pv[i-1]) * un
		ss += d * d / 2
	}
	if held > 0 {
		c.Note += fmt.Sprintf("; %d change(s) after a value held for more than 1.5 periods count their whole unseen interval", held)
	}
	c.HalfWidthJ, c.Known = 1.96*math.Abs(gain)*math.Sqrt(ss), true
	return c
}

// betweenReadings is the coverage of point readings (model none: the readings are the
// power at their instants): between two readings dt apart whose values differ by ΔP, the
// power may have changed anywhere, so the trapezoid is off by up to ΔP·dt/2 (uniform:
// σ = |ΔP|·dt/√12), independently from interval to interval. An irregular log (an external
// meter at 2 ms in bursts, 100 ms between) gets each interval's own term.
func betweenReadings(ser *correct.Series, from, to time.Duration, gain float64) Component {
	c := Component{Name: "coverage", Note: "point readings: between two readings the power may have changed anywhere (|ΔP| × their gap / √12 each)"}
	// the intervals that reach into the region, clipped to it (a minute either side holds
	// the readings around its edges; the view copies nothing)
	pts := ser.Readings(from-time.Minute, to+time.Minute)
	pt, pv := pts.T, pts.V
	var ss float64
	for i := max(1, pts.Search(from)); i < len(pt) && pt[i-1] < to; i++ {
		a, b := max(pt[i-1], from), min(pt[i], to)
		if b <= a {
			continue
		}
		d := (pv[i] - pv[i-1]) * (b - a).Seconds()
		ss += d * d / 12
	}
	c.HalfWidthJ, c.Known = 1.96*math.Abs(gain)*math.Sqrt(ss), true
	return c
}

// MinTimingSpread is the least spread of a sensor's update instants assumed, as a share of
// its period: a trace's timestamps may be snapped to the driver's grid (correct's lattice)
// while the updates themselves wander; on an H200 20–28 % of the ring's timestamps lie
// off its 20 ms grid by up to 14 ms (results/nvidia-h200, FACTS).
const MinTimingSpread = 0.025

// intervalSpread is the robust standard deviation (1.4826 × the median absolute
// deviation) of the intervals between consecutive readings, in seconds; 0 for fewer than
// three readings.
func intervalSpread(s trace.Readings) float64 {
	t := s.T
	if len(t) < 3 {
		return 0
	}
	if mad, ok := spreadByCounts(t); ok {
		return 1.4826 * mad
	}
	iv := make([]float64, len(t)-1)
	for i := 1; i < len(t); i++ {
		iv[i-1] = (t[i] - t[i-1]).Seconds()
	}
	// Both medians on the one scratch slice, sorted in place: a median is the multiset's,
	// whatever the order the deviations are taken in.
	med := medianInPlace(iv)
	for i := range iv {
		iv[i] = math.Abs(iv[i] - med)
	}
	return 1.4826 * medianInPlace(iv)
}

// spreadByCounts is the median absolute deviation of the intervals between times t (in
// seconds) from a count of each distinct interval, where there are at most 4096 of them
// (a trace's stamps are µs on a regular poll or a driver's grid: a few): the same figure
// as from the intervals sorted (a median is a multiset's), without an array of them.
func spreadByCounts(t []time.Duration) (float64, bool) {
	const most = 4096
	counts := map[time.Duration]int{}
	last, run := t[1]-t[0], 0
	for i := 1; i < len(t); i++ {
		d := t[i] - t[i-1]
		if d == last {
			run++
			continue
		}
		counts[last] += run
		last, run = d, 1
		if len(counts) > most {
			return 0, false
		}
	}
	counts[last] += run
	if len(counts) > most {
		return 0, false
	}
	n := len(t) - 1
	type kc struct {
		x float64
		c int
	}
	vals := make([]kc, 0, len(counts))
	for d, c := range counts {
		vals = append(vals, kc{d.Seconds(), c})
	}
	// the r-th (from 0) of the values in order, each as often as it is counted
	rank := func(v []kc, r int) float64 {
		for _, x := range v {
			if r < x.c {
				return x.x
			}
			r -= x.c
		}
		return v[len(v)-1].x
	}
	median := func(v []kc) float64 {
		slices.SortFunc(v, func(a, b kc) int { return cmp.Compare(a.x, b.x) })
		if n%2 == 1 {
			return rank(v, n/2)
		}
		return (rank(v, n/2-1) + rank(v, n/2)) / 2
	}
	med := median(vals)
	for i := range vals {
		vals[i].x = math.Abs(vals[i].x - med)
	}
	return median(vals), true
}

// medianInPlace is median(v), sorting v.
func medianInPlace(w []float64) float64 {
	slices.Sort(w)
	n := len(w)
	if n%2 == 1 {
		return w[n/2]
	}
	return (w[n/2-1] + w[n/2]) / 2
}

// median is the middle of v, the mean of the two middle values for an even count (not
// correct's, which takes the upper one and samples long slices: the spread of a few
// hundred intervals wants the exact figure). v is not modified.
func median(v []float64) float64 {
	w := append([]float64(nil), v...)
	sort.Float64s(w)
	n := len(w)
	if n%2 == 1 {
		return w[n/2]
	}
	return (w[n/2-1] + w[n/2]) / 2
}

// BlindPeriods: a region shorter than this many update periods of a sensor that sees only
// part of each gets the blind component.
const BlindPeriods = 5

// blindComponent bounds what a sensor that sees only part of each period (c < 1) may miss
// entirely in a short region (under BlindPeriods periods): a burst that falls in the unseen
// part leaves no trace in the readings (power.instant missed 50 ms bf16 bursts on an H200,
// −32 % to −39 % on their 0.4 s windows), so the coverage component, made of the readings'
// differences, does not see it either. The unseen time, (1 − c) × the duration, may hold any
// power from the lowest reading around the region up to the board's power limit: half that
// range × the unseen time. Without a known limit, the component is not known (partial).
func blindComponent(tr *trace.Trace, gpu int, ser *correct.Series, r correct.Result, from, to time.Duration) (Component, bool) {
	T := r.Period
	if r.SensorCoverage >= 1 || T <= 0 || to-from >= BlindPeriods*T {
		return Component{}, false
	}
	unseen := (1 - r.SensorCoverage) * (to - from).Seconds()
	c := Component{Name: "blind", Note: fmt.Sprintf("the sensor does not see %s of the region (%.0f %% of each %s period): a burst there leaves no trace in the readings", FmtDur(unseen), 100*(1-r.SensorCoverage), fmtDur(T))}
	limit := 0.0
	for _, g := range tr.Meta.GPUs {
		if g.Index == gpu {
			limit = g.PowerLimitW
		}
	}
	lo := math.Inf(1)
	for _, v := range ser.Readings(from-T, to+T).V {
		lo = min(lo, v)
	}
	if limit <= 0 || math.IsInf(lo, 1) || limit <= lo {
		c.Note += "; the board's power limit is not in the trace, so nothing bounds it"
		return c, true
	}
	c.HalfWidthJ, c.Known = unseen*(limit-lo)/2, true
	c.Note += fmt.Sprintf(": any power from %.0f W to the board's limit (%.0f W) there", lo, limit)
	return c, true
}

// MinSparseReadings: a region with fewer readings inside (or shorter than two update
// periods) gets the sparse component.
const MinSparseReadings = 3

// sparseComponent is the interval of a region that holds fewer than MinSparseReadings
// readings or spans fewer than two update periods: the power inside may be anything the
// corrected power spans over the periods around the region (one update period each, from
// two periods before it to two after), so the half-width reaches from the figure to the
// farther end of that range × the duration. ok is false where the region has readings enough.
func sparseComponent(ser *correct.Series, r correct.Result, from, to time.Duration, gain float64) (Component, bool) {
	if r.Samples >= MinSparseReadings && (r.Period <= 0 || to-from >= 2*r.Period) {
		return Component{}, false
	}
	T := max(r.Period, time.Millisecond)
	lo, hi := math.Inf(1), math.Inf(-1)
	// The full inversion: the cheap one cut short (QuickMean) understates the swings a
	// short region's neighbours hold (a power.usage burst of 0.1 s on an H200 fell outside).
	for _, a := range sparseWindows(ser, addSat(from, -2*T), addSat(to, 2*T), T) {
		if mp, cov := ser.MeanPower(a, addSat(a, T)); cov > 0.5 {
			lo, hi = min(lo, float64(mp)), max(hi, float64(mp))
		}
	}
	c := Component{Name: "sparse", Note: fmt.Sprintf("%d readings inside: the power may be anything the corrected power spans over the update periods around the region", r.Samples)}
	if lo > hi {
		c.Note = "no corrected power around the region"
		return c, true
	}
	d := (to - from).Seconds()
	c.HalfWidthJ, c.Known = math.Abs(gain)*max(math.Abs(r.Energy.Joules()-lo*d), math.Abs(hi*d-r.Energy.Joules())), true
	return c, true
}

// sparseWindows returns the starts of the update periods [a, a+T) on the grid from start to
// end that sparseComponent looks at: every one where the grid holds few periods for its
// readings, else only those within two periods of a reading or of either end. A region with
// a reading or two inside a long gap (one reading 56 days after the rest, read every 15 ms:
// 3·10⁸ periods, 324 s of inversions for one region, found by FuzzPipeline) then costs work
// in proportion to its readings, not to its length over the period; what it leaves out lies
// between readings, where the corrected power is interpolated from the periods around them.
// The grid is counted in unsigned steps: a period learned from two readings 63 years apart
// overflowed start + k·T (FuzzPipeline).
func sparseWindows(ser *correct.Series, start, end, T time.Duration) []time.Duration {
	if end <= start || T <= 0 {
		return nil
	}
	span, step := uint64(end-start), uint64(T) // end − start < 2⁶⁴: exact as unsigned
	n := span / step
	if span%step != 0 {
		n++
	}
	at := func(k uint64) time.Duration { return start + time.Duration(k*step) } // within [start, end)
	rd := ser.Readings(addSat(start, -T), addSat(end, T))
	if n <= 4*uint64(rd.Len())+16 {
		out := make([]time.Duration, 0, n)
		for k := uint64(0); k < n; k++ {
			out = append(out, at(k))
		}
		return out
	}
	cells := map[uint64]bool{}
	near := func(k uint64) {
		for j := k - min(k, 2); j <= min(n-1, k+2); j++ {
			cells[j] = true
		}
	}
	near(0)
	near(n - 1)
	for _, t := range rd.T {
		if t >= start {
			near(uint64(t-start) / step)
		}
	}
	ks := make([]uint64, 0, len(cells))
	for k := range cells {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	out := make([]time.Duration, len(ks))
	for i, k := range ks {
		out[i] = at(k)
	}
	return out
}

// addSat is a + b held within the range of a Duration.
func addSat(a, b time.Duration) time.Duration {
	switch s := a + b; {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	default:
		return s
	}
}

// modelVariants returns m with each parameter that has an interval set to either end.
func modelVariants(m sensormodel.Model) []sensormodel.Model {
	var out []sensormodel.Model
	sec := func(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }
	for _, p := range []struct {
		iv  [2]float64
		ok  bool
		set func(*sensormodel.Model, time.Duration)
	}{
		{[2]float64{m.CI.Tau.Low, m.CI.Tau.High}, m.CI.Tau.Known(), func(x *sensormodel.Model, d time.Duration) { x.Tau = d }},
		{[2]float64{m.CI.Window.Low, m.CI.Window.High}, m.CI.Window.Known(), func(x *sensormodel.Model, d time.Duration) { x.Window = d }},
		{[2]float64{m.CI.Delay.Low, m.CI.Delay.High}, m.CI.Delay.Known(), func(x *sensormodel.Model, d time.Duration) { x.Delay = d }},
		{[2]float64{m.CI.Period.Low, m.CI.Period.High}, m.CI.Period.Known() && m.Period > 0, func(x *sensormodel.Model, d time.Duration) { x.Period = d }},
	} {
		if !p.ok {
			continue
		}
		for _, x := range p.iv {
			v := m
			p.set(&v, sec(max(x, 0)))
			if v.Kind() == m.Kind() && v != m {
				out = append(out, v)
			}
		}
	}
	return out
}

// Prepared is the inversion Region sets up for channel o.Channel of GPU gpu (its sensor
// model inverted over the whole trace) and the model's choice: through o.Cache where given,
// so that a Region with the same options and Cache reuses it (`gpuwatt energy` takes the
// default region from its Span). The error says why there is none.
func Prepared(tr *trace.Trace, gpu int, o Options) (*correct.Series, correct.Choice, error) {
	ser, choice, _, _, err := prepare(tr, gpu, o.Channel, o, false)
	return ser, choice, err
}

// prepare sets up the inversion of channel name's sensor model: the model o.Sensor names,
// else (or, for the ring, where it names none for the channel) the guess from the names.
// samples is nil where the channel has no readings.
func prepare(tr *trace.Trace, gpu int, name string, o Options, autoFallback bool) (*correct.Series, correct.Choice, trace.Readings, correct.Options, error) {
	c := o.Cache
	if c == nil {
		return prepareChannel(tr, gpu, name, o, autoFallback)
	}
	key := prepKey{gpu, name, o.Sensor, o.Correct, autoFallback}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tr == nil {
		c.tr, c.m, c.ser = tr, map[prepKey]prepared{}, map[serKey]prepared{}
	}
	if c.tr != tr {
		return prepareChannel(tr, gpu, name, o, autoFallback)
	}
	p, ok := c.m[key]
	if !ok {
		// The model first (cheap): where another spec resolved to the same model and
		// options (the calibrated ring's auto fallback and the channel's own inversion),
		// the channel prepared for it serves (on a long ring, fitting its lattice alone
		// took seconds).
		choice, copt, err := resolveChannel(tr, gpu, name, o, autoFallback)
		sk := serKey{gpu, name, choice.Model, copt}
		if q, done := c.ser[sk]; done && err == nil && q.err == nil {
			p = prepared{ser: q.ser, choice: choice, samples: q.samples, copt: copt}
		} else {
			p.ser, p.choice, p.samples, p.copt, p.err = prepareChannel(tr, gpu, name, o, autoFallback)
			if p.err == nil {
				c.ser[serKey{gpu, name, p.choice.Model, p.copt}] = p
			}
		}
		c.m[key] = p
	}
	return p.ser, p.choice, p.samples, p.copt, p.err
}

// resolveChannel is prepareChannel's choice of model and options, without the readings.
func resolveChannel(tr *trace.Trace, gpu int, name string, o Options, autoFallback bool) (correct.Choice, correct.Options, error) {
	meta, ok := tr.Channel(gpu, name)
	if !ok {
		meta = trace.Channel{GPU: gpu, Name: name}
	}
	auto, _ := correct.ParseSpec("auto")
	spec := &auto
	if o.Sensor != nil {
		spec = o.Sensor
	}
	choice, err := spec.Resolve(tr, meta)
	if err != nil && autoFallback && spec != &auto {
		choice, err = auto.Resolve(tr, meta)
	}
	copt := o.Correct
	if copt.Period == 0 && meta.Stats != nil && meta.Stats.UpdatePeriod > 0 {
		copt.Period = time.Duration(math.Round(meta.Stats.UpdatePeriod * 1e9))
	}
	return choice, copt, err
}

// prepareChannel is prepare without the cache.
func prepareChannel(tr *trace.Trace, gpu int, name string, o Options, autoFallback bool) (*correct.Series, correct.Choice, trace.Readings, correct.Options, error) {
	samples := o.Cache.series(tr, gpu, name)
	if samples.Len() == 0 {
		return nil, correct.Choice{}, trace.Readings{}, o.Correct, fmt.Errorf("no readings of %s", name)
	}
	choice, copt, err := resolveChannel(tr, gpu, name, o, autoFallback)
	if err != nil {
		return nil, correct.Choice{}, samples, o.Correct, err
	}
	return correct.PrepareReadings(samples, choice.Model, copt), choice, samples, copt, nil
}

// meanPower is the corrected mean power over [a, b] (ok false where the readings describe
// less than half of it), for the sizes the interval's edge part needs: for a
// long window (W >= 2 T) the cheap way (correct.Series.QuickMean: its deconvolution cut
// short after a few windows, which a region far from steady power would otherwise follow
// back to the trace's start at every call), else the full inversion.
func meanPower(ser *correct.Series, m sensormodel.Model, period time.Duration) func(a, b time.Duration) (float64, bool) {
	if m.Kind() == sensormodel.Boxcar && period > 0 && m.Window >= 2*period {
		return ser.QuickMean
	}
	return func(a, b time.Duration) (float64, bool) {
		mp, cov := ser.MeanPower(a, b)
		return float64(mp), cov > 0.5
	}
}

// seriesEdges is the edges component of an inverted channel: a power change at an edge
// is placed within correct.EdgeUncertainty of it; its size is the inverted power's change
// across the edge.
func seriesEdges(ser *correct.Series, m sensormodel.Model, period time.Duration, from, to time.Duration, gain float64) Component {
	if period <= 0 {
		return Component{Name: "edges", Note: "the update period is unknown"}
	}
	u := correct.EdgeUncertainty(m, period)
	mean := meanPower(ser, m, period)
	w := max(2*period, m.Window)
	c := edgeComponent(mean, from, to, w, u, gain, fmt.Sprintf("a power change at an edge is placed within %s (its size: the inverted power over %s on either side)", fmtDur(u), fmtDur(w)))
	if m.Kind() == sensormodel.Boxcar && m.Window >= 2*period && c.Known {
		// A long window's deconvolution carries the power from one window back
		// (E[a,b] = W·Δr + E[a−W, b−W]): a change misplaced there, two windows back, ...
		// errs here too. Each adds its own edge term, independently.
		ss := c.HalfWidthJ * c.HalfWidthJ
		ws := max(2*period, m.Window/4)
		lo, _ := ser.Span()
		for k := 1; k <= 20 && from-time.Duration(k)*m.Window > lo; k++ {
			back := time.Duration(k) * m.Window
			ck := edgeComponent(mean, from-back, to-back, ws, u, gain, "")
			ss += ck.HalfWidthJ * ck.HalfWidthJ
		}
		c.HalfWidthJ = math.Sqrt(ss)
		c.Note += fmt.Sprintf("; with the same at each window (%s) before both edges, which the deconvolution carries forward", fmtDur(m.Window))
	}
	return c
}

// counterEdge bounds the error of the counter's figure at edge t: the readings a and b
// around it are g apart and the counter is interpolated linearly between them; with the
// power stepping once between them, from the rate before a to the rate after b, the
// interpolation is off by at most |ΔP|·g/4; and each reading may be late by up to res at
// the highest of those rates. A missing neighbour counts as a rate of 0 (not known).
func counterEdge(s trace.Readings, t, res time.Duration) float64 {
	j := s.Search(t)
	T, V := s.T, s.V
	if j == 0 || j >= len(T) {
		return 0
	}
	i := j - 1
	rate := func(a, b int) float64 {
		if a < 0 || b >= len(T) || T[b] <= T[a] || V[b] < V[a] {
			return 0
		}
		return (V[b] - V[a]) / (T[b] - T[a]).Seconds()
	}
	left, mid, right := rate(i-1, i), rate(i, j), rate(j, j+1)
	g := (T[j] - T[i]).Seconds()
	return math.Abs(left-right)*g/4 + max(left, mid, right)*res.Seconds()
}

// noiseComponent is the readings' noise in the energy: σ × duration / √n at 95 %, with n
// the readings inside and σ from the second differences of all the channel's readings
// (the sensor's noise, not the region's changes), × gain (a calibrated channel).
func noiseComponent(s trace.Readings, from, to time.Duration, gain float64) Component {
	i, j := inside(s, from, to)
	n := j - i
	c := Component{Name: "readings", Note: "the readings' noise (from the second differences of the channel's readings) averaged over the readings inside"}
	if n < 1 || s.Len() < 3 {
		c.Note = "too few readings: their noise is not known"
		return c
	}
	c.HalfWidthJ = 1.96 * math.Abs(gain) * correct.NoiseSigma(s.V) * (to - from).Seconds() / math.Sqrt(float64(n))
	c.Known = true
	return c
}

// edgeComponent bounds a power change at each edge placed within u: the difference of the
// mean power (mean(a, b), W; ok false where nothing describes [a, b]) over w on either
// side of each edge, × u, summed over both edges, × gain.
func edgeComponent(mean func(a, b time.Duration) (float64, bool), from, to, w, u time.Duration, gain float64, note string) Component {
	c := Component{Name: "edges", Note: note}
	hw := 0.0
	for _, t := range []time.Duration{from, to} {
		in, okIn := mean(t, t+w)
		out, okOut := mean(t-w, t)
		if t == to {
			in, okIn, out, okOut = out, okOut, in, okIn
		}
		if !okIn {
			c.Note += "; no readings just inside an edge"
			return c
		}
		if okOut {
			hw += math.Abs(in-out) * u.Seconds()
		} else {
			// nothing describes the power outside: it may be anything from 0 to the inside's
			hw += math.Abs(in) * u.Seconds()
		}
	}
	c.HalfWidthJ = math.Abs(gain) * hw
	c.Known = true
	return c
}

// interval sets the Figure's intervals from its components (Figure.Finish).
func (est *Estimate) interval() { est.Finish() }

func pollInterval(tr *trace.Trace, gpu int, name string) time.Duration {
	if ch, ok := tr.Channel(gpu, name); ok && ch.Stats != nil {
		return time.Duration(ch.Stats.PollInterval * float64(time.Second))
	}
	return 0
}

// FmtDur formats seconds with a unit: "1.23 s", "12.5 ms", "250 µs".
func FmtDur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", sec)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", sec*1e3)
	case d > 0:
		return fmt.Sprintf("%.3g µs", sec*1e6)
	}
	return "0"
}

func fmtDur(d time.Duration) string { return FmtDur(d.Seconds()) }

// samplersComponent checks the calibrated ring against the 1 s average (power.usage, which
// samples the board's power on its own) over the region: a steady load reads alike on both
// (within 1 % on the H200), a load locked to one's sampling does not, and the ring cannot
// see a lock to its own 20 ms (its readings of a 20 ms-slot ramp are as steady as a
// burst's). Where they differ by more than their own intervals allow, the ring may be off
// by as much as they differ: that difference is added whole (a 20 ms-slot ramp the ring
// read +2.4 % against ±1.1 %, the 1 s average +6.3 %, and the counter's span around it
// within the ring's interval, so nothing else saw it: results/nvidia-h200/2026-11-28-
// intervals-shapes-5). ok is false where the trace has no 1 s average or they agree.
func (r *regionRun) samplersComponent() (Component, bool) {
	if r.cal == nil || r.cal.Channel != trace.ChPowerSamples {
		return Component{}, false
	}
	ring := r.o.spanFigure(r.tr, r.gpu, CalibratedRing, "")
	usage := r.o.usageFigure(r.tr, r.gpu)
	e1, o1, ok1 := ring(r.from, r.to)
	e2, o2, ok2 := usage(r.from, r.to)
	if !ok1 || !ok2 {
		return Component{}, false
	}
	d := math.Abs(e1 - e2)
	if d <= math.Hypot(o1, o2) {
		return Component{}, false
	}
	return Component{Name: "samplers", HalfWidthJ: d, Known: true,
		Note: fmt.Sprintf("%s and %s, which sample the power apart, differ over %s by %+.3g J beyond their own intervals (±%.3g J, ±%.3g J): a load locked to one's sampling, which the ring's own interval does not see; the ring may be off by as much",
			trace.ChPowerSamples, trace.ChPowerUsage, r.what, e1-e2, o1, o2)}, true
}

// usageFigure is spanFigure for the 1 s average beside the ring (the samplers component,
// the anchor's agreement share): its own model, guessed from its name, not the Sensor and
// Correct options given for the channel asked for (energy --region's query names the ring's
// model and its 20 ms period, measure's close none: their figures of power.usage differed,
// and with them close's figure and the saved trace's, TestCloseIsTheSavedFigure).
func (o Options) usageFigure(tr *trace.Trace, gpu int) func(a, b time.Duration) (float64, float64, bool) {
	u := o
	u.Sensor, u.Correct = nil, correct.Options{}
	return u.spanFigure(tr, gpu, Inversion, trace.ChPowerUsage)
}
