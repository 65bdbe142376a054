package nvml

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

func TestReturnErrors(t *testing.T) {
	tests := []struct {
		code     Return
		name     string
		sentinel error // nil: matches none
	}{
		{ErrorUninitialized, "NVML_ERROR_UNINITIALIZED", ErrUninitialized},
		{ErrorInvalidArgument, "NVML_ERROR_INVALID_ARGUMENT", ErrInvalidArgument},
		{ErrorNotSupported, "NVML_ERROR_NOT_SUPPORTED", ErrNotSupported},
		{ErrorNoPermission, "NVML_ERROR_NO_PERMISSION", ErrNoPermission},
		{ErrorAlreadyInitialized, "NVML_ERROR_ALREADY_INITIALIZED", nil},
		{ErrorNotFound, "NVML_ERROR_NOT_FOUND", ErrNotFound},
		{ErrorInsufficientSize, "NVML_ERROR_INSUFFICIENT_SIZE", ErrInsufficientSize},
		{ErrorDriverNotLoaded, "NVML_ERROR_DRIVER_NOT_LOADED", ErrDriverNotLoaded},
		{ErrorTimeout, "NVML_ERROR_TIMEOUT", ErrTimeout},
		{ErrorLibraryNotFound, "NVML_ERROR_LIBRARY_NOT_FOUND", ErrLibraryNotFound},
		{ErrorFunctionNotFound, "NVML_ERROR_FUNCTION_NOT_FOUND", ErrNotSupported},
		{ErrorGPUIsLost, "NVML_ERROR_GPU_IS_LOST", ErrGPULost},
		{ErrorNoData, "NVML_ERROR_NO_DATA", ErrNoData},
		{ErrorInvalidState, "NVML_ERROR_INVALID_STATE", nil},
		{ErrorResetTypeNotSupported, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED", nil},
		{ErrorUnknown, "NVML_ERROR_UNKNOWN", nil},
		{Return(42), "NVML_ERROR(42)", nil},
	}
	sentinels := []error{ErrNotSupported, ErrNoPermission, ErrNotFound, ErrUninitialized,
		ErrNoData, ErrGPULost, ErrInsufficientSize, ErrLibraryNotFound, ErrDriverNotLoaded,
		ErrInvalidArgument, ErrTimeout}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.code.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			err := check(tt.code, "nvmlFoo")
			if err == nil {
				t.Fatal("check returned nil for a failure")
			}
			if !strings.HasPrefix(err.Error(), "nvmlFoo: "+tt.name) {
				t.Errorf("Error() = %q, want prefix %q", err.Error(), "nvmlFoo: "+tt.name)
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Func != "nvmlFoo" {
				t.Errorf("errors.As gave %+v", e)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), s == tt.sentinel; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v", s, got, want)
				}
			}
		})
	}
	if err := check(Success, "nvmlFoo"); err != nil {
		t.Errorf("check(Success) = %v", err)
	}
	if got := Success.String(); got != "NVML_SUCCESS" {
		t.Errorf("Success.String() = %q", got)
	}
}

func TestMissingSymbolError(t *testing.T) {
	err := missing("nvmlDeviceGetPerformanceState")
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("missing symbol does not match ErrNotSupported: %v", err)
	}
	if !strings.Contains(err.Error(), "nvmlDeviceGetPerformanceState") {
		t.Errorf("error does not name the symbol: %v", err)
	}
}

func TestOpenNoLibrary(t *testing.T) {
	const path = "/nonexistent/libnvidia-ml.so.1"
	l, err := Open(path)
	if err == nil || l != nil {
		t.Fatalf("Open(%q) = %v, %v; want an error", path, l, err)
	}
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Errorf("error does not match ErrLibraryNotFound: %v", err)
	}
	want := "no NVIDIA driver found: cannot load " + path + ": "
	if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("message = %q, want one line starting %q", msg, want)
	}
	// The reason is dlerror's, without the path repeated.
	if msg := err.Error(); strings.Count(msg, path) != 1 || !strings.Contains(msg, "No such file") {
		t.Errorf("message = %q, want the path once and dlerror's reason", msg)
	}
}

func TestOpenDefaultWithoutDriver(t *testing.T) {
	for _, p := range DefaultPaths {
		if h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			_ = purego.Dlclose(h)
			t.Skipf("%s loads on this machine", p)
		}
	}
	_, err := Open()
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Fatalf("Open() error = %v, want ErrLibraryNotFound", err)
	}
	// The first name's failure is the one reported.
	want := "no NVIDIA driver found: cannot load libnvidia-ml.so.1: "
	if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("message = %q, want one line starting %q", msg, want)
	}
}

