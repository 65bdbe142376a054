package correct

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// DefaultDedupe is the stale-repeat rule of Burtscher et al.: equal readings no more than
// 4 ms apart are one reading.
const DefaultDedupe = 4 * time.Millisecond

// DefaultMinSamples is the fewest readings a region should hold: about ten for an energy
// within 5 % of a well-behaved profile (Burtscher et al.).
const DefaultMinSamples = 10

// Options of Energy. The zero value gives the defaults.
type Options struct {
	// Idle is the idle power to subtract for EnergyActive, when IdleSet; otherwise Energy
	// takes it from Baseline where that is set and the readings describe it, else estimates
	// it from the whole series.
	Idle    units.Power
	IdleSet bool
	// Baseline is the trace's own idle baseline (TraceBaseline): its corrected mean power is
	// the idle level, the same way on every channel.
	Baseline Baseline
	// Dedupe drops a reading equal to the previous kept one no more than this after it
	// (trace.Dedupe); 0 means DefaultDedupe, a negative value keeps every reading.
	Dedupe time.Duration
	// Period is the channel's update period from the trace's metadata, used when the model
	// names none; 0 means learn it from the readings.
	Period time.Duration
	// MinSamples: a region with fewer readings gets a warning (0: DefaultMinSamples).
	MinSamples int
}

// Result is the energy of a region of one power channel.
type Result struct {
	From, To time.Duration     // the region asked for
	Model    sensormodel.Model // the model inverted (its Period as given)
	Period   time.Duration     // the update period in use: the model's, the trace's, or learned
	// PeriodSource says where Period came from: "model", "trace" (Options.Period, the
	// Sampler's figure) or "readings" (learned here); "" when unknown.
	PeriodSource string
	// Energy is the corrected energy of the covered part of the region.
	Energy units.Energy
	// EnergyRaw is the trapezoid integral of the readings as given (repeats included) over
	// the region, on their own timestamps: what a naive integration gives.
	EnergyRaw units.Energy
	// EnergyActive is Energy less Idle × Covered: the energy above the idle floor.
	// (Negative where the idle given is above the region's power: CodeIdleAbove says so.)
	EnergyActive units.Energy
	// Idle is the level subtracted for EnergyActive: Options.Idle, or the median of the
	// lowest decile of the corrected mean power in short bins over the whole series.
	Idle          units.Power
	IdleEstimated bool
	// IdleSource says where Idle came from: IdleGiven, IdleFromBaseline or IdleLowestDecile.
	IdleSource string
	// IdleLevel is the idle level Idle stands for where it is known (IdleAtRest or
	// ActiveIdle: the baseline's), else "".
	IdleLevel string
	// IdleWhat says where Idle came from, for people.
	IdleWhat  string
	MeanPower units.Power // Energy / Covered
	Samples   int         // readings in [From, To] after dedupe
	Dropped   int         // readings dropped in [From, To]: stale repeats, and the HalfDone
	HalfDone  int         // half-done values dropped in [From, To] (a value the next update follows within T/8)
	// Covered is the part of the region the readings describe; DataCoverage is its share
	// of the region, SensorCoverage the share of time the sensor sees (W/T for a boxcar
	// window shorter than its period), Coverage their product.
	Covered        time.Duration
	DataCoverage   float64
	SensorCoverage float64
	Coverage       float64
	// Gaps are the stretches of the region with no reading, far longer than the usual
	// interval between readings (trace.Gaps), clipped to the region. The power across them
	// is interpolated, not measured: Covered leaves them out (less one usual interval each,
	// the time the reading after a gap describes), the energy does not.
	Gaps     []trace.Gap
	Warnings []status.Warning
}

// The codes of Energy's warnings.
const (
	CodeEmpty         status.Code = "region_empty"
	CodeNoReadings    status.Code = "no_readings"
	CodeLowCoverage   status.Code = "low_coverage"
	CodeSensorSees    status.Code = "sensor_coverage"
	CodeFewReadings   status.Code = "few_readings"
	CodeShortRegion   status.Code = "short_region"
	CodeUnknownPeriod status.Code = "unknown_period"
	CodeModelNote     status.Code = "model_note"
	CodeIdleAbove     status.Code = "idle_above_power"
	CodeGap           status.Code = "gap"
)

