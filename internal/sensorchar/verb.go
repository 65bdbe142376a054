package sensorchar

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	if o.GPU < 0 {
		return fmt.Errorf("--gpu %d: want a GPU index >= 0", o.GPU)
	}
	return nil
}

// Run characterises every power channel of GPU o.GPU of env.System on env.Clock. Errors
// wrapping status.ErrInput are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, status.Inputf("%v", err)
	}
	if env.System == nil || env.Clock == nil {
		return nil, errors.New("sensor: no device")
	}
	devs := env.System.Devices()
	if o.GPU >= len(devs) {
		return nil, status.Inputf("--gpu %d: no such GPU (found %d)", o.GPU, len(devs))
	}
	dev := devs[o.GPU]
	exec, ok := dev.(gpu.Executor)
	if !ok && dev.Info().Vendor == trace.VendorAMD {
		return nil, fmt.Errorf("GPU %d is an AMD GPU (%s): %w: the sensor verb loads the board with gpuwatt's own kernels, which are PTX (NVIDIA only); the sim's AMD board (--device sim:mi300x) shows what it reports", o.GPU, dev.Info().Name, ErrNoExecutor)
	}
	if !ok {
		return nil, fmt.Errorf("GPU %d: %w", o.GPU, ErrNoExecutor)
	}
	if o.Progress == nil {
		o.Progress = env.Progress
	}
	rep, err := Measure(ctx, env.Clock, dev, exec, o)
	if rep != nil {
		rep.Device, rep.Simulated = env.System.Name(), env.System.Simulated()
	}
	return rep, err
}
