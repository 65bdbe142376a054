// Package loadlevel measures energy efficiency under transactional load at several load
// levels, after the SPEC Power and Performance Benchmark Methodology and its GPGPU extension
// (von Kistowski et al., ICPE'19): warm-up, calibration of the 100 % transaction rate, then
// each target load with pre-measurement, recording and post-measurement periods, and active
// idle. Transactions are stateless; Users hold the execution contexts; delays between
// transaction starts are exponential and scheduled from the previous scheduled start.
//
// The scheduler runs on an injected clock: on a clock.Virtual it is a deterministic
// discrete-event simulation in which each transaction really runs (so its result can be
// verified) but takes a modelled time; on a real clock each user is a goroutine.
package loadlevel

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// User is a Chauffeur User: a passive resource holding an execution context (buffers; on a
// GPU a stream and device memory), taken by one transaction at a time.
type User struct {
	ID      int
	Context any
	// Rand is the user's own random source (inputs, delays, verification picks).
	Rand *rand.Rand
	// Seq numbers the user's transactions from 1.
	Seq int64
}

// Transaction is a Chauffeur Transaction: stateless; its state lives in the User.
type Transaction interface {
	Name() string
	// NewContext makes a user's execution context.
	NewContext() any
	// Generate builds an input, outside the timed work.
	Generate(u *User) any
	// Process runs the transaction.
	Process(u *User, in any) (any, error)
	// Snapshot copies an input and result so they can be verified later.
	Snapshot(in, out any) (any, any)
	// Verify checks a snapshot against a reference within tol.
	Verify(in, out any, tol float64) error
}

// ContextOpener is implemented by transactions whose user contexts hold resources that can
// fail to be made (a CUDA stream, device and pinned buffers): Run calls OpenContext
// instead of NewContext, and fails before the first interval when it fails.
type ContextOpener interface {
	OpenContext() (any, error)
}

// ContextCloser is implemented by transactions whose user contexts must be released: Run
// calls CloseContext for each user's context when it ends.
type ContextCloser interface {
	CloseContext(ctx any) error
}

// Modeller gives a transaction's run time on a virtual clock.
type Modeller interface {
	ModelTime(in any) time.Duration
}

// Intervals are the lengths of the run's phases.
type Intervals struct {
	Warmup       time.Duration `json:"warmup_s"`
	Calibrations int           `json:"calibrations"`
	Pre          time.Duration `json:"pre_s"`
	Record       time.Duration `json:"record_s"`
	Post         time.Duration `json:"post_s"`
	Idle         time.Duration `json:"idle_record_s"`
}

// QuickIntervals is the default: a run of about a minute (58 s), three of which fit one
// 10-minute device call. The recording periods are 6 s because a level's count of
// transactions scatters like a Poisson count (exponential delays): at the 25 % level of
// the default GEMM on an H200 (about 2800 tx/s at 100 %) 6 s hold about 4200
// transactions, a scatter of 1.5 %, under the 2 % run-to-run goal; 3 s gave 2.2 %.
func QuickIntervals() Intervals {
	return Intervals{Warmup: 2 * time.Second, Calibrations: 3, Pre: 500 * time.Millisecond, Record: 6 * time.Second, Post: 500 * time.Millisecond, Idle: 6 * time.Second}
}

// SpecIntervals are SPECpower_ssj2008's lengths: 3 calibrations, 30 s pre- and
// post-measurement, 240 s recording (levels, calibration and active idle). The warm-up
// length (30 s) is not from a verified source.
func SpecIntervals() Intervals {
	return Intervals{Warmup: 30 * time.Second, Calibrations: 3, Pre: 30 * time.Second, Record: 240 * time.Second, Post: 30 * time.Second, Idle: 240 * time.Second}
}

