// Package gpu is "a device that has sensors (and, later, runs kernel descriptors)": the
// common face of a real NVIDIA GPU (nvmlgpu) and of the sim device (sim).
package gpu

import (
	"errors"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Device is one GPU.
type Device interface {
	// Info describes the GPU: index, name, UUID, PCI bus id, power limits.
	Info() trace.GPU
	// Sensors returns every channel the device may offer, in a stable order. Channels
	// that do not work on this device say so through Read's error.
	Sensors() []sensor.Sensor
}

// System is the set of GPUs seen through one driver (or the sim).
type System interface {
	// Name is "nvml" for real GPUs, "sim:<preset>" for the sim device. It is a label for
	// people and metadata: ask Simulated, never the name, whether figures are simulated.
	Name() string
	// Simulated reports whether the devices are the sim (the digital twin): every figure
	// measured on them is simulated, and their true power may be known (Truth).
	Simulated() bool
	DriverVersion() string
	NVMLVersion() string
	Devices() []Device
	Close() error
}

// Truth is implemented by devices whose true power is known: the sim device. Tests and
// reports compare what the sensors gave with it; a method must never fit its model from it.
type Truth interface {
	// TruePower is the device's true board power at t on the clock it was opened with.
	TruePower(t time.Duration) units.Power
	// TrueEnergy is the true board energy over [t0, t1].
	TrueEnergy(t0, t1 time.Duration) units.Energy
	// Model is the sensor model the twin gives channel name (with this board's errors).
	Model(name string) (sensormodel.Model, bool)
	// TrueIdle is the board's true idle power at rest and active idle.
	TrueIdle() Idle
}

// Idle is a board's two idle levels, named alike in every verb and output:
//   - AtRest, "idle at rest": no CUDA context open, long after any load (76–81 W on the
//     H200s measured), what `gpuwatt measure`'s baseline sees before a command starts;
//   - Active, "active idle": a CUDA context open and nothing running (~120 W on the H200),
//     what gpuwatt's own kernels (micro, archline, sensor, profile, loadlevel) idle at
//     between runs, and what a board holds for a while after a load ends.
type Idle struct {
	AtRest, Active units.Power
}

// CommandObserver is implemented by devices whose true power follows the command that
// `gpuwatt measure` runs (the sim device); real GPUs need no telling.
type CommandObserver interface {
	CommandStarted(t time.Duration)
	CommandEnded(t time.Duration)
}

// Executor is implemented by devices that run gpuwatt's own kernels: a real GPU through
// the CUDA driver, the sim device through its model.
type Executor interface {
	// Props describes the device for throughput figures.
	Props() Props
	// Prepare loads a kernel (the driver JIT-compiles its PTX) and allocates and zeroes
	// its buffers. The kernel is released by Close.
	Prepare(d kernels.Descriptor) (Kernel, error)
}

// ErrKernelHung is the error (wrapped) of a Kernel's Run whose launches did not finish
// within their bound, and of every later Prepare on that device: the GPU is still running a
// kernel that does not end, and nothing more can be run on it (nor its resources freed)
// until the process ends.
var ErrKernelHung = errors.New("a kernel hangs")

// Kernel is a prepared kernel.
type Kernel interface {
	// Run launches the kernel n times back to back, waits until they have finished, and
	// returns when the first started and the last ended, on the clock the device was
	// opened with (on a GPU: CUDA events mapped onto the host's monotonic clock).
	Run(n int) (start, end time.Duration, err error)
	Close() error
}

// Props are the device properties that throughput figures need.
type Props struct {
	Name              string  `json:"name"`
	ComputeCapability string  `json:"compute_capability"` // "9.0"
	SMs               int     `json:"sms"`
	MaxSMClockHz      float64 `json:"max_sm_clock_hz"`
	MemClockHz        float64 `json:"mem_clock_hz"`
	MemBusWidthBits   int     `json:"mem_bus_width_bits"`
	L2Bytes           int64   `json:"l2_bytes"`
	MemoryBytes       int64   `json:"memory_bytes"`
	MaxThreadsPerSM   int     `json:"max_threads_per_sm"`
	SharedPerSM       int     `json:"shared_bytes_per_sm"`
}

// ProcessUse is one process's use of a GPU over the span since the previous call of
// ProcessLister.Processes.
type ProcessUse struct {
	PID  int
	Comm string // the command name (/proc/PID/comm where the driver gives none)
	// SMUtil is the percentage of the span during which the SMs ran this process's
	// kernels (NVML's per-process smUtil), 0 to 100.
	SMUtil float64
}

// ProcessLister is implemented by devices that say which processes used them, and how much
// of the SMs each used: a real GPU through NVML's per-process utilisation samples, the sim
// device through its scripted processes. gpuwatt serve splits the energy by it.
type ProcessLister interface {
	// Processes returns the processes that used the GPU since the previous call (the
	// first call: the driver's recent past), each with its mean SM utilisation over that
	// span; none when nothing ran.
	Processes() ([]ProcessUse, error)
}
