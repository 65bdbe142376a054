// Package micro is the MIPP microbenchmark suite (seed 001): every functional unit and
// memory level of a GPU characterised by time, throughput against the spec, average and
// maximum power, energy, energy efficiency and energy per operation, with the baseline
// power pi0 (seed 002's baseline kernel) shown apart from the energy the work adds.
package micro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Format is the value of Result.Format.
const Format = "gpuwatt-micro/1"

// Options of a suite run.
type Options struct {
	Loop loop.Options
	// Idle is the idle recording before the suite (default 3 s).
	Idle time.Duration
	// Progress is told each kernel before it runs (stage "micro").
	Progress status.Progress

	// The verb's choices (Options.Run): the kernels (names or globs; nil: the whole
	// suite), the GPU (index in the opened system) and the Sampler's poll mode.
	Only []string
	GPU  int
	Poll sensor.Options
	// Operands are the operand patterns the arithmetic classes with patterns run under
	// (kernels.SuiteOpts.Operands; nil: kernels.DefaultOperands only).
	Operands []kernels.Operands
}

// Result is results.json.
type Result struct {
	Format     string    `json:"format"`
	Device     string    `json:"device"`
	Simulated  bool      `json:"simulated"` // measured on the sim device
	GPU        trace.GPU `json:"gpu"`
	Props      gpu.Props `json:"props"`
	IdlePowerW float64   `json:"idle_power_w"`
	// IdleLevel names the idle: "active idle" (gpuwatt's CUDA context is open).
	IdleLevel string  `json:"idle_level,omitempty"`
	Pi0W      float64 `json:"pi0_w"`
	Pi0Source string  `json:"pi0_source"`
	// Pi0HalfWidthW is pi0's 95 % half-width on the board's scale (the baseline kernel's
	// energy interval over its time, with the run-to-run spread, energy.RelativeCI);
	// Pi0CI the interval, Pi0AbsCI with the board's gain error (energy.AbsoluteCI).
	Pi0HalfWidthW float64    `json:"pi0_half_width_w"`
	Pi0CI         [2]float64 `json:"pi0_w_ci"`
	Pi0AbsCI      [2]float64 `json:"pi0_w_abs_ci"`
	// EnergyCalibration maps the sample ring onto the energy counter over the whole run
	// (nil: none could be fitted; see EnergyNote): the energy of a measurement whose
	// counter has too few readings inside comes from the ring on the counter's scale.
	EnergyCalibration *energy.Calibration `json:"energy_calibration,omitempty"`
	EnergyNote        string              `json:"energy_note"`
	Rows              []Row               `json:"rows"`
	// Data is the operand data's effect: for each class measured under more than one
	// operand pattern, its energy per instruction under each and the ratios random/zeros.
	Data []DataEffect `json:"data_effect,omitempty"`
	// Tensor are the tensor-core kernels' figures: energy per MAC, throughput against the
	// dense peak at the clock they ran at, power capping (issue 33).
	Tensor []TensorFigure `json:"tensor,omitempty"`
	Failed []string       `json:"failed,omitempty"` // kernels that could not be measured
	// Status: the run-wide warnings (a kernel's own are in its row), and whether the run
	// was cut short.
	status.Status
}

// The codes of micro's own warnings (a row also carries its measurement's: region's codes).
const (
	CodeNotMeasured status.Code = "not_measured"
	CodeNoBaseline  status.Code = "no_baseline_kernel"
	CodeBelowSpec   status.Code = "below_spec_throughput"
)