// libc is loaded through the same lookup path as libnvidia-ml: it has none of NVML's
// symbols, so Open refuses it and every function field stays nil.
func TestOpenNotNVML(t *testing.T) {
	const libc = "libc.so.6"
	h, err := purego.Dlopen(libc, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skipf("no %s here: %v", libc, err)
	}
	_, err = Open(libc)
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Fatalf("Open(libc) error = %v, want ErrLibraryNotFound", err)
	}
	if want := "no NVIDIA driver found: libc.so.6 is not libnvidia-ml (it has no nvmlInit_v2)"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}

	l := &Lib{path: libc, handle: h}
	if err := l.bind(); err == nil {
		t.Fatal("bind(libc) succeeded")
	}
	if l.deviceGetCount != nil || l.deviceGetPowerUsage != nil || l.errorString != nil {
		t.Fatal("NVML symbols found in libc")
	}
	_, err = l.DeviceCount()
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "nvmlDeviceGetCount_v2") {
		t.Errorf("DeviceCount on libc = %v, want ErrNotSupported naming nvmlDeviceGetCount_v2", err)
	}
	if err := l.Init(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Init on libc = %v", err)
	}
}

// A Lib with nil fields (and a zero Device) answers every call with an error.
func TestNilFields(t *testing.T) {
	var nilLib *Lib
	libs := map[string]*Lib{"nil": nilLib, "empty": {}}
	for name, l := range libs {
		t.Run(name, func(t *testing.T) {
			for call, err := range map[string]error{
				"Init":     l.Init(),
				"Shutdown": l.Shutdown(),
				"DriverVersion": func() error {
					_, err := l.DriverVersion()
					return err
				}(),
				"NVMLVersion": func() error {
					_, err := l.NVMLVersion()
					return err
				}(),
				"DeviceCount": func() error {
					_, err := l.DeviceCount()
					return err
				}(),
				"DeviceByIndex": func() error {
					_, err := l.DeviceByIndex(0)
					return err
				}(),
			} {
				if !errors.Is(err, ErrNotSupported) {
					t.Errorf("%s: %v, want ErrNotSupported", call, err)
				}
			}
		})
	}
	d := Device{lib: &Lib{}, h: 1}
	for call, err := range deviceCalls(d) {
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s on a Lib without symbols: %v, want ErrNotSupported", call, err)
		}
	}
	for call, err := range deviceCalls(Device{}) {
		if !errors.Is(err, ErrUninitialized) {
			t.Errorf("%s on the zero Device: %v, want ErrUninitialized", call, err)
		}
	}
}

// deviceCalls runs every Device method and returns their errors by name.
func deviceCalls(d Device) map[string]error {
	errs := map[string]error{}
	_, errs["Name"] = d.Name()
	_, errs["UUID"] = d.UUID()
	_, errs["PCIBusID"] = d.PCIBusID()
	_, errs["PowerUsage"] = d.PowerUsage()
	_, errs["FieldValues"] = d.FieldValues([]FieldRequest{{FieldPowerInstant, ScopeGPU}})
	_, errs["TotalEnergy"] = d.TotalEnergy()
	_, errs["Samples"] = d.Samples(TotalPowerSamples, 0)
	_, errs["Clock"] = d.Clock(ClockSM)
	_, errs["Temperature"] = d.Temperature()
	_, errs["EnforcedPowerLimit"] = d.EnforcedPowerLimit()
	_, errs["DefaultPowerLimit"] = d.DefaultPowerLimit()
	_, errs["PerformanceState"] = d.PerformanceState()
	_, errs["ClockEventReasons"] = d.ClockEventReasons()
	_, _, errs["Utilization"] = d.Utilization()
	return errs
}

func TestDecode(t *testing.T) {
	tests := []struct {
		typ  ValueType
		raw  uint64
		want float64
	}{
		{ValueDouble, math.Float64bits(39000.5), 39000.5},
		{ValueUnsignedInt, 0xdeadbeef_0003d090, 250000}, // upper half is not the member's
		{ValueUnsignedLong, 1 << 40, 1 << 40},
		{ValueUnsignedLongLong, 400000, 400000},
		{ValueSignedLongLong, uint64(1<<64 - 5), -5},
		{ValueSignedInt, 0x12345678_fffffffb, -5},
		{ValueUnsignedShort, 0xffff_0007, 7},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			got, ok := decode(tt.typ, tt.raw)
			if !ok || got != tt.want {
				t.Errorf("decode = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
	if v, ok := decode(ValueType(7), 1); ok || !math.IsNaN(v) {
		t.Errorf("decode of an unknown type = %v, %v", v, ok)
	}
}

func TestClockReasons(t *testing.T) {
	tests := []struct {
		m    ClockReasons
		want string
	}{
		{0, "none"},
		{ReasonGPUIdle, "gpu_idle"},
		{ReasonSWPowerCap | ReasonGPUIdle, "gpu_idle|sw_power_cap"},
		{0x1ff, "gpu_idle|applications_clocks_setting|sw_power_cap|hw_slowdown|sync_boost|" +
			"sw_thermal_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown|display_clock_setting"},
		{ReasonHWPowerBrakeSlowdown | 0x400, "hw_power_brake_slowdown|0x400"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("%#x.String() = %q, want %q", uint64(tt.m), got, tt.want)
		}
	}
	if n := ClockReasons(0).Names(); len(n) != 0 {
		t.Errorf("Names of 0 = %v", n)
	}
}

func TestCString(t *testing.T) {
	if got := cString([]byte("abc\x00def")); got != "abc" {
		t.Errorf("cString = %q", got)
	}
	if got := cString([]byte("abc")); got != "abc" {
		t.Errorf("cString without NUL = %q", got)
	}
}
