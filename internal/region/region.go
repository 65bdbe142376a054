// Package region turns a region of a recorded trace into numbers for one GPU: energy from
// the energy counter and from every power channel, the best-founded of them as the
// headline (the counter where it has enough readings inside the region, else the sample
// ring calibrated to it over the recording: energy.go), idle-subtracted energy, mean and max
// power, clock and temperature ranges, the share of the region each clock-event reason was
// active, and warnings that say why channels disagree. measure uses it for a command's run,
// the measurement loop for each kernel measurement.
package region

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Summary is what a region of a trace says about one GPU: the energy from the best
// channel and from every power channel, idle power, mean and max power, clock and
// temperature ranges, clock-event shares, and warnings that say why channels disagree.
type Summary struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	UUID  string `json:"uuid"`
	// Interval is the best estimate of the energy during the region (internal/energy's
	// estimator: the driver's energy counter where it has enough readings inside, else the
	// best complete board channel on the counter's scale, else that channel's own figure)
	// with its 95 % intervals, relative and absolute.
	energy.Interval
	EnergySource string `json:"energy_source"`
	// EnergyNote says why; EnergyReadings is how many readings of the source lie inside.
	EnergyNote     string `json:"energy_note,omitempty"`
	EnergyReadings int    `json:"energy_readings"`
	// EnergyMethod is the estimator's method (counter, calibrated_ring, inversion,
	// counter_interpolated), and Uncertainty the interval's budget: the components,
	// whether some are absent (partial), and the absolute interval with the board's gain
	// error. (energy_source and energy_method keep their names in summary.json, where
	// "method" and "source" would be new keys for the same values.)
	EnergyMethod string             `json:"energy_method"`
	Uncertainty  energy.Uncertainty `json:"uncertainty"`
	// CounterEnergyJ and CounterReadings are the counter's own figure and its readings
	// strictly inside; CalibratedEnergyJ and CalibratedReadings the calibrated channel's
	// figure on the counter's scale and its readings inside (0: none); CounterDiffPct the
	// first against the second.
	CounterEnergyJ     float64 `json:"counter_energy_j"`
	CounterReadings    int     `json:"counter_readings"`
	CalibratedEnergyJ  float64 `json:"calibrated_energy_j"`
	CalibratedReadings int     `json:"calibrated_readings"`
	CounterDiffPct     float64 `json:"counter_diff_pct"`
	// EnergyCalibration maps the calibrated channel onto the counter (nil: none).
	EnergyCalibration *energy.Calibration `json:"energy_calibration,omitempty"`
	IdlePowerW        float64             `json:"idle_power_w"`
	// IdleLevel names the idle that IdlePowerW is: "idle at rest" (measure's baseline,
	// before the command's CUDA context opens) or "active idle" (the idle recording of the
	// verbs that run gpuwatt's kernels, its context open); absent without a baseline.
	IdleLevel        string        `json:"idle_level,omitempty"`
	EnergyAboveIdleJ float64       `json:"energy_above_idle_j"`
	MeanPowerW       float64       `json:"mean_power_w"`
	MaxPowerW        float64       `json:"max_power_w"`
	MaxPowerSource   string        `json:"max_power_source,omitempty"`
	PowerLimitW      float64       `json:"power_limit_w,omitempty"`
	Channels         []Channel     `json:"channels"`
	SMClockMHz       *Range        `json:"sm_clock_mhz,omitempty"`
	MemClockMHz      *Range        `json:"mem_clock_mhz,omitempty"`
	TemperatureC     *Range        `json:"temperature_c,omitempty"`
	Throttle         []ReasonShare `json:"throttle"`
	// ThrottleUnavailable says why Throttle is empty for want of a reading (the clock-event
	// reasons were not recorded or have no reading over the run), not for want of events.
	ThrottleUnavailable string           `json:"throttle_unavailable,omitempty"`
	Warnings            []status.Warning `json:"warnings"`
}

