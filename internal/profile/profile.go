// Package profile is seed 004 (Lang and Rünger): a high-resolution power profile of a short
// kernel from a low-resolution power sensor, by running the kernel many times at different
// phases of the sensor's update cycle and combining the readings.
//
// Offline (Run): n runs, each after a wait in [T, 2T); a watcher polls the channel all the
// time and stamps every update; each update is tied to the nearest kernel start. Where the
// sensor sees all of the time (W >= T) the waits are uniform random, as in the paper; where
// it sees only part (W < T, the H100's 25 ms of every 100 ms) the phases are stratified:
// each run is placed so that the next update's window ends at a chosen offset from the
// kernel's start, the offsets spread evenly over the range where the window overlaps the
// kernel, so every part of the kernel is seen.
//
// Online (MeasureOnline): Alg. 2 of the paper: sync to an update (wait until the value
// changes), launch at a chosen offset before the predicted next update, read one value
// after it, re-sync at least every 0.2 s.
//
// Analysis: a reading is the mean of the power over its window [t-D-W, t-D]. The cloud is
// shown with each reading at the middle of its window, binned into the "raw" profile
// (mean ± 1.96 σ/√n per bin): the kernel convolved with the window. The profile proper is
// the deconvolution: the per-bin power s_j over the kernel and the baseline b solving, by
// least squares, reading_i = b + Σ_j (s_j - b)·overlap(window_i, bin_j)/W, with the
// covariance of the estimate giving its 95 % band. The bin width is the effective
// resolution, chosen as the finest at which every bin is seen by enough window edges.
package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Format is the version of profile.json.
const Format = "gpuwatt.profile/1"

// ModelName is the sensor model in its spec form (rc:..., boxcar:...), or "point sample
// (none)".
func ModelName(s sensormodel.Model) string {
	if s.Kind() == sensormodel.None {
		return "point sample (none)"
	}
	return s.Shape().String()
}

// MeasureOptions are those of one profile measurement (Measure, MeasureOnline). The zero value gives the defaults.
type MeasureOptions struct {
	Runs   int               // kernel runs (default 400)
	Sensor sensormodel.Model // the channel's model (period, window, delay, lag); Period is required
	Poll   time.Duration     // poll interval of the channel (default 100 µs; a buffered channel: 50 ms)
	// MinEdges is how many readings must see a bin (its window start or end falling in
	// it) for the bin width to be accepted (default 12).
	MinEdges int
	Seed     uint64 // of the phase plan (default 1)
	// Random forces the paper's uniform random waits even for a partial-coverage sensor.
	Random bool
	// Progress is told every 50th run and the last (stage "profile").
	Progress status.Progress

	buffered bool // the channel is a buffered one (set by Measure and MeasureOnline)
}

// BufferedPoll is the default poll interval of a buffered channel (the driver's ring of
// timestamped samples holds 2.4 s; a read costs 0.3-3 ms of CPU on an H200).
const BufferedPoll = 50 * time.Millisecond

