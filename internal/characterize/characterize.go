// Package characterize is gpuwatt's energy datasheet of a GPU: it runs the sensor
// characterisation (internal/sensorchar), the microbenchmark suite (internal/micro), the
// archline fit (internal/archline) and a load-level run (internal/loadlevel, its CPU
// variant) one after the other, collects every result and every warning into one Result
// (results.json), and renders it as one self-contained HTML page. The page is built from
// Result alone, so `gpuwatt report` re-renders it from results.json, and Compare puts the
// headline figures of several GPUs side by side.
package characterize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Format is the value of Result.Format.
const Format = "gpuwatt-characterize/1"

// The stages, in the order they run.
const (
	StageSensor    = "sensor"
	StageMicro     = "micro"
	StageArchline  = "archline"
	StageLoadlevel = "loadlevel"
)

// Stages lists the stages in order.
var Stages = []string{StageSensor, StageMicro, StageArchline, StageLoadlevel}

// Stage statuses.
const (
	StatusDone    = "done"
	StatusPartial = "partial" // interrupted or with kernels that could not be measured
	StatusFailed  = "failed"
	StatusNotRun  = "not run"
)

// StageInfo is what happened to one stage.
type StageInfo struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// ClockS is the stage's length on the measurement clock: GPU time on a real GPU, and
	// on the sim device the virtual time the same work would take on the GPU it models.
	ClockS float64 `json:"clock_s"`
	// WallS is how long the stage took on the host.
	WallS float64 `json:"wall_s"`
	Error string  `json:"error,omitempty"`
	// Run numbers the invocation that measured the stage (1 the first; a resumed run keeps
	// the stages an earlier invocation finished).
	Run int `json:"run,omitempty"`
}

// Invocation is one gpuwatt characterize command that contributed stages to a Result.
type Invocation struct {
	Command []string `json:"command"`
	Date    string   `json:"date"`
	Version string   `json:"version"`
}

// Result is results.json.
type Result struct {
	Format        string    `json:"format"`
	Version       string    `json:"version"`
	Host          string    `json:"host"`
	Command       []string  `json:"command"`
	Date          string    `json:"date"`
	Device        string    `json:"device"` // "nvml" or "sim:<preset>"
	Sim           bool      `json:"sim"`
	DriverVersion string    `json:"driver_version"`
	NVMLVersion   string    `json:"nvml_version"`
	GPU           trace.GPU `json:"gpu"`
	Props         gpu.Props `json:"props"`
	Quick         bool      `json:"quick"`

	// Runs are the invocations behind these results: more than one where a run was resumed.
	Runs   []Invocation `json:"runs,omitempty"`
	Stages []StageInfo  `json:"stages"`
	NotRun []string     `json:"stages_not_run,omitempty"`

	Sensor        *sensorchar.Result `json:"sensor,omitempty"`
	SensorProfile *correct.Profile   `json:"sensor_profile,omitempty"`
	// SensorPlots are the step and square-wave responses with the fitted models, kept as
	// data because the readings behind them are not part of the sensor report.
	SensorPlots []report.Plot     `json:"sensor_plots,omitempty"`
	Micro       *micro.Result     `json:"micro,omitempty"`
	Archline    *archline.Result  `json:"archline,omitempty"`
	Loadlevel   *loadlevel.Result `json:"loadlevel,omitempty"`

	// Status: every warning raised on the way, each about its stage (Subject "micro",
	// "micro: int32.add"), told grouped on output (status.Group); whether the run was cut
	// short and why.
	status.Status
}

// The codes of characterize's own warnings (the stages' keep theirs).
const (
	CodeStageFailed     status.Code = "stage_failed"
	CodeStageError      status.Code = "stage_error"
	CodeStageIncomplete status.Code = "stage_incomplete"
	CodeInvalidRun      status.Code = "invalid_run"
)

// Stage returns the named stage's info, or nil.
func (r *Result) Stage(name string) *StageInfo {
	for i := range r.Stages {
		if r.Stages[i].Name == name {
			return &r.Stages[i]
		}
	}
	return nil
}