// Channel is the energy seen by one power channel (or the counter) during the region.
type Channel struct {
	Channel          string  `json:"channel"`
	EnergyJ          float64 `json:"energy_j"`
	IdlePowerW       float64 `json:"idle_power_w"`
	EnergyAboveIdleJ float64 `json:"energy_above_idle_j"`
	MeanPowerW       float64 `json:"mean_power_w"`
	MaxPowerW        float64 `json:"max_power_w,omitempty"`
	Samples          int     `json:"samples"`  // new readings inside the run
	Coverage         float64 `json:"coverage"` // share of the run covered by readings
	UpdatePeriodS    float64 `json:"update_period_s"`
	PollIntervalS    float64 `json:"poll_interval_s"`
	Polls            int     `json:"polls"`
	Repeats          int     `json:"repeats"`
	MissedUpdates    int     `json:"missed_updates_estimate"`
	// CorrectedEnergyJ is a board power channel's own corrected energy (its sensor model
	// inverted; EnergyJ is its readings integrated as recorded), with its 95 % interval on
	// the board's scale; absent where not computed (Options.ChannelIntervals) or where the
	// inversion gives no figure.
	CorrectedEnergyJ     *float64 `json:"corrected_energy_j,omitempty"`
	CorrectedEnergyLowJ  *float64 `json:"corrected_energy_low_j,omitempty"`
	CorrectedEnergyHighJ *float64 `json:"corrected_energy_high_j,omitempty"`
}

// Range is the span of a quantity during the run.
type Range struct {
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
}

// ReasonShare is the share of the run's time during which a clock-event reason was active.
type ReasonShare struct {
	Reason string  `json:"reason"`
	Share  float64 `json:"share"`
}

// boardChannels are the whole-board power channels, best first for the headline energy
// when there is no counter: trace.PowerPreference, the one order (its comment says why).
var boardChannels = trace.PowerPreference

// Options of Summarize.
type Options struct {
	// What names the region in warnings ("the command").
	What string
	// Steady says the power was constant over the region (a kernel launched back to back
	// after a warm-up). Each channel's energy is then its mean power from the readings
	// inside the region times the region's length, instead of an integral interpolated at
	// both ends across readings up to an update period away, where the power differs.
	Steady bool
	// Calibration maps the best complete board channel onto the energy counter's scale;
	// nil: Summarize fits one over the whole trace (FitCalibration). The measurement loop
	// fits it once per GPU over the whole session and passes it to every measurement.
	Calibration *energy.Calibration
	// EnergyCache, where given, is shared by the regions of one trace (energy.Cache).
	EnergyCache *energy.Cache
	// IdleLevel names the idle the baseline records (correct.IdleAtRest or
	// correct.ActiveIdle): Summary.IdleLevel.
	IdleLevel string
	// ChannelIntervals gives every board power channel its own corrected energy with its
	// 95 % interval (energy.Region with that channel's model inverted): measure's table.
	// The measurement loop leaves it off (its rows use the headline only).
	ChannelIntervals bool
}

// Summarize describes GPU g over the region [start, end] of a trace, with the idle
// baseline [b0, b1] (b1 <= start; b0 == b1 means none).
func Summarize(tr *trace.Trace, g trace.GPU, start, end, b0, b1 time.Duration, o Options) Summary {
	gs := Summary{Index: g.Index, Name: g.Name, UUID: g.UUID, PowerLimitW: g.PowerLimitW, Throttle: []ReasonShare{}, Warnings: []status.Warning{}}
	if b1 > b0 {
		gs.IdleLevel = o.IdleLevel
	}
	if end <= start {
		gs.add(status.Warnf(CodeNotRun, "%s did not run: nothing to summarise", o.What))
		return gs
	}
	sp := span{tr: tr, gpu: g.Index, start: start, end: end, b0: b0, b1: b1, cache: o.EnergyCache}
	byName, names := gs.channelFigures(sp, o)
	if o.ChannelIntervals {
		correctedIntervals(sp, o, byName)
	}
	gs.Channels = inOrder(byName, names)

	// The headline: internal/energy's one estimator.
	est := energy.Region(tr, g.Index, start, end, energy.Options{What: o.What, Steady: o.Steady, Calibration: o.Calibration, Cache: o.EnergyCache})
	gs.candidates(est, byName)
	found := est.Method != energy.NoFigure
	var head Channel
	var calibrated *Channel
	if found {
		head, calibrated = gs.headline(est, byName, sp)
	}
	gs.maxPower(est.Calibration, found, byName)
	if found {
		agreement(&gs, byName, head, calibrated, sp.dur(), gs.add)
		gs.fewUpdates(sp, head.Channel, o.What)
	}
	gs.conditions(sp)
	return gs
}