func (o MeasureOptions) withDefaults(buffered bool) MeasureOptions {
	if o.Runs <= 0 {
		o.Runs = 400
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Microsecond
		if buffered {
			o.Poll = BufferedPoll
		}
	}
	if o.MinEdges <= 0 {
		o.MinEdges = 12
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Point is one reading of the cloud.
type Point struct {
	Run int `json:"run"`
	// PhaseS is the time of the window's end (update time − delay) since the kernel's start;
	// MidS the middle of the window (PhaseS − W/2), where the cloud plots it.
	PhaseS float64 `json:"phase_s"`
	MidS   float64 `json:"mid_s"`
	PowerW float64 `json:"power_w"`

	others []float64 // phases relative to earlier runs the reading still sees, s
}

// Bin is one bin of a profile: [StartS, EndS) since the kernel's start.
type Bin struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	N      int     `json:"n"` // readings in the bin (raw) or window edges in it (deconvolved)
	PowerW float64 `json:"power_w"`
	LowW   float64 `json:"low_w"`  // 95 % band: the fit's and the sensor model's parts
	HighW  float64 `json:"high_w"` //
	// StatHalfW and ModelHalfW are the band's two parts (deconvolved bins only): the fit's
	// statistics and the sensor model's intervals (the bin solved again at their ends).
	StatHalfW  float64 `json:"stat_half_w,omitempty"`
	ModelHalfW float64 `json:"model_half_w,omitempty"`
}

// LongRun is the energy per launch over long back-to-back runs of the same kernel.
type LongRun struct {
	Launches         int     `json:"launches"`
	SecondsPerLaunch float64 `json:"seconds_per_launch"`
	EnergyPerLaunchJ float64 `json:"energy_per_launch_j"`
	Source           string  `json:"source"`
}

// Result is a power profile.
type Result struct {
	Format string `json:"format"`
	Device string `json:"device,omitempty"`
	// Simulated: measured on the sim device (gpu.System.Simulated).
	Simulated bool   `json:"simulated"`
	Kernel    string `json:"kernel"`
	Channel   string `json:"channel"`
	Method    string `json:"method"` // offline-random, offline-stratified, online
	Runs      int    `json:"runs"`
	// KernelS is the kernel's run time (mean over the runs).
	KernelS float64 `json:"kernel_s"`
	// ChannelWhy says why this channel was chosen (set by the caller).
	ChannelWhy string  `json:"channel_why,omitempty"`
	Model      string  `json:"model"` // the sensor model the readings are undone with
	PeriodS    float64 `json:"period_s"`
	WindowS    float64 `json:"window_s"`
	DelayS     float64 `json:"delay_s"`
	TauS       float64 `json:"tau_s,omitempty"`
	// Grid describes the sample grid of a buffered channel's timestamps, where they lie on one.
	Grid     *Grid   `json:"grid,omitempty"`
	Coverage float64 `json:"coverage"` // share of the time seen: W/T, or 2 tau/T for a lag, at most 1
	PollS    float64 `json:"poll_s"`
	// Syncs counts the online variant's clock syncs.
	Syncs int `json:"syncs,omitempty"`
	// ResolutionS is the resolution measured on a known shape: the 10-90 % width over which
	// a step in the kernel's middle, read at the run's own phases through the model and
	// through each end of its intervals, is reproduced (ResolutionWhy says how); never less
	// than BinS, the bins' width. PlacementS is how far the reproduced step's middle
	// landed from the true one, at most.
	ResolutionS   float64 `json:"resolution_s"`
	ResolutionWhy string  `json:"resolution_why"`
	BinS          float64 `json:"bin_s"`
	PlacementS    float64 `json:"placement_s"`
	// Lambda is the regularisation's strength chosen by generalised cross-validation,
	// EffectiveParams the trace of the influence matrix at it.
	Lambda          float64 `json:"lambda"`
	EffectiveParams float64 `json:"effective_params"`
	BaselineW       float64 `json:"baseline_w"`
	// Interval is the profile's integral over the kernel (energy per run), with its 95 %
	// band (LowJ, HighJ) and that band with the board's gain error (±5 %,
	// energy.BoardGainError) added (AbsoluteLowJ, AbsoluteHighJ): the bounds of the true
	// energy, for comparing boards. EnergyAboveBaselineJ is the part above the baseline.
	energy.Interval
	// EnergyStatHalfWidthJ is the fit's statistical part of the 95 % interval,
	// EnergyModelHalfWidthJ the sensor model's (EnergyModelNote says how, or why not);
	// LowJ and HighJ combine them (root sum of squares).
	EnergyStatHalfWidthJ  float64 `json:"energy_statistical_half_width_j"`
	EnergyModelHalfWidthJ float64 `json:"energy_model_half_width_j"`
	EnergyModelNote       string  `json:"energy_model_note"`
	// EnergyJackknifeHalfWidthJ is the runs' own spread (a jackknife over groups of runs:
	// 1.96 times its standard deviation), taken where it exceeds the fit's statistics;
	// EnergyRegularisationJ the regularisation's bias (the energy at a thousandth of λ
	// against it), added to the interval.
	EnergyJackknifeHalfWidthJ float64  `json:"energy_jackknife_half_width_j"`
	EnergyRegularisationJ     float64  `json:"energy_regularisation_j"`
	EnergyBinsJ               float64  `json:"energy_bins_j"`
	EnergyAboveBaselineJ      float64  `json:"energy_above_baseline_j"`
	LongRun                   *LongRun `json:"long_run,omitempty"`
	// EnergyDiff is (EnergyJ − LongRun energy per launch) / LongRun energy per launch.
	EnergyDiff *float64 `json:"energy_diff,omitempty"`
	// Phases and Transition: a two-phase kernel's phases against their steady powers, and
	// the step between them (CheckPhases).
	Phases     []Phase     `json:"phases,omitempty"`
	Transition *Transition `json:"transition,omitempty"`
	Profile    []Bin       `json:"profile"` // deconvolved
	Raw        []Bin       `json:"raw"`     // readings binned at their window's middle
	Points     []Point     `json:"points"`
	Dropped    int         `json:"dropped"` // updates not tied to any run
	// Record is what an offline profile was computed from (the runs' times and every
	// update of the channel), so that it can be computed again offline (Reanalyse,
	// `gpuwatt profile --from DIR`); nil for the online variant.
	Record *Record `json:"record,omitempty"`
	// stepper reproduces known shapes through this profile's deconvolution (CheckPhases).
	stepper *stepper
	// Status: the warnings, and whether the runs were cut short (interrupted).
	status.Status
}

// UnmarshalJSON reads a profile.json, also as gpuwatt before issue 27 wrote it: the
// absolute band under "energy_abs_low_j" and "energy_abs_high_j" (now "absolute_low_j"
// and "absolute_high_j", as every energy's).
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var old struct {
		Low  *float64 `json:"energy_abs_low_j"`
		High *float64 `json:"energy_abs_high_j"`
	}
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return err
	}
	if old.Low != nil && old.High != nil {
		r.AbsoluteLowJ, r.AbsoluteHighJ = *old.Low, *old.High
	}
	return nil
}

