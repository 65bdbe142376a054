// Package amdgpu is the gpu.System of the AMD GPUs of this machine, seen through amdsmi
// (ROCm): their descriptions and their amdsensor channels. The boards do not run gpuwatt's
// own kernels (PTX, NVIDIA only): Device is no gpu.Executor.
package amdgpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gpuwatt/gpuwatt/internal/amdsmi"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/amdsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// CloseTimeout is how long Close waits for the library: sensor.DefaultHangTimeout.
var CloseTimeout = sensor.DefaultHangTimeout

// System is the set of AMD GPUs amdsmi sees. It holds one amdsmi_init until Close.
type System struct {
	lib     *amdsmi.Lib
	devices []gpu.Device

	closeOnce sync.Once
	closeErr  error
}

var (
	_ gpu.System = (*System)(nil)
	_ gpu.Device = (*Device)(nil)
)

// Open loads libamd_smi (amdsmi.DefaultPaths, or paths) and describes every AMD GPU,
// numbering them from firstIndex (after the NVIDIA GPUs on a mixed host). Without ROCm the
// error matches amdsmi.ErrLibraryNotFound; a library version whose struct layouts gpuwatt
// does not know, amdsmi.ErrUnsupportedVersion.
func Open(firstIndex int, paths ...string) (*System, error) {
	lib, err := amdsmi.Open(paths...)
	if err != nil {
		return nil, err
	}
	return OpenLib(lib, firstIndex)
}

// OpenLib is Open with a library already loaded (tests pass a fake one).
func OpenLib(lib *amdsmi.Lib, firstIndex int) (*System, error) {
	if err := lib.Init(); err != nil {
		if errors.Is(err, amdsmi.ErrUnsupportedVersion) {
			return nil, err
		}
		return nil, fmt.Errorf("initialising AMD SMI (%s): %w", lib.Path(), err)
	}
	ps, err := lib.GPUs()
	if err != nil {
		_ = lib.ShutDown()
		return nil, fmt.Errorf("listing AMD GPUs: %w", err)
	}
	s := &System{lib: lib}
	for i, p := range ps {
		idx := firstIndex + i
		info := trace.GPU{Index: idx, Vendor: trace.VendorAMD}
		// Only the handle is essential; a description field that cannot be read stays empty.
		info.Name, _ = p.MarketName()
		info.UUID, _ = p.UUID()
		info.PCIBusID, _ = p.PCIBusID()
		if now, def, err := p.PowerCap(); err == nil {
			info.PowerLimitW, info.DefaultPowerLimit = now.Watts(), def.Watts()
		}
		s.devices = append(s.devices, &Device{p: p, info: info, sensors: amdsensor.Sensors(amdsensor.Wrap(p), idx)})
	}
	return s, nil
}

// Name implements gpu.System: "amdsmi".
func (s *System) Name() string { return "amdsmi" }

// Simulated implements gpu.System: real GPUs.
func (s *System) Simulated() bool { return false }

// DriverVersion implements gpu.System: the AMD SMI library's version ("amdsmi 24.6.2.0").
func (s *System) DriverVersion() string { return "amdsmi " + s.lib.Version().String() }

// NVMLVersion implements gpu.System: none on AMD.
func (s *System) NVMLVersion() string { return "" }

// Devices implements gpu.System.
func (s *System) Devices() []gpu.Device { return s.devices }

// Close shuts amdsmi down (once), waiting CloseTimeout at most for a library that does not
// answer.
func (s *System) Close() error {
	s.closeOnce.Do(func() {
		ok, err := gpu.Within(CloseTimeout, s.lib.ShutDown)
		s.closeErr = err
		if !ok {
			s.closeErr = fmt.Errorf("shutting AMD SMI down: the library did not answer within %s; left as it is", CloseTimeout)
		}
	})
	return s.closeErr
}

// Device is one AMD GPU.
type Device struct {
	p       amdsmi.Processor
	info    trace.GPU
	sensors []sensor.Sensor
}

// Info implements gpu.Device.
func (d *Device) Info() trace.GPU { return d.info }

// Sensors implements gpu.Device: the amdsensor channels, in their order.
func (d *Device) Sensors() []sensor.Sensor { return d.sensors }

// Processor returns the device's amdsmi handle.
func (d *Device) Processor() amdsmi.Processor { return d.p }