// Options of a run.
type Options struct {
	// Clock is the measurement clock the system was opened with.
	Clock clock.Clock
	// System is the opened driver (or the sim); Device one of its GPUs, which must run
	// kernels (gpu.Executor).
	System gpu.System
	Device gpu.Device
	// GPU is the index of Device in System (Options.Run picks it from the env).
	GPU   int
	Quick bool
	// Stages to run (nil: all, in order).
	Stages []string
	// Progress is told each stage as it starts ("[2/4] micro: ..."), and the finer steps
	// within it (with the stage's name as their Stage).
	Progress status.Progress
	// RAPLRoot is the powercap tree for the load-level stage on a real clock
	// (default /sys/class/powercap).
	RAPLRoot string
	// LoadContexts is the load-level stage's users (default GOMAXPROCS, at most 4 with Quick).
	LoadContexts int
	// OpenGPU opens the GPU variants of the load-level stage on a real GPU (gpufft, which
	// the command line hands in); nil runs the cpu variant.
	OpenGPU func(uuid string) (loadlevel.GPURuntime, error)
	// Resume, if set, holds an earlier run's results (the same GPU): its finished stages
	// are kept as they are and only the others run.
	Resume *Result
}

// ErrNoExecutor is returned when the device cannot run kernels.
var ErrNoExecutor = errors.New("the GPU cannot run kernels")

// stageWhat says in a few words what each stage does (progress lines, the report).
var stageWhat = map[string]string{
	StageSensor:    "what the power sensors measure (update period, window, lag)",
	StageMicro:     "energy per operation by unit (MIPP microbenchmarks)",
	StageArchline:  "the energy roofline (archline fit, balance points)",
	StageLoadlevel: "efficiency at each load level (SPEC Power methodology, GEMM or FFT transactions)",
}

// characterise runs the stages and returns what they measured. An interrupted run (ctx cancelled)
// returns the stages finished so far, marked incomplete, with the rest listed as not run;
// a stage that fails is recorded, with its error among the warnings, and the next stage
// runs. characterise returns an error only when nothing could be run at all.
func characterise(ctx context.Context, opt Options) (*Result, error) {
	if opt.Clock == nil || opt.System == nil || opt.Device == nil {
		return nil, errors.New("characterize: Clock, System and Device are required")
	}
	if st := opt.Stages; st == nil || slices.Contains(st, StageMicro) || slices.Contains(st, StageArchline) {
		// micro and archline run gpuwatt's own kernels: PTX, NVIDIA only.
		if err := device.NVIDIAOnly(opt.Device, opt.Device.Info().Index); err != nil {
			return nil, err
		}
	}
	exec, ok := opt.Device.(gpu.Executor)
	if !ok {
		return nil, fmt.Errorf("GPU %d: %w", opt.Device.Info().Index, ErrNoExecutor)
	}
	props := exec.Props()
	if props.SMs == 0 {
		// The CUDA side could not be opened: Prepare says why.
		if _, err := exec.Prepare(kernels.Descriptor{}); err != nil {
			return nil, err
		}
		props = exec.Props()
	}
	stages := opt.Stages
	if stages == nil {
		stages = Stages
	}
	for _, s := range stages {
		if stageWhat[s] == "" {
			return nil, fmt.Errorf("characterize: unknown stage %q", s)
		}
	}
	sys := opt.System
	res := &Result{Format: Format, Device: sys.Name(), Sim: sys.Simulated(),
		DriverVersion: sys.DriverVersion(), NVMLVersion: sys.NVMLVersion(), GPU: opt.Device.Info(), Props: props, Quick: opt.Quick}
	if res.GPU.Name == "" {
		res.GPU.Name = props.Name
	}
	run := 1
	if r := opt.Resume; r != nil {
		if err := sameGPU(r, res); err != nil {
			return nil, err
		}
		run = max(1, len(r.Runs)) + 1
		res.Runs = append(res.Runs, r.Runs...)
		if len(r.Runs) == 0 {
			res.Runs = append(res.Runs, Invocation{Command: r.Command, Date: r.Date, Version: r.Version})
		}
		res.Quick = r.Quick
	}
	for i, name := range stages {
		if prev := opt.Resume.kept(name); prev != nil {
			info := *prev
			if info.Run == 0 {
				info.Run = 1
			}
			res.Stages = append(res.Stages, info)
			res.copyStage(opt.Resume, name)
			opt.Progress.Emit(status.Event{Step: name + ": kept from run " + fmt.Sprint(info.Run), I: i + 1, N: len(stages)})
			continue
		}
		if ctx.Err() != nil {
			res.NotRun = append(res.NotRun, stages[i:]...)
			for _, s := range stages[i:] {
				if prev := opt.Resume.kept(s); prev != nil {
					res.Stages = append(res.Stages, *prev)
					res.copyStage(opt.Resume, s)
					continue
				}
				res.Stages = append(res.Stages, StageInfo{Name: s, Status: StatusNotRun})
			}
			break
		}
		opt.Progress.Emit(status.Event{Step: name + ": " + stageWhat[name], I: i + 1, N: len(stages)})
		info := StageInfo{Name: name, Status: StatusDone, Run: run}
		c0, w0 := opt.Clock.Now(), time.Now()
		var err error
		var partial bool
		switch name {
		case StageSensor:
			partial, err = runSensor(ctx, opt, exec, res)
		case StageMicro:
			partial, err = runMicro(ctx, opt, props, res)
		case StageArchline:
			partial, err = runArchline(ctx, opt, res)
		case StageLoadlevel:
			partial, err = runLoadlevel(ctx, opt, res)
		}
		info.ClockS = (opt.Clock.Now() - c0).Seconds()
		info.WallS = time.Since(w0).Seconds()
		switch {
		case err != nil && !partial:
			info.Status, info.Error = StatusFailed, err.Error()
			res.Warn(status.Warning{Code: CodeStageFailed, Subject: name, Message: "stage failed: " + err.Error()})
		case err != nil:
			info.Status, info.Error = StatusPartial, err.Error()
			if ctx.Err() == nil {
				res.Warn(status.Warning{Code: CodeStageError, Subject: name, Message: err.Error()})
			}
		case partial:
			info.Status = StatusPartial
		}
		res.Stages = append(res.Stages, info)
	}
	if ctx.Err() != nil {
		res.MarkIncomplete(status.Interrupted(ctx))
		if len(res.NotRun) > 0 {
			res.MarkIncomplete("stages not run: " + strings.Join(res.NotRun, ", "))
		}
	}
	res.Warnings = append(res.Warnings, collectWarnings(res)...)
	return res, nil
}