// Where Result.Idle came from.
const (
	IdleGiven        = "given"
	IdleFromBaseline = "baseline"
	IdleLowestDecile = "lowest decile"
)

// Energy returns the energy of the region [from, to] of one power channel's samples
// (sorted by time, in W), with the sensor model m inverted:
//
//  1. stale repeats are dropped (trace.Dedupe, 4 ms by default);
//  2. the model is inverted: none integrates the readings; rc adds tau·(P(b) − P(a)) to
//     their integral; a boxcar whose window spans 1.5 update periods or more is deconvolved;
//     a shorter one holds each reading over its own period, centred on its window;
//  3. everything is integrated on the readings' own timestamps.
//
// Where the region extends beyond what the readings describe, only the covered part is
// integrated (see Covered). Energy never fails: what it cannot do, it says in Warnings.
// For several regions of one channel, Prepare once and call Series.Energy.
func Energy(samples []trace.Sample, from, to time.Duration, m sensormodel.Model, opt Options) Result {
	return Prepare(samples, m, opt).Energy(from, to)
}

// Series is one power channel's readings prepared for a model: deduplicated, with the
// model's inversion set up and the idle floor computed on first use. It is not safe for
// concurrent use.
type Series struct {
	raw, kept trace.Readings
	m         sensormodel.Model
	opt       Options
	period    time.Duration
	periodSrc string
	inv       inverter // nil without readings
	idle      units.Power
	haveIdle  bool
	idleSrc   string
	snapped   int            // readings moved onto their grid (snapToGrid)
	early     trace.Readings // half-done values dropped (dropEarly), in time order
	gaps      []trace.Gap    // of kept, found on first use
	gapUsual  time.Duration  // kept's usual interval between readings
	haveGaps  bool
	noise     *noiseMemo   // kept's noise, shared with every WithModel copy
	variants  *variantMemo // WithModel's (nil on a WithModel copy)
}

// variantMemo keeps WithModel's Series by model. The corrected power series (energy's
// PowerSeries: measure's report page, `energy --series`) inverts a channel bin by bin, and
// each bin's model component asked for the channel again at each end of every parameter
// interval: a new inverter over every reading, per bin (a tenth of internal/cli's test
// CPU). A variant is a function of the readings and the model alone, so one serves all.
type variantMemo struct {
	mu sync.Mutex
	by map[sensormodel.Model]*Series
}

// Prepare drops stale repeats from samples (one channel, sorted by time, in W) and sets up
// the inversion of m: PrepareReadings on the samples' columns.
func Prepare(samples []trace.Sample, m sensormodel.Model, opt Options) *Series {
	return PrepareReadings(trace.ReadingsOf(samples), m, opt)
}

// PrepareReadings is Prepare on one channel's readings as columns (a compact trace's own:
// nothing is copied where nothing is dropped or moved). They must not change while the
// Series is in use.
func PrepareReadings(samples trace.Readings, m sensormodel.Model, opt Options) *Series {
	if opt.Dedupe == 0 {
		opt.Dedupe = DefaultDedupe
	}
	if opt.MinSamples <= 0 {
		opt.MinSamples = DefaultMinSamples
	}
	s := &Series{raw: samples, kept: samples, m: m, opt: opt}
	if opt.Dedupe > 0 {
		s.kept, _ = trace.DedupeReadings(samples, opt.Dedupe)
	}
	switch {
	case m.Period > 0:
		s.period, s.periodSrc = m.Period, "model"
	case opt.Period > 0:
		s.period, s.periodSrc = opt.Period, "trace"
	default:
		if s.period = learnPeriod(s.kept.T); s.period > 0 {
			s.periodSrc = "readings"
		}
	}
	s.kept, s.snapped = snapToGrid(s.kept, s.period)
	if s.snapped == 0 && opt.Dedupe > 0 && PublishesHalfDone(m, s.period) {
		s.kept, s.early = dropEarly(s.kept, s.period)
	}
	s.noise = &noiseMemo{}
	s.variants = &variantMemo{}
	if s.kept.Len() > 0 {
		s.inv = newInverter(s.kept, m, s.period, s.noise)
	}
	if opt.IdleSet {
		s.idle, s.idleSrc, s.haveIdle = opt.Idle, IdleGiven, true
	}
	return s
}

