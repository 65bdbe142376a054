package gpuwatt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/call"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/simhook"
	"github.com/gpuwatt/gpuwatt/sim"
)

// CallOptions configure MeasureCall. The zero value measures on GPU 0 of the NVIDIA or AMD
// driver (none found: an error naming the libraries looked for; the sim device only when
// asked, Device "sim" or Sim) until the energy per call is known to ±2 %.
type CallOptions struct {
	// Device, Sim and GPU choose the GPU as Options does (GPU: its index).
	Device string
	Sim    *sim.System
	GPU    int
	// Target is the relative half-width of the 95 % interval at which to stop (0.01: ±1 %;
	// default 0.02); Calls, where > 0, runs exactly that many repetitions instead.
	Target float64
	Calls  int
	// MinCalls (default 30), MaxCalls (default 3000) and MaxTime (default 5 min) bound the
	// repetitions.
	MinCalls, MaxCalls int
	MaxTime            time.Duration
	// Batch runs fn that many times back to back in each repetition (default 1); the
	// figures are per call. Calls well under a millisecond are measured better in batches.
	Batch int
	// Warmup calls run back to back before the measurement (default 3; -1: none).
	Warmup int
	// Sensor is the sensor model of the board: a sensor.json written by `gpuwatt sensor`
	// (recommended) or a model such as "rc:tau=14ms,period=20ms"; "" guesses it from the
	// board's name. Channel names the power channel ("": the best the board has).
	Sensor  string
	Channel string
	// Seed of the phases (default 1).
	Seed uint64
	// CheckIdle is the idle gap recorded at each check after its 0.4 s (default 600 ms;
	// < 0: none); RunToRunFloor the least relative half-width of the interval's run-to-run
	// part (0: the run's own blocks alone). docs/call.md, "How it works" 7 and 8.
	CheckIdle     time.Duration
	RunToRunFloor float64
}

// CallResult is the energy of one call.
type CallResult struct {
	Device    string `json:"device"`
	GPUName   string `json:"gpu_name"`
	Simulated bool   `json:"simulated"`
	// Calls is the number of repetitions measured; Batch the calls in each.
	Calls int `json:"calls"`
	Batch int `json:"batch"`
	// Seconds is the time per call; Joules the energy per call over its own span (the
	// active-idle power during it included); ActiveJoules the energy per call above the
	// power between calls (active idle); ActiveIdleWatts that power. Each figure has its
	// 95 % interval.
	Seconds         Interval `json:"seconds"`
	Joules          Interval `json:"joules"`
	ActiveJoules    Interval `json:"active_joules"`
	ActiveIdleWatts float64  `json:"active_idle_w"`
	// Target, the relative half-width reached (of ActiveJoules), whether it is within the
	// target, and the repetitions the spread says the target needs.
	Target       float64 `json:"target"`
	RelHalfWidth float64 `json:"rel_half_width"`
	Reached      bool    `json:"reached"`
	CallsNeeded  int     `json:"calls_needed"`
	// RunToRunJoules is the run-to-run part of ActiveJoules' half-width (J per call: how far
	// the calls' energy moves between the run's blocks beyond their errors, or the floor
	// asked for; 0: none, the figures not on the counter's scale).
	RunToRunJoules float64 `json:"run_to_run_j"`
	// Channel is the power channel the calls were read from; Scale the scale the figures
	// are on: the energy counter's (over the whole run) where it resolves the calls' energy
	// to ±2 %, else the channel's own (docs/call.md); Model the channel's sensor model and
	// where it came from.
	Channel  string    `json:"channel"`
	Scale    string    `json:"scale"`
	Model    string    `json:"model"`
	Warnings []Warning `json:"warnings"`
	// Incomplete: the measurement was cut short (a call failed, ctx done); the figures
	// are of the calls made.
	Incomplete       bool   `json:"incomplete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// Trace is the recording; Starts and Ends each repetition's span on its axis.
	Trace  *Trace          `json:"-"`
	Starts []time.Duration `json:"-"`
	Ends   []time.Duration `json:"-"`
}

// Interval is a figure with its 95 % interval: Low to High on the board's own scale (what
// repeats on this board), AbsLow to AbsHigh with the board's gain error (±5 %) added for
// an energy (0 otherwise).
type Interval struct {
	Value   float64 `json:"value"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	AbsLow  float64 `json:"absolute_low,omitempty"`
	AbsHigh float64 `json:"absolute_high,omitempty"`
}

