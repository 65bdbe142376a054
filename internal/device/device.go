package device

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/amdsmi"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/amdgpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/nvmlgpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/raplsensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Help texts of the shared flags, identical in every verb.
const (
	DeviceHelp     = "auto (the NVIDIA and AMD GPUs, else the sim device with a notice on stderr), nvml, amdsmi, sim or sim:PRESET"
	RealDeviceHelp = "auto (the NVIDIA and AMD GPUs of this machine; none found: exit 2), nvml, amdsmi, or sim or sim:PRESET (the simulated device: every output says simulated)"
	SimConfigHelp  = "JSON file configuring the sim device (see docs/sim.md); implies the sim for --device auto (default: none, the preset as it is)"
)

// Spec is what --device and --sim-config say.
type Spec struct {
	Device    string // auto (or empty), nvml, amdsmi, sim, sim:PRESET
	SimConfig string // a JSON sim config file
}

// Kind is what a Spec resolves to before anything is opened.
type Kind int

// Kinds.
const (
	Auto   Kind = iota // the drivers, else the sim
	NVML               // real GPUs through the NVIDIA driver
	Sim                // the sim device
	AMDSMI             // real AMD GPUs through amdsmi (ROCm)
)

// UsageError is an error in the flags' values (exit 2 on the command line).
type UsageError struct{ Err error }

func (u *UsageError) Error() string { return u.Err.Error() }
func (u *UsageError) Unwrap() error { return u.Err }

