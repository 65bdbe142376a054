package device

import (
	"errors"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/gpu"
)

// mixed is the GPUs of a host with both NVIDIA and AMD boards: each vendor's system, their
// devices side by side (NVIDIA's first; the AMD GPUs were numbered after them when opened).
type mixed struct{ systems []gpu.System }

var _ gpu.System = (*mixed)(nil)

// Name implements gpu.System: the systems' names joined, "nvml+amdsmi".
func (m *mixed) Name() string {
	names := make([]string, len(m.systems))
	for i, s := range m.systems {
		names[i] = s.Name()
	}
	return strings.Join(names, "+")
}

// Simulated implements gpu.System: real GPUs.
func (m *mixed) Simulated() bool { return false }

// DriverVersion implements gpu.System: each system's, "580.95.05; amdsmi 24.6.2.0".
func (m *mixed) DriverVersion() string {
	var vs []string
	for _, s := range m.systems {
		if v := s.DriverVersion(); v != "" {
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, "; ")
}

// NVMLVersion implements gpu.System: the NVIDIA system's.
func (m *mixed) NVMLVersion() string {
	for _, s := range m.systems {
		if v := s.NVMLVersion(); v != "" {
			return v
		}
	}
	return ""
}

// Devices implements gpu.System.
func (m *mixed) Devices() []gpu.Device {
	var out []gpu.Device
	for _, s := range m.systems {
		out = append(out, s.Devices()...)
	}
	return out
}

// Close implements gpu.System: every system's.
func (m *mixed) Close() error {
	var errs []error
	for _, s := range m.systems {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