// Record is what an offline profile is computed from: the sensor model it was computed
// with, the collection's settings, each run's times and every update of the channel as
// the watcher caught it. Computing the profile again from it (Reanalyse) gives the same
// profile with the same model, or the profile under another model.
type Record struct {
	// Sensor is the channel's model the profile was computed with, with its intervals.
	Sensor   sensormodel.Model `json:"sensor"`
	Buffered bool              `json:"buffered"`
	PollS    float64           `json:"poll_s"`
	MinEdges int               `json:"min_edges"`
	Seed     uint64            `json:"seed"`
	Random   bool              `json:"random,omitempty"`
	// Runs are the profile's runs in order; Updates every update of the channel caught
	// while they ran, as stamped (a buffered channel's: the driver's times, before they
	// are put on their grid).
	Runs    []RunRecord    `json:"runs"`
	Updates []UpdateRecord `json:"updates"`
	// Reconstructed says how the runs were recovered where profile.json held only the
	// readings (written before the record was kept); empty for a recorded run.
	Reconstructed string `json:"reconstructed,omitempty"`
}

// RunRecord is one run of the kernel. StartS and EndS are its start and end on the host's
// clock, s (on a GPU the kernel's CUDA events mapped to it); PlanS the offset the run was
// placed at (stratified phases: where the update's window was to end after the start);
// a two-phase kernel's EndAS and StartBS are the first phase's end and the second's start
// since the run's start (from their CUDA events).
type RunRecord struct {
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	PlanS   float64 `json:"plan_s"`
	EndAS   float64 `json:"end_a_s,omitempty"`
	StartBS float64 `json:"start_b_s,omitempty"`
}

// UpdateRecord is one update of the channel: its stamp on the host's clock (s) and value.
type UpdateRecord struct {
	TS     float64 `json:"t_s"`
	PowerW float64 `json:"power_w"`
}

// The codes of profile's warnings.
const (
	CodeNoProfile     status.Code = "no_profile"
	CodeCoarse        status.Code = "coarse_profile"
	CodeImplausible   status.Code = "implausible_profile"
	CodePredicted     status.Code = "predicted_update_time"
	CodeMissedRuns    status.Code = "runs_missed"
	CodeLongRun       status.Code = "long_run_disagreement"
	CodeNoGrid        status.Code = "no_grid"
	CodeOffGrid       status.Code = "off_grid"
	CodePointSampler  status.Code = "point_sampler"
	CodeGuessedModel  status.Code = "guessed_model"
	CodeModelDefault  status.Code = "model_default_uncertainty"
	CodeLongLag       status.Code = "long_lag"
	CodeReconstructed status.Code = "runs_reconstructed"
	CodeEnergyWidened status.Code = "energy_interval_widened"
)