// Config is one run of the methodology.
type Config struct {
	Tx        Transaction
	Users     int
	Levels    []float64 // target loads as fractions, e.g. 1, 0.75, 0.5, 0.25; active idle follows
	Intervals Intervals
	Clock     clock.Clock
	Meters    []Meter // the first one gives power_w; none: power is not measured
	Seed      uint64
	// VerifyFraction is the probability that a result is checked (0 means 0.01; negative
	// means never); VerifyQueue bounds the checks waiting (0 means 64): when it is full a
	// pick is dropped rather than slowing the users.
	VerifyFraction float64
	VerifyQueue    int
	Tolerance      float64 // verification tolerance (0: DefaultTolerance)
	LoadTolerance  float64 // allowed |actual - target| in load fraction (0: 0.02)
	// ServiceTime is the modelled time of a transaction on a virtual clock when the
	// transaction is not a Modeller.
	ServiceTime time.Duration
	// Progress is told each interval as it starts: its SPEC label (Detail) and what it
	// is ("calibration 2 of 3", "level 75 %", "active idle"), with its place among all.
	Progress status.Progress
	// Busy, on a virtual clock, is told every transaction's span and when the clock moves
	// (SimLoad: the sim device draws power from them). Nil on a real clock.
	Busy BusyObserver
	// HostUnavailable says why no meter reads the host's power ("" where one does, or
	// where nobody asked).
	HostUnavailable string
}

// BusyObserver follows the transactions on a virtual clock.
type BusyObserver interface {
	// Busy is one user's transaction over [start, end).
	Busy(start, end time.Duration)
	// Flush says the clock is about to move to t: every transaction starting before t
	// has been told.
	Flush(t time.Duration)
}

// Level is one interval's result.
type Level struct {
	Label        string  `json:"label"`
	TargetLoad   float64 `json:"target_load"`
	ActualLoad   float64 `json:"actual_load"`
	Transactions int64   `json:"transactions"`
	TxPerS       float64 `json:"tx_per_s"`
	// PowerW and TxPerJ are absent where no meter gave the level's power (PowerUnavailable
	// says why): never a 0 that reads as a measurement. TxPerJ is absent at active idle.
	PowerW           float64            `json:"power_w,omitempty"`
	TxPerJ           float64            `json:"tx_per_j,omitempty"`
	PowerUnavailable string             `json:"power_unavailable,omitempty"`
	ActiveIdle       bool               `json:"active_idle"`
	Valid            bool               `json:"valid"`
	Power            map[string]float64 `json:"power_by_source_w,omitempty"`
	// PowerDetail says, per meter, how its figure was obtained (for the GPU meter: the
	// channel and the correction), where the meter says.
	PowerDetail map[string]string `json:"power_detail,omitempty"`
	// PowerLowW and PowerHighW are power_w's 95 % interval where its meter gives one (the
	// GPU meter: the region energy estimator's interval over the recording period).
	PowerLowW  float64 `json:"power_low_w,omitempty"`
	PowerHighW float64 `json:"power_high_w,omitempty"`
	// PowerCI is [PowerLowW, PowerHighW] (relative: this board's scale), PowerAbsCI with
	// the board's gain error (energy.AbsoluteCI); absent where the meter gives no interval.
	PowerCI    *[2]float64 `json:"power_w_ci,omitempty"`
	PowerAbsCI *[2]float64 `json:"power_w_abs_ci,omitempty"`
	// GPUPowerW is the GPU board's power, HostPowerW the host's (RAPL: the CPU packages),
	// TotalPowerW their sum where both were read; WallPowerW a PTDaemon's analyzer's.
	GPUPowerW   float64 `json:"gpu_power_w,omitempty"`
	HostPowerW  float64 `json:"host_power_w,omitempty"`
	TotalPowerW float64 `json:"total_power_w,omitempty"`
	WallPowerW  float64 `json:"wall_power_w,omitempty"`
	// TemperatureC is the GPU's temperature over the recording period (min, max, median).
	TemperatureC *TempRange `json:"temperature_c,omitempty"`
	// Delays holds up to 5000 of the exponential start-to-start delays drawn (seconds).
	Delays []float64 `json:"-"`
}

// TempRange is a temperature's range over a recording period, °C.
type TempRange struct {
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
}

// Kinds of meter (MeterKind): what a meter's figure covers.
const (
	KindGPU  = "gpu"  // a GPU board
	KindHost = "host" // the host's CPU packages (RAPL)
	KindWall = "wall" // an external analyzer (PTDaemon): what it is wired to
)

// MeterKind is implemented by meters that say what their figure covers.
type MeterKind interface{ Kind() string }

// MeterInterval is implemented by meters whose last End has a 95 % interval.
type MeterInterval interface {
	Interval() (low, high float64, ok bool)
}