// span is the region [start, end] of GPU gpu's readings in tr, with its idle baseline
// [b0, b1] (b0 == b1: none).
type span struct {
	tr                 *trace.Trace
	gpu                int
	start, end, b0, b1 time.Duration
	cache              *energy.Cache // Options.EnergyCache: the regions of tr share its series
}

func (sp span) dur() time.Duration { return sp.end - sp.start }

// series is channel name's readings, shared (not to be modified): the measurement loop
// summarises hundreds of regions of one trace, each of which scanned the whole trace for
// each channel.
func (sp span) series(name string) []trace.Sample { return sp.cache.Samples(sp.tr, sp.gpu, name) }

// add appends a warning.
func (gs *Summary) add(w status.Warning) { gs.Warnings = append(gs.Warnings, w) }

// channelFigures is every energy counter's and power channel's own figure over the span,
// by name, and their names in the trace's order; a channel that does not describe the
// region is left out with a warning saying why, and each says what its statistics show.
func (gs *Summary) channelFigures(sp span, o Options) (map[string]Channel, []string) {
	byName := map[string]Channel{}
	var names []string
	for _, ch := range sp.tr.Meta.Channels {
		if ch.GPU != sp.gpu {
			continue
		}
		var cs Channel
		var ok bool
		switch {
		case ch.Quantity == trace.QEnergy && ch.Cumulative:
			cs, ok = gs.counterFigure(sp, ch.Name, o.Steady)
		case ch.Quantity == trace.QPower && !ch.Setting:
			cs, ok = gs.powerFigure(sp, ch.Name, o.Steady)
		}
		if !ok {
			continue
		}
		cs.EnergyAboveIdleJ = cs.EnergyJ - cs.IdlePowerW*sp.dur().Seconds()
		if st := ch.Stats; st != nil {
			gs.readingStats(&cs, st)
		}
		byName[ch.Name] = cs
		names = append(names, ch.Name)
	}
	return byName, names
}

// counterFigure is an energy counter's figure: its difference over the span (steady: its
// rate inside times the span's length); false where it does not cover the span.
func (gs *Summary) counterFigure(sp span, name string, steady bool) (Channel, bool) {
	series := sp.series(name)
	dur := sp.dur()
	e, ok := trace.CounterDelta(series, sp.start, sp.end)
	if steady {
		if rate, n, _ := energy.InsideRate(series, sp.start, sp.end); n >= 2 {
			e, ok = units.Energy(rate*dur.Seconds()), true
		}
	}
	if !ok {
		gs.add(status.Warnf(CodeCounterUncovered, "%s: the counter does not cover the run (or was reset during it); left out", name))
		return Channel{}, false
	}
	cs := Channel{Channel: name, EnergyJ: e.Joules(), MeanPowerW: e.Joules() / dur.Seconds(), Coverage: 1}
	cs.IdlePowerW = baselinePower(series, sp.b0, sp.b1, true)
	cs.Samples = countIn(series, sp.start, sp.end)
	return cs, true
}

