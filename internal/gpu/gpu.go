// Package gpu is "a device that has sensors (and, later, runs kernel descriptors)": the
// common face of a real NVIDIA GPU (nvmlgpu) and of the sim device (sim).
package gpu

import (
	"time"

	"gpuwatt/internal/sensor"
	"gpuwatt/internal/trace"
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
	// Name is "nvml" for real GPUs, "sim:<preset>" for the sim device.
	Name() string
	DriverVersion() string
	NVMLVersion() string
	Devices() []Device
	Close() error
}

// CommandObserver is implemented by devices whose true power follows the command that
// `gpuwatt measure` runs (the sim device); real GPUs need no telling.
type CommandObserver interface {
	CommandStarted(t time.Duration)
	CommandEnded(t time.Duration)
}