// MeterTemperature is implemented by meters that also read the GPU's temperature.
type MeterTemperature interface {
	Temperature() (TempRange, bool)
}

// RunResult is one run.
type RunResult struct {
	Workload    string `json:"workload"`
	Users       int    `json:"contexts"`
	Clock       string `json:"clock"`
	PowerSource string `json:"power_source"`
	// PowerSources names every meter, in order; the first gives power_w.
	PowerSources     []string  `json:"power_sources,omitempty"`
	CalibrationRates []float64 `json:"calibration_tx_per_s"`
	CalibratedRate   float64   `json:"calibrated_tx_per_s"`
	Levels           []Level   `json:"levels"`
	// OverallScore is absent where a level's power is unavailable (ScoreUnavailable says why).
	OverallScore     float64  `json:"overall_score,omitempty"`
	ScoreUnavailable string   `json:"overall_score_unavailable,omitempty"`
	Valid            bool     `json:"valid"`
	Invalid          []string `json:"invalid,omitempty"`
	Verified         int64    `json:"verified"`
	VerifyDropped    int64    `json:"verify_dropped"`
	VerifyFailures   []string `json:"verify_failures,omitempty"`
	// HostPowerUnavailable says why the host's power was not read (no RAPL: a VM), where
	// it was not; HostPowerSource names the meter that read it.
	HostPowerSource      string `json:"host_power_source,omitempty"`
	HostPowerUnavailable string `json:"host_power_unavailable,omitempty"`
	// LevelsResolved says whether power rises with load, each level's power (active idle
	// the lowest) more than 3 times the combined 95 % uncertainty of the two above the
	// level below it; ResolveNote says where it does not.
	LevelsResolved bool   `json:"levels_resolved"`
	ResolveNote    string `json:"levels_resolved_note,omitempty"`
	// FailedTransactions counts transactions whose Process returned an error (each one
	// invalidates the run); TransactionErrors holds the first few.
	FailedTransactions int64    `json:"failed_transactions,omitempty"`
	TransactionErrors  []string `json:"transaction_errors,omitempty"`
	// Status: warnings (a meter that failed in an interval), and whether the run was cut
	// short and why.
	status.Status
}

// The codes of the load-level engine's warnings.
const (
	CodeNoPowerSource status.Code = "no_power_source"
	CodeMeterFailed   status.Code = "meter_failed"
	// CodeModelledLoad: on a virtual clock the transactions' times and power are modelled.
	CodeModelledLoad status.Code = "modelled_load"
	// CodePTD names the power analyzer PTDaemon reported (a note, not a fault).
	CodePTD status.Code = "ptd_identity"
	// CodeCPUVariant: the cpu variant runs, so the figures describe the host's cores.
	CodeCPUVariant status.Code = "cpu_variant"
	// CodeUnresolved: the workload's levels' power is not told apart.
	CodeUnresolved status.Code = "levels_unresolved"
	// CodeHostBound: the seed preset's transactions are bound by the host.
	CodeHostBound status.Code = "host_bound"
	// CodeNoHostPower: the host's power could not be read.
	CodeNoHostPower status.Code = "no_host_power"
)

// ErrConfig is wrapped by errors in a Config.
var ErrConfig = errors.New("loadlevel: bad configuration")

// interval describes one interval to run.
type interval struct {
	label          string
	what           string  // for a reader: "calibration 2 of 3", "level 75 %"
	rate           float64 // total target tx/s; 0: back-to-back; <0: active idle
	pre, rec, post time.Duration
}

type intervalStats struct {
	completed int64
	busy      float64 // user-seconds of work inside the recording window
	delays    []float64
	powers    map[string]float64
	details   map[string]string
	power     float64
	low, high float64
	byKind    map[string]float64
	temp      *TempRange
	warn      []status.Warning
}

type check struct {
	name    string
	in, out any
}

type engine struct {
	cfg      Config
	stop     context.CancelCauseFunc // ends the run (a transaction that hangs)
	users    []*User
	virtual  bool
	vclk     *clock.Virtual
	checks   chan check
	wg       sync.WaitGroup
	mu       sync.Mutex
	failures []string
	verified atomic.Int64
	dropped  atomic.Int64
	ended    atomic.Bool // the run's last interval is over
	seq      int
	txFailed atomic.Int64
	txErrors []string // first few, under mu
}