// kept returns the stage's info in an earlier run's results when that run finished it.
func (r *Result) kept(name string) *StageInfo {
	if r == nil {
		return nil
	}
	if s := r.Stage(name); s != nil && s.Status == StatusDone {
		return s
	}
	return nil
}

// copyStage takes a stage's results from an earlier run.
func (r *Result) copyStage(from *Result, name string) {
	switch name {
	case StageSensor:
		r.Sensor, r.SensorProfile, r.SensorPlots = from.Sensor, from.SensorProfile, from.SensorPlots
	case StageMicro:
		r.Micro = from.Micro
	case StageArchline:
		r.Archline = from.Archline
	case StageLoadlevel:
		r.Loadlevel = from.Loadlevel
	}
}

// sameGPU checks that an earlier run's results are of the GPU now being characterised.
func sameGPU(prev, now *Result) error {
	if prev.Format != Format {
		return status.Inputf("--resume: format %q, want %q", prev.Format, Format)
	}
	if prev.Device != now.Device || prev.GPU.UUID != now.GPU.UUID || prev.GPU.Name != now.GPU.Name {
		return status.Inputf("--resume: those results are of %s %s (%s), not of GPU %d %s (%s)",
			prev.Device, prev.GPU.Name, prev.GPU.UUID, now.GPU.Index, now.GPU.Name, now.GPU.UUID)
	}
	return nil
}

func runSensor(ctx context.Context, opt Options, exec gpu.Executor, res *Result) (bool, error) {
	rep, err := sensorchar.Measure(ctx, opt.Clock, opt.Device, exec, sensorchar.Options{Quick: opt.Quick, Progress: opt.Progress})
	if rep == nil {
		if err == nil {
			err = errors.New("no result")
		}
		return false, err
	}
	rep.Device, rep.Simulated = opt.System.Name(), opt.System.Simulated()
	res.Sensor = rep
	prof := rep.Profile()
	res.SensorProfile = &prof
	for _, s := range rep.Page().Sections {
		for _, p := range s.Plots {
			res.SensorPlots = append(res.SensorPlots, finitePlot(p))
		}
	}
	return err != nil, err
}

// finitePlot drops the points that JSON cannot carry (NaN, ±Inf); the plot skips them anyway.
func finitePlot(p report.Plot) report.Plot {
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	var ss []report.Series
	for _, s := range p.Series {
		n := min(len(s.X), len(s.Y))
		c := s
		c.X, c.Y, c.YLow, c.YHigh, c.Colors = nil, nil, nil, nil, nil
		band := len(s.YLow) >= n && len(s.YHigh) >= n
		for i := 0; i < n; i++ {
			if !ok(s.X[i]) || !ok(s.Y[i]) || (band && (!ok(s.YLow[i]) || !ok(s.YHigh[i]))) {
				continue
			}
			c.X, c.Y = append(c.X, s.X[i]), append(c.Y, s.Y[i])
			if band {
				c.YLow, c.YHigh = append(c.YLow, s.YLow[i]), append(c.YHigh, s.YHigh[i])
			}
			if i < len(s.Colors) {
				c.Colors = append(c.Colors, s.Colors[i])
			}
		}
		ss = append(ss, c)
	}
	p.Series = ss
	var vl []report.VLine
	for _, v := range p.VLines {
		if ok(v.X) {
			vl = append(vl, v)
		}
	}
	p.VLines = vl
	var hl []report.HLine
	for _, h := range p.HLines {
		if ok(h.Y) {
			hl = append(hl, h)
		}
	}
	p.HLines = hl
	return p
}

