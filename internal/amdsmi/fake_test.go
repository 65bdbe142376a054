package amdsmi_test

import (
	"errors"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"math"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/amdsmi"
	"github.com/gpuwatt/gpuwatt/internal/amdsmi/amdsmitest"
)

// openFake builds the fake, sets its version (before Init: Init checks it) and initialises it.
func openFake(t *testing.T, version ...uint32) (*amdsmi.Lib, *amdsmitest.Fake) {
	t.Helper()
	path := amdsmitest.Build(t)
	l, err := amdsmi.Open("/nonexistent/libamd_smi.so", path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	fake := amdsmitest.Control(t, path)
	if len(version) == 4 {
		fake.SetVersion(version[0], version[1], version[2], version[3])
	}
	if err := l.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = l.ShutDown() })
	return l, fake
}

func gpus(t *testing.T, l *amdsmi.Lib) []amdsmi.Processor {
	t.Helper()
	ps, err := l.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != amdsmitest.DeviceCount {
		t.Fatalf("GPUs: %d, want %d", len(ps), amdsmitest.DeviceCount)
	}
	return ps
}

func TestOpenMissing(t *testing.T) {
	_, err := amdsmi.Open("/nonexistent/libamd_smi.so")
	if !errors.Is(err, amdsmi.ErrLibraryNotFound) {
		t.Fatalf("err = %v, want ErrLibraryNotFound", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "no AMD GPU driver found: cannot load /nonexistent/libamd_smi.so") || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line naming the library", msg)
	}
}

func TestDescribe(t *testing.T) {
	l, fake := openFake(t)
	if fake.InitCount() != 1 {
		t.Errorf("InitCount = %d, want 1", fake.InitCount())
	}
	if v := l.Version(); v.String() != "24.6.2.0" || v.Build != "24.6.2.0" || l.Layout() != &amdsmi.LayoutROCm6 {
		t.Errorf("Version = %+v (%s), layout %v", v, v, l.Layout())
	}
	ps := gpus(t, l)
	for i, want := range []struct{ name, uuid, bus string }{
		{amdsmitest.Dev0Name, amdsmitest.Dev0UUID, amdsmitest.Dev0BusID},
		{amdsmitest.Dev1Name, amdsmitest.Dev1UUID, amdsmitest.Dev1BusID},
	} {
		if n, err := ps[i].MarketName(); err != nil || n != want.name {
			t.Errorf("GPU %d MarketName = %q, %v", i, n, err)
		}
		if u, err := ps[i].UUID(); err != nil || u != want.uuid {
			t.Errorf("GPU %d UUID = %q, %v", i, u, err)
		}
		if b, err := ps[i].PCIBusID(); err != nil || b != want.bus {
			t.Errorf("GPU %d PCIBusID = %q, %v; want %s", i, b, err, want.bus)
		}
	}
	if c, d, err := ps[1].PowerCap(); err != nil || c.Watts() != amdsmitest.Dev1CapW || d.Watts() != amdsmitest.Dev1DefCapW {
		t.Errorf("PowerCap = %v, %v, %v", c, d, err)
	}
	if f, err := ps[0].Clock(amdsmi.ClockGFX); err != nil || f.Hz() != amdsmitest.Dev0GFXMHz*1e6 {
		t.Errorf("Clock(GFX) = %v, %v", f, err)
	}
	if f, err := ps[0].Clock(amdsmi.ClockMem); err != nil || f.Hz() != amdsmitest.Dev0MemMHz*1e6 {
		t.Errorf("Clock(Mem) = %v, %v", f, err)
	}
	if c, err := ps[0].Temperature(amdsmi.TempHotspot); err != nil || c.Celsius() != amdsmitest.Dev0HotspotC {
		t.Errorf("Temperature(hotspot) = %v, %v", c, err)
	}
	if g, u, err := ps[1].Activity(); err != nil || g != 3 || u != 1 {
		t.Errorf("Activity = %d, %d, %v", g, u, err)
	}
	var zero amdsmi.Processor
	if _, err := zero.CurrentSocketPower(); !errors.Is(err, amdsmi.ErrNotInit) {
		t.Errorf("zero Processor: %v, want ErrNotInit", err)
	}
}

// TestNotSupported: a call the board does not offer (AMDSMI_STATUS_NOT_SUPPORTED) and a
// field the library marks unsupported (0xFFFF) both match ErrNotSupported and say which.
func TestNotSupported(t *testing.T) {
	l, _ := openFake(t)
	ps := gpus(t, l)
	_, err := ps[0].Temperature(amdsmi.TempEdge)
	var ae *amdsmi.Error
	if !errors.Is(err, amdsmi.ErrNotSupported) || !errors.As(err, &ae) || ae.Code != amdsmi.StatusNotSupported {
		t.Fatalf("edge temperature on the MI300X: %v, want AMDSMI_STATUS_NOT_SUPPORTED", err)
	}
	if want := "amdsmi_get_temp_metric: AMDSMI_STATUS_NOT_SUPPORTED (Feature not supported)"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if _, err := ps[1].EnergyCount(); !errors.Is(err, amdsmi.ErrNotSupported) {
		t.Errorf("energy count on GPU 1: %v, want ErrNotSupported", err)
	}
	if _, err := ps[0].AverageSocketPower(); !errors.Is(err, amdsmi.ErrNotSupported) || !strings.Contains(err.Error(), "average_socket_power") {
		t.Errorf("average socket power on the MI300X: %v, want ErrNotSupported naming the field", err)
	}
	if _, err := ps[1].CurrentSocketPower(); !errors.Is(err, amdsmi.ErrNotSupported) {
		t.Errorf("current socket power on GPU 1: %v, want ErrNotSupported", err)
	}
}