// powerFigure is a power channel's readings integrated over the span (steady: their mean
// inside times the span's length); false where no reading describes the span.
func (gs *Summary) powerFigure(sp span, name string, steady bool) (Channel, bool) {
	series := sp.series(name)
	in := trace.Integrate(series, sp.start, sp.end)
	if in.Coverage == 0 && in.Samples == 0 {
		// No reading describes the run (the channel's reads failed or stopped before it):
		// its energy and power are unavailable, not 0.
		gs.add(keyed(CodeLowCoverage, name+": readings cover only part of the run", 0, "% covered",
			"%s: no reading describes the run; left out (its energy and power are unavailable)", name))
		return Channel{}, false
	}
	if steady {
		if mean, n := energy.InsideMean(series, sp.start, sp.end); n >= 2 {
			in.Mean, in.Energy, in.Coverage = units.Power(mean), units.Energy(mean*sp.dur().Seconds()), 1
		}
	}
	cs := Channel{Channel: name, EnergyJ: in.Energy.Joules(), MeanPowerW: float64(in.Mean), MaxPowerW: float64(in.Max), Samples: in.Samples, Coverage: in.Coverage}
	cs.IdlePowerW = baselinePower(series, sp.b0, sp.b1, false)
	if in.Coverage < 0.99 {
		gs.add(keyed(CodeLowCoverage, name+": readings cover only part of the run", math.Round(100*in.Coverage), "% covered",
			"%s: readings cover only %.0f %% of the run", name, 100*in.Coverage))
	}
	return cs, true
}

// readingStats copies a channel's reading statistics over the recording, and warns where
// they show updates missed or reads failed.
func (gs *Summary) readingStats(cs *Channel, st *trace.ChannelStats) {
	cs.UpdatePeriodS, cs.PollIntervalS, cs.Polls, cs.Repeats, cs.MissedUpdates = st.UpdatePeriod, st.PollInterval, st.Polls, st.Repeats, st.Missed
	// A long interval is either a missed update or an update that repeated the value
	// (common at idle); only a slow poll makes the first plausible.
	if st.Missed > 2 && st.Missed > st.Samples/100 && !st.PhaseLocked && st.PollInterval > st.UpdatePeriod/4 {
		gs.add(missedUpdates(cs.Channel, st.Missed, st.Samples, st.PollInterval, st.UpdatePeriod))
	}
	if st.SlowDropped > 0 {
		gs.add(keyed(CodeSlowCalls, cs.Channel+": slow calls", float64(st.SlowDropped), "readings left out",
			"%s: %d of %d readings left out: their calls took longer than half the update period (the slowest %.3g s), so when they were taken is unknown; the driver was busy (other NVML clients on the host?)",
			cs.Channel, st.SlowDropped, st.Polls, st.SlowestCall))
	}
	if st.Errors > 0 {
		gs.add(keyed(CodeReadErrors, cs.Channel+": reads failed", float64(st.Errors), "failed reads",
			"%s: %d failed reads (last: %s)", cs.Channel, st.Errors, st.LastError))
	}
}

// correctedIntervals gives every board power channel with readings inside its own
// corrected energy with its 95 % interval (its sensor model inverted), where the
// inversion gives a figure.
func correctedIntervals(sp span, o Options, byName map[string]Channel) {
	for _, n := range boardChannels {
		c, ok := byName[n]
		if !ok || c.Samples == 0 {
			continue
		}
		e := energy.Region(sp.tr, sp.gpu, sp.start, sp.end, energy.Options{What: o.What, Method: energy.Inversion, Channel: n, Cache: o.EnergyCache})
		if e.Method != energy.Inversion {
			continue
		}
		v, lo, hi := e.EnergyJ, e.LowJ, e.HighJ
		c.CorrectedEnergyJ, c.CorrectedEnergyLowJ, c.CorrectedEnergyHighJ = &v, &lo, &hi
		byName[n] = c
	}
}

