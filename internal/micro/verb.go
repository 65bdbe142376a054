package micro

import (
	"context"
	"errors"
	"fmt"

	"gpuwatt/internal/device"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/kernels"
	"gpuwatt/internal/loop"
	"gpuwatt/internal/trace"
)

// ErrInput marks bad input: an option that names no kernel or no GPU (exit 2).
var ErrInput = errors.New("bad input")

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	switch {
	case o.GPU < 0:
		return fmt.Errorf("--gpu %d: want a GPU index >= 0", o.GPU)
	case o.Loop.MinUpdates < 0:
		return fmt.Errorf("--min-updates %d: want a positive count", o.Loop.MinUpdates)
	case o.Loop.Warmup < 0:
		return fmt.Errorf("--warmup %s: want a positive duration", o.Loop.Warmup)
	}
	if len(o.Only) > 0 {
		// The names are checked against the suite as a default device builds it.
		suite, err := kernels.Default(kernels.SuiteOpts{})
		if err != nil {
			return err
		}
		if _, err := kernels.ByName(suite, o.Only...); err != nil {
			return fmt.Errorf("--only: %v", err)
		}
	}
	return nil
}

// Run runs the suite (or the kernels Only names) on GPU o.GPU of env.System, on env.Clock,
// and returns the report with the trace it was measured from. Errors wrapping ErrInput
// are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Report, *trace.Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if env.System == nil || env.Clock == nil {
		return nil, nil, errors.New("micro: no device")
	}
	devs := env.System.Devices()
	if o.GPU >= len(devs) {
		return nil, nil, fmt.Errorf("%w: --gpu %d: no such GPU (found %d)", ErrInput, o.GPU, len(devs))
	}
	dev := devs[o.GPU]
	exec, ok := dev.(gpu.Executor)
	if !ok {
		return nil, nil, fmt.Errorf("GPU %d cannot run kernels", o.GPU)
	}
	props := exec.Props()
	if props.SMs == 0 {
		// The CUDA side could not be opened: Prepare says why.
		if _, err := exec.Prepare(kernels.Descriptor{}); err != nil {
			return nil, nil, err
		}
	}
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}})
	if err != nil {
		return nil, nil, err
	}
	if len(o.Only) > 0 {
		if suite, err = kernels.ByName(suite, o.Only...); err != nil {
			return nil, nil, fmt.Errorf("%w: --only: %v", ErrInput, err)
		}
	}
	m, err := loop.Start(ctx, env.Clock, []gpu.Device{dev}, o.Poll)
	if err != nil {
		return nil, nil, err
	}
	if o.Progress == nil {
		o.Progress = env.Progress
	}
	rep, tr, err := Run(ctx, m, dev, suite, o)
	if rep != nil {
		rep.Device, rep.Simulated = env.System.Name(), env.System.Simulated()
	}
	return rep, tr, err
}
