package micro

import (
	"context"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	switch {
	case o.GPU < 0:
		return fmt.Errorf("--gpu %d: want a GPU index >= 0", o.GPU)
	case o.Loop.Warmup < 0:
		return fmt.Errorf("--warmup %s: want a positive duration", o.Loop.Warmup)
	}
	if err := o.Loop.Validate(); err != nil {
		return err
	}
	if len(o.Only) > 0 {
		// The names are checked against the suite as a default device builds it.
		suite, err := kernels.Default(kernels.SuiteOpts{Operands: o.Operands})
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
// and returns the report with the trace it was measured from. Errors wrapping status.ErrInput
// are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, *trace.Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, status.Inputf("%v", err)
	}
	dev, exec, err := env.KernelGPU(o.GPU)
	if err != nil {
		return nil, nil, err
	}
	props := exec.Props()
	if o.Operands == nil {
		o.Operands = []kernels.Operands{kernels.DefaultOperands}
	}
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}, Operands: o.Operands})
	if err != nil {
		return nil, nil, err
	}
	if len(o.Only) > 0 {
		if suite, err = kernels.ByName(suite, o.Only...); err != nil {
			return nil, nil, status.Inputf("--only: %v", err)
		}
	}
	m, err := loop.Start(ctx, env.Clock, []gpu.Device{dev}, o.Poll)
	if err != nil {
		return nil, nil, err
	}
	if o.Progress == nil {
		o.Progress = env.Progress
	}
	rep, tr, err := Measure(ctx, m, dev, suite, o)
	if rep != nil {
		rep.Device, rep.Simulated = env.System.Name(), env.System.Simulated()
	}
	return rep, tr, err
}
