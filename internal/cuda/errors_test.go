package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func TestOpenMissingLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := cuda.Open(missing, filepath.Join(t.TempDir(), "libcuda.so"))
	if !errors.Is(err, cuda.ErrLibraryNotFound) {
		t.Fatalf("Open(missing) = %v, want ErrLibraryNotFound", err)
	}
	msg := err.Error()
	if want := "no NVIDIA driver found: cannot load " + missing + ": "; !strings.HasPrefix(msg, want) {
		t.Errorf("message %q does not start with %q", msg, want)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message spans lines: %q", msg)
	}
	if strings.Count(msg, missing) != 1 {
		t.Errorf("message repeats the path: %q", msg)
	}
}

func TestOpenDefaultWithoutDriver(t *testing.T) {
	l, err := cuda.Open()
	if err == nil {
		t.Skipf("a libcuda is installed here (%s)", l.Path())
	}
	if !errors.Is(err, cuda.ErrLibraryNotFound) {
		t.Fatalf("Open() = %v, want ErrLibraryNotFound", err)
	}
	if !strings.HasPrefix(err.Error(), "no NVIDIA driver found: cannot load libcuda.so.1: ") {
		t.Errorf("message = %q", err)
	}
}

func TestOpenNotALibrary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libcuda.so.1")
	if err := os.WriteFile(p, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cuda.Open(p)
	if !errors.Is(err, cuda.ErrLibraryNotFound) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Open(text file) = %q, want a one-line ErrLibraryNotFound", err)
	}
}

