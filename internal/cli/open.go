package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/gpu/nvmlgpu"
	"gpuwatt/internal/gpu/sim"
	"gpuwatt/internal/measure"
	"gpuwatt/internal/nvml"
)

// deviceFlags are the flags every verb that touches a GPU shares.
type deviceFlags struct {
	device    string
	simConfig string
}

// errNoDriver marks the fallback to the sim device.
var errNoDriver = errors.New("no NVIDIA driver")

// openSystem opens the GPUs named by --device: "auto" (the NVIDIA driver, else the sim
// device, announced on stderr), "nvml", "sim" or "sim:PRESET". A bad flag value returns an
// error wrapping errUsage.
func (a *App) openSystem(verb string, df deviceFlags, clk clock.Clock) (gpu.System, error) {
	kind := strings.ToLower(strings.TrimSpace(df.device))
	switch {
	case kind == "" || kind == "auto":
		if df.simConfig != "" {
			return a.openSim(df, "", clk)
		}
		sys, err := a.openNVML(clk)
		if err == nil {
			return sys, nil
		}
		if !errors.Is(err, nvml.ErrLibraryNotFound) && !errors.Is(err, nvml.ErrDriverNotLoaded) && !errors.Is(err, errNoGPU) {
			return nil, err
		}
		s, serr := a.openSim(df, "", clk)
		if serr == nil {
			fmt.Fprintf(a.Stderr, "gpuwatt %s: %v; using the sim device (%s): figures are simulated\n", verb, err, s.Name())
		}
		return s, serr
	case kind == "nvml" || kind == "gpu":
		return a.openNVML(clk)
	case kind == "sim":
		return a.openSim(df, "", clk)
	case strings.HasPrefix(kind, "sim:"):
		return a.openSim(df, strings.TrimPrefix(kind, "sim:"), clk)
	}
	return nil, usageErr{fmt.Errorf("--device %q: want auto, nvml, sim or sim:PRESET (presets: %s)", df.device, strings.Join(sim.Presets(), ", "))}
}

var errNoGPU = errors.New("the NVIDIA driver sees no GPU")

func (a *App) openNVML(clk clock.Clock) (gpu.System, error) {
	lib, err := nvml.Open(a.NVMLPaths...)
	if err != nil {
		return nil, err
	}
	sys, err := nvmlgpu.OpenLib(lib, clk)
	if err != nil {
		return nil, err
	}
	if len(sys.Devices()) == 0 {
		sys.Close()
		return nil, errNoGPU
	}
	return sys, nil
}

func (a *App) openSim(df deviceFlags, preset string, clk clock.Clock) (gpu.System, error) {
	var cfg sim.Config
	var err error
	if df.simConfig != "" {
		f, ferr := os.Open(df.simConfig)
		if ferr != nil {
			return nil, usageErr{fmt.Errorf("--sim-config: %v", ferr)}
		}
		defer f.Close()
		cfg, err = sim.LoadConfig(f)
		if err != nil {
			return nil, usageErr{fmt.Errorf("--sim-config %s: %v", df.simConfig, err)}
		}
		if preset != "" && !strings.EqualFold(cfg.Preset, preset) {
			return nil, usageErr{fmt.Errorf("--device sim:%s contradicts preset %q in --sim-config %s", preset, cfg.Preset, df.simConfig)}
		}
	} else {
		if preset == "" {
			preset = "h100"
		}
		cfg, err = sim.Preset(preset)
		if err != nil {
			return nil, usageErr{fmt.Errorf("--device sim:%s: %v (presets: %s)", preset, err, strings.Join(sim.Presets(), ", "))}
		}
	}
	return sim.Open(clk, cfg)
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
	if errors.Is(err, measure.ErrInput) {
		return a.usageError(verb, errors.New(strings.TrimPrefix(err.Error(), measure.ErrInput.Error()+": ")))
	}
	return a.fail(verb, err)
}