// inOrder is the channels in a stable, meaningful order: counter, board channels, then
// the rest.
func inOrder(byName map[string]Channel, names []string) []Channel {
	order := trace.CounterPreference
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i], order) < rank(names[j], order) })
	var out []Channel
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

// candidates copies the estimator's candidates (the counter's own figure, the calibrated
// channel's) and warnings.
func (gs *Summary) candidates(est energy.Estimate, byName map[string]Channel) {
	gs.EnergyCalibration = est.Calibration
	gs.CounterEnergyJ, gs.CounterReadings = est.CounterJ, est.CounterReadings
	gs.CalibratedEnergyJ, gs.CalibratedReadings = est.CalibratedJ, est.CalibratedReadings
	if _, ok := byName[energy.CounterChannel]; ok && est.CalibratedJ > 0 {
		gs.CounterDiffPct = 100 * (est.CounterJ/est.CalibratedJ - 1)
	}
	gs.Warnings = append(gs.Warnings, est.Warnings...)
}

// headline sets the summary's energy from the estimator's figure, and its idle and mean
// power from the channel the figure came from (on the counter's scale where calibrated).
// It returns that channel, and the calibrated channel on the counter's scale (nil: none).
func (gs *Summary) headline(est energy.Estimate, byName map[string]Channel, sp span) (Channel, *Channel) {
	dur := sp.dur().Seconds()
	gs.Interval, gs.EnergySource, gs.EnergyNote, gs.EnergyReadings = est.Interval, est.Source, est.Note, est.Readings
	gs.EnergyMethod, gs.Uncertainty = string(est.Method), est.Uncertainty
	head := byName[est.Channel]
	head.Channel = est.Channel
	var calibrated *Channel
	if cal := est.Calibration; cal != nil && est.CalibratedJ > 0 {
		c := byName[cal.Channel]
		c.EnergyJ, c.MeanPowerW = est.CalibratedJ, est.CalibratedJ/dur
		if c.IdlePowerW != 0 {
			c.IdlePowerW = cal.Power(c.IdlePowerW)
		}
		c.EnergyAboveIdleJ = c.EnergyJ - c.IdlePowerW*dur
		calibrated = &c
		if est.Method == energy.CalibratedRing {
			head = c
		}
	}
	head.EnergyJ = est.EnergyJ
	head.EnergyAboveIdleJ = head.EnergyJ - head.IdlePowerW*dur
	gs.IdlePowerW, gs.EnergyAboveIdleJ = head.IdlePowerW, head.EnergyAboveIdleJ
	gs.MeanPowerW = head.EnergyJ / dur
	if head.IdlePowerW == 0 && sp.b0 >= sp.b1 {
		gs.add(status.Warnf(CodeNoBaseline, "no idle baseline was recorded (a baseline of 0 s): energy above idle is not known"))
	}
	return head, calibrated
}

// maxPower sets the highest power, on the scale of the mean: the calibrated channel's
// highest reading mapped onto the counter's scale where the headline has a calibration,
// else the first board channel's. (A board channel's raw readings, on their own gain and
// offset, put the maximum below the counter's mean in 28 of 39 micro rows on sim:h100.)
func (gs *Summary) maxPower(cal *energy.Calibration, found bool, byName map[string]Channel) {
	if found && cal != nil {
		if c, ok := byName[cal.Channel]; ok && c.Samples > 0 {
			gs.MaxPowerW, gs.MaxPowerSource = cal.Power(c.MaxPowerW), c.Channel+" calibrated"
			return
		}
	}
	for _, n := range boardChannels {
		if c, ok := byName[n]; ok && c.Samples > 0 {
			gs.MaxPowerW, gs.MaxPowerSource = c.MaxPowerW, c.Channel
			return
		}
	}
}

