// Package call measures the energy of one call of a user's own code: the call is run
// many times, each after a wait that puts its start at a chosen phase of the power
// sensor's update cycle (Lang and Rünger, seed 004: repetition at random phases; the
// phases stratified over the period so that every part of it is seen), while a Sampler
// records every channel. Each call's GPU start and end (host clock; the caller's CUDA
// events or a synchronisation) make a region, whose energy the one estimator
// (internal/energy) gives; the calls' energies are then averaged, and the 95 % interval
// of the mean comes from their spread (a call's figure alone is off by up to the
// sensor's resolution, but by a different amount at every phase, so the errors average
// out) plus what does not average out: the calibration of the channel to the energy
// counter, and the active-idle level subtracted.
//
// Run stops when the interval of the energy per call above active idle is as tight as
// Options.Target asks, or at a cap (Options.MaxCalls, Options.MaxTime), and says how many
// calls that took. Analyse computes the result again from a recorded trace and the
// calls' spans.
package call

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Span is one call's GPU work on the recording's clock (since its origin).
type Span struct {
	Start time.Duration `json:"-"`
	End   time.Duration `json:"-"`
}

// Func runs the call once (Options.Batch times back to back where Batch > 1 is asked:
// Run passes n) and returns when its GPU work is done, with the span of that work on
// the recording's clock. A Func that cannot time the GPU itself returns the span it
// bracketed with a synchronisation (Bracket).
type Func func(ctx context.Context, n int) (Span, error)

// Bracket makes a Func of fn, which runs the call n times and returns once its GPU work
// is done (a synchronisation): the span is clk's time before and after fn.
func Bracket(clk clock.Clock, fn func(ctx context.Context, n int) error) Func {
	return func(ctx context.Context, n int) (Span, error) {
		s := clk.Now()
		err := fn(ctx, n)
		return Span{Start: s, End: clk.Now()}, err
	}
}

// Options of Run. The zero value gives the defaults.
type Options struct {
	// Target is the relative half-width of the 95 % interval of the energy per call above
	// active idle at which Run stops (0.01: 1 %; default 0.02). Calls, where set, fixes the
	// number of calls instead.
	Target float64
	// Calls, where > 0, runs exactly that many calls (Target is then only reported against).
	Calls int
	// MinCalls are run before the target is checked (default 30); MaxCalls caps the calls
	// (default 3000); MaxTime caps the measurement's time on the recording's clock
	// (default 5 min). A cap reached before the target is a warning, not an error.
	MinCalls, MaxCalls int
	MaxTime            time.Duration
	// Batch is how many times each repetition runs the call back to back (default 1);
	// the energy and time are given per call. A call far shorter than the sensor's noise
	// allows (below ~1 ms on a real board) is measured better in batches.
	Batch int
	// Warmup calls are run back to back before the measurement and not measured
	// (default 3; -1: none): a GPU's first launches are slower.
	Warmup int
	// Lead is recorded before the first call (default 2 s): the Sampler learns the
	// channels' update periods and the estimator has readings before the first call.
	Lead time.Duration
	// Tail is recorded after the last call (default 2 s, and at least the time the sensor
	// takes to let go of it): with Lead, stretches of active idle on either side of the
	// calls, which the channel's calibration to the energy counter needs (the contrast
	// between idle and the calls sets its gain apart from its offset).
	Tail time.Duration
	// CheckIdle is the idle recorded at each check, after IdleAfterCall (default
	// DefaultCheckIdle; < 0: none, the checks then analyse the calls so far with the idle
	// before them only, and cannot have the counter's scale): the idle after the calls so
	// far, so that a check gives the figure the run would end with, and the gaps split the
	// run into blocks whose spread is the interval's run-to-run part.
	CheckIdle time.Duration
	// RunToRunFloor, where > 0, is the least relative half-width of the run-to-run part
	// (AnalyseOptions.RunToRunFloor); 0: the board's documented floor where its repeated
	// runs were recorded (RunToRunFloorOf; none on the sim); < 0: none.
	RunToRunFloor float64
	// Seed of the phase plan (default 1).
	Seed uint64
	// Channel and Sensor name the power channel and its sensor model for the estimator
	// (energy.Options); Sensor nil is "auto", a guess from the names.
	Channel string
	Sensor  *correct.Spec
	// Poll is the Sampler's (zero value: adaptive).
	Poll sensor.Options
	// Progress, where set, is told after every checkpoint.
	Progress func(p Progress)
}