// QuickMicroLoop is the quick run's kernel: 8 updates of a 100 ms sensor, 0.8 s (the full
// run's 50; the quick run's 20 before issue 35). Each kernel's energy comes from the 20 ms
// sample ring on the counter's scale (~40 samples); its interval is the calibration's and
// the run-to-run spread (energy.RunToRunFraction), which 2 s did not narrow on the twin.
var QuickMicroLoop = loop.Options{Warmup: 250 * time.Millisecond, MinUpdates: 8}

func poll() sensor.Options {
	p, _ := sensor.ParsePoll("adaptive")
	return p
}

func runMicro(ctx context.Context, opt Options, props gpu.Props, res *Result) (bool, error) {
	// Each class with operand patterns runs with zeros and with random operands: the
	// datasheet's data-dependence column (micro.DataEffect); the tensor-core classes with
	// random operands only (their energy per MAC; `micro --operands all` has the rest).
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz},
		Operands: []kernels.Operands{kernels.OperandsZeros, kernels.OperandsRandom}, TensorOperands: []kernels.Operands{kernels.OperandsRandom}})
	if err != nil {
		return false, err
	}
	m, err := loop.Start(ctx, opt.Clock, []gpu.Device{opt.Device}, poll())
	if err != nil {
		return false, err
	}
	mo := micro.Options{Loop: loop.Options{Warmup: time.Second, MinUpdates: 50}}
	if opt.Quick {
		mo.Loop = QuickMicroLoop
		mo.Idle = time.Second
	}
	mo.Progress = opt.Progress
	rep, _, runErr := micro.Measure(ctx, m, opt.Device, suite, mo)
	if rep == nil {
		return false, runErr
	}
	rep.Device, rep.Simulated = opt.System.Name(), opt.System.Simulated()
	res.Micro = rep
	if runErr == nil && len(rep.Failed) > 0 {
		runErr = fmt.Errorf("%d kernel(s) could not be measured: %s", len(rep.Failed), strings.Join(rep.Failed, ", "))
	}
	return runErr != nil || rep.Incomplete, runErr
}

func runArchline(ctx context.Context, opt Options, res *Result) (bool, error) {
	m, err := loop.Start(ctx, opt.Clock, []gpu.Device{opt.Device}, poll())
	if err != nil {
		return false, err
	}
	ao := archline.Options{Precisions: []kernels.Precision{kernels.FP32, kernels.FP64}, ClockTolerance: 0.02, Loop: archline.DefaultLoop}
	if opt.Quick {
		ao.Intensities, ao.Occupancies, ao.Loop = archline.QuickIntensities, archline.QuickOccupancies, archline.QuickLoop
	}
	ao.Progress = opt.Progress
	rep, _, runErr := archline.Measure(ctx, m, opt.Device, ao)
	if rep == nil {
		return false, runErr
	}
	rep.Device, rep.Simulated = opt.System.Name(), opt.System.Simulated()
	res.Archline = rep
	if runErr == nil && len(rep.Failed) > 0 {
		runErr = fmt.Errorf("%d kernel(s) could not be measured: %s", len(rep.Failed), strings.Join(rep.Failed, ", "))
	}
	return runErr != nil || rep.Incomplete, runErr
}

// LoadIntervals are the load-level stage's interval lengths and levels.
func LoadIntervals(quick bool) (loadlevel.Intervals, []float64) {
	if quick {
		// Three calibrations, the rate the mean of the last two (SPECpower's rule): on the
		// H200 a single 2 s calibration put the 100 % level at 105 %. 2 s recordings (3 s
		// before issue 35): a level's power is the ring's mean over thousands of transactions.
		return loadlevel.Intervals{Warmup: time.Second, Calibrations: 3, Pre: 500 * time.Millisecond, Record: 2 * time.Second, Post: 500 * time.Millisecond, Idle: 2 * time.Second},
			[]float64{1, 0.5}
	}
	return loadlevel.Intervals{Warmup: 10 * time.Second, Calibrations: 3, Pre: 5 * time.Second, Record: 20 * time.Second, Post: 5 * time.Second, Idle: 20 * time.Second},
		append([]float64(nil), loadlevel.DefaultLevels...)
}