// MeasureCall measures the energy of one call of fn: it runs fn many times, each after a
// wait that starts it at a chosen phase of the power sensor's update cycle (the phases
// spread evenly over it), while every power channel of the GPU is recorded, and averages
// the calls' energies (each from the same estimator as every gpuwatt figure) until the
// 95 % interval is as tight as CallOptions.Target asks. fn must return once the GPU work
// it started is done: call cudaDeviceSynchronize or its equivalent (on a sim.System,
// Synchronize) before returning. An error from fn ends the measurement: the first call's
// is returned, a later one's marks the result incomplete.
func MeasureCall(ctx context.Context, fn func(ctx context.Context) error, o CallOptions) (*CallResult, error) {
	if fn == nil {
		return nil, errors.New("gpuwatt: MeasureCall: fn is nil")
	}
	co := call.Options{Target: o.Target, Calls: o.Calls, MinCalls: o.MinCalls, MaxCalls: o.MaxCalls, MaxTime: o.MaxTime,
		Batch: o.Batch, Warmup: o.Warmup, Seed: o.Seed, Channel: o.Channel, CheckIdle: o.CheckIdle, RunToRunFloor: o.RunToRunFloor}
	if err := co.Validate(); err != nil {
		return nil, fmt.Errorf("gpuwatt: CallOptions: %v", err)
	}
	if o.Sensor != "" {
		sp, err := correct.ParseSpec(o.Sensor)
		if err != nil {
			return nil, fmt.Errorf("gpuwatt: CallOptions.Sensor: %v", err)
		}
		co.Sensor = &sp
	}
	var sys gpu.System
	var clk clock.Clock
	if o.Sim != nil {
		if d := strings.ToLower(strings.TrimSpace(o.Device)); d != "" && d != "sim" {
			return nil, fmt.Errorf("gpuwatt: CallOptions.Device %q with CallOptions.Sim: leave Device empty", o.Device)
		}
		s, c, ok := simhook.Of(o.Sim)
		if !ok {
			return nil, errors.New("gpuwatt: CallOptions.Sim is not an opened sim.System")
		}
		sys, clk = s, c
	} else {
		if _, _, err := device.ParseName(o.Device, false); err != nil {
			return nil, fmt.Errorf("gpuwatt: CallOptions.Device: %v", err)
		}
		// auto is this machine's GPUs: a call's energy is a measurement or an error, never
		// the twin's figure in its place (issue 29).
		op, err := device.Open(device.Spec{Device: o.Device}, device.Options{RealOnly: true})
		if err != nil {
			return nil, fmt.Errorf("gpuwatt: CallOptions.Device: %w", err)
		}
		defer op.System.Close()
		sys, clk = op.System, op.Clock
	}
	run := call.Bracket(clk, func(ctx context.Context, n int) error {
		for range n {
			if err := fn(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	res, err := call.Run(ctx, call.Env{Clock: clk, System: sys, GPU: o.GPU}, run, co)
	if err != nil {
		return nil, fmt.Errorf("gpuwatt: MeasureCall: %w", err)
	}
	return callResultOf(res, nil), nil
}

func callResultOf(r *call.Result, warns []Warning) *CallResult {
	iv := func(f call.Figure) Interval {
		return Interval{Value: f.Value, Low: f.Low, High: f.High, AbsLow: f.AbsLow, AbsHigh: f.AbsHigh}
	}
	out := &CallResult{Device: r.Device, GPUName: r.GPUName, Simulated: r.Simulated, Calls: r.Calls, Batch: r.Batch,
		Seconds: iv(r.TimeS), Joules: iv(r.EnergyJ), ActiveJoules: iv(r.ActiveJ), ActiveIdleWatts: r.ActiveIdleW.Value,
		Target: r.Target, RelHalfWidth: r.RelHalfWidth, Reached: r.Reached, CallsNeeded: r.CallsNeeded,
		Channel: r.Channel, Scale: r.Scale, Model: r.Model + " (" + r.ModelSource + ")", Warnings: append(warns, warningsOf(r.Warnings)...),
		Incomplete: r.Incomplete, IncompleteReason: r.IncompleteReason}
	if rr := r.RunToRun; rr != nil {
		out.RunToRunJoules = rr.HalfWidthJ
	}
	if r.Trace != nil {
		out.Trace = &Trace{tr: r.Trace}
	}
	for _, c := range r.PerCall {
		out.Starts = append(out.Starts, time.Duration(c.StartS*1e9))
		out.Ends = append(out.Ends, time.Duration(c.EndS*1e9))
	}
	return out
}