// Progress is where a running measurement stands.
type Progress struct {
	Calls       int
	RelHalfWide float64 // the interval's relative half-width so far (0: not known yet)
	Target      float64
}

// Defaults.
const (
	DefaultTarget   = 0.02
	DefaultMinCalls = 30
	DefaultMaxCalls = 3000
	DefaultMaxTime  = 5 * time.Minute
	DefaultWarmup   = 3
	DefaultLead     = 2 * time.Second
	DefaultTail     = 2 * time.Second
	// DefaultCheckIdle: 0.6 s of idle after IdleAfterCall at each check (the ring's ~30
	// readings and the counter's ~6 updates there, read every 20 ms).
	DefaultCheckIdle = 600 * time.Millisecond
	// DefaultCounterShare is the Sampler's CPUShare for the energy counter while calls are
	// measured (sensor.Options.CPUShare; 0.002 elsewhere): an H200's counter read costs
	// ~3.8 ms, so it is read every ~0.4 s instead of ~2 s, ~60 readings over a 25 s run for
	// the calibration of the channel to it.
	DefaultCounterShare = 0.01
)

func (o Options) withDefaults() Options {
	if o.Target == 0 {
		o.Target = DefaultTarget
	}
	if o.MinCalls <= 0 {
		o.MinCalls = DefaultMinCalls
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxTime <= 0 {
		o.MaxTime = DefaultMaxTime
	}
	if o.Batch <= 0 {
		o.Batch = 1
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if o.Lead <= 0 {
		o.Lead = DefaultLead
	}
	if o.Tail <= 0 {
		o.Tail = DefaultTail
	}
	if o.Poll.CPUShare <= 0 {
		o.Poll.CPUShare = DefaultCounterShare
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.CheckIdle == 0 {
		o.CheckIdle = DefaultCheckIdle
	}
	if o.Calls > 0 {
		o.MinCalls, o.MaxCalls = min(o.Calls, o.MinCalls), o.Calls
	}
	return o
}

// Validate says what is wrong with o, naming the option.
func (o Options) Validate() error {
	switch {
	case o.Target < 0 || o.Target >= 1 || math.IsNaN(o.Target):
		return fmt.Errorf("target %v: want a fraction in (0, 1), e.g. 0.01 for 1 %%", o.Target)
	case o.Calls < 0:
		return fmt.Errorf("calls %d: want 0 (until the target) or more", o.Calls)
	case o.MinCalls < 0 || o.MaxCalls < 0:
		return fmt.Errorf("min/max calls %d/%d: want 0 (default) or more", o.MinCalls, o.MaxCalls)
	case o.MaxCalls > 0 && o.MinCalls > o.MaxCalls:
		return fmt.Errorf("min calls %d above max calls %d", o.MinCalls, o.MaxCalls)
	case o.Batch < 0:
		return fmt.Errorf("batch %d: want 1 or more (0: 1)", o.Batch)
	case o.Lead < 0 || o.Tail < 0:
		return fmt.Errorf("lead/tail %s/%s: want positive durations (0: default)", o.Lead, o.Tail)
	case o.MaxTime < 0:
		return fmt.Errorf("max time %s: want a positive duration (0: default)", o.MaxTime)
	case o.RunToRunFloor >= 1 || math.IsNaN(o.RunToRunFloor):
		return fmt.Errorf("run-to-run floor %v: want a fraction below 1, e.g. 0.01 for 1 %% (0: the board's documented one, < 0: none)", o.RunToRunFloor)
	case o.Warmup < 0 && o.Warmup != -1:
		return fmt.Errorf("warmup %d: want 0 (default), more, or -1 for none", o.Warmup)
	}
	return nil
}

// Env is what Run measures on: the clock the calls' spans are on, and the GPU.
type Env struct {
	Clock  clock.Clock
	System gpu.System
	GPU    int // index into System.Devices()
}

// checkMargin: a check stops the run only where its interval is within this share of the
// target: the final figure takes the idle after the calls from the tail (1.6 s), not from
// the check's gap (0.6 s), and its level and half-width move with it (a 5 ms call on the
// h200 twin: ±4.9 % at the check, ±6.0 % at the end).
const checkMargin = 0.9

// ownWithin says whether the run's own parts are within target where the board's
// run-to-run floor alone is wider than it: more calls cannot bring the interval to the
// target then, and the run stops with a warning (CodeFloor) rather than at its cap.
func ownWithin(r *Result, target float64) bool {
	rr := r.RunToRun
	if rr == nil || rr.FloorJ <= 0 || rr.FloorJ < target*math.Abs(r.ActiveJ.Value) {
		return false
	}
	hw := r.ActiveJ.HalfWidth()
	return math.Sqrt(max(0, hw*hw-rr.HalfWidthJ*rr.HalfWidthJ)) <= target*math.Abs(r.ActiveJ.Value)
}

func orAsked(source string) string {
	if source == "" {
		return "the one asked for"
	}
	return source
}

// runToRunKnown says whether a check's figure has what the final one needs to stop on: with
// idle gaps, at least minBlocks of them (a check may be on the channel's scale where the end,
// with the tail, is on the counter's), and on the counter's scale a measured run-to-run part.
func runToRunKnown(r *Result, gaps int, gapped bool) bool {
	if !gapped {
		return true
	}
	return gaps >= minBlocks && (r.CounterScale == nil || r.RunToRun != nil && r.RunToRun.Measured)
}

// minCallsForSpread is the fewest calls whose spread gives an interval at all.
const minCallsForSpread = 5

// Run measures fn's energy per call on env's GPU: see the package comment. The error is
// non-nil only where nothing could be measured (bad options, no GPU, the first call
// failed); a call that fails later, or a context done, ends the measurement early and
// the result is marked incomplete.
func Run(ctx context.Context, env Env, fn Func, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	devs := env.System.Devices()
	if env.GPU < 0 || env.GPU >= len(devs) {
		return nil, fmt.Errorf("no GPU %d (found %d)", env.GPU, len(devs))
	}
	dev := devs[env.GPU]
	var floorSource string
	o.RunToRunFloor, floorSource = floorFor(o.RunToRunFloor, env.System.Simulated(), dev.Info().Name)
	rec := newRecorder(env, dev, o.Poll)
	if err := rec.smp.Start(ctx); err != nil {
		return nil, err
	}
	clk := env.Clock
	stopped := false
	stop := func() *trace.Trace {
		if !stopped {
			stopped = true
			rec.smp.Stop()
		}
		return rec.trace(env.System, false)
	}
	defer stop()

	var warns []status.Warning
	leadFrom := clk.Now()
	rec.idle(ctx, clk, o.Lead)
	// The active idle before the calls: the lead, less a tenth at its start (the Sampler
	// starting) and 20 ms at its end (where no warm-up follows).
	idleBefore := [2]time.Duration{leadFrom + o.Lead/10, clk.Now() - 20*time.Millisecond}
	idleBefore, err := warmUp(ctx, rec, clk, fn, o, idleBefore)
	if err != nil {
		return nil, err
	}
	snap := rec.trace(env.System, true)
	plan, err := newPlan(snap, 0, o)
	if err != nil {
		return nil, err
	}

	var spans []Span
	var gaps [][2]time.Duration // the idle gaps at the checks
	t0 := clk.Now()
	next := o.MinCalls
	incomplete, why := false, ""
	var last *Result
	for len(spans) < o.MaxCalls {
		if ctx.Err() != nil {
			incomplete, why = true, "the context was done: "+ctx.Err().Error()
			break
		}
		if clk.Now()-t0 >= o.MaxTime {
			warns = append(warns, status.Warning{Code: CodeCapped, Message: fmt.Sprintf("the time cap (%s) was reached after %d calls, before the target", o.MaxTime, len(spans))})
			break
		}
		w := plan.wait(clk.Now(), rec.lastUpdate(plan.channel))
		if err := clk.Sleep(ctx, w); err != nil {
			incomplete, why = true, "the context was done: "+err.Error()
			break
		}
		sp, err := fn(ctx, o.Batch)
		if err != nil {
			if len(spans) == 0 {
				return nil, fmt.Errorf("call 1: %w", err)
			}
			incomplete, why = true, fmt.Sprintf("call %d failed: %v", len(spans)+1, err)
			break
		}
		if sp.End < sp.Start {
			return nil, fmt.Errorf("call %d: its span ends (%s) before it starts (%s)", len(spans)+1, sp.End, sp.Start)
		}
		spans = append(spans, sp)
		if len(spans) < next || len(spans) >= o.MaxCalls {
			continue
		}
		var r *Result
		r, gaps = checkPoint(ctx, env, rec, plan, o, spans, gaps, idleBefore)
		if r != nil {
			last = r
		}
		next = max(next+1, int(math.Ceil(float64(len(spans))*1.25)))
		if o.Calls > 0 {
			continue
		}
		if o.Progress != nil {
			o.Progress(Progress{Calls: len(spans), RelHalfWide: last.relHalfWidth(), Target: o.Target})
		}
		if runToRunKnown(last, len(gaps), o.CheckIdle > 0) && (last.reached() && last.RelHalfWidth <= checkMargin*o.Target || ownWithin(last, checkMargin*o.Target)) {
			break
		}
		if need := last.CallsNeeded; need > len(spans) {
			next = min(next, need) // no more than the spread says it needs
		}
	}
	if len(spans) >= o.MaxCalls && o.Calls == 0 && (last == nil || !last.reached()) {
		warns = append(warns, status.Warning{Code: CodeCapped, Message: fmt.Sprintf("the cap of %d calls was reached before the target", o.MaxCalls)})
	}
	rec.idle(context.WithoutCancel(ctx), clk, max(2*plan.settle+plan.period, o.Tail))
	var idleAfter [2]time.Duration
	if len(spans) > 0 {
		idleAfter = [2]time.Duration{spans[len(spans)-1].End + IdleAfterCall, clk.Now() - 20*time.Millisecond}
		if k := len(gaps); k > 0 && gaps[k-1][0] > spans[len(spans)-1].End {
			gaps = gaps[:k-1] // the last check's gap is the start of the tail
		}
	}
	tr := stop()
	tr.Meta.Incomplete, tr.Meta.IncompleteWhy = incomplete, why
	if hung := rec.smp.Hung(); len(hung) > 0 {
		tr.Meta.Incomplete, tr.Meta.IncompleteWhy = true, "a driver call hangs: "+fmt.Sprint(hung)
	}
	ao := plan.analyseOptions(o)
	ao.IdleBefore, ao.IdleAfter, ao.IdleGaps = idleBefore, idleAfter, gaps
	res := Analyse(tr, spans, ao)
	res.Warnings = append(res.Warnings, finalWarnings(warns, res, o.Target, floorSource)...)
	res.RunToRunFloorSource = floorSource
	res.Incomplete, res.IncompleteReason = tr.Meta.Incomplete, tr.Meta.IncompleteWhy
	res.WaitS = [2]float64{plan.gap.Seconds(), (plan.gap + plan.period).Seconds()}
	res.Plan = plan.describe()
	res.Trace = tr
	return res, nil
}

// floorFor is the run-to-run floor a run uses and where it comes from: the one asked
// for, none where asked for less than zero, or on a real board asked for nothing, the
// board's documented floor (RunToRunFloorOf); the twin has none of its own.
func floorFor(asked float64, simulated bool, board string) (float64, string) {
	switch {
	case asked < 0:
		return 0, ""
	case asked == 0 && !simulated:
		return RunToRunFloorOf(board)
	}
	return asked, ""
}

// warmUp runs the warm-up calls back to back, not measured, and returns the active idle
// before the calls: the lead's, or after a warm-up the idle recorded after it.
func warmUp(ctx context.Context, rec *recorder, clk clock.Clock, fn Func, o Options, idleBefore [2]time.Duration) ([2]time.Duration, error) {
	for i := range max(o.Warmup, 0) {
		if _, err := fn(ctx, o.Batch); err != nil {
			return idleBefore, fmt.Errorf("warm-up call %d: %w", i+1, err)
		}
		if ctx.Err() != nil {
			return idleBefore, ctx.Err()
		}
	}
	if o.Warmup > 0 {
		// The active idle before the calls after the warm-up, not the lead: a board may
		// idle lower before its first load (the twin's h100 at rest until a load) and dips
		// below idle for a while after one.
		w := clk.Now()
		rec.idle(ctx, clk, IdleAfterCall+max(o.Lead/2, time.Second))
		idleBefore = [2]time.Duration{w + IdleAfterCall, clk.Now() - 20*time.Millisecond}
	}
	return idleBefore, nil
}

// checkPoint analyses the calls so far for a check, and returns its figure (nil where a
// run of a fixed number of calls with no idle gaps makes none) and the idle gaps so far.
func checkPoint(ctx context.Context, env Env, rec *recorder, plan *plan, o Options, spans []Span, gaps [][2]time.Duration, idleBefore [2]time.Duration) (*Result, [][2]time.Duration) {
	clk := env.Clock
	ao := plan.analyseOptions(o)
	ao.IdleBefore = idleBefore
	if o.CheckIdle > 0 {
		// An idle gap: the idle after the calls so far, so that the check computes the
		// figure the run would end with (the counter's scale included), and a cut
		// between blocks for the run-to-run part.
		rec.idle(ctx, clk, IdleAfterCall+o.CheckIdle)
		g := [2]time.Duration{spans[len(spans)-1].End + IdleAfterCall, clk.Now() - 20*time.Millisecond}
		ao.IdleAfter, ao.IdleGaps = g, slices.Clone(gaps)
		gaps = append(gaps, g)
		if o.Calls > 0 {
			return nil, gaps
		}
		return Analyse(rec.trace(env.System, true), spans, ao), gaps
	}
	if o.Calls > 0 {
		return nil, gaps
	}
	// The calls whose windows ended a second ago: the readings of the latest may not all
	// be in yet (a buffered channel is read every 50 ms, and its stamps are placed on its
	// grid once it has been fitted).
	m := len(spans) - 1
	for m > 0 && spans[m-1].End+plan.settle+time.Second > clk.Now() {
		m--
	}
	ao.Next = spans[m].Start
	ao.IdleGaps = nil
	return Analyse(rec.trace(env.System, true), spans[:m], ao), gaps
}

// finalWarnings are the run's warnings as the final figure reads them: a cap reached
// before the target that the final figure meets says so, and a floor wider than the
// target is named.
func finalWarnings(warns []status.Warning, res *Result, target float64, floorSource string) []status.Warning {
	for i, w := range warns {
		if w.Code == CodeCapped && res.Reached {
			// The last check came before the cap; the final figure, with the calls since,
			// is within the target.
			warns[i].Message = strings.TrimSuffix(w.Message, ", before the target") + ": the last check was not within the target, the final figure is"
		}
	}
	if rr := res.RunToRun; !res.Reached && rr != nil && rr.FloorJ >= target*math.Abs(res.ActiveJ.Value) {
		warns = append(warns, status.Warning{Code: CodeFloor, Message: fmt.Sprintf("the board's run-to-run floor, ±%.2g %% (%s), is wider than the target ±%.2g %%: more calls cannot reach it; the run stopped where its own parts were within the target",
			100*rr.FloorJ/math.Abs(res.ActiveJ.Value), orAsked(floorSource), 100*target)})
	}
	return warns
}

// Warning codes.
const (
	CodeCapped         status.Code = "target_not_reached"
	CodeFewCalls       status.Code = "few_calls"
	CodeCallFigure     status.Code = "call_without_figure"
	CodeMissingReading status.Code = "missing_reading"
	CodeScale          status.Code = "channel_scale"
	CodeFloor          status.Code = "run_to_run_floor"
)

// recorder keeps the Sampler's samples as they come (a sink), so that the calls so far
// can be analysed while the measurement goes on.
type recorder struct {
	clk     clock.Clock
	dev     gpu.Device
	smp     *sensor.Sampler
	poll    sensor.Options
	mu      sync.Mutex
	samples []trace.Sample
	last    map[string]time.Duration // each channel's latest update
}

func newRecorder(env Env, dev gpu.Device, poll sensor.Options) *recorder {
	r := &recorder{clk: env.Clock, dev: dev, poll: poll, last: map[string]time.Duration{}}
	r.smp = sensor.New(env.Clock, dev.Sensors(), poll)
	r.smp.SetSink(func(s trace.Sample) {
		s.GPU = 0 // the trace holds the one GPU
		r.mu.Lock()
		r.samples = append(r.samples, s)
		if s.T > r.last[s.Channel] {
			r.last[s.Channel] = s.T
		}
		r.mu.Unlock()
	})
	return r
}

// idlePoke is how often the idle stretches around the calls read every channel: the energy
// counter, read every ~0.4 s during the calls, then has each of its ~100 ms updates
// bracketed to ~20 ms, which the counter's idle power and the run's ends need for the
// calls' scale (CounterScale); nothing runs then, so the reads disturb nothing measured.
const idlePoke = 20 * time.Millisecond

// idle waits d (or until ctx is done), reading every channel every idlePoke.
func (r *recorder) idle(ctx context.Context, clk clock.Clock, d time.Duration) {
	end := clk.Now() + d
	for {
		r.smp.Poke()
		left := end - clk.Now()
		if left <= 0 || ctx.Err() != nil {
			return
		}
		if clk.Sleep(ctx, min(idlePoke, left)) != nil {
			return
		}
	}
}

func (r *recorder) lastUpdate(ch string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.last[ch]
	if !ok {
		return -1
	}
	return t
}

// trace is what was recorded so far (snapshot: while recording).
func (r *recorder) trace(sys gpu.System, snapshot bool) *trace.Trace {
	r.mu.Lock()
	samples := slices.Clone(r.samples)
	r.mu.Unlock()
	slices.SortStableFunc(samples, func(a, b trace.Sample) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	chans := r.smp.Stats()
	for i := range chans {
		chans[i].GPU = 0
	}
	info := r.dev.Info()
	info.Index = 0
	_, end := r.smp.Span()
	if snapshot {
		end = r.clk.Now()
	}
	meta := trace.Meta{Format: trace.Format, Device: sys.Name(), Simulated: sys.Simulated(),
		DriverVersion: sys.DriverVersion(), NVMLVersion: sys.NVMLVersion(), Start: r.clk.Epoch(),
		Duration: end.Seconds(), Poll: trace.Poll{Mode: r.poll.String()}, Channels: chans,
		Unavailable: r.smp.Unavailable(), GPUs: []trace.GPU{info}, VirtualClock: clock.IsVirtual(r.clk)}
	tr := &trace.Trace{Meta: meta, Samples: samples}
	tr.RoundToStored() // the figures are those of the trace as saved
	return tr
}

// plan places the calls: each after a wait of at least gap (the sensor has let go of the
// previous call: its delay, window and lag, and a period of readings of active idle
// between calls), then so that the call starts at a chosen phase of the channel's update
// period, the phases stratified (each block of strata calls takes one phase from each of
// strata equal parts of the period, in random order).
type plan struct {
	channel        string
	model          sensormodel.Model
	source         string
	period, settle time.Duration
	pre            time.Duration
	gap            time.Duration
	rng            *rand.Rand
	strata         int
	block          []int
}

func newPlan(tr *trace.Trace, gpu int, o Options) (*plan, error) {
	name := o.Channel
	if name == "" {
		n, err := correct.PickChannel(tr, gpu)
		if err != nil {
			return nil, fmt.Errorf("no power channel to measure the calls with: %w", err)
		}
		name = n
	}
	_, choice, err := energy.Prepared(tr, gpu, energy.Options{Channel: name, Sensor: o.Sensor})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := withPeriod(choice.Model, tr, gpu, name)
	p := &plan{channel: name, model: m, source: choice.Source, rng: rand.New(rand.NewPCG(o.Seed, 0xca11)), strata: 16}
	p.period = m.Period
	if p.period <= 0 {
		p.period = 100 * time.Millisecond
	}
	// What a reading can still see of a call that ended: its delay, its window, and five
	// time constants of its lag (0.7 % left).
	p.settle, p.pre = settleOf(m), preOf(m)
	// Between two calls' windows, a gap of at least a period of baseline.
	p.gap = p.settle + p.pre + p.period
	return p, nil
}

// settleOf is how long after a call's end the readings of a sensor of model m may still
// hold some of it: its delay, its window, eight time constants of its lag (0.03 % of the
// lagged energy left; with five, 0.7 % × e^(−T/tau) was left outside the window, and the
// h200 twin's 20–90 ms calls read 0.2–0.3 % low against intervals of ±0.2 %), and the
// period to the next reading, which the integral interpolates to.
func settleOf(m sensormodel.Model) time.Duration {
	return m.Delay + m.Window + 8*m.Tau + periodOf(m) + time.Millisecond
}

// withPeriod fills in m's period from the channel's learned update period where the
// model names none (auto's boxcar for a board's ring, a model string without period=).
func withPeriod(m sensormodel.Model, tr *trace.Trace, gpu int, name string) sensormodel.Model {
	if m.Period > 0 {
		return m
	}
	if ch, ok := tr.Channel(gpu, name); ok && ch.Stats != nil && ch.Stats.UpdatePeriod > 0 {
		m.Period = time.Duration(ch.Stats.UpdatePeriod * float64(time.Second))
	}
	return m
}

func periodOf(m sensormodel.Model) time.Duration {
	if m.Period <= 0 {
		return 100 * time.Millisecond
	}
	return m.Period
}

// preOf is how long before a call's start the readings' integral may already hold some
// of it: it interpolates from the last reading before the call, up to a period earlier;
// a quarter period more for the updates' jitter.
func preOf(m sensormodel.Model) time.Duration {
	p := periodOf(m)
	return p + p/4
}

// wait is how long to wait from now so that the next call starts at its planned phase:
// at least gap, at most gap + period. ref is the channel's latest update (< 0: unknown,
// the phase is then uniform random).
func (p *plan) wait(now, ref time.Duration) time.Duration {
	if len(p.block) == 0 {
		p.block = p.rng.Perm(p.strata)
	}
	k := p.block[0]
	p.block = p.block[1:]
	u := (float64(k) + p.rng.Float64()) / float64(p.strata)
	phase := time.Duration(u * float64(p.period))
	earliest := now + p.gap
	if ref < 0 {
		return p.gap + phase
	}
	// The next instant at that phase of the update grid at or after earliest.
	at := ref + phase
	if at < earliest {
		at += ((earliest - at + p.period - 1) / p.period) * p.period
	}
	return at - now
}

func (p *plan) analyseOptions(o Options) AnalyseOptions {
	return AnalyseOptions{GPU: 0, Batch: o.Batch, Channel: p.channel, Sensor: o.Sensor, Target: o.Target, Settle: p.settle, Pre: p.pre, Tail: p.settle + p.period, RunToRunFloor: o.RunToRunFloor}
}

func (p *plan) describe() string {
	return fmt.Sprintf("%s (%s, %s): waits of %s + a phase stratified over the %s period (%d strata)",
		p.channel, p.model.Shape(), p.source, units.FormatSeconds(p.gap.Seconds(), 3), units.FormatSeconds(p.period.Seconds(), 3), p.strata)
}