// fewUpdates warns where the region lasted fewer than 20 updates of the headline's channel.
func (gs *Summary) fewUpdates(sp span, channel, what string) {
	p := updatePeriod(sp.tr, sp.gpu, channel)
	dur := sp.dur()
	if p <= 0 || dur >= 20*p {
		return
	}
	gs.add(keyed(CodeFewUpdates, fmt.Sprintf("%s ran for fewer than 20 updates of %s: the energy is uncertain by about one update period's worth", what, channel),
		math.Round(dur.Seconds()/p.Seconds()), "updates",
		"%s ran for %s, only %.0f updates of %s: the energy is uncertain by about one update period's worth (±%s)",
		what, units.FormatSeconds(dur.Seconds(), 3), dur.Seconds()/p.Seconds(), channel, units.Energy(gs.MeanPowerW*p.Seconds())))
}

// conditions sets the clocks' and temperature's ranges and the clock-event reasons'
// shares over the span, and warns of throttling.
func (gs *Summary) conditions(sp span) {
	gs.SMClockMHz = rangeOf(sp.series(trace.ChClockSM), sp.start, sp.end, 1e-6)
	gs.MemClockMHz = rangeOf(sp.series(trace.ChClockMem), sp.start, sp.end, 1e-6)
	gs.TemperatureC = rangeOf(sp.series(trace.ChTempGPU), sp.start, sp.end, 1)
	reasons := sp.series(trace.ChThrottleReasons)
	gs.Throttle = reasonShares(reasons, sp.start, sp.end)
	if len(held(reasons, sp.start, sp.end)) == 0 {
		gs.ThrottleUnavailable = "no reading of " + trace.ChThrottleReasons + " over the run"
	}
	for _, r := range gs.Throttle {
		if !notThrottling[r.Reason] && r.Share >= 0.01 {
			what := "clocks were lowered"
			if r.Reason == "sw_power_cap" {
				what = "the board hit its power limit and lowered its clocks"
			}
			gs.add(keyed(CodeThrottling, fmt.Sprintf("throttling: %s (%s)", what, r.Reason), math.Round(100*r.Share), "% of the run",
				"throttling: %s during %.0f %% of the run (%s)", what, 100*r.Share, r.Reason))
		}
	}
}

// ChannelDisagreement is how far (a share) another board channel's energy may differ from
// the headline's before a warning says so and why.
const ChannelDisagreement = 0.05

// CalibratedDisagreement is how far (a share) the calibrated channel's figure may differ
// from a counter with enough readings inside the region before a warning says so.
const CalibratedDisagreement = 0.03

// agreement compares every board channel's energy with the headline and says why they
// differ. Where the headline is the counter and a calibrated channel exists, that channel
// is compared on the counter's scale instead of raw; the calibrated channel is not
// compared with itself.
func agreement(gs *Summary, byName map[string]Channel, head Channel, calibrated *Channel, dur time.Duration, add func(status.Warning)) {
	if head.EnergyJ <= 0 {
		return
	}
	if calibrated != nil && head.Channel == energy.CounterChannel {
		diff := (calibrated.EnergyJ - head.EnergyJ) / head.EnergyJ
		if math.Abs(diff) > CalibratedDisagreement {
			const why = "both should hold here; the power varied between the counter's readings, or the calibration over the whole recording does not hold for this load"
			cc := energy.CounterChannel
			add(keyed(CodeCounterDisagreement,
				fmt.Sprintf("%s on %s's scale and %s disagree by more than %g %%: %s", calibrated.Channel, cc, cc, 100*CalibratedDisagreement, why),
				round1(100*diff), "%",
				"%s on %s's scale and %s (%d readings inside) disagree by %+.1f %% (%.1f J vs %.1f J): %s",
				calibrated.Channel, cc, cc, gs.CounterReadings, 100*diff, calibrated.EnergyJ, head.EnergyJ, why))
		}
	}
	for _, n := range boardChannels {
		c, ok := byName[n]
		if !ok || n == head.Channel || c.Coverage < 0.99 || (calibrated != nil && n == calibrated.Channel) {
			continue
		}
		diff := (c.EnergyJ - head.EnergyJ) / head.EnergyJ
		if math.Abs(diff) <= ChannelDisagreement {
			continue
		}
		var why, whyKey string
		switch n {
		case trace.ChPowerUsage, trace.ChPowerAverage:
			why, whyKey = lagReason(n, units.FormatSeconds(dur.Seconds(), 3)), lagReason(n, "short")
		case trace.ChPowerInstant:
			why = "power.instant averages only part of each update period (about 25 ms of every 100 ms on A100/H100, Yang et al. SC'24): a load that varies faster than the update period is sampled, not integrated"
		case trace.ChPowerSamples:
			why = "the driver's 20 ms sample buffer and the energy counter should agree; a lasting difference points at a gain or offset error of one of them"
		}
		add(disagreement(n, gs.EnergySource, c.EnergyJ, head.EnergyJ, why, whyKey))
	}
}