// Measure runs the methodology once.
func Measure(ctx context.Context, cfg Config) (*RunResult, error) {
	if cfg.Tx == nil || cfg.Users < 1 || cfg.Clock == nil {
		return nil, fmt.Errorf("%w: need a transaction, at least one user and a clock", ErrConfig)
	}
	iv := cfg.Intervals
	if iv.Calibrations < 2 || iv.Record <= 0 || iv.Pre < 0 || iv.Post < 0 || iv.Warmup < 0 || iv.Idle <= 0 {
		return nil, fmt.Errorf("%w: need at least 2 calibrations and positive recording periods", ErrConfig)
	}
	for _, l := range cfg.Levels {
		if !(l > 0 && l <= 1) {
			return nil, fmt.Errorf("%w: load level %g: want a fraction in (0, 1]", ErrConfig, l)
		}
	}
	if cfg.VerifyFraction == 0 {
		cfg.VerifyFraction = 0.01
	}
	if cfg.VerifyQueue <= 0 {
		cfg.VerifyQueue = 64
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.LoadTolerance == 0 {
		cfg.LoadTolerance = 0.02
	}
	if s, ok := cfg.Busy.(*SimLoad); ok {
		s.Users = cfg.Users
	}
	e := &engine{cfg: cfg}
	// A transaction that hangs (its GPU work never finishes: gpu.ErrKernelHung) ends the
	// run: the GPU runs nothing more, and what was measured is kept, marked incomplete.
	parent := ctx
	ctx, e.stop = context.WithCancelCause(ctx)
	defer e.stop(nil)
	e.vclk, e.virtual = cfg.Clock.(*clock.Virtual)
	if err := e.openUsers(); err != nil {
		return nil, err
	}
	defer e.closeUsers()
	if !e.virtual {
		e.checks = make(chan check, cfg.VerifyQueue)
		e.wg.Add(1)
		go e.verifier()
	}
	res := &RunResult{Workload: cfg.Tx.Name(), Users: cfg.Users, Clock: "real", Status: status.Status{Warnings: []status.Warning{}}}
	if e.virtual {
		res.Clock = "virtual"
	}
	if len(cfg.Meters) > 0 {
		res.PowerSource = cfg.Meters[0].Name()
		for _, m := range cfg.Meters {
			res.PowerSources = append(res.PowerSources, m.Name())
		}
	} else {
		res.Warnf(CodeNoPowerSource, "no power source: power, tx/J and the score are unavailable")
	}
	err := e.run(ctx, res)
	if hung := context.Cause(ctx); err != nil && parent.Err() == nil && errors.Is(hung, gpu.ErrKernelHung) {
		err = hung
	}
	if e.checks != nil {
		e.ended.Store(true) // picks still queued are dropped, not checked after the run
		close(e.checks)
		e.wg.Wait()
	}
	res.Verified, res.VerifyDropped = e.verified.Load(), e.dropped.Load()
	res.VerifyFailures = e.failures
	res.FailedTransactions, res.TransactionErrors = e.txFailed.Load(), e.txErrors
	e.finish(res)
	if err != nil {
		why := err.Error()
		if parent.Err() != nil {
			why = status.Interrupted(parent) // "interrupted by SIGTERM", not "context canceled"
		}
		res.MarkIncomplete(why)
		res.Valid = false
		res.Invalid = append(res.Invalid, "incomplete: "+why)
	}
	return res, err
}

func (e *engine) run(ctx context.Context, res *RunResult) error {
	iv := e.cfg.Intervals
	if iv.Warmup > 0 {
		if _, err := e.interval(ctx, interval{label: "_000_warmup_", what: "warm-up", pre: iv.Warmup}); err != nil {
			return err
		}
	}
	for i := range iv.Calibrations {
		it := e.next("cal", 0)
		it.what = fmt.Sprintf("calibration %d of %d", i+1, iv.Calibrations)
		st, err := e.interval(ctx, it)
		if err != nil {
			return err
		}
		res.CalibrationRates = append(res.CalibrationRates, float64(st.completed)/iv.Record.Seconds())
	}
	var sum float64
	for _, r := range res.CalibrationRates[1:] {
		sum += r
	}
	res.CalibratedRate = sum / float64(len(res.CalibrationRates)-1)
	if res.CalibratedRate <= 0 {
		return fmt.Errorf("calibration completed no transactions")
	}
	for _, target := range e.cfg.Levels {
		rate := target * res.CalibratedRate
		if target == 1 {
			rate = 0 // the 100 % level runs back-to-back, as calibration
		}
		it := e.next("lvl", rate)
		it.what = fmt.Sprintf("level %.0f %%", 100*target)
		st, err := e.interval(ctx, it)
		lv := Level{Label: it.label, TargetLoad: target, Transactions: st.completed, PowerW: st.power, Power: st.powers, PowerDetail: st.details, Delays: st.delays}
		st.fill(&lv)
		lv.TxPerS = float64(st.completed) / iv.Record.Seconds()
		lv.ActualLoad = lv.TxPerS / res.CalibratedRate
		res.Warnings = append(res.Warnings, st.warn...)
		res.Levels = append(res.Levels, lv)
		if err != nil {
			return err
		}
	}
	it := e.next("idle", -1)
	it.what = "active idle"
	it.rec = iv.Idle
	st, err := e.interval(ctx, it)
	res.Warnings = append(res.Warnings, st.warn...)
	lv := Level{Label: it.label, ActiveIdle: true, PowerW: st.power, Power: st.powers, PowerDetail: st.details}
	st.fill(&lv)
	res.Levels = append(res.Levels, lv)
	return err
}

// fill copies the interval's interval, kinds and temperature into its level.
func (st *intervalStats) fill(l *Level) {
	l.PowerLowW, l.PowerHighW, l.TemperatureC = st.low, st.high, st.temp
	if st.high > st.low {
		ci := [2]float64{st.low, st.high}
		abs := energy.AbsoluteCI(l.PowerW, ci)
		l.PowerCI, l.PowerAbsCI = &ci, &abs
	}
	l.GPUPowerW, l.HostPowerW, l.WallPowerW = st.byKind[KindGPU], st.byKind[KindHost], st.byKind[KindWall]
	if l.GPUPowerW > 0 && l.HostPowerW > 0 {
		l.TotalPowerW = l.GPUPowerW + l.HostPowerW
	}
}

func (e *engine) next(kind string, rate float64) interval {
	e.seq++
	iv := e.cfg.Intervals
	return interval{label: fmt.Sprintf("_%03d_%s_", e.seq, kind), rate: rate, pre: iv.Pre, rec: iv.Record, post: iv.Post}
}

// finish computes the derived figures and the validity.
func (e *engine) finish(res *RunResult) {
	var ops, watts float64
	res.Valid = true
	noPower := ""
	for i := range res.Levels {
		l := &res.Levels[i]
		switch {
		case l.PowerW > 0:
			if !l.ActiveIdle {
				l.TxPerJ = l.TxPerS / l.PowerW
			}
		case len(e.cfg.Meters) == 0:
			l.PowerW, l.PowerUnavailable = 0, "no power source"
		default:
			l.PowerW, l.PowerUnavailable = 0, "no meter gave a reading in this interval"
		}
		if l.PowerUnavailable != "" && noPower == "" {
			noPower = "no power source"
			if len(e.cfg.Meters) > 0 {
				noPower = fmt.Sprintf("the power of %s is unavailable (%s)", levelName(*l), l.PowerUnavailable)
			}
		}
		watts += l.PowerW
		ops += l.TxPerS
		l.Valid = l.ActiveIdle || math.Abs(l.ActualLoad-l.TargetLoad) <= e.cfg.LoadTolerance
		if !l.Valid {
			res.Valid = false
			msg := fmt.Sprintf("level %.0f %% (interval %s): actual load %.2f %% is not within ±%.1f points of the target",
				100*l.TargetLoad, strings.Trim(l.Label, "_"), 100*l.ActualLoad, 100*e.cfg.LoadTolerance)
			if !e.virtual {
				msg += "; other load on the host may be the cause (the 100 % rate was calibrated on the host as it was then): run on an otherwise idle host, or lengthen --record"
			}
			res.Invalid = append(res.Invalid, msg)
		}
	}
	switch {
	case noPower != "":
		res.ScoreUnavailable = noPower
	case watts > 0:
		res.OverallScore = ops / watts
	}
	res.HostPowerUnavailable = e.cfg.HostUnavailable
	for _, m := range e.cfg.Meters {
		if k, ok := m.(MeterKind); ok && k.Kind() == KindHost && res.HostPowerSource == "" {
			res.HostPowerSource = m.Name()
		}
	}
	if noPower == "" {
		res.LevelsResolved, res.ResolveNote = Resolve(res.Levels)
		if !res.LevelsResolved {
			res.Warnf(CodeUnresolved, "the workload does not resolve the levels: %s", res.ResolveNote)
		}
	}
	for _, f := range e.failures {
		res.Valid = false
		res.Invalid = append(res.Invalid, "verification failed: "+f)
	}
	if n := e.txFailed.Load(); n > 0 {
		res.Valid = false
		res.Invalid = append(res.Invalid, fmt.Sprintf("%d transactions failed; first: %s", n, e.txErrors[0]))
	}
}

// ResolveFactor is how many times their combined uncertainty adjacent levels' power
// must differ by.
const ResolveFactor = 3

// FallbackUncertainty is the relative uncertainty of a level's power whose meter gives no
// interval: a board's or analyzer's gain error of 2 %.
const FallbackUncertainty = 0.02

// Resolve checks that power rises with load: ordered by target load (active idle at 0),
// each level's power exceeds the one below by more than ResolveFactor times the combined
// uncertainty of the two, sqrt(u1² + u2²), u the half-width of the 95 % interval
// (FallbackUncertainty of the power where there is none). It returns whether all pairs
// pass and, where one does not, which.
func Resolve(levels []Level) (bool, string) {
	ls := append([]Level(nil), levels...)
	sort.SliceStable(ls, func(i, j int) bool { return loadOf(ls[i]) < loadOf(ls[j]) })
	u := func(l Level) float64 {
		if l.PowerHighW > l.PowerLowW && l.PowerLowW > 0 {
			return (l.PowerHighW - l.PowerLowW) / 2
		}
		return FallbackUncertainty * l.PowerW
	}
	var bad []string
	for i := 1; i < len(ls); i++ {
		a, b := ls[i-1], ls[i]
		d, c := b.PowerW-a.PowerW, ResolveFactor*math.Hypot(u(a), u(b))
		if !(d > c) {
			bad = append(bad, fmt.Sprintf("%s draws %.1f W, %s %.1f W: %.1f W apart, not more than %d × their uncertainty (%.1f W)",
				levelName(b), b.PowerW, levelName(a), a.PowerW, d, ResolveFactor, c))
		}
	}
	return len(bad) == 0, strings.Join(bad, "; ")
}

func loadOf(l Level) float64 {
	if l.ActiveIdle {
		return 0
	}
	return l.TargetLoad
}

// openUsers makes each user's context (OpenContext where the transaction has it).
func (e *engine) openUsers() error {
	op, _ := e.cfg.Tx.(ContextOpener)
	for i := range e.cfg.Users {
		var c any
		if op != nil {
			var err error
			if c, err = op.OpenContext(); err != nil {
				e.closeUsers()
				return fmt.Errorf("%s: context of user %d: %w", e.cfg.Tx.Name(), i, err)
			}
		} else {
			c = e.cfg.Tx.NewContext()
		}
		e.users = append(e.users, &User{ID: i, Context: c, Rand: rand.New(rand.NewPCG(e.cfg.Seed, uint64(i)+1))})
	}
	return nil
}

func (e *engine) closeUsers() {
	cl, ok := e.cfg.Tx.(ContextCloser)
	for _, u := range e.users {
		if ok && u.Context != nil {
			_ = cl.CloseContext(u.Context)
		}
		u.Context = nil
	}
	e.users = nil
}

// txError records a transaction whose Process failed.
func (e *engine) txError(u *User, err error) {
	if errors.Is(err, gpu.ErrKernelHung) {
		e.stop(fmt.Errorf("%s transaction %d of user %d: %w", e.cfg.Tx.Name(), u.Seq, u.ID, err))
	}
	if e.txFailed.Add(1) > 5 {
		return
	}
	e.mu.Lock()
	e.txErrors = append(e.txErrors, fmt.Sprintf("%s transaction %d of user %d: %v", e.cfg.Tx.Name(), u.Seq, u.ID, err))
	e.mu.Unlock()
}

// pickForCheck decides, with the user's own random source (so no transaction can know
// whether it will be checked), whether to verify this result.
func (e *engine) pickForCheck(u *User) bool {
	return e.cfg.VerifyFraction > 0 && u.Rand.Float64() < e.cfg.VerifyFraction
}

func (e *engine) submit(u *User, in, out any) {
	name := fmt.Sprintf("%s transaction %d of user %d", e.cfg.Tx.Name(), u.Seq, u.ID)
	sin, sout := e.cfg.Tx.Snapshot(in, out)
	if e.virtual {
		e.verify(check{name, sin, sout})
		return
	}
	select {
	case e.checks <- check{name, sin, sout}:
	default:
		e.dropped.Add(1)
	}
}

// verifier is the background check: one goroutine, so it takes at most one core and the
// queue bound keeps it from falling arbitrarily behind. Picks still queued when the run
// ends are counted as dropped: a queue of 64 GEMM rows, each recomputed in float64 in
// 0.15 s or more, would otherwise hold the run up for ten seconds.
func (e *engine) verifier() {
	defer e.wg.Done()
	for c := range e.checks {
		if e.ended.Load() {
			e.dropped.Add(1)
			continue
		}
		e.verify(c)
	}
}

func (e *engine) verify(c check) {
	e.verified.Add(1)
	if err := e.cfg.Tx.Verify(c.in, c.out, e.cfg.Tolerance); err != nil {
		e.mu.Lock()
		e.failures = append(e.failures, c.name+": "+err.Error())
		e.mu.Unlock()
	}
}

// exp draws an exponential delay with the given mean.
func exp(r *rand.Rand, mean float64) time.Duration {
	return time.Duration(r.ExpFloat64() * mean * 1e9)
}

func (e *engine) progress(it interval) {
	iv := e.cfg.Intervals
	n := iv.Calibrations + len(e.cfg.Levels) + 1
	i := e.seq
	if iv.Warmup > 0 {
		n, i = n+1, i+1
	}
	e.cfg.Progress.Emit(status.Event{Stage: "loadlevel", Step: it.what, I: i, N: n})
}

// beginMeters and endMeters bracket the recording period.
// flushBusy gives cfg.Busy everything up to now (virtual clock).
func (e *engine) flushBusy() {
	if e.virtual && e.cfg.Busy != nil {
		e.cfg.Busy.Flush(e.vclk.Now())
	}
}

func (e *engine) beginMeters(label string, st *intervalStats) {
	e.flushBusy() // a meter starting reads the device at once
	for _, m := range e.cfg.Meters {
		if err := m.Begin(label + "rc_"); err != nil {
			st.warn = append(st.warn, meterFailed(label, m.Name(), err))
		}
	}
}

// meterFailed is the warning that meter name failed in the interval label.
func meterFailed(label, name string, err error) status.Warning {
	return status.Warning{Code: CodeMeterFailed, Subject: label, Key: name + " failed", Message: fmt.Sprintf("%s: %v", name, err)}
}

func (e *engine) endMeters(label string, w Window, st *intervalStats) {
	e.flushBusy()
	st.powers = map[string]float64{}
	for i, m := range e.cfg.Meters {
		p, err := m.End(w)
		if err != nil {
			st.warn = append(st.warn, meterFailed(label, m.Name(), err))
			continue
		}
		st.powers[m.Name()] = p
		if k, ok := m.(MeterKind); ok {
			if st.byKind == nil {
				st.byKind = map[string]float64{}
			}
			if _, seen := st.byKind[k.Kind()]; !seen {
				st.byKind[k.Kind()] = p
			}
		}
		if tm, ok := m.(MeterTemperature); ok && st.temp == nil {
			if r, ok := tm.Temperature(); ok {
				st.temp = &r
			}
		}
		if iv, ok := m.(MeterInterval); ok && i == 0 {
			if lo, hi, ok := iv.Interval(); ok {
				st.low, st.high = lo, hi
			}
		}
		if d, ok := m.(interface{ Detail() string }); ok && d.Detail() != "" {
			if st.details == nil {
				st.details = map[string]string{}
			}
			st.details[m.Name()] = d.Detail()
		}
		if i == 0 {
			st.power = p
		}
	}
	if len(st.powers) == 0 {
		st.powers = nil
	}
}