// Grid is the regular grid of a buffered channel's sample instants (correct.Lattice).
type Grid struct {
	PeriodS float64 `json:"period_s"`
	// R is the coherence of the stamps with the grid (1: all on it).
	R float64 `json:"r"`
	// OnGrid is the share of stamps within ±max(1 ms, T/20) of it; Snapped the readings
	// moved onto it (stamped late or early by the driver); EarlyS the cut: a stamp up to
	// EarlyS before a grid instant, or up to T − EarlyS after it, belongs to it.
	OnGrid  float64 `json:"on_grid"`
	Snapped int     `json:"snapped"`
	// Reassigned counts the samples put back on the instant their neighbours left empty
	// (two had landed on one: their stamps lay past the cut).
	Reassigned int     `json:"reassigned"`
	EarlyS     float64 `json:"early_s"`
}

// SetLongRun records the long-run energy per launch beside the profile's.
func (r *Result) SetLongRun(l LongRun) {
	r.LongRun = &l
	if l.EnergyPerLaunchJ > 0 {
		d := (r.EnergyJ - l.EnergyPerLaunchJ) / l.EnergyPerLaunchJ
		r.EnergyDiff = &d
		if math.Abs(d) > 0.05 {
			r.Warnf(CodeLongRun, "the profile's energy per run differs from the long-run energy per launch by %+.1f %%", 100*d)
		}
	}
}

func (o MeasureOptions) check() error {
	s := o.Sensor
	if s.Period <= 0 {
		return status.Inputf("the sensor's update period is unknown")
	}
	if s.Window < 0 || s.Delay < 0 {
		return status.Inputf("negative window or delay")
	}
	if s.Tau < 0 {
		return status.Inputf("negative tau")
	}
	if !o.buffered && o.Poll >= s.Period/4 {
		return status.Inputf("poll interval %s is too coarse for an update period of %s", o.Poll, s.Period)
	}
	return nil
}

type run struct{ start, end time.Duration }

// horizon is how long after a kernel's start a reading can still see it: the kernel, the
// window and ten time constants of the lag (e^-10 of the step is left).
func horizon(s sensormodel.Model, tex time.Duration) time.Duration {
	return tex + s.Window + 10*s.Tau
}