func usage(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// ErrNoGPU is returned when the NVIDIA driver loads but sees no GPU.
var ErrNoGPU = errors.New("the NVIDIA driver sees no GPU")

// ErrNoAMDGPU is returned when libamd_smi loads but sees no GPU.
var ErrNoAMDGPU = errors.New("the AMD SMI library sees no GPU")

// Parse returns the kind the spec names and, for the sim, its preset ("" for the default
// or the config's). A bad value is a UsageError naming the value and the presets. It opens
// nothing and reads no file, so Validate methods can call it.
func (s Spec) Parse() (Kind, string, error) {
	kind, preset, err := ParseName(s.Device, s.SimConfig != "")
	if err != nil {
		return 0, "", usage("--device %v", err)
	}
	switch {
	case kind == Auto && s.SimConfig != "":
		return Sim, "", nil
	case (kind == NVML || kind == AMDSMI) && s.SimConfig != "":
		return 0, "", usage("--sim-config %s configures the sim device, but --device is %s", s.SimConfig, s.Device)
	}
	return kind, preset, nil
}

// ParseName returns the kind a device's name names (auto or "", nvml, amdsmi, sim or
// sim:PRESET) and, for sim:PRESET, the preset, which must be built in unless withConfig (a
// sim config then describes the device). It opens nothing. Its errors name the value and
// the choices, not where the value came from: Spec.Parse says --device, the library
// Options.Device.
func ParseName(name string, withConfig bool) (Kind, string, error) {
	v := strings.ToLower(strings.TrimSpace(name))
	switch {
	case v == "" || v == "auto":
		return Auto, "", nil
	case v == "nvml" || v == "gpu":
		return NVML, "", nil
	case v == "amdsmi":
		return AMDSMI, "", nil
	case v == "sim":
		return Sim, "", nil
	case strings.HasPrefix(v, "sim:"):
		p := strings.TrimPrefix(v, "sim:")
		if !withConfig {
			if _, err := sim.Preset(p); err != nil {
				return 0, "", fmt.Errorf("%s: unknown preset %q (presets: %s)", name, p, strings.Join(sim.Presets(), ", "))
			}
		}
		return Sim, p, nil
	}
	return 0, "", fmt.Errorf("%q: want auto, nvml, amdsmi, sim or sim:PRESET (presets: %s)", name, strings.Join(sim.Presets(), ", "))
}

// Validate checks the spec's values without opening anything.
func (s Spec) Validate() error {
	_, _, err := s.Parse()
	return err
}

// Options say how to open.
type Options struct {
	// Clock, when set, is the clock every system is opened on (tests, and measure's real
	// process). When nil, a real GPU gets a real clock and the sim device a real clock too,
	// unless VirtualSim.
	Clock clock.Clock
	// VirtualSim gives the sim device a fresh virtual clock (instant and deterministic)
	// when Clock is nil: for gpuwatt's own workloads, which the sim runs itself.
	VirtualSim bool
	// NVMLPaths overrides where libnvidia-ml is looked for (tests point it at nothing).
	NVMLPaths []string
	// AMDSMIPaths overrides where libamd_smi is looked for (amdsmi.DefaultPaths when nil).
	AMDSMIPaths []string
	// Notice receives the one-line notice of auto's fall-back to the sim (stderr); nil
	// prints nothing (the caller reads Opened.Fallback).
	Notice io.Writer
	// Verb prefixes the notice: "gpuwatt VERB: ...".
	Verb string
	// RealOnly makes auto mean the GPUs of this machine and nothing else: where no driver
	// is found, Open returns ErrNoRealGPU (a UsageError naming what was looked for) instead
	// of the sim. For what records or accounts (measure, job, serve, the library): a
	// simulated figure must never stand in for a measured one unasked.
	RealOnly bool
}

// ErrNoRealGPU is returned (wrapped in a UsageError) by Open for auto with
// Options.RealOnly where neither the NVIDIA nor the AMD driver is there or sees a GPU.
var ErrNoRealGPU = errors.New("--device auto: no GPU driver found")

// Opened is an opened system and the clock its sensors run on.
type Opened struct {
	System gpu.System
	Clock  clock.Clock
	// Fallback is why auto did not open a real GPU (nil when it did, or was not asked).
	Fallback error
}

// Open resolves spec and opens the system it names. auto opens the NVIDIA GPUs and the AMD
// GPUs, side by side on a host that has both (NVIDIA's numbered first), and falls back to
// the sim device when neither library is there or sees a GPU.
func Open(spec Spec, o Options) (*Opened, error) {
	kind, preset, err := spec.Parse()
	if err != nil {
		return nil, err
	}
	switch kind {
	case NVML:
		return openNVML(o)
	case AMDSMI:
		return openAMD(o, 0)
	case Sim:
		return openSim(spec, preset, o)
	}
	nv, nvErr := openNVML(o)
	if nvErr != nil && !absent(nvErr) {
		return nil, nvErr
	}
	first := 0
	if nv != nil {
		first = len(nv.System.Devices())
	}
	amd, amdErr := openAMD(o, first)
	switch {
	case amdErr == nil && nv == nil:
		return amd, nil
	case amdErr == nil:
		return &Opened{System: &mixed{systems: []gpu.System{nv.System, amd.System}}, Clock: nv.Clock}, nil
	case nv != nil:
		if !absent(amdErr) {
			// The NVIDIA GPUs are measured; the AMD ones are named as not read.
			notice(o, fmt.Sprintf("AMD GPUs not read: %v", amdErr))
		}
		return nv, nil
	case !absent(amdErr):
		return nil, amdErr
	}
	err = fmt.Errorf("%w; %w", nvErr, amdErr)
	if o.RealOnly {
		return nil, &UsageError{fmt.Errorf("%w (%w); the simulated device is used only when asked: --device sim", ErrNoRealGPU, err)}
	}
	op, serr := openSim(spec, preset, o)
	if serr != nil {
		return nil, serr
	}
	op.Fallback = err
	notice(o, fmt.Sprintf("%v; using the sim device (%s): figures are simulated", err, op.System.Name()))
	return op, nil
}

// absent reports whether err says a vendor's GPUs are not on this machine (no library, no
// driver, no GPU), as opposed to GPUs that are there and fail.
func absent(err error) bool {
	return errors.Is(err, nvml.ErrLibraryNotFound) || errors.Is(err, nvml.ErrDriverNotLoaded) || errors.Is(err, ErrNoGPU) ||
		errors.Is(err, amdsmi.ErrLibraryNotFound) || errors.Is(err, amdsmi.ErrDriverNotLoaded) || errors.Is(err, ErrNoAMDGPU)
}

// notice writes one line to o.Notice, "gpuwatt VERB: msg".
func notice(o Options, msg string) {
	if o.Notice == nil {
		return
	}
	prefix := "gpuwatt"
	if o.Verb != "" {
		prefix += " " + o.Verb
	}
	fmt.Fprintf(o.Notice, "%s: %s\n", prefix, msg)
}

func openNVML(o Options) (*Opened, error) {
	clk := o.Clock
	if clk == nil {
		clk = clock.NewReal()
	}
	lib, err := nvml.Open(o.NVMLPaths...)
	if err != nil {
		return nil, err
	}
	sys, err := nvmlgpu.OpenLib(lib, clk)
	if err != nil {
		return nil, err
	}
	if len(sys.Devices()) == 0 {
		sys.Close()
		return nil, ErrNoGPU
	}
	return &Opened{System: sys, Clock: clk}, nil
}

// openAMD opens the AMD GPUs, numbered from first.
func openAMD(o Options, first int) (*Opened, error) {
	clk := o.Clock
	if clk == nil {
		clk = clock.NewReal()
	}
	sys, err := amdgpu.Open(first, o.AMDSMIPaths...)
	if err != nil {
		return nil, err
	}
	if len(sys.Devices()) == 0 {
		sys.Close()
		return nil, ErrNoAMDGPU
	}
	return &Opened{System: sys, Clock: clk}, nil
}

// SimConfigFor returns the sim config a spec names: the --sim-config file (whose preset must
// agree with sim:PRESET), else the preset (h100 by default).
func (s Spec) SimConfigFor(preset string) (sim.Config, error) {
	if s.SimConfig != "" {
		cfg, err := sim.LoadConfigFile(s.SimConfig)
		if err != nil {
			return sim.Config{}, usage("--sim-config: %v", err)
		}
		if preset != "" && !strings.EqualFold(cfg.Preset, preset) {
			return sim.Config{}, usage("--device sim:%s contradicts preset %q in --sim-config %s", preset, cfg.Preset, s.SimConfig)
		}
		return cfg, nil
	}
	if preset == "" {
		preset = "h100"
	}
	cfg, err := sim.Preset(preset)
	if err != nil {
		return sim.Config{}, usage("--device sim:%s: %v (presets: %s)", preset, err, strings.Join(sim.Presets(), ", "))
	}
	return cfg, nil
}

func openSim(spec Spec, preset string, o Options) (*Opened, error) {
	cfg, err := spec.SimConfigFor(preset)
	if err != nil {
		return nil, err
	}
	clk := o.Clock
	switch {
	case clk != nil:
	case o.VirtualSim:
		clk = clock.NewVirtual(time.Time{})
	default:
		clk = clock.NewReal()
	}
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		return nil, err
	}
	return &Opened{System: sys, Clock: clk}, nil
}