// PublishesHalfDone says whether a channel of model m, updated every period, is one whose
// driver publishes half-done values (dropEarly): a window shorter than its period, as the
// H200's power.instant (and the twin's) is. Elsewhere every distinct reading counts: with
// `none` the readings are the power, and an external meter logging bursts at 2 ms between
// slower stretches lost 497 of 553 readings to the rule (issue 28); a lag (the K20's
// readings come 0.27 to 130 ms apart) and a long average are left whole too.
func PublishesHalfDone(m sensormodel.Model, period time.Duration) bool {
	return m.Kind() == sensormodel.Boxcar && period > 0 && m.Window < period
}

// dropEarly drops every reading that the next one follows within T/8: a half-done value
// published a few ms before an update (the H200's power.instant does so before ~30 % of its
// 100 ms updates; the twin too), which held over a period would stand for the update's.
// The same rule as the sensor verb's transients. Readings of a driver's buffer (with
// driver stamps) are left alone: their grid, not their spacing, tells them apart.
func dropEarly(s trace.Readings, period time.Duration) (kept, dropped trace.Readings) {
	gap := period / 8
	T, V := s.T, s.V
	if len(T) < 2 || gap <= 0 || (s.Drv != nil && s.Drv[0] != 0) {
		return s, trace.Readings{}
	}
	var out trace.Readings
	copied := false
	for i, t := range T {
		if i+1 < len(T) && T[i+1]-t < gap {
			if !copied {
				out = trace.Readings{T: append(make([]time.Duration, 0, len(T)), T[:i]...), V: append(make([]float64, 0, len(T)), V[:i]...)}
				copied = true
			}
			dropped.T, dropped.V = append(dropped.T, t), append(dropped.V, V[i])
			continue
		}
		if copied {
			out.T, out.V = append(out.T, t), append(out.V, V[i])
		}
	}
	if !copied {
		return s, trace.Readings{}
	}
	return out, dropped
}

// snapToGrid moves the readings of a driver's sample buffer (those with driver stamps, as
// nvmlDeviceGetSamples gives) that lie off the grid of their period onto the grid instant
// each belongs to (FitLattice): the H200's driver stamps 20–28 % of its power.samples up to
// 14 ms late or 6 ms early, while their values are the grid instant's; integrated where
// stamped, they put the power of a step up to 14 ms off (−2.4 % on a 200 ms burst on the
// twin, which stamps so). Readings without driver stamps, stamps that lie on no grid, or a
// grid every stamp is already on, are returned as they are, with 0.
//
// The snapped readings get a time column of their own; their values stay s's where no two
// stamps fall on one instant (the driver stamps are not carried: nothing after uses them).
func snapToGrid(s trace.Readings, period time.Duration) (trace.Readings, int) {
	if s.Len() < 16 || period <= 0 || !s.Stamped() {
		return s, 0
	}
	g, ok := FitLattice(s.T, period)
	if !ok || g.OnGrid >= 0.999 {
		return s, 0
	}
	out := trace.Readings{T: make([]time.Duration, 0, s.Len()), V: s.V}
	var v []float64 // the values, copied from the first reading dropped on
	n := 0
	for i, x := range s.T {
		t := g.Snap(x)
		if k := len(out.T); k > 0 && t <= out.T[k-1] {
			if v == nil {
				v = append(make([]float64, 0, s.Len()), s.V[:i]...)
			}
			continue // two stamps on one instant: keep the first
		}
		if t != x {
			n++
		}
		out.T = append(out.T, t)
		if v != nil {
			v = append(v, s.V[i])
		}
	}
	if v != nil {
		out.V = v
	}
	return out, n
}

// Period is the update period in use: the model's, else Options.Period, else learned.
func (s *Series) Period() time.Duration { return s.period }