// Row is one kernel's figures.
type Row struct {
	Name    string             `json:"name"`
	Group   string             `json:"group"`
	What    string             `json:"what"` // the instruction class or memory level measured
	Unit    string             `json:"unit"` // "op" (one thread-level instruction), "MAC" (a tensor core's multiply-accumulate) or "B"
	Variant map[string]float64 `json:"variant,omitempty"`
	// Operands is the operand pattern of an arithmetic kernel whose data is controlled
	// (kernels.Operands), with the share of source-operand bits that toggle from one
	// instruction to the next and that are set (emulated: kernels.DataPattern).
	Operands       string  `json:"operands,omitempty"`
	OperandToggle  float64 `json:"operand_toggle,omitempty"`
	OperandDensity float64 `json:"operand_density,omitempty"`

	Launches       int     `json:"launches"`
	TimePerLaunchS float64 `json:"time_per_launch_s"`
	WorkPerLaunch  int64   `json:"work_per_launch"` // instructions of the class, or bytes at the level
	FlopsPerLaunch int64   `json:"flops_per_launch,omitempty"`

	// Throughput: per second, per SM and clock (at the median SM clock of the
	// measurement), and the spec figure per SM and clock (0 where unknown).
	PerSecond      float64 `json:"per_s"`
	FlopsPerSecond float64 `json:"flops_per_s,omitempty"`
	PerCycleSM     float64 `json:"per_cycle_per_sm"`
	SpecPerCycleSM float64 `json:"spec_per_cycle_per_sm,omitempty"`
	ClockMHz       float64 `json:"sm_clock_mhz"`

	MeanPowerW       float64 `json:"mean_power_w"`
	MaxPowerW        float64 `json:"max_power_w"`
	EnergyPerLaunchJ float64 `json:"energy_per_launch_j"`
	// Energy per unit of work: in all, the share of the baseline power pi0 (pi0 × time per
	// unit), and what the work adds above it.
	PJPerUnit         float64 `json:"pj_per_unit"`
	PJPerUnitPi0      float64 `json:"pj_per_unit_pi0"`
	PJPerUnitAbovePi0 float64 `json:"pj_per_unit_above_pi0"`
	// Efficiency: units per joule, and MIPP's (MIPS / W) / SM.
	// Memory variants that move more bytes than the threads use (uncoalesced accesses,
	// small access sizes): the useful bytes, their rate and the energy per useful byte.
	UsefulPerLaunch  int64   `json:"useful_bytes_per_launch,omitempty"`
	UsefulPerSecond  float64 `json:"useful_per_s,omitempty"`
	PJPerUsefulByte  float64 `json:"pj_per_useful_byte,omitempty"`
	PerJoule         float64 `json:"per_joule"`
	MIPSPerWattPerSM float64 `json:"mips_per_watt_per_sm"`

	// Where the energy comes from (internal/region, energy.go): EnergySource and
	// EnergyReadings its source and that source's readings inside [StartS, EndS]
	// (trace.csv's axis); CounterEnergyJ and CalibratedEnergyJ are the energy counter's own
	// figure and the sample ring's on the counter's scale (0: none), with their readings
	// inside, and CounterDiffPct the first against the second.
	EnergySource string `json:"energy_source"`
	// Interval is the whole measurement's energy with its 95 % intervals (the estimator's
	// budget, internal/energy; Partial: a component is not known); the _low/_high figures
	// below carry the relative interval through (pi0's own interval added for the share
	// above pi0): the board's gain error (±5 %) is left out of them, as it cancels between
	// rows of one board.
	energy.Interval
	MeanPowerLowW         float64 `json:"mean_power_low_w"`
	MeanPowerHighW        float64 `json:"mean_power_high_w"`
	PJPerUnitLow          float64 `json:"pj_per_unit_low"`
	PJPerUnitHigh         float64 `json:"pj_per_unit_high"`
	PJPerUnitAbovePi0Low  float64 `json:"pj_per_unit_above_pi0_low"`
	PJPerUnitAbovePi0High float64 `json:"pj_per_unit_above_pi0_high"`
	// The same as [low, high] (relative: the same board's, with the run-to-run spread) and
	// with the board's gain error (absolute: against the truth or another board).
	PJPerUnitCI            [2]float64           `json:"pj_per_unit_ci"`
	PJPerUnitAbsCI         [2]float64           `json:"pj_per_unit_abs_ci"`
	PJPerUnitAbovePi0CI    [2]float64           `json:"pj_per_unit_above_pi0_ci"`
	PJPerUnitAbovePi0AbsCI [2]float64           `json:"pj_per_unit_above_pi0_abs_ci"`
	EnergyReadings         int                  `json:"energy_readings"`
	CounterEnergyJ         float64              `json:"counter_energy_j"`
	CounterReadings        int                  `json:"counter_readings"`
	CalibratedEnergyJ      float64              `json:"calibrated_energy_j"`
	CalibratedReadings     int                  `json:"calibrated_readings"`
	CounterDiffPct         float64              `json:"counter_diff_pct"`
	StartS                 float64              `json:"start_s"`
	EndS                   float64              `json:"end_s"`
	Throttle               []region.ReasonShare `json:"throttle"`
	// ThrottleUnavailable says why Throttle is empty for want of a reading, as measure's does.
	ThrottleUnavailable string           `json:"throttle_unavailable,omitempty"`
	Warnings            []status.Warning `json:"warnings"`
}