// runLoadlevel runs the load-level stage through loadlevel's own policy (the variant, the
// users, the power sources) on the stage's device and clock.
func runLoadlevel(ctx context.Context, opt Options, res *Result) (bool, error) {
	lo := loadlevel.DefaultOptions()
	lo.Intervals, lo.Levels = LoadIntervals(opt.Quick)
	lo.GPU, lo.OpenGPU = opt.Device.Info().Index, opt.OpenGPU
	if opt.RAPLRoot != "" {
		lo.RAPLRoot = opt.RAPLRoot
	}
	switch {
	case opt.LoadContexts > 0:
		lo.Contexts = []int{opt.LoadContexts}
	case opt.Quick && (opt.System.Simulated() || opt.OpenGPU == nil):
		lo.Contexts = []int{min(runtime.GOMAXPROCS(0), 4)} // kept short
	}
	env := device.Env{System: opt.System, Clock: opt.Clock, Progress: opt.Progress}
	rep, err := lo.Run(ctx, env)
	if rep == nil {
		return false, err
	}
	res.Loadlevel = rep
	return err != nil || rep.Incomplete, err
}

// collectWarnings gathers the warnings of every stage's report, each about its stage
// ("micro") or its stage's kernel, point or channel ("micro: int32.add").
func collectWarnings(r *Result) []status.Warning {
	var out []status.Warning
	add := func(subject string, ws []status.Warning) {
		out = append(out, status.WithSubject(subject, ws)...)
	}
	incomplete := func(stage string, s status.Status) {
		if s.Incomplete {
			out = append(out, status.Warning{Code: CodeStageIncomplete, Subject: stage, Message: "incomplete: " + s.Reason})
		}
	}
	if s := r.Sensor; s != nil {
		add("sensor", s.AllChannelWarnings())
		add("sensor: anomaly tests", s.AnomalyWarnings())
	}
	if m := r.Micro; m != nil {
		add("micro", m.Warnings)
		add("micro", m.RowWarnings())
		incomplete("micro", m.Status)
	}
	if a := r.Archline; a != nil {
		add("archline", a.AllWarnings())
		incomplete("archline", a.Status)
	}
	if l := r.Loadlevel; l != nil {
		add("loadlevel", l.Warnings)
		for _, cr := range l.Configs {
			for _, run := range cr.Runs {
				add("loadlevel", run.Warnings)
				// Each reason the run is invalid (SPEC's word: INVALID); status.Group tells a
				// reason repeated by several runs once.
				for _, why := range run.Invalid {
					out = append(out, status.Warning{Code: CodeInvalidRun, Subject: "loadlevel", Message: "INVALID run: " + why})
				}
			}
		}
	}
	return out
}

// Upgrade gives the per-kernel and per-point warnings of results read from an old
// results.json (plain strings, no codes) their codes and keys (region.Legacy), so that a
// page rendered again from it groups them as a new run's page does.
func (r *Result) Upgrade() {
	if m := r.Micro; m != nil {
		for i := range m.Rows {
			m.Rows[i].Warnings = region.Legacy(m.Rows[i].Warnings)
		}
	}
	if a := r.Archline; a != nil {
		for p, res := range a.Results {
			if res == nil {
				delete(a.Results, p) // "fp64": null: nothing measured
			}
		}
	}
	if a := r.Archline; a != nil && a.Pi0 == nil && len(a.Results) > 0 {
		// Results from before the fitted parameters had intervals: fit again from the
		// stored points (the same fit, with its intervals and checks).
		archline.Reanalyse(a)
	}
	if a := r.Archline; a != nil {
		pts := [][]archline.Point{a.Baseline, a.Copy}
		for _, res := range a.Results {
			if res != nil {
				pts = append(pts, res.Points)
			}
		}
		for _, ps := range pts {
			for i := range ps {
				ps[i].Warnings = region.Legacy(ps[i].Warnings)
			}
		}
	}
}

// WarningLines are the run's warnings as told on the page and counted in the headline:
// grouped (status.GroupEach), a warning many kernels or points of one stage share told
// once with their count out of the stage's kernels or points.
func (r *Result) WarningLines() []string {
	return status.GroupEach(r.Warnings, func(stage string) int {
		switch {
		case stage == StageMicro && r.Micro != nil:
			return len(r.Micro.Rows)
		case stage == StageArchline && r.Archline != nil:
			_, n := r.Archline.PointWarnings()
			return n
		case stage == StageSensor && r.Sensor != nil:
			return len(r.Sensor.Channels)
		}
		return 0
	})
}