// QuickMean is the corrected mean power over [from, to] computed the cheap way the idle
// floor is (the inverter's binEnergies: a long window's deconvolution cut short after a few
// windows), for what needs a size, not a figure: the interval's edge and sparse parts. ok
// is false where the readings describe less than half of it.
func (s *Series) QuickMean(from, to time.Duration) (float64, bool) {
	if s.inv == nil || to <= from {
		return 0, false
	}
	lo, hi := s.inv.span()
	a, b := max(from.Seconds(), lo), min(to.Seconds(), hi)
	if b <= a || (b-a) < 0.5*(to-from).Seconds() {
		return 0, false
	}
	e := s.inv.binEnergies([]interval{{a, b}})[0]
	return e / (b - a), true
}

// Joules is Energy(from, to).Energy alone, without the idle floor, the raw integral and the
// warnings Energy works out: for the many re-evaluations of an interval's model part. ok is
// false where no reading describes the region.
func (s *Series) Joules(from, to time.Duration) (float64, bool) {
	if s.inv == nil || to <= from {
		return 0, false
	}
	lo, hi := s.inv.span()
	a, b := max(from.Seconds(), lo), min(to.Seconds(), hi)
	if b <= a {
		return 0, false
	}
	return s.inv.energy(a, b), true
}

// StepSpread is how far the energy of [from, to] moves when a short lag's inversion drops
// its step placement (rcInv.pieces: the power between two readings taken to have stepped
// once from the power before to the power after) for the plain inversion, which assumes
// no shape (the readings' integral + tau × the change of level across the region). On a
// burst shorter than a few readings whose stamps are uneven, the steps can hold a spike's
// level for a whole interval (an H200's 50 ms burst: +10 J of 84). ok is false where the
// inversion places no steps.
func (s *Series) StepSpread(from, to time.Duration) (float64, bool) {
	r, ok := s.inv.(*rcInv)
	if !ok || !r.short || to <= from {
		return 0, false
	}
	lo, hi := r.span()
	a, b := max(from.Seconds(), lo), min(to.Seconds(), hi)
	if b <= a {
		return 0, false
	}
	plain := r.l.energy(a, b) + r.tau*(r.level(b, true)-r.level(a, true))
	return math.Abs(r.energy(a, b) - plain), true
}

// WithModel is the Series prepared for model m on the same readings (stale repeats already
// dropped, the period kept unless m names its own): what Prepare(samples, m, opt) gives,
// without deduplicating again, for re-evaluating an interval's model part.
func (s *Series) WithModel(m sensormodel.Model) *Series {
	if s.variants == nil {
		return s.withModel(m)
	}
	s.variants.mu.Lock()
	defer s.variants.mu.Unlock()
	if v, ok := s.variants.by[m]; ok {
		return v
	}
	if s.variants.by == nil {
		s.variants.by = map[sensormodel.Model]*Series{}
	}
	v := s.withModel(m)
	s.variants.by[m] = v
	return v
}

// withModel is WithModel, prepared anew.
func (s *Series) withModel(m sensormodel.Model) *Series {
	v := &Series{raw: s.raw, kept: s.kept, m: m, opt: s.opt, period: s.period, periodSrc: s.periodSrc, noise: s.noise}
	if m.Period > 0 {
		v.period, v.periodSrc = m.Period, "model"
	}
	if d, ok := s.inv.(*dense); ok && denseBoxcar(m, v.period) {
		// the same readings collapsed the same way (collapseBursts at period/4): the same
		// period, or no bursts to merge at either period
		same := v.period == s.period
		if !same && len(d.l.t) == s.kept.Len() {
			same = collapseBursts(v.kept, v.period/4).Len() == s.kept.Len()
		}
		if same {
			v.inv = d.with(m.Window.Seconds(), m.Delay.Seconds()+m.Tau.Seconds())
		}
	}
	if v.inv == nil && v.kept.Len() > 0 {
		v.inv = newInverter(v.kept, m, v.period, v.noise)
	}
	if s.opt.IdleSet {
		v.idle, v.haveIdle = s.opt.Idle, true
	}
	return v
}