// disagreement is the warning that channel's energy e differs from the headline's (from
// source) by more than ChannelDisagreement, and why. Its key leaves out what differs from
// kernel to kernel (the figures, the run's length: whyKey is why without it), so that a
// disagreement many kernels share is told once (status.Group).
func disagreement(channel, source string, e, head float64, why, whyKey string) status.Warning {
	if whyKey == "" {
		whyKey = why
	}
	diff := (e - head) / head
	return keyed(CodeChannelDisagreement,
		fmt.Sprintf("%s and %s disagree by more than %g %%: %s", channel, source, 100*ChannelDisagreement, whyKey),
		round1(100*diff), "%",
		"%s and %s disagree by %+.1f %% (%.1f J vs %.1f J): %s", channel, source, 100*diff, e, head, why)
}

// missedUpdates is the warning that a channel missed updates between its readings; its
// key is the channel with its poll interval and update period, its figure the count.
func missedUpdates(channel string, missed, samples int, poll, period float64) status.Warning {
	return keyed(CodeMissedUpdates, fmt.Sprintf("%s: updates were missed (poll interval %s, update period %s)", channel, units.FormatSeconds(poll, 3), units.FormatSeconds(period, 3)),
		float64(missed), "missed updates",
		"%s: about %d of %d updates were missed (poll interval %s, update period %s)", channel, missed, samples+missed, units.FormatSeconds(poll, 3), units.FormatSeconds(period, 3))
}

// lagReason is why a 1 s moving-average channel misses over a run of length dur ("2 s").
func lagReason(channel, dur string) string {
	return fmt.Sprintf("%s is a moving average over about 1 s: it lags the load, so over a %s run energy drawn at the start is seen late and energy drawn at the end falls after the run", channel, dur)
}

// The codes of Summarize's own warnings (the headline's come from the energy estimator,
// with its codes).
const (
	CodeNotRun              status.Code = "region_not_run"
	CodeCounterUncovered    status.Code = "counter_uncovered"
	CodeLowCoverage         status.Code = "low_coverage"
	CodeMissedUpdates       status.Code = "missed_updates"
	CodeReadErrors          status.Code = "read_errors"
	CodeSlowCalls           status.Code = "slow_calls"
	CodeNoBaseline          status.Code = "no_baseline"
	CodeFewUpdates          status.Code = "few_updates"
	CodeThrottling          status.Code = "throttling"
	CodeCounterDisagreement status.Code = "counter_disagreement"
	CodeChannelDisagreement status.Code = "channel_disagreement"
)

// keyed is a warning that says the same thing (key) for every kernel or point it is raised
// on, with a figure of its own (value in unit) and its full sentence.
func keyed(code status.Code, key string, value float64, unit, format string, args ...any) status.Warning {
	return status.Warning{Code: code, Key: key, Value: value, Unit: unit, Message: fmt.Sprintf(format, args...)}
}

// round1 rounds x to one decimal, the precision a warning's figure is told with.
func round1(x float64) float64 { return math.Round(10*x) / 10 }