func TestResultNames(t *testing.T) {
	for _, tt := range []struct {
		r    cuda.Result
		code uint32
		name string
	}{
		{cuda.Success, 0, "CUDA_SUCCESS"},
		{cuda.ErrorInvalidValue, 1, "CUDA_ERROR_INVALID_VALUE"},
		{cuda.ErrorOutOfMemory, 2, "CUDA_ERROR_OUT_OF_MEMORY"},
		{cuda.ErrorNotInitialized, 3, "CUDA_ERROR_NOT_INITIALIZED"},
		{cuda.ErrorDeinitialized, 4, "CUDA_ERROR_DEINITIALIZED"},
		{cuda.ErrorStubLibrary, 34, "CUDA_ERROR_STUB_LIBRARY"},
		{cuda.ErrorDeviceUnavailable, 46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
		{cuda.ErrorNoDevice, 100, "CUDA_ERROR_NO_DEVICE"},
		{cuda.ErrorInvalidDevice, 101, "CUDA_ERROR_INVALID_DEVICE"},
		{cuda.ErrorInvalidImage, 200, "CUDA_ERROR_INVALID_IMAGE"},
		{cuda.ErrorInvalidContext, 201, "CUDA_ERROR_INVALID_CONTEXT"},
		{cuda.ErrorNoBinaryForGPU, 209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
		{cuda.ErrorInvalidPTX, 218, "CUDA_ERROR_INVALID_PTX"},
		{cuda.ErrorJITCompilerNotFound, 221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
		{cuda.ErrorUnsupportedPTXVersion, 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
		{cuda.ErrorContained, 226, "CUDA_ERROR_CONTAINED"},
		{cuda.ErrorInvalidSource, 300, "CUDA_ERROR_INVALID_SOURCE"},
		{cuda.ErrorInvalidHandle, 400, "CUDA_ERROR_INVALID_HANDLE"},
		{cuda.ErrorLossyQuery, 402, "CUDA_ERROR_LOSSY_QUERY"},
		{cuda.ErrorNotFound, 500, "CUDA_ERROR_NOT_FOUND"},
		{cuda.ErrorNotReady, 600, "CUDA_ERROR_NOT_READY"},
		{cuda.ErrorIllegalAddress, 700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{cuda.ErrorLaunchOutOfResources, 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
		{cuda.ErrorLaunchTimeout, 702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
		{cuda.ErrorLaunchFailed, 719, "CUDA_ERROR_LAUNCH_FAILED"},
		{cuda.ErrorTensorMemoryLeak, 721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
		{cuda.ErrorNotPermitted, 800, "CUDA_ERROR_NOT_PERMITTED"},
		{cuda.ErrorNotSupported, 801, "CUDA_ERROR_NOT_SUPPORTED"},
		{cuda.ErrorStreamCaptureUnsupported, 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
		{cuda.ErrorTimeout, 909, "CUDA_ERROR_TIMEOUT"},
		{cuda.ErrorKeyRotation, 916, "CUDA_ERROR_KEY_ROTATION"},
		{cuda.ErrorGraphRecaptureFailure, 918, "CUDA_ERROR_GRAPH_RECAPTURE_FAILURE"},
		{cuda.ErrorUnknown, 999, "CUDA_ERROR_UNKNOWN"},
		{cuda.Result(12345), 12345, "CUDA_ERROR(12345)"},
		{cuda.Result(3000), 3000, "CUDA_ERROR(3000)"},
	} {
		if uint32(tt.r) != tt.code {
			t.Errorf("%s = %d, want %d", tt.name, uint32(tt.r), tt.code)
		}
		if got := tt.r.String(); got != tt.name {
			t.Errorf("Result(%d).String() = %q, want %q", tt.code, got, tt.name)
		}
	}
	// Every name in the table is unique and well formed.
	seen := map[string]bool{}
	for r := cuda.Result(0); r < 1000; r++ {
		s := r.String()
		if strings.HasPrefix(s, "CUDA_ERROR(") {
			continue
		}
		if seen[s] {
			t.Errorf("name %s used twice", s)
		}
		seen[s] = true
		if !strings.HasPrefix(s, "CUDA_") || strings.ToUpper(s) != s {
			t.Errorf("Result(%d) = %q", r, s)
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d names known", len(seen))
	}
}

func TestSentinels(t *testing.T) {
	for _, tt := range []struct {
		r    cuda.Result
		want error
	}{
		{cuda.ErrorNotSupported, cuda.ErrNotSupported},
		{cuda.ErrorNoDevice, cuda.ErrNoDevice},
		{cuda.ErrorInvalidDevice, cuda.ErrInvalidDevice},
		{cuda.ErrorInvalidPTX, cuda.ErrInvalidPTX},
		{cuda.ErrorUnsupportedPTXVersion, cuda.ErrInvalidPTX},
		{cuda.ErrorOutOfMemory, cuda.ErrOutOfMemory},
		{cuda.ErrorNotFound, cuda.ErrNotFound},
		{cuda.ErrorInvalidValue, cuda.ErrInvalidValue},
		{cuda.ErrorInvalidHandle, cuda.ErrInvalidHandle},
		{cuda.ErrorInvalidContext, cuda.ErrInvalidContext},
		{cuda.ErrorNotInitialized, cuda.ErrNotInitialized},
		{cuda.ErrorDeinitialized, cuda.ErrNotInitialized},
		{cuda.ErrorNotReady, cuda.ErrNotReady},
		{cuda.ErrorStubLibrary, cuda.ErrLibraryNotFound},
		{cuda.ErrorDeviceUnavailable, cuda.ErrDeviceUnavailable},
		{cuda.ErrorLaunchOutOfResources, cuda.ErrLaunchOutOfResources},
		{cuda.ErrorIllegalAddress, cuda.ErrLaunchFailed},
		{cuda.ErrorLaunchFailed, cuda.ErrLaunchFailed},
		{cuda.ErrorLaunchTimeout, cuda.ErrLaunchFailed},
		{cuda.ErrorMisalignedAddress, cuda.ErrLaunchFailed},
	} {
		err := fmt.Errorf("wrapped: %w", &cuda.Error{Code: tt.r, Func: "cuX"})
		if !errors.Is(err, tt.want) {
			t.Errorf("%v does not match %v", tt.r, tt.want)
		}
		if tt.want != cuda.ErrNotSupported && errors.Is(err, cuda.ErrNotSupported) {
			t.Errorf("%v matches ErrNotSupported", tt.r)
		}
	}
	if errors.Is(&cuda.Error{Code: cuda.ErrorUnknown}, cuda.ErrLaunchFailed) {
		t.Error("CUDA_ERROR_UNKNOWN matches ErrLaunchFailed")
	}
}

func TestErrorMessage(t *testing.T) {
	// No library in this test binary has registered cuGetErrorString unless a fake test
	// ran first; accept both forms.
	e := &cuda.Error{Code: cuda.ErrorInvalidPTX, Func: "cuModuleLoadDataEx",
		Log: "ptxas application ptx input, line 7; error   : syntax error\n\nptxas fatal   : aborted\n"}
	msg := e.Error()
	if !strings.HasPrefix(msg, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX") {
		t.Errorf("message = %q", msg)
	}
	if !strings.HasSuffix(msg, ": ptxas application ptx input, line 7; error   : syntax error; ptxas fatal   : aborted") {
		t.Errorf("message does not end with the log on one line: %q", msg)
	}
	if got := (&cuda.Error{Code: 4242}).Error(); !strings.HasPrefix(got, "CUDA_ERROR(4242)") {
		t.Errorf("unnamed code: %q", got)
	}
}

func TestSymbolError(t *testing.T) {
	var err error = &cuda.SymbolError{Symbol: "cuDeviceGetUuid_v2"}
	if !errors.Is(err, cuda.ErrNotSupported) {
		t.Error("SymbolError does not match ErrNotSupported")
	}
	if !strings.Contains(err.Error(), "cuDeviceGetUuid_v2") {
		t.Errorf("message %q does not name the symbol", err)
	}
}

func TestNilAndZeroValuesDoNotPanic(t *testing.T) {
	var l *cuda.Lib
	if err := l.Init(); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("nil Lib Init = %v", err)
	}
	if _, err := l.DriverVersion(); err == nil {
		t.Error("nil Lib DriverVersion succeeded")
	}
	if _, err := l.DeviceCount(); err == nil {
		t.Error("nil Lib DeviceCount succeeded")
	}
	if _, err := l.Device(0); err == nil {
		t.Error("nil Lib Device succeeded")
	}
	if l.Path() != "" || l.ErrorName(cuda.ErrorInvalidPTX) != "CUDA_ERROR_INVALID_PTX" || l.ErrorString(1) != "" {
		t.Error("nil Lib accessors")
	}
	var d cuda.Device
	if d.Valid() {
		t.Error("zero Device is valid")
	}
	for name, f := range map[string]func() error{
		"Name":     func() error { _, err := d.Name(); return err },
		"UUID":     func() error { _, err := d.UUID(); return err },
		"PCIBusID": func() error { _, err := d.PCIBusID(); return err },
		"TotalMem": func() error { _, err := d.TotalMemory(); return err },
		"Attr":     func() error { _, err := d.Attribute(cuda.AttrMultiprocessorCount); return err },
		"Props":    func() error { _, err := d.Properties(); return err },
		"Context":  func() error { _, err := cuda.NewContext(d); return err },
	} {
		if err := f(); !errors.Is(err, cuda.ErrInvalidDevice) {
			t.Errorf("zero Device %s = %v, want ErrInvalidDevice", name, err)
		}
	}
	var c *cuda.Context
	if err := c.Do(func() error { return nil }); !errors.Is(err, cuda.ErrContextClosed) {
		t.Errorf("nil Context Do = %v", err)
	}
	if _, err := c.Alloc(1); !errors.Is(err, cuda.ErrContextClosed) {
		t.Errorf("nil Context Alloc = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("nil Context Close = %v", err)
	}
	var s *cuda.Stream
	var e *cuda.Event
	var m *cuda.Module
	var f *cuda.Function
	var hb *cuda.HostBuffer
	for name, err := range map[string]error{
		"Stream.Synchronize": s.Synchronize(),
		"Stream.Destroy":     s.Destroy(),
		"Event.Record":       e.Record(nil),
		"Event.Synchronize":  e.Synchronize(),
		"Event.Destroy":      e.Destroy(),
		"Module.Unload":      m.Unload(),
		"Function.Launch":    f.Launch(cuda.LaunchConfig{}),
		"Function.SetAttr":   f.SetAttribute(cuda.FuncMaxDynamicSharedSizeBytes, 0),
		"ElapsedTime": func() error {
			_, err := cuda.ElapsedTime(e, e)
			return err
		}(),
		"Module.Function": func() error {
			_, err := m.Function("k")
			return err
		}(),
		"Function.Attribute": func() error {
			_, err := f.Attribute(cuda.FuncNumRegs)
			return err
		}(),
	} {
		if !errors.Is(err, cuda.ErrInvalidHandle) {
			t.Errorf("nil %s = %v, want ErrInvalidHandle", name, err)
		}
	}
	if hb.Bytes() != nil || hb.Len() != 0 || !errors.Is(hb.Free(), cuda.ErrInvalidValue) {
		t.Error("nil HostBuffer")
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		a    cuda.Arg
		kind cuda.ArgKind
		size int
		bits uint64
		str  string
	}{
		{cuda.Ptr(0x7f0000001000), cuda.KindPtr, 8, 0x7f0000001000, "ptr(0x7f0000001000)"},
		{cuda.U32(0xdeadbeef), cuda.KindU32, 4, 0xdeadbeef, "u32(3735928559)"},
		{cuda.I32(-2), cuda.KindU32, 4, 0xfffffffe, "u32(4294967294)"},
		{cuda.U64(1 << 40), cuda.KindU64, 8, 1 << 40, "u64(1099511627776)"},
		{cuda.I64(-1), cuda.KindU64, 8, math.MaxUint64, "u64(18446744073709551615)"},
		{cuda.F32(1.5), cuda.KindF32, 4, uint64(math.Float32bits(1.5)), "f32(1.5)"},
		{cuda.F64(-0.25), cuda.KindF64, 8, math.Float64bits(-0.25), "f64(-0.25)"},
		{cuda.Arg{}, 0, 0, 0, "invalid"},
	} {
		if tt.a.Kind != tt.kind || tt.a.Kind.Size() != tt.size || tt.a.Bits != tt.bits || tt.a.String() != tt.str {
			t.Errorf("%v: kind %v size %d bits %#x", tt.a, tt.a.Kind, tt.a.Kind.Size(), tt.a.Bits)
		}
	}
	if cuda.KindF64.String() != "f64" || cuda.ArgKind(9).String() != "kind(9)" {
		t.Error("ArgKind.String")
	}
}

func TestDim3(t *testing.T) {
	if d := cuda.D1(256); d != (cuda.Dim3{256, 1, 1}) || d.Count() != 256 {
		t.Errorf("D1 = %v", d)
	}
	if d := (cuda.Dim3{X: 4}); d.Count() != 4 || d.String() != "(4,1,1)" {
		t.Errorf("Dim3{X:4} = %v count %d", d, d.Count())
	}
	if d := cuda.D2(3, 5); d.Count() != 15 {
		t.Errorf("D2 = %v", d)
	}
	if d := cuda.D1(-1); d.X != 0 {
		t.Errorf("D1(-1) = %v", d)
	}
}

func TestAsBytes(t *testing.T) {
	f := []float32{1, 2}
	b := cuda.AsBytes(f)
	if len(b) != 8 || b[3] != 0x3f || b[7] != 0x40 {
		t.Errorf("AsBytes(%v) = %x", f, b)
	}
	if cuda.AsBytes([]uint64(nil)) != nil {
		t.Error("AsBytes(nil)")
	}
}

func TestFormatting(t *testing.T) {
	u := [16]byte{0x5a, 0x3c, 0x1e, 0x2f, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc}
	if got, want := cuda.FormatUUID(u), "GPU-5a3c1e2f-1122-3344-5566-778899aabbcc"; got != want {
		t.Errorf("FormatUUID = %q, want %q", got, want)
	}
	for v, want := range map[int]string{13000: "13.0", 12060: "12.6", 11080: "11.8"} {
		if got := cuda.FormatVersion(v); got != want {
			t.Errorf("FormatVersion(%d) = %q, want %q", v, got, want)
		}
	}
	if cuda.AttrMultiprocessorCount.String() != "MULTIPROCESSOR_COUNT" || cuda.Attribute(999).String() != "ATTRIBUTE(999)" {
		t.Error("Attribute.String")
	}
}

func TestAttributeValues(t *testing.T) {
	// The enum values of cuda.h's CUdevice_attribute and CUfunction_attribute.
	for _, tt := range []struct {
		a    cuda.Attribute
		want int32
	}{
		{cuda.AttrMaxThreadsPerBlock, 1},
		{cuda.AttrClockRate, 13},
		{cuda.AttrMultiprocessorCount, 16},
		{cuda.AttrMemoryClockRate, 36},
		{cuda.AttrGlobalMemoryBusWidth, 37},
		{cuda.AttrL2CacheSize, 38},
		{cuda.AttrMaxThreadsPerMultiprocessor, 39},
		{cuda.AttrComputeCapabilityMajor, 75},
		{cuda.AttrComputeCapabilityMinor, 76},
		{cuda.AttrMaxSharedMemoryPerMultiprocessor, 81},
		{cuda.AttrMaxSharedMemoryPerBlockOptin, 97},
	} {
		if int32(tt.a) != tt.want {
			t.Errorf("%v = %d, want %d", tt.a, int32(tt.a), tt.want)
		}
	}
	if cuda.FuncMaxThreadsPerBlock != 0 || cuda.FuncNumRegs != 4 || cuda.FuncMaxDynamicSharedSizeBytes != 8 {
		t.Error("function attribute values")
	}
}

func TestPeaks(t *testing.T) {
	p := cuda.Properties{ComputeMajor: 9, SMs: 132, SMClock: 1980 * units.Megahertz,
		MemoryClock: 2619 * units.Megahertz, MemoryBusWidthBits: 5120}
	if got := p.PeakFP32FLOPS(); math.Abs(got-66.90816e12) > 1e6 {
		t.Errorf("PeakFP32FLOPS = %g, want 66.91e12", got)
	}
	if got := p.PeakMemoryBandwidth(); math.Abs(got-3.35232e12) > 1e6 {
		t.Errorf("PeakMemoryBandwidth = %g", got)
	}
	if p.ComputeCapability() != "9.0" {
		t.Error(p.ComputeCapability())
	}
	for _, tt := range []struct{ major, minor, lanes int }{{7, 0, 64}, {8, 0, 64}, {8, 6, 128}, {6, 0, 64}, {6, 1, 128}, {3, 5, 0}} {
		if got := (cuda.Properties{ComputeMajor: tt.major, ComputeMinor: tt.minor}).FP32LanesPerSM(); got != tt.lanes {
			t.Errorf("lanes(%d.%d) = %d, want %d", tt.major, tt.minor, got, tt.lanes)
		}
	}
}