// Readings returns the kept readings (stale repeats dropped) with from <= T <= to, on the
// readings' own time axis. The columns are shared: do not modify them.
func (s *Series) Readings(from, to time.Duration) trace.Readings {
	i, j := s.kept.Search(from), s.kept.After(to)
	if j < i {
		j = i
	}
	return s.kept.Slice(i, j)
}

// Span returns the part of the time axis the readings describe under the model: from the
// first reading to the last, moved back by the model's delay and, for a boxcar held over
// its periods, out to the edges of the first and last periods; rounded inwards to the µs
// (a trace's resolution). It is the default region. (0, 0) without readings.
func (s *Series) Span() (from, to time.Duration) {
	if s.inv == nil {
		return 0, 0
	}
	lo, hi := s.inv.span()
	// (A thousandth of a µs of slack: lo and hi are sums of floats.)
	return time.Duration(math.Ceil(lo*1e6-1e-3)) * time.Microsecond, time.Duration(math.Floor(hi*1e6+1e-3)) * time.Microsecond
}

// Idle is the idle floor: Options.Idle when set; else the corrected mean power over
// Options.Baseline (its ends trimmed by a period, the delay, 3 tau and a held window) where
// that is set and the readings describe at least a quarter of it; else
// the median of the lowest decile of the corrected mean power in bins of
// max(250 ms, 4 T, W, tau/2) over the whole series.
func (s *Series) Idle() units.Power {
	s.findIdle()
	return s.idle
}

// IdleSource says where Idle came from (IdleGiven, IdleFromBaseline, IdleLowestDecile; ""
// without readings).
func (s *Series) IdleSource() string {
	s.findIdle()
	return s.idleSrc
}

func (s *Series) findIdle() {
	if s.haveIdle || s.inv == nil {
		return
	}
	lo, hi := s.inv.span()
	if b := s.opt.Baseline; b.Set() {
		// Both ends are trimmed by how far a power change beyond them may be smeared into
		// the corrected power (a reading held over its period, its window and delay), so
		// that the load after a baseline does not lift its idle.
		trim := (s.period + s.m.Delay + 3*s.m.Tau).Seconds()
		if s.m.Kind() == sensormodel.Boxcar && s.m.Window < 3*s.period/2 {
			trim += s.m.Window.Seconds()
		}
		a, e := max(b.From.Seconds(), lo), min(b.To.Seconds(), hi)
		if e-a > 4*trim {
			a, e = a+trim, e-trim
		}
		if e-a >= 0.25*(b.To-b.From).Seconds() {
			s.idle, s.idleSrc, s.haveIdle = units.Power(s.inv.energy(a, e)/(e-a)), IdleFromBaseline, true
			return
		}
	}
	s.idle, s.idleSrc, s.haveIdle = idleLevel(s.inv, lo, hi, s.m, s.period), IdleLowestDecile, true
}

