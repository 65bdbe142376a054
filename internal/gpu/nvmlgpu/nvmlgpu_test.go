package nvmlgpu_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/nvmlgpu"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/nvml/nvmltest"
	"github.com/gpuwatt/gpuwatt/internal/sensor/nvmlsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func TestOpenLib(t *testing.T) {
	path := nvmltest.Build(t)
	lib, err := nvml.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fake := nvmltest.Control(t, path)
	sys, err := nvmlgpu.OpenLib(lib, clock.NewVirtual(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.InitCount(); got != 1 {
		t.Errorf("NVML initialised %d times, want 1", got)
	}
	if sys.Name() != "nvml" || sys.DriverVersion() != nvmltest.DriverVersion || sys.NVMLVersion() != nvmltest.NVMLVersion {
		t.Errorf("system %q driver %q nvml %q", sys.Name(), sys.DriverVersion(), sys.NVMLVersion())
	}
	if sys.Simulated() {
		t.Error("a real GPU's system says it is simulated")
	}
	devs := sys.Devices()
	if len(devs) != nvmltest.DeviceCount {
		t.Fatalf("%d devices, want %d", len(devs), nvmltest.DeviceCount)
	}
	want := []trace.GPU{
		{Index: 0, Name: nvmltest.Dev0Name, UUID: nvmltest.Dev0UUID, PCIBusID: nvmltest.Dev0BusID,
			PowerLimitW: nvmltest.Dev0LimitMW / 1e3, DefaultPowerLimit: nvmltest.Dev0DefaultLimitMW / 1e3},
		{Index: 1, Name: nvmltest.Dev1Name, UUID: nvmltest.Dev1UUID, PCIBusID: nvmltest.Dev1BusID,
			PowerLimitW: nvmltest.Dev1LimitMW / 1e3, DefaultPowerLimit: nvmltest.Dev1DefaultLimitMW / 1e3},
	}
	for i, d := range devs {
		if got := d.Info(); got != want[i] {
			t.Errorf("device %d: %+v, want %+v", i, got, want[i])
		}
		ss := d.Sensors()
		if len(ss) == 0 || ss[0].Channel().Name != nvmlsensor.PowerUsage || ss[0].Channel().GPU != i {
			t.Errorf("device %d: sensors start with %+v", i, ss[0].Channel())
		}
		rs, err := ss[0].Read(nil)
		if err != nil || len(rs) != 1 {
			t.Errorf("device %d: power.usage = %v, %v", i, rs, err)
		}
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sys.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := fake.InitCount(); got != 0 {
		t.Errorf("NVML still initialised %d times after Close", got)
	}
	// Sensors of a closed system fail cleanly.
	if _, err := devs[0].Sensors()[0].Read(nil); !errors.Is(err, nvml.ErrUninitialized) {
		t.Errorf("read after Close = %v, want ErrUninitialized", err)
	}
}

func TestOpenWithoutDriver(t *testing.T) {
	if _, err := nvml.Open(); err == nil {
		t.Skip("this machine has libnvidia-ml")
	}
	sys, err := nvmlgpu.Open(clock.NewReal())
	if sys != nil {
		t.Errorf("Open returned a system %v with error %v", sys, err)
	}
	if !errors.Is(err, nvml.ErrLibraryNotFound) || !strings.HasPrefix(err.Error(), "no NVIDIA driver found: ") {
		t.Errorf("error %v, want ErrLibraryNotFound and a clear message", err)
	}
}

// TestCloseWhenDriverHangs: nvmlShutdown does not return (the driver is held up by a call
// that hangs): Close gives up after CloseTimeout with an error saying so, instead of
// holding gpuwatt's exit for ever.
func TestCloseWhenDriverHangs(t *testing.T) {
	path := nvmltest.Build(t)
	lib, err := nvml.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fake := nvmltest.Control(t, path)
	sys, err := nvmlgpu.OpenLib(lib, clock.NewVirtual(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	old := nvmlgpu.CloseTimeout
	nvmlgpu.CloseTimeout = 100 * time.Millisecond
	t.Cleanup(func() { nvmlgpu.CloseTimeout = old; fake.SetHang("") })
	fake.SetHang("nvmlShutdown")
	t0 := time.Now()
	err = sys.Close()
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Errorf("Close: %v; want the hang said", err)
	}
}