// Measure measures every descriptor of suite on dev (which must be a gpu.Executor) with the
// Meter m, then stops m and returns the report and the trace. When ctx is cancelled it
// stops after the kernel in progress and returns what was measured, marked incomplete,
// together with ctx's error.
func Measure(ctx context.Context, m *loop.Meter, dev gpu.Device, suite []kernels.Descriptor, opt Options) (*Result, *trace.Trace, error) {
	exec, ok := dev.(gpu.Executor)
	if !ok {
		m.Stop()
		return nil, nil, errors.New("this device cannot run kernels")
	}
	if opt.Idle <= 0 {
		opt.Idle = 3 * time.Second
	}
	info := dev.Info()
	rep := &Result{Format: Format, GPU: info, Props: exec.Props(), Status: status.Status{Warnings: []status.Warning{}}}
	type done struct {
		d  kernels.Descriptor
		me *loop.Measurement
	}
	var measured []done
	// A kernel that fails is reported and the suite goes on; an interruption ends it.
	run, err := m.RunSuite(ctx, info.Index, exec, suite, opt.Idle, opt.Loop, opt.Progress.Stage("micro"))
	if err != nil {
		return nil, nil, err
	}
	rep.Failed = append(rep.Failed, run.Tell(ctx, &rep.Status, CodeNotMeasured)...)
	for i, me := range run.Measured {
		if me != nil {
			measured = append(measured, done{suite[i], me})
		}
	}
	tr, runErr := run.Trace, run.Err
	rep.EnergyCalibration = run.Calibration
	rep.EnergyNote = energy.SourceNote(rep.EnergyCalibration)
	// The idle power, and pi0 from the baseline kernel (else the idle power, said so).
	for _, x := range measured {
		rep.IdlePowerW, rep.IdleLevel = x.me.Region.IdlePowerW, x.me.Region.IdleLevel
		break
	}
	rep.Pi0W, rep.Pi0Source = rep.IdlePowerW, "idle power (no baseline kernel was run)"
	for _, x := range measured {
		if x.d.Group == "baseline" {
			rep.Pi0W, rep.Pi0Source = x.me.Region.MeanPowerW, "baseline kernel (seed 002, Algorithm 1)"
			if d := x.me.End - x.me.Start; d > 0 {
				rep.Pi0HalfWidthW = x.me.Region.Uncertainty.HalfWidthJ / d.Seconds()
			}
		}
	}
	// With the run-to-run spread: a steady counter's interval alone can be 0 (issue 28).
	rep.Pi0CI = energy.RelativeCI(rep.Pi0W, [2]float64{rep.Pi0W - rep.Pi0HalfWidthW, rep.Pi0W + rep.Pi0HalfWidthW})
	rep.Pi0HalfWidthW = (rep.Pi0CI[1] - rep.Pi0CI[0]) / 2
	rep.Pi0AbsCI = energy.AbsoluteCI(rep.Pi0W, rep.Pi0CI)
	if rep.Pi0Source[0] == 'i' {
		rep.Warnf(CodeNoBaseline, "no baseline kernel: pi0 is taken as the idle power, so the energy above pi0 includes the cost of holding the top clock")
	}
	for _, x := range measured {
		row := makeRow(x.d, x.me, rep.Props, rep.Pi0W, rep.Pi0HalfWidthW)
		rep.Rows = append(rep.Rows, row)
	}
	rep.Data = DataEffects(rep.Rows)
	rep.Tensor = TensorFigures(rep.Rows, rep.Props.SMs)
	return rep, tr, runErr
}