// Energy returns the energy of the region [from, to]: see the function Energy.
func (s *Series) Energy(from, to time.Duration) Result {
	m, opt := s.m, s.opt
	r := Result{From: from, To: to, Model: m, Period: s.period, PeriodSource: s.periodSrc, Warnings: []status.Warning{}}
	warn := func(code status.Code, f string, a ...any) {
		r.Warnings = append(r.Warnings, status.Warnf(code, f, a...))
	}
	if to <= from {
		warn(CodeEmpty, "the region is empty (from %s to %s)", units.FormatInstant(from.Seconds()), units.FormatInstant(to.Seconds()))
		return r
	}
	r.EnergyRaw = trace.IntegrateReadings(s.raw, from, to).Energy
	r.Samples = countIn(s.kept, from, to)
	r.Dropped = countIn(s.raw, from, to) - r.Samples
	r.HalfDone = countIn(s.early, from, to)
	r.SensorCoverage = m.Coverage(s.period)
	if s.inv == nil {
		warn(CodeNoReadings, "no readings: nothing to integrate")
		return r
	}
	cv, ok := s.cover(from, to)
	if !ok {
		lo, hi := s.inv.span()
		warn(CodeNoReadings, "no reading describes the region %s to %s (the readings describe %s to %s)", units.FormatInstant(from.Seconds()), units.FormatInstant(to.Seconds()), units.FormatInstant(lo), units.FormatInstant(hi))
		return r
	}
	a, b, e, edgeCoverage, gapLost := cv.a, cv.b, cv.e, cv.edgeCoverage, cv.gapLost
	notes := s.inv.notes()
	r.Covered, r.DataCoverage, r.Gaps = cv.covered, cv.dataCoverage, cv.gaps
	r.Coverage = r.DataCoverage * r.SensorCoverage
	r.Energy = units.Energy(e)
	r.MeanPower = units.Power(e / (b - a))
	r.Idle, r.IdleEstimated, r.IdleSource = s.Idle(), !opt.IdleSet, s.IdleSource()
	switch r.IdleSource {
	case IdleFromBaseline:
		r.IdleLevel, r.IdleWhat = opt.Baseline.Level, opt.Baseline.Describe()
	case IdleGiven:
		r.IdleWhat = "given"
	default:
		r.IdleWhat = "the trace's lowest decile (it records no baseline: at rest or active not known)"
	}
	r.EnergyActive = units.Energy(e - float64(r.Idle)*(b-a))
	if opt.IdleSet && r.MeanPower > 0 && r.Idle > r.MeanPower {
		r.Warnings = append(r.Warnings, status.Warning{Code: CodeIdleAbove, Key: "the idle given is above the region's mean power",
			Value: float64(r.Idle), Unit: "W",
			Message: fmt.Sprintf("the idle given (--idle %g W) is above the region's mean power (%s): the energy above idle is negative; check the idle level", float64(r.Idle), r.MeanPower)})
	} else if !opt.IdleSet && r.MeanPower > 0 && float64(r.Idle-r.MeanPower) > max(5, 0.05*float64(r.Idle)) {
		// A board draws at least its idle: an idle level well above the mean says the
		// sensor model (or the idle's source) is wrong, and the figure with it.
		r.Warnings = append(r.Warnings, status.Warning{Code: CodeIdleAbove, Key: "the idle level is above the region's mean power",
			Value: float64(r.Idle), Unit: "W",
			Message: fmt.Sprintf("the idle level (%s W, %s) is above the region's mean power (%s) by more than 5 %%: physically impossible (a board draws at least its idle); the sensor model (--sensor) or the idle's source is wrong, and the figures with it", fmt.Sprintf("%.1f", float64(r.Idle)), r.IdleWhat, r.MeanPower)})
	}

	if len(r.Gaps) > 0 {
		g := r.Gaps[0]
		more := ""
		if len(r.Gaps) > 1 {
			more = fmt.Sprintf(" and %d more gap(s), %s in all", len(r.Gaps)-1, units.FormatDuration(gapLost, 4))
		}
		warn(CodeGap, "the readings stop for %s, from %s to %s%s (the usual interval between readings is %s): the power there is interpolated, not measured; the readings cover %.0f %% of the region",
			units.FormatDuration(g.Len(), 4), units.FormatInstant(g.From.Seconds()), units.FormatInstant(g.To.Seconds()), more, units.FormatDuration(s.gapUsual, 4), 100*r.DataCoverage)
	}
	if edgeCoverage < 0.99 {
		warn(CodeLowCoverage, "the readings describe only %.0f %% of the region (%s to %s of %s to %s): the energy is that of the covered part",
			100*r.DataCoverage, units.FormatInstant(a), units.FormatInstant(b), units.FormatInstant(from.Seconds()), units.FormatInstant(to.Seconds()))
	}
	if r.SensorCoverage < 1 {
		warn(CodeSensorSees, "the sensor sees %.0f %% of the time (%s): a load that varies faster than %s is sampled, not integrated (Yang et al.); a steady load is measured right",
			100*r.SensorCoverage, seenAs(m, s.period), units.FormatDuration(s.period, 4))
	}
	if r.Samples < opt.MinSamples {
		warn(CodeFewReadings, "only %d readings in the region: want at least %d for an energy within a few per cent", r.Samples, opt.MinSamples)
	}
	if s.period > 0 && to-from < 50*s.period {
		warn(CodeShortRegion, "the region (%s) is shorter than 50 update periods (T = %s): a power change near its edges is resolved to about a period, which makes the energy uncertain by up to ΔP × %s",
			units.FormatDuration(to-from, 4), units.FormatDuration(s.period, 4), units.FormatDuration(EdgeUncertainty(m, s.period), 4))
	}
	if s.period == 0 {
		warn(CodeUnknownPeriod, "the update period is unknown (too few readings to learn it)")
	}
	for _, w := range notes {
		warn(CodeModelNote, "%s", w)
	}
	return r
}