// Measure measures the offline profile of kernel k on channel s.
//
// A buffered channel (the driver's ring of timestamped samples, power.samples) is read
// every Poll (50 ms) from the watcher; its samples carry the driver's timestamps, put back
// on their regular grid (correct.Lattice) before the analysis, and the runs are placed
// against that grid: no need to wait for each reading before the next run.
func Measure(ctx context.Context, clk clock.Clock, s sensor.Sensor, k gpu.Kernel, name string, opt MeasureOptions) (*Result, error) {
	buffered := s.Channel().Buffered
	opt = opt.withDefaults(buffered)
	opt.buffered = buffered
	if err := opt.check(); err != nil {
		return nil, err
	}
	T, W, D := opt.Sensor.Period, opt.Sensor.Window, opt.Sensor.Delay
	// Time the kernel (Alg. 1, lines 1-5).
	s0, e0, err := k.Run(1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tex := e0 - s0
	w := newWatcher(clk, s, opt.Poll)
	w.start(ctx)
	defer w.end()
	if buffered {
		// Enough samples to learn the grid.
		t0 := clk.Now()
		for len(w.updates()) < 24 && clk.Now()-t0 < 3*time.Second+40*T && ctx.Err() == nil {
			if err := clk.Sleep(ctx, opt.Poll); err != nil {
				break
			}
		}
		if n := len(w.updates()); n < 16 && ctx.Err() == nil {
			return nil, fmt.Errorf("channel %s gave %d samples in %s", s.Channel().Name, n, clk.Now()-t0)
		}
	} else if _, ok := waitUpdate(ctx, clk, w, 3*T); !ok && ctx.Err() == nil {
		// Wait for a first update, so runs can be placed relative to the sensor's cycle.
		return nil, fmt.Errorf("channel %s did not update within %s", s.Channel().Name, 3*T)
	}
	stratified := W < T && !opt.Random
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	lo, hi := phaseRange(tex, W, T)
	plan := stratify(rng, opt.Runs, lo, hi, tex, W)
	gap := max(T, D+W+time.Millisecond) // from a kernel's end to the next start, at least
	var runs []run
	var recRuns []RunRecord
	var hung error // a run that hangs: the runs before it are analysed
	prevEnd := e0
	for i := 0; i < opt.Runs && ctx.Err() == nil; i++ {
		now := clk.Now()
		earliest := max(now, prevEnd+gap)
		start := earliest + time.Duration(rng.Float64()*float64(T)) // uniform in [T, 2T)
		if stratified {
			if buffered {
				if g, ok := w.grid(T); ok {
					u := g.Next(earliest + D + plan[i])
					start = u - D - plan[i]
				}
			} else {
				u, _ := w.lastUpdate()
				// The first predicted update whose window ends plan[i] after a start >= earliest.
				j := int(math.Ceil(float64(earliest-u.T+D+plan[i]) / float64(T)))
				start = u.T + time.Duration(j)*T - D - plan[i]
			}
		}
		if err := clk.Sleep(ctx, start-clk.Now()); err != nil {
			break
		}
		rs, re, err := k.Run(1)
		if errors.Is(err, gpu.ErrKernelHung) && len(runs) > 0 {
			hung = fmt.Errorf("%s: run %d: %w", name, i+1, err)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: run %d: %w", name, i+1, err)
		}
		runs = append(runs, run{rs, re})
		rr := RunRecord{StartS: rs.Seconds(), EndS: re.Seconds()}
		if stratified {
			rr.PlanS = plan[i].Seconds()
		}
		if ph, ok := k.(phased); ok {
			a, b := ph.last()
			rr.EndAS, rr.StartBS = a.Seconds(), b.Seconds()
		}
		recRuns = append(recRuns, rr)
		prevEnd = re
		if !buffered {
			// Watch until every window that could overlap this run has been published.
			if err := clk.Sleep(ctx, re+D+W+opt.Poll*4+time.Duration(0.02*float64(T))-clk.Now()); err != nil {
				break
			}
		}
		runDone(opt.Progress, i+1, opt.Runs)
	}
	if len(runs) == 0 {
		return nil, ctx.Err()
	}
	if buffered && ctx.Err() == nil {
		// The driver publishes a sample up to ~80 ms after its instant: wait for the last
		// ones the runs can be seen in.
		_ = clk.Sleep(ctx, D+W+5*opt.Sensor.Tau+2*opt.Poll+100*time.Millisecond)
		w.pollNow()
	}
	method := "offline-random"
	if stratified {
		method = "offline-stratified"
	}
	ups := w.updates()
	rec := &Record{Sensor: opt.Sensor, Buffered: buffered, PollS: opt.Poll.Seconds(), MinEdges: opt.MinEdges, Seed: opt.Seed, Random: opt.Random,
		Runs: recRuns, Updates: make([]UpdateRecord, len(ups))}
	for i, u := range ups {
		rec.Updates[i] = UpdateRecord{TS: u.T.Seconds(), PowerW: u.Value}
	}
	res := compute(name, s.Channel().Name, method, opt, runs, ups)
	res.Record = rec
	if ctx.Err() != nil {
		res.MarkIncomplete(fmt.Sprintf("%s after %d of %d runs", status.Interrupted(ctx), len(runs), opt.Runs))
	}
	markHung(res, hung, len(runs), opt.Runs)
	return res, nil
}

// compute is the offline profile of the runs from the channel's updates (the readings
// tied to the runs, then analysed): what Run computes once the runs are done, and
// Reanalyse from a record. The kernel's length is the mean over the runs (the first,
// timing run of a GPU kernel can be slower: 1.58 ms against 1.17 ms on an H200).
func compute(name, channel, method string, opt MeasureOptions, runs []run, ups []update) *Result {
	res := newResult(name, channel, method, opt, runs)
	tex := meanRun(runs)
	T, W := opt.Sensor.Period, opt.Sensor.Window
	lo, hi := phaseRange(tex, W, T)
	if opt.buffered {
		ups = res.snap(ups, T)
	}
	pts, dropped := attribute(ups, runs, opt.Sensor, tex, lo, hi+T/2+5*opt.Sensor.Tau)
	res.Dropped = dropped
	analyse(res, pts, tex, opt)
	return res
}

// phased is a kernel of two phases (chain): the first's end and the second's start in
// its last run, since that run's start.
type phased interface {
	last() (endA, startB time.Duration)
}

func meanRun(runs []run) time.Duration {
	var tex time.Duration
	for _, r := range runs {
		tex += r.end - r.start
	}
	return tex / time.Duration(len(runs))
}

// markHung marks res incomplete where a run hung (hung: its error) after done of want runs.
func markHung(res *Result, hung error, done, want int) {
	if hung != nil {
		res.MarkIncomplete(fmt.Sprintf("%v, after %d of %d runs", hung, done, want))
	}
}

// snap puts the stamps of a buffered channel's samples on their grid, and records it.
func (r *Result) snap(ups []update, T time.Duration) []update {
	ts := make([]time.Duration, len(ups))
	for i, u := range ups {
		ts[i] = u.T
	}
	g, ok := correct.FitLattice(ts, T)
	if !ok {
		r.Warnf(CodeNoGrid, "the samples' timestamps lie on no regular grid near %s (coherence %.2f): used as stamped", T, g.R)
		return ups
	}
	out := make([]update, len(ups))
	moved := 0
	tol := max(time.Millisecond, g.Period/20)
	for i, u := range ups {
		out[i] = u
		out[i].T = g.Snap(u.T)
	}
	// The samples come in the driver's order, one per grid instant: a stamp so late (or
	// early) that it falls past the cut lands on the next (previous) instant, beside its
	// neighbour's, and leaves its own empty. Where two samples share an instant beside an
	// empty one, the one next to the gap goes back to it (the cut lies in the emptiest
	// stretch of the period, but a few hundred stamps do not always find it).
	res := 0
	steps := func(i int) int { return int(math.Round(float64(out[i].T-out[i-1].T) / float64(g.Period))) }
	for i := 1; i+1 < len(out); i++ {
		switch a, b := steps(i), steps(i+1); {
		case a == 2 && b == 0:
			out[i].T -= g.Period
			res++
		case a == 0 && b == 2:
			out[i].T += g.Period
			res++
		}
	}
	for i, u := range ups {
		if d := u.T - out[i].T; d > tol || d < -tol {
			moved++
		}
	}
	r.Grid = &Grid{PeriodS: g.Period.Seconds(), R: g.R, OnGrid: g.OnGrid, Snapped: moved, Reassigned: res, EarlyS: g.Early.Seconds()}
	r.PeriodS = g.Period.Seconds()
	if g.OnGrid < 0.5 {
		r.Warnf(CodeOffGrid, "only %.0f %% of the samples' timestamps lie on their %s grid: the rest are moved onto it", 100*g.OnGrid, g.Period)
	}
	return out
}

// phaseRange is the range of window-end offsets from the kernel's start over which the
// window overlaps the kernel, widened a little on both sides to see the baseline.
func phaseRange(tex, W, T time.Duration) (lo, hi time.Duration) {
	m := min(max((tex+W)/5, 2*time.Millisecond), T/4)
	return -m, tex + W + m
}

// stratify returns n offsets in [lo, hi): one uniform draw in each of n equal strata, in
// random order. Where the window is longer than the kernel, a reading whose window holds
// the whole kernel tells only its energy, which the edges tell as well: the strata then
// cover only the two stretches where the window's start or end falls within the kernel.
func stratify(rng *rand.Rand, n int, lo, hi, tex, W time.Duration) []time.Duration {
	m := -lo
	cut, skip := time.Duration(0), time.Duration(0) // the stretch [cut, cut+skip) is left out
	if W-m > tex+m {
		cut, skip = tex+m, W-m-(tex+m)
	}
	return strata(rng, n, lo, hi, cut, skip)
}

// strata returns n offsets in [lo, hi) less [cut, cut+skip), one in each of n equal strata,
// in random order.
func strata(rng *rand.Rand, n int, lo, hi, cut, skip time.Duration) []time.Duration {
	span := hi - lo - skip
	out := make([]time.Duration, n)
	for i := range out {
		v := lo + time.Duration((float64(i)+rng.Float64())/float64(n)*float64(span))
		if skip > 0 && v >= cut {
			v += skip
		}
		out[i] = v
	}
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// waitUpdate sleeps in poll steps until the watcher has seen a new update (or limit).
func waitUpdate(ctx context.Context, clk clock.Clock, w *watcher, limit time.Duration) (update, bool) {
	before, had := w.lastUpdate()
	t0 := clk.Now()
	for clk.Now()-t0 < limit {
		if err := clk.Sleep(ctx, w.step); err != nil {
			return update{}, false
		}
		if u, ok := w.lastUpdate(); ok && (!had || u.T != before.T) {
			return u, true
		}
	}
	return update{}, false
}

func newResult(name, channel, method string, opt MeasureOptions, runs []run) *Result {
	tex := meanRun(runs)
	res := &Result{
		Format: Format, Kernel: name, Channel: channel, Method: method, Runs: len(runs),
		KernelS: tex.Seconds(), PeriodS: opt.Sensor.Period.Seconds(), WindowS: opt.Sensor.Window.Seconds(),
		DelayS: opt.Sensor.Delay.Seconds(), TauS: opt.Sensor.Tau.Seconds(), PollS: opt.Poll.Seconds(), Status: status.Status{Warnings: []status.Warning{}},
		Model: ModelName(opt.Sensor),
	}
	// W/T, or 2 tau/T for a lag read every T (sensormodel.Model.Coverage); a point sampler
	// sees none of the time.
	res.Coverage = opt.Sensor.Coverage(opt.Sensor.Period)
	if opt.Sensor.Kind() == sensormodel.None {
		res.Coverage = 0
		res.Warnf(CodePointSampler, "the sensor is taken as a point sampler (window 0)")
	}
	return res
}

// attribute ties every update to the nearest kernel start and keeps those whose window
// end lies within [lo, hi) of it; each point also keeps its phase relative to the earlier
// runs it can still see (a lag, or a window longer than the gap between runs).
func attribute(ups []update, runs []run, s sensormodel.Model, tex, lo, hi time.Duration) ([]Point, int) {
	var pts []Point
	dropped := 0
	hz := horizon(s, tex)
	for _, u := range ups {
		we := u.T - s.Delay
		// the run in which the window ends (the latest start at or before its end), or the
		// next one if the window ends just before it (by less than -lo)
		best := sort.Search(len(runs), func(i int) bool { return runs[i].start > we }) - 1
		if best+1 < len(runs) && runs[best+1].start-we <= -lo {
			best++
		}
		if best < 0 {
			dropped++
			continue
		}
		ph := we - runs[best].start
		if ph < lo || ph >= hi {
			dropped++
			continue
		}
		pts = append(pts, newPoint(runs, best, we, u.Value, s, hz))
	}
	return pts, dropped
}

// newPoint is the reading v whose window ends at we (on the runs' clock), tied to run i
// (counted from 0): its phase within that run, and the phases of the earlier runs whose
// tails it can still see (those that started less than the horizon hz before we).
func newPoint(runs []run, i int, we time.Duration, v float64, s sensormodel.Model, hz time.Duration) Point {
	ph := we - runs[i].start
	p := Point{Run: i + 1, PhaseS: ph.Seconds(), MidS: (ph - s.Window/2 - s.Tau).Seconds(), PowerW: v}
	for r := i - 1; r >= 0 && we-runs[r].start < hz; r-- {
		p.others = append(p.others, (we - runs[r].start).Seconds())
	}
	return p
}

// runDone tells p that run i of n is done, every 50th run and the last.
func runDone(p status.Progress, i, n int) {
	if i%50 == 0 || i == n {
		p.Emit(status.Event{Stage: "profile", Step: "run", I: i, N: n})
	}
}

// DefaultedWarning says that the model of channel name (from where) came without
// intervals and was given correct.DefaultIntervals' (what: "tau ±20 %, delay ±5 ms"),
// which the profile's energy interval then propagates (issue 28: a user's rc model 10 %
// off read the energy 3 % off against ±0.06 %, with nothing said).
func DefaultedWarning(name, from, what string) status.Warning {
	return status.Warnf(CodeModelDefault, "the model of %s (%s) came without intervals: gpuwatt assumed %s and propagated them (a sensor.json from gpuwatt sensor states measured ones)", name, from, what)
}
