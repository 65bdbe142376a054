package characterize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	if o.GPU < 0 {
		return fmt.Errorf("--gpu %d: want a GPU index >= 0", o.GPU)
	}
	for _, st := range o.Stages {
		if !slices.Contains(Stages, st) {
			return fmt.Errorf("--stages: unknown stage %q: want some of %s", st, strings.Join(Stages, ","))
		}
	}
	if o.LoadContexts < 0 {
		return fmt.Errorf("--contexts %d: want a number of users >= 1", o.LoadContexts)
	}
	return nil
}

// Run characterises GPU o.GPU of env.System on env.Clock (characterise with the system, device,
// clock and progress taken from env). Errors wrapping status.ErrInput are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, status.Inputf("%v", err)
	}
	if env.System == nil || env.Clock == nil {
		return nil, errors.New("characterize: no device")
	}
	devs := env.System.Devices()
	if o.GPU >= len(devs) {
		return nil, status.Inputf("--gpu %d: no such GPU (found %d)", o.GPU, len(devs))
	}
	o.System, o.Device, o.Clock = env.System, devs[o.GPU], env.Clock
	if o.Progress == nil {
		o.Progress = env.Progress
	}
	return characterise(ctx, o)
}