// Env is what a capability's Run gets from the command line: the opened system (nil for
// work that opens none), the clock its sensors run on, and where progress goes.
type Env struct {
	System   gpu.System
	Clock    clock.Clock
	Progress status.Progress
}

// KernelGPU returns GPU idx of e.System with its executor, ready for gpuwatt's own kernels.
// An index beyond the system's GPUs is bad input (status.ErrInput); where the CUDA side
// could not be opened (the executor knows no SMs), the error of a first Prepare says why.
func (e Env) KernelGPU(idx int) (gpu.Device, gpu.Executor, error) {
	if e.System == nil || e.Clock == nil {
		return nil, nil, errors.New("no device opened")
	}
	devs := e.System.Devices()
	if idx < 0 || idx >= len(devs) {
		return nil, nil, status.Inputf("--gpu %d: no such GPU (found %d)", idx, len(devs))
	}
	dev := devs[idx]
	if err := NVIDIAOnly(dev, idx); err != nil {
		return nil, nil, err
	}
	exec, ok := dev.(gpu.Executor)
	if !ok {
		return nil, nil, fmt.Errorf("GPU %d cannot run kernels", idx)
	}
	if exec.Props().SMs == 0 {
		if _, err := exec.Prepare(kernels.Descriptor{}); err != nil {
			return nil, nil, err
		}
	}
	return dev, exec, nil
}

// KernelsNVIDIAOnly says why gpuwatt's own kernels do not run on AMD boards, for messages.
const KernelsNVIDIAOnly = "gpuwatt's own kernels are PTX, run through the CUDA driver: NVIDIA GPUs only"

// NVIDIAOnly returns bad input (status.ErrInput: exit 2) naming the vendor when dev, GPU idx,
// is an AMD board (real or the sim's), nil otherwise.
func NVIDIAOnly(dev gpu.Device, idx int) error {
	info := dev.Info()
	if info.Vendor != trace.VendorAMD {
		return nil
	}
	return status.Inputf("--gpu %d is an AMD GPU (%s): micro, archline, profile and loadlevel's GPU workloads run gpuwatt's own kernels, PTX run through the CUDA driver: NVIDIA GPUs only (devices, measure and energy read AMD GPUs)", idx, info.Name)
}

// HostSensors returns the host's RAPL counters for a recording on sys (cpu.package.N,
// cpu.dram.N, cpu.psys, on trace.HostGPU): the twin's where sys is the sim device and
// models them, else the powercap tree at root (raplsensor.DefaultRoot where ""). Where
// none can be read, the error is one line saying why (no powercap: a virtual machine; the
// counters readable by root only; a sim config without "host").
func HostSensors(sys gpu.System, root string) ([]sensor.Sensor, error) {
	if h, ok := sys.(interface {
		HostSensors() ([]sensor.Sensor, error)
	}); ok {
		return h.HostSensors()
	}
	if sys.Simulated() {
		return nil, fmt.Errorf("%s models no host RAPL counters: CPU and DRAM energy not read", sys.Name())
	}
	if root == "" {
		root = raplsensor.DefaultRoot
	}
	return raplsensor.Open(root)
}