// DataEffect is one instruction class's energy under each operand pattern it was measured
// with.
type DataEffect struct {
	Class    string          `json:"class"`
	Patterns []PatternEnergy `json:"patterns"`
	// RandomOverZeros is the energy per instruction with random operands over that with
	// zeros, in all and above pi0, each with its 95 % interval (the two rows' intervals
	// combined as independent); 0 where either pattern is missing.
	RandomOverZeros           float64    `json:"random_over_zeros,omitempty"`
	RandomOverZerosCI         [2]float64 `json:"random_over_zeros_ci"`
	RandomOverZerosAbovePi0   float64    `json:"random_over_zeros_above_pi0,omitempty"`
	RandomOverZerosAbovePi0CI [2]float64 `json:"random_over_zeros_above_pi0_ci"`
}

// PatternEnergy is a class's energy per instruction under one operand pattern.
type PatternEnergy struct {
	Operands       string     `json:"operands"`
	Row            string     `json:"row"`
	Toggle         float64    `json:"operand_toggle"`
	PJPerOp        float64    `json:"pj_per_op"`
	PJPerOpCI      [2]float64 `json:"pj_per_op_ci"`
	PJAbovePi0     float64    `json:"pj_per_op_above_pi0"`
	PJAbovePi0CI   [2]float64 `json:"pj_per_op_above_pi0_ci"`
	PerCycleSM     float64    `json:"per_cycle_per_sm"`
	MeanPowerW     float64    `json:"mean_power_w"`
	TimePerLaunchS float64    `json:"time_per_launch_s"`
}

// DataEffects gathers the rows of each class measured under more than one operand
// pattern, in the order of kernels.OperandPatterns.
func DataEffects(rows []Row) []DataEffect {
	byClass := map[string]map[string]Row{}
	var order []string
	for _, r := range rows {
		if r.Operands == "" {
			continue
		}
		if byClass[r.What] == nil {
			byClass[r.What] = map[string]Row{}
			order = append(order, r.What)
		}
		byClass[r.What][r.Operands] = r
	}
	var out []DataEffect
	for _, c := range order {
		m := byClass[c]
		if len(m) < 2 {
			continue
		}
		d := DataEffect{Class: c}
		for _, p := range kernels.OperandPatterns {
			r, ok := m[string(p)]
			if !ok {
				continue
			}
			d.Patterns = append(d.Patterns, PatternEnergy{Operands: string(p), Row: r.Name, Toggle: r.OperandToggle,
				PJPerOp: r.PJPerUnit, PJPerOpCI: [2]float64{r.PJPerUnitLow, r.PJPerUnitHigh},
				PJAbovePi0: r.PJPerUnitAbovePi0, PJAbovePi0CI: [2]float64{r.PJPerUnitAbovePi0Low, r.PJPerUnitAbovePi0High},
				PerCycleSM: r.PerCycleSM, MeanPowerW: r.MeanPowerW, TimePerLaunchS: r.TimePerLaunchS})
		}
		rnd, ok1 := m[string(kernels.OperandsRandom)]
		zer, ok2 := m[string(kernels.OperandsZeros)]
		if ok1 && ok2 {
			d.RandomOverZeros, d.RandomOverZerosCI = ratio(rnd.PJPerUnit, rnd.PJPerUnitLow, rnd.PJPerUnitHigh, zer.PJPerUnit, zer.PJPerUnitLow, zer.PJPerUnitHigh)
			d.RandomOverZerosAbovePi0, d.RandomOverZerosAbovePi0CI = ratio(rnd.PJPerUnitAbovePi0, rnd.PJPerUnitAbovePi0Low, rnd.PJPerUnitAbovePi0High,
				zer.PJPerUnitAbovePi0, zer.PJPerUnitAbovePi0Low, zer.PJPerUnitAbovePi0High)
		}
		out = append(out, d)
	}
	return out
}

