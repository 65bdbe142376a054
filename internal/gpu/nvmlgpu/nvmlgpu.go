// Package nvmlgpu is the gpu.System of the real NVIDIA GPUs of this machine, seen through
// NVML: their descriptions and their nvmlsensor channels.
package nvmlgpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/nvmlsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// CloseTimeout is how long Close waits for the driver: sensor.DefaultHangTimeout.
var CloseTimeout = sensor.DefaultHangTimeout

// System is the set of GPUs NVML sees. It holds one nvmlInit_v2 until Close.
type System struct {
	lib           *nvml.Lib
	driverVersion string
	nvmlVersion   string
	devices       []gpu.Device

	closeOnce sync.Once
	closeErr  error
}

var (
	_ gpu.System = (*System)(nil)
	_ gpu.Device = (*Device)(nil)
)

// Open loads libnvidia-ml, initialises NVML and describes every GPU. clk maps the
// driver's timestamps onto the recording's axis (see nvmlsensor.Sensors). Without an
// NVIDIA driver the error matches nvml.ErrLibraryNotFound and reads
// "no NVIDIA driver found: ...".
func Open(clk clock.Clock) (gpu.System, error) {
	lib, err := nvml.Open()
	if err != nil {
		return nil, err
	}
	s, err := OpenLib(lib, clk)
	if err != nil {
		return nil, err // not a nil *System in a non-nil interface
	}
	return s, nil
}

// OpenLib is Open with a library already loaded (tests pass a fake one).
func OpenLib(lib *nvml.Lib, clk clock.Clock) (*System, error) {
	if err := lib.Init(); err != nil {
		if errors.Is(err, nvml.ErrDriverNotLoaded) {
			return nil, fmt.Errorf("no NVIDIA driver found: the kernel module is not loaded: %w", err)
		}
		return nil, fmt.Errorf("initialising NVML: %w", err)
	}
	s := &System{lib: lib}
	// Versions are informational: a failure leaves them empty.
	s.driverVersion, _ = lib.DriverVersion()
	s.nvmlVersion, _ = lib.NVMLVersion()
	n, err := lib.DeviceCount()
	if err != nil {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("counting GPUs: %w", err)
	}
	for i := range n {
		d, err := openDevice(lib, i, clk)
		if err != nil {
			_ = lib.Shutdown()
			return nil, err
		}
		s.devices = append(s.devices, d)
	}
	return s, nil
}

func openDevice(lib *nvml.Lib, i int, clk clock.Clock) (*Device, error) {
	dev, err := lib.DeviceByIndex(i)
	if err != nil {
		return nil, fmt.Errorf("GPU %d: %w", i, err)
	}
	info := trace.GPU{Index: i}
	// Only the handle is essential; a description field that cannot be read stays empty.
	info.Name, _ = dev.Name()
	info.UUID, _ = dev.UUID()
	info.PCIBusID, _ = dev.PCIBusID()
	if p, err := dev.EnforcedPowerLimit(); err == nil {
		info.PowerLimitW = p.Watts()
	}
	if p, err := dev.DefaultPowerLimit(); err == nil {
		info.DefaultPowerLimit = p.Watts()
	}
	return &Device{dev: dev, info: info, sensors: nvmlsensor.Sensors(dev, i, clk), clk: clk}, nil
}

// Name implements gpu.System: "nvml".
func (s *System) Name() string { return "nvml" }

// Simulated implements gpu.System: real GPUs, never simulated.
func (s *System) Simulated() bool { return false }

// DriverVersion implements gpu.System.
func (s *System) DriverVersion() string { return s.driverVersion }

// NVMLVersion implements gpu.System.
func (s *System) NVMLVersion() string { return s.nvmlVersion }

// Devices implements gpu.System.
func (s *System) Devices() []gpu.Device { return s.devices }

// Close shuts NVML down (once; later calls return the first result). A driver that does
// not answer (a call that hangs holds NVML up, Sampler.Hung) is waited for CloseTimeout at
// most: the run's files are written by then, and gpuwatt exits without it.
func (s *System) Close() error {
	s.closeOnce.Do(func() {
		ok, err := gpu.Within(CloseTimeout, func() error {
			var errs []error
			for _, d := range s.devices {
				if dd, ok := d.(*Device); ok {
					errs = append(errs, dd.exec.close())
				}
			}
			errs = append(errs, s.lib.Shutdown())
			return errors.Join(errs...)
		})
		s.closeErr = err
		if !ok {
			s.closeErr = fmt.Errorf("shutting NVML down: the driver did not answer within %s (a call hangs); left as it is", CloseTimeout)
		}
	})
	return s.closeErr
}

// Device is one GPU.
type Device struct {
	dev     nvml.Device
	info    trace.GPU
	sensors []sensor.Sensor
	clk     clock.Clock
	exec    executor // the CUDA side, opened on first use (exec.go)
	procs   procState
}

// Info implements gpu.Device.
func (d *Device) Info() trace.GPU { return d.info }

// Sensors implements gpu.Device: the nvmlsensor channels, in their order.
func (d *Device) Sensors() []sensor.Sensor { return d.sensors }

// NVML returns the device's NVML handle.
func (d *Device) NVML() nvml.Device { return d.dev }