// covered is the part [a, b] of a region the readings describe, its energy e, the time
// they measure (covered) and the share of the region that is (dataCoverage: the edges'
// share edgeCoverage less the gaps', gapLost).
type covered struct {
	a, b, e                    float64
	covered                    time.Duration
	dataCoverage, edgeCoverage float64
	gaps                       []trace.Gap
	gapLost                    time.Duration
}

// cover is the covered part of [from, to] (to > from), as Energy reports it; false where no
// reading describes the region.
func (s *Series) cover(from, to time.Duration) (covered, bool) {
	lo, hi := s.inv.span()
	a, b := max(from.Seconds(), lo), min(to.Seconds(), hi)
	region := (to - from).Seconds()
	if b <= a {
		return covered{}, false
	}
	c := covered{a: a, b: b, e: s.inv.energy(a, b)}
	c.covered = time.Duration(math.Round((b - a) * 1e9))
	c.dataCoverage = min(1, (b-a)/region)
	if a <= from.Seconds() && b >= to.Seconds() {
		c.dataCoverage = 1
	}
	c.edgeCoverage = c.dataCoverage
	c.gaps, c.gapLost = s.gapsIn(from, to)
	if c.gapLost > 0 {
		c.covered = max(0, c.covered-c.gapLost)
		c.dataCoverage = min(c.dataCoverage, c.covered.Seconds()/region)
	}
	return c, true
}

// MeanPower is Energy(from, to)'s mean power and data coverage alone (0, 0 where it has
// none), without the rest of its Result: the idle floor, the raw integral and the warnings,
// whose formatting was most of the cost of an interval's edge and sparse parts, which ask
// for the mean power over many short spans.
func (s *Series) MeanPower(from, to time.Duration) (units.Power, float64) {
	if to <= from || s.inv == nil {
		return 0, 0
	}
	c, ok := s.cover(from, to)
	if !ok {
		return 0, 0
	}
	return units.Power(c.e / (c.b - c.a)), c.dataCoverage
}

// gapsIn returns the gaps of the readings within [from, to], clipped to it, and the time
// they leave unmeasured: each gap's length within the region less one usual interval.
func (s *Series) gapsIn(from, to time.Duration) ([]trace.Gap, time.Duration) {
	if !s.haveGaps {
		s.gaps, s.gapUsual = trace.GapsReadings(s.kept)
		s.haveGaps = true
	}
	var out []trace.Gap
	var lost time.Duration
	for _, g := range s.gaps {
		a, b := max(g.From, from), min(g.To, to)
		if b <= a {
			continue
		}
		out = append(out, trace.Gap{From: a, To: b, FromS: a.Seconds(), ToS: b.Seconds()})
		lost += max(0, b-a-s.gapUsual)
	}
	return out, lost
}

// EdgeUncertainty is how far a step of power near a region's edge may be misplaced: a
// quarter period where the sensor sees all of the time, half of the unseen part of each
// period otherwise.
func EdgeUncertainty(m sensormodel.Model, period time.Duration) time.Duration {
	if m.Kind() == sensormodel.Boxcar && m.Window < period {
		return (period - m.Window) / 2
	}
	return period / 4
}

// Span returns Prepare(samples, m, opt).Span(): the default region.
func Span(samples []trace.Sample, m sensormodel.Model, opt Options) (from, to time.Duration) {
	return Prepare(samples, m, opt).Span()
}

// LearnPeriod estimates a channel's update period from its (deduplicated) readings: the
// median interval between them, leaving out bursts (intervals under a quarter of the 90th
// percentile: some boards publish an update as two changes a fraction of a millisecond
// apart). 0 if there are fewer than two readings.
func LearnPeriod(s []trace.Sample) time.Duration {
	return learnPeriodOf(len(s), func(i int) time.Duration { return s[i].T })
}