// ratio is a/b with its 95 % interval from the two figures' intervals (relative
// half-widths added in quadrature); the interval is [0, 0] where either has none.
func ratio(a, alo, ahi, b, blo, bhi float64) (float64, [2]float64) {
	if b <= 0 || a <= 0 {
		return 0, [2]float64{}
	}
	q := a / b
	if ahi == 0 || bhi == 0 {
		return q, [2]float64{}
	}
	rel := math.Hypot((ahi-alo)/2/a, (bhi-blo)/2/b)
	return q, [2]float64{q * (1 - rel), q * (1 + rel)}
}

// UnmarshalJSON reads a row of results.json, also as gpuwatt before issue 27 wrote it:
// whether the interval is partial under "interval_partial" (now "partial", beside the
// interval it qualifies).
func (r *Row) UnmarshalJSON(b []byte) error {
	type plain Row
	var old struct {
		IntervalPartial *bool `json:"interval_partial"`
	}
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return err
	}
	if old.IntervalPartial != nil && *old.IntervalPartial {
		r.Partial = true
	}
	return nil
}

// makeRow turns a measurement into the row's figures.
func makeRow(d kernels.Descriptor, me *loop.Measurement, p gpu.Props, pi0, pi0HW float64) Row {
	r := me.Region
	row := Row{
		Name: d.Name, Group: d.Group, Variant: d.Variant,
		Launches: me.Launches, TimePerLaunchS: me.PerLaunch,
		MeanPowerW: r.MeanPowerW, MaxPowerW: r.MaxPowerW, EnergySource: r.EnergySource,
		Interval: r.Interval, EnergyReadings: r.EnergyReadings, CounterEnergyJ: r.CounterEnergyJ, CounterReadings: r.CounterReadings,
		CalibratedEnergyJ: r.CalibratedEnergyJ, CalibratedReadings: r.CalibratedReadings, CounterDiffPct: r.CounterDiffPct,
		StartS: me.StartS, EndS: me.EndS,
		Throttle: r.Throttle, ThrottleUnavailable: r.ThrottleUnavailable, Warnings: append(append([]status.Warning{}, me.Warnings...), r.Warnings...),
	}
	if d.Data != nil {
		row.Operands, row.OperandToggle, row.OperandDensity = string(d.Data.Pattern), d.Data.ToggleEmulated, d.Data.DensityEmulated
	}
	if me.Launches > 0 {
		row.EnergyPerLaunchJ = r.EnergyJ / float64(me.Launches)
	}
	if r.HighJ > 0 {
		if d := (me.End - me.Start).Seconds(); d > 0 {
			row.MeanPowerLowW, row.MeanPowerHighW = r.MeanPowerW-r.Uncertainty.HalfWidthJ/d, r.MeanPowerW+r.Uncertainty.HalfWidthJ/d
		}
	}
	switch {
	case d.Measured != "":
		row.What, row.Unit = string(d.Measured), "op"
		if d.Measured.Tensor() { // Ops count multiply-accumulates
			row.Unit = "MAC"
		}
		row.WorkPerLaunch = d.MeasuredOps()
		row.FlopsPerLaunch = row.WorkPerLaunch * d.Measured.Flops()
		if s, ok := kernels.SpecOpsPerCycleSM(d.Measured, p.ComputeCapability); ok {
			row.SpecPerCycleSM = s
		}
	case len(d.Bytes) > 0:
		lvl, n := mainLevel(d.Bytes)
		row.What, row.Unit, row.WorkPerLaunch = string(lvl), "B", n
		if d.Requested > 0 && d.Requested != n {
			row.UsefulPerLaunch = d.Requested
		}
	default:
		row.What, row.Unit = d.Group, "launch"
		row.WorkPerLaunch = 1
	}
	row.ClockMHz = p.MaxSMClockHz / 1e6
	if r.SMClockMHz != nil && r.SMClockMHz.Median > 0 {
		row.ClockMHz = r.SMClockMHz.Median
	}
	T := me.PerLaunch
	if T > 0 && row.WorkPerLaunch > 0 {
		w := float64(row.WorkPerLaunch)
		row.PerSecond = w / T
		row.FlopsPerSecond = float64(row.FlopsPerLaunch) / T
		if p.SMs > 0 && row.ClockMHz > 0 {
			row.PerCycleSM = row.PerSecond / (float64(p.SMs) * row.ClockMHz * 1e6)
		}
		row.PJPerUnit = row.EnergyPerLaunchJ / w * 1e12
		if u := float64(row.UsefulPerLaunch); u > 0 {
			row.UsefulPerSecond = u / T
			row.PJPerUsefulByte = row.EnergyPerLaunchJ / u * 1e12
		}
		row.PJPerUnitPi0 = pi0 * T / w * 1e12
		row.PJPerUnitAbovePi0 = row.PJPerUnit - row.PJPerUnitPi0
		if me.Launches > 0 && r.HighJ > 0 {
			hw := r.Uncertainty.HalfWidthJ / float64(me.Launches) / w * 1e12 // pJ per unit
			// with the run-to-run spread (issue 28: 1.2 % between runs on one H200)
			hw = math.Hypot(hw, energy.RunToRunFraction*math.Abs(row.PJPerUnit))
			row.PJPerUnitLow, row.PJPerUnitHigh = row.PJPerUnit-hw, row.PJPerUnit+hw
			above := math.Hypot(hw, pi0HW*T/w*1e12)
			row.PJPerUnitAbovePi0Low, row.PJPerUnitAbovePi0High = row.PJPerUnitAbovePi0-above, row.PJPerUnitAbovePi0+above
			row.PJPerUnitCI = [2]float64{row.PJPerUnitLow, row.PJPerUnitHigh}
			row.PJPerUnitAbsCI = energy.AbsoluteCI(row.PJPerUnit, row.PJPerUnitCI)
			row.PJPerUnitAbovePi0CI = [2]float64{row.PJPerUnitAbovePi0Low, row.PJPerUnitAbovePi0High}
			row.PJPerUnitAbovePi0AbsCI = energy.AbsoluteCI(row.PJPerUnitAbovePi0, row.PJPerUnitAbovePi0CI)
		}
		if row.EnergyPerLaunchJ > 0 {
			row.PerJoule = w / row.EnergyPerLaunchJ
			if row.Unit == "op" && p.SMs > 0 && r.MeanPowerW > 0 {
				row.MIPSPerWattPerSM = row.PerSecond / 1e6 / r.MeanPowerW / float64(p.SMs)
			}
		}
	}
	if row.SpecPerCycleSM > 0 && row.PerCycleSM > 0 && row.PerCycleSM < 0.9*row.SpecPerCycleSM {
		pct := 100 * row.PerCycleSM / row.SpecPerCycleSM
		row.Warnings = append(row.Warnings, status.Warning{Code: CodeBelowSpec, Key: "reached less than 90 % of the spec throughput",
			Value: math.Round(pct), Unit: "% of the spec", Message: fmt.Sprintf("reached %.0f %% of the spec throughput", pct)})
	}
	if math.IsNaN(row.PJPerUnit) || math.IsInf(row.PJPerUnit, 0) {
		row.PJPerUnit, row.PJPerUnitPi0, row.PJPerUnitAbovePi0 = 0, 0, 0
		row.PJPerUnitLow, row.PJPerUnitHigh, row.PJPerUnitAbovePi0Low, row.PJPerUnitAbovePi0High = 0, 0, 0, 0
		row.PJPerUnitCI, row.PJPerUnitAbsCI, row.PJPerUnitAbovePi0CI, row.PJPerUnitAbovePi0AbsCI = [2]float64{}, [2]float64{}, [2]float64{}, [2]float64{}
	}
	return row
}

// mainLevel is the memory level with the most bytes.
func mainLevel(b map[kernels.MemLevel]int64) (kernels.MemLevel, int64) {
	var ls []kernels.MemLevel
	for l := range b {
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	best, n := kernels.MemLevel(""), int64(-1)
	for _, l := range ls {
		if b[l] > n {
			best, n = l, b[l]
		}
	}
	return best, n
}
