package cli

import (
	"errors"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// deviceFlags are the flags every verb that touches a GPU shares.
type deviceFlags struct {
	device    string
	simConfig string
	// realOnly: auto opens this machine's GPUs or fails (device.Options.RealOnly).
	realOnly bool
}

func (df deviceFlags) spec() device.Spec {
	return device.Spec{Device: df.device, SimConfig: df.simConfig}
}

// openSystem opens the GPUs named by --device on clk (internal/device resolves the value;
// auto's fall-back to the sim is announced on stderr). A bad flag value returns a
// device.UsageError.
func (a *App) openSystem(verb string, df deviceFlags, clk clock.Clock) (gpu.System, error) {
	op, err := device.Open(df.spec(), device.Options{Clock: clk, NVMLPaths: a.NVMLPaths, AMDSMIPaths: a.AMDSMIPaths, Notice: a.Stderr, Verb: verb, RealOnly: df.realOnly})
	if err != nil {
		return nil, err
	}
	if a.WrapSystem != nil {
		return a.WrapSystem(op.System), nil
	}
	return op.System, nil
}

// usageErr marks an error caused by bad input (exit 2).
type usageErr struct{ error }

func (u usageErr) Unwrap() error { return u.error }

// exitFor maps an error to gpuwatt's exit code and prints it.
func (a *App) exitFor(verb string, err error) int {
	var u usageErr
	if errors.As(err, &u) {
		return a.usageError(verb, u.error)
	}
	var in *status.InputError
	if errors.As(err, &in) {
		return a.usageError(verb, in)
	}
	var du *device.UsageError
	if errors.As(err, &du) {
		return a.usageError(verb, du.Err)
	}
	if errors.Is(err, status.ErrInput) {
		// The message without the sentinel's "bad input: " prefix: the usage line says it.
		return a.usageError(verb, errors.New(strings.TrimPrefix(err.Error(), status.ErrInput.Error()+": ")))
	}
	return a.fail(verb, err)
}