// learnPeriod is LearnPeriod of readings at times t.
func learnPeriod(t []time.Duration) time.Duration {
	return learnPeriodOf(len(t), func(i int) time.Duration { return t[i] })
}

func learnPeriodOf(n int, at func(int) time.Duration) time.Duration {
	if n < 2 {
		return 0
	}
	const most = 8192
	step := max(1, (n-1)/most)
	iv := make([]time.Duration, 0, min(n-1, most+1))
	for i := step; i < n; i += step {
		if d := at(i) - at(i-1); d > 0 {
			iv = append(iv, d)
		}
	}
	if len(iv) == 0 {
		return 0
	}
	slices.Sort(iv)
	q90 := iv[int(0.9*float64(len(iv)-1)+0.5)]
	big := iv[:0]
	for _, d := range iv {
		if d >= q90/4 {
			big = append(big, d)
		}
	}
	return big[len(big)/2]
}

func countIn(s trace.Readings, from, to time.Duration) int {
	return max(s.After(to)-s.Search(from), 0)
}

// idleLevel is the median of the lowest decile of the corrected mean power over bins of
// max(250 ms, 4 T, W, tau/2) across [lo, hi], the bins sliding by a quarter of their length
// (at most maxBins of them, evenly spread). The bins are long enough that the noise of the
// corrected power (tau multiplies that of the readings; a deconvolved window rings with its
// own length) does not drag the lowest decile down; they slide so that an idle stretch as
// long as one bin is found wherever it lies (with bins laid end to end, a 4 s trace of a 1 s
// window had three, none of them idle, and the estimate was 125 W for an idle of 119 W).
func idleLevel(inv inverter, lo, hi float64, m sensormodel.Model, period time.Duration) units.Power {
	bin := max(0.25, 4*period.Seconds(), m.Window.Seconds(), m.Tau.Seconds()/2)
	if hi-lo < bin {
		return units.Power(inv.energy(lo, hi) / (hi - lo))
	}
	stride := bin / 4
	n := int((hi-lo-bin)/stride) + 1
	if n > maxBins {
		n = maxBins
		stride = (hi - lo - bin) / float64(n-1)
	}
	bins := make([]interval, 0, n)
	for i := range n {
		a := lo + float64(i)*stride
		bins = append(bins, interval{a, min(hi, a+bin)})
	}
	p := inv.binEnergies(bins)
	for i := range p {
		p[i] /= bins[i].b - bins[i].a
	}
	slices.Sort(p)
	dec := p[:max(1, (len(p)+5)/10)]
	return units.Power(dec[(len(dec)-1)/2])
}

// maxBins bounds the bins of idleLevel: their lowest decile is well estimated from a few
// thousand.
const maxBins = 4096

// FmtS is units.FormatInstant.
//
// Deprecated: use units.FormatInstant (internal/energy still calls it).
func FmtS(s float64) string { return units.FormatInstant(s) }

// Channel returns the samples of one channel of tr in time order, like tr.Series, without
// copying when the trace holds that channel alone (a plain t_s,power_w CSV).
func Channel(tr *trace.Trace, gpu int, name string) []trace.Sample {
	if tr.Compact() {
		return tr.Series(gpu, name)
	}
	n := 0
	for i := range tr.Samples {
		if x := &tr.Samples[i]; x.GPU == gpu && x.Channel == name {
			n++
		}
	}
	if n == len(tr.Samples) {
		return tr.Samples
	}
	out := make([]trace.Sample, 0, n)
	for _, x := range tr.Samples {
		if x.GPU == gpu && x.Channel == name {
			out = append(out, x)
		}
	}
	return out
}

// Dedupe drops stale repeats by the rule of Burtscher et al.: a reading equal to the
// previous kept one no more than 4 ms after it is not a new reading (trace.Dedupe with
// DefaultDedupe). It returns the readings kept and how many were dropped.
func Dedupe(s []trace.Sample) ([]trace.Sample, int) { return trace.Dedupe(s, DefaultDedupe) }