// TestVersionLayouts: each version the binding knows is read at its own offsets (the fake
// writes each version's layout, with values that are wrong at any other offsets); versions
// it does not know are refused at Init, naming the version, and the library shut down.
func TestVersionLayouts(t *testing.T) {
	testkit.Slow(t)
	for _, tt := range []struct {
		v      [4]uint32
		layout *amdsmi.Layout
		str    string
	}{
		{[4]uint32{23, 4, 0, 0}, &amdsmi.LayoutROCm6, "23.4.0.0"},
		{[4]uint32{24, 7, 1, 0}, &amdsmi.LayoutROCm6, "24.7.1.0"},
		{[4]uint32{0, 25, 3, 0}, &amdsmi.LayoutROCm64, "25.3.0"},
		{[4]uint32{0, 26, 1, 0}, &amdsmi.LayoutROCm7, "26.1.0"},
	} {
		t.Run(tt.str, func(t *testing.T) {
			l, fake := openFake(t, tt.v[:]...)
			if l.Layout() != tt.layout || l.Version().String() != tt.str || l.Version().Build != tt.str {
				t.Fatalf("version %+v, layout %v; want %s, %s", l.Version(), l.Layout().Name, tt.str, tt.layout.Name)
			}
			ps := gpus(t, l)
			fake.SetPower(0, 612, 598)
			cur, err1 := ps[0].CurrentSocketPower()
			avg, err2 := ps[0].AverageSocketPower()
			if err1 != nil || err2 != nil || cur.Watts() != 612 || avg.Watts() != 598 {
				t.Errorf("socket power = %v, %v (%v, %v); want 612 W, 598 W", cur, avg, err1, err2)
			}
		})
	}
	for _, tt := range []struct {
		v    [4]uint32
		want string
	}{
		{[4]uint32{23, 2, 0, 0}, "libamd_smi version 23.2.0.0 is not supported: it predates ROCm 6.0"},
		{[4]uint32{0, 27, 0, 0}, "libamd_smi version 27.0.0 is not supported: its struct layouts are not known to this gpuwatt"},
	} {
		t.Run("refuse "+tt.want[19:27], func(t *testing.T) {
			path := amdsmitest.Build(t)
			l, err := amdsmi.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			fake := amdsmitest.Control(t, path)
			fake.SetVersion(tt.v[0], tt.v[1], tt.v[2], tt.v[3])
			err = l.Init()
			if !errors.Is(err, amdsmi.ErrUnsupportedVersion) || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), amdsmi.Supported) {
				t.Fatalf("Init = %v; want ErrUnsupportedVersion, %q...", err, tt.want)
			}
			if n := fake.InitCount(); n != 0 {
				t.Errorf("after a refused version the library is still initialised (%d)", n)
			}
		})
	}
}

// TestEnergyWrap: the raw accumulator wraps at 2^32 and the counter goes on from the
// energy before the wrap.
func TestEnergyWrap(t *testing.T) {
	l, fake := openFake(t)
	p := gpus(t, l)[0]
	var c amdsmi.EnergyCounter
	read := func(raw uint64) float64 {
		t.Helper()
		fake.SetEnergy(0, raw)
		e, err := p.EnergyCount()
		if err != nil {
			t.Fatal(err)
		}
		if e.Raw != raw || e.ResolutionUJ != float32(amdsmitest.ResolutionUJ) || e.TimestampNS == 0 {
			t.Fatalf("EnergyCount = %+v", e)
		}
		j, err := c.Update(e)
		if err != nil {
			t.Fatal(err)
		}
		return j.Joules()
	}
	res := float64(float32(amdsmitest.ResolutionUJ)) * 1e-6
	e0 := read(1<<32 - 1000)
	e1 := read(500) // wrapped: 1500 counts later
	if got, want := e1-e0, 1500*res; math.Abs(got-want) > 1e-9 {
		t.Errorf("energy across the wrap = %.9g J, want %.9g", got, want)
	}
	if c.Wraps() != 1 {
		t.Errorf("Wraps = %d, want 1", c.Wraps())
	}
	e2 := read(2500)
	if got, want := e2-e1, 2000*res; math.Abs(got-want) > 1e-9 || c.Wraps() != 1 {
		t.Errorf("after the wrap: +%.9g J (want %.9g), %d wraps", got, want, c.Wraps())
	}
	// A 64-bit counter that goes back is reset, not wrapped: the energy goes on from the
	// new count (a wrap of 2^64 counts would add 282 TJ).
	e3 := read(5_000_000_000)
	e4 := read(700)
	if got, want := e4-e3, 700*res; math.Abs(got-want) > 1e-6 || c.Resets() != 1 || c.Wraps() != 1 {
		t.Errorf("across a reset: %+.9g J (want %+.9g), %d resets, %d wraps", got, want, c.Resets(), c.Wraps())
	}
}

func TestParseVersion(t *testing.T) {
	for _, tt := range []struct {
		w    [4]uint32
		want string
	}{
		{[4]uint32{24, 6, 2, 0}, "24.6.2.0"},
		{[4]uint32{26, 1, 0, 0}, "26.1.0"},
		{[4]uint32{25, 4, 2, 0}, "25.4.2"},
	} {
		if got := amdsmi.ParseVersion(tt.w).String(); got != tt.want {
			t.Errorf("ParseVersion(%v) = %s, want %s", tt.w, got, tt.want)
		}
	}
}