// baselinePower is a channel's mean power over the baseline [b0, start], from the samples
// taken inside it only: interpolating across start would blend the first readings of the
// command's load into the idle figure.
func baselinePower(series []trace.Sample, b0, start time.Duration, cumulative bool) float64 {
	if start <= b0 {
		return 0
	}
	i := sort.Search(len(series), func(i int) bool { return series[i].T >= b0 })
	if cumulative && i > 0 {
		// A counter read sparingly may have no reading near the baseline's start: its
		// rate over the baseline runs from the last reading before it.
		i--
	}
	j := sort.Search(len(series), func(j int) bool { return series[j].T > start })
	in := series[i:j]
	switch {
	case len(in) >= 2 && cumulative:
		first, last := in[0], in[len(in)-1]
		if last.T <= first.T || last.Value < first.Value {
			return 0 // readings at one instant, or a counter reset: no rate
		}
		return (last.Value - first.Value) / (last.T - first.T).Seconds()
	case len(in) >= 2:
		return float64(trace.Integrate(in, in[0].T, in[len(in)-1].T).Mean)
	case len(in) == 1 && !cumulative:
		return in[0].Value
	}
	return 0
}

func updatePeriod(tr *trace.Trace, gpu int, name string) time.Duration {
	if ch, ok := tr.Channel(gpu, name); ok && ch.Stats != nil {
		return time.Duration(ch.Stats.UpdatePeriod * float64(time.Second))
	}
	return 0
}

func rank(name string, order []string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

func countIn(s []trace.Sample, from, to time.Duration) int {
	n := 0
	for _, x := range s {
		if x.T >= from && x.T <= to {
			n++
		}
	}
	return n
}

// held returns the samples that describe [from, to] with sample-and-hold semantics: the
// last one at or before from, then those inside.
func held(s []trace.Sample, from, to time.Duration) []trace.Sample {
	i := sort.Search(len(s), func(i int) bool { return s[i].T > from })
	if i > 0 {
		i--
	}
	j := sort.Search(len(s), func(j int) bool { return s[j].T > to })
	if i >= j {
		return nil
	}
	return s[i:j]
}

func rangeOf(s []trace.Sample, from, to time.Duration, scale float64) *Range {
	h := held(s, from, to)
	if len(h) == 0 {
		return nil
	}
	v := make([]float64, len(h))
	for i, x := range h {
		v[i] = x.Value * scale
	}
	slices.Sort(v)
	return &Range{Min: v[0], Max: v[len(v)-1], Median: v[len(v)/2]}
}

// reasonShares is the time-weighted share of [from, to] during which each reason bit was set.
func reasonShares(s []trace.Sample, from, to time.Duration) []ReasonShare {
	h := held(s, from, to)
	out := []ReasonShare{}
	if len(h) == 0 || to <= from {
		return out
	}
	share := make([]float64, len(reasonBits))
	for i, x := range h {
		a := max(x.T, from)
		b := to
		if i+1 < len(h) {
			b = min(h[i+1].T, to)
		}
		if b <= a {
			continue
		}
		w := float64(b-a) / float64(to-from)
		for k, rb := range reasonBits {
			if uint64(x.Value)&rb.bit != 0 {
				share[k] += w
			}
		}
	}
	for k, rb := range reasonBits {
		if share[k] > 0 {
			out = append(out, ReasonShare{Reason: rb.name, Share: share[k]})
		}
	}
	return out
}

// ReasonNames renders a clock-event mask as names.
func ReasonNames(mask uint64) string {
	var n []string
	for _, rb := range reasonBits {
		if mask&rb.bit != 0 {
			n = append(n, rb.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ",")
}

// Clock-event (throttle) reason bits of nvmlDeviceGetCurrentClocksEventReasons, as the
// trace's throttle.reasons channel records them (the sim device uses the same bits).
var reasonBits = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// notThrottling are reasons that do not slow a busy GPU down.
var notThrottling = map[string]bool{"gpu_idle": true, "applications_clocks_setting": true, "display_clock_setting": true}
