package archline

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

// Validate checks the options without running anything; its errors name the flag. Zero
// values mean the defaults.
func (o Options) Validate() error {
	for _, p := range o.Precisions {
		if p != kernels.FP32 && p != kernels.FP64 && !p.Tensor() {
			return fmt.Errorf("--precision %q: want fp32, fp64, tc-bf16 or tc-fp8 (a comma-separated list)", p)
		}
	}
	switch {
	case o.GPU < 0:
		return fmt.Errorf("--gpu %d: want a GPU index >= 0", o.GPU)
	case !(o.ClockTolerance >= 0 && o.ClockTolerance < 1):
		return fmt.Errorf("--clock-tolerance %g: want a share between 0 and 1", o.ClockTolerance)
	}
	if err := o.Loop.Validate(); err != nil {
		return err
	}
	for _, x := range o.Occupancies {
		if !(x > 0 && x <= 1) {
			return fmt.Errorf("occupancy %g: want a share in (0, 1]", x)
		}
	}
	return nil
}

// Run sweeps GPU o.GPU of env.System on env.Clock and fits the archline. Errors wrapping
// status.ErrInput are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, *trace.Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, status.Inputf("%v", err)
	}
	dev, _, err := env.KernelGPU(o.GPU)
	if err != nil {
		return nil, nil, err
	}
	m, err := loop.Start(ctx, env.Clock, []gpu.Device{dev}, o.Poll)
	if err != nil {
		return nil, nil, err
	}
	if o.Progress == nil {
		o.Progress = env.Progress
	}
	rep, tr, err := Measure(ctx, m, dev, o)
	if rep != nil {
		rep.Device, rep.Simulated = env.System.Name(), env.System.Simulated()
	}
	return rep, tr, err
}
