package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// testPTX has the kernels the fake knows: fill_u32 writes value into buf[0..n); kinds takes
// one parameter of every kind.
const testPTX = `//
.version 8.0
.target sm_90
.address_size 64

.visible .entry fill_u32(
	.param .u64 buf,
	.param .u32 value,
	.param .u32 n
)
{
	ret;
}

.visible .entry kinds(
	.param .u64 p,
	.param .u32 a,
	.param .s32 b,
	.param .u64 c,
	.param .s64 d,
	.param .f32 e,
	.param .f64 f
)
{
	ret;
}

.visible .entry noargs()
{
	ret;
}
`

// openFake builds the fake (with defines) and opens it.
func openFake(t *testing.T, defines ...string) (*cuda.Lib, *cudatest.Fake) {
	t.Helper()
	path := cudatest.Build(t, defines...)
	l, err := cuda.Open("/nonexistent/libcuda.so.1", path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	fake := cudatest.Control(t, path)
	// Registered before any context's Close, so it runs after all of them.
	t.Cleanup(func() {
		if n := fake.Counts(); n.Outstanding() != 0 || n.WrongThread != 0 {
			t.Errorf("after every Close: %+v", n)
		}
	})
	return l, fake
}

// newContext opens device i of l; the context is closed when the test ends (and openFake's
// clean-up then checks the fake for leaks and wrong-thread calls).
func newContext(t *testing.T, l *cuda.Lib, fake *cudatest.Fake, i int) *cuda.Context {
	t.Helper()
	d, err := l.Device(i)
	if err != nil {
		t.Fatalf("Device(%d): %v", i, err)
	}
	c, err := cuda.NewContext(d)
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func TestFakeDevices(t *testing.T) {
	l, fake := openFake(t)
	if v, err := l.DriverVersion(); err != nil || v != cudatest.DriverVersion {
		t.Errorf("DriverVersion = %d, %v", v, err)
	}
	if fake.Counts().InitCalls != 0 {
		t.Error("cuInit ran before first use")
	}
	n, err := l.DeviceCount()
	if err != nil || n != cudatest.DeviceCount {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	if _, err := l.DeviceCount(); err != nil || fake.Counts().InitCalls != 1 {
		t.Errorf("cuInit ran %d times", fake.Counts().InitCalls)
	}
	for _, i := range []int{2, -1} {
		if _, err := l.Device(i); !errors.Is(err, cuda.ErrInvalidDevice) {
			t.Errorf("Device(%d) = %v, want ErrInvalidDevice", i, err)
		}
	}
	d, err := l.Device(0)
	if err != nil || !d.Valid() || d.Ordinal() != 0 || d.Lib() != l {
		t.Fatalf("Device(0) = %v, %v", d, err)
	}
	p, err := d.Properties()
	if err != nil {
		t.Fatal(err)
	}
	want := cuda.Properties{
		Ordinal: 0, Name: cudatest.Dev0Name, UUID: cudatest.Dev0UUID, PCIBusID: cudatest.Dev0BusID,
		ComputeMajor: cudatest.Dev0CCMajor, ComputeMinor: cudatest.Dev0CCMinor, SMs: cudatest.Dev0SMs,
		SMClock: cudatest.Dev0ClockKHz * units.Kilohertz, MemoryClock: cudatest.Dev0MemClockKHz * units.Kilohertz,
		MemoryBusWidthBits: cudatest.Dev0BusWidth, L2Bytes: cudatest.Dev0L2, MemoryBytes: cudatest.Dev0TotalMem,
		MaxThreadsPerBlock: 1024, MaxThreadsPerSM: cudatest.Dev0ThreadsPerSM, SharedPerSMBytes: cudatest.Dev0SharedPerSM,
		SharedPerBlockOptinBytes: cudatest.Dev0SharedOptin, WarpSize: 32,
	}
	if p != want {
		t.Errorf("Properties =\n%+v\nwant\n%+v", p, want)
	}
	if got := p.PeakFP32FLOPS() / 1e12; math.Abs(got-66.90816) > 1e-6 {
		t.Errorf("peak = %g TFLOP/s", got)
	}
	for _, tt := range []struct {
		a    cuda.Attribute
		want int
	}{
		{cuda.AttrMultiprocessorCount, 132}, {cuda.AttrClockRate, 1980000}, {cuda.AttrMemoryClockRate, 2619000},
		{cuda.AttrGlobalMemoryBusWidth, 5120}, {cuda.AttrL2CacheSize, 52428800},
		{cuda.AttrMaxThreadsPerMultiprocessor, 2048}, {cuda.AttrComputeCapabilityMajor, 9},
		{cuda.AttrComputeCapabilityMinor, 0}, {cuda.AttrMaxSharedMemoryPerMultiprocessor, 233472},
		{cuda.AttrMaxThreadsPerBlock, 1024}, {cuda.AttrMaxSharedMemoryPerBlockOptin, 232448},
	} {
		if got, err := d.Attribute(tt.a); err != nil || got != tt.want {
			t.Errorf("Attribute(%v) = %d, %v; want %d", tt.a, got, err, tt.want)
		}
	}
	if _, err := d.Attribute(cuda.Attribute(0)); !errors.Is(err, cuda.ErrInvalidValue) ||
		!strings.Contains(err.Error(), "ATTRIBUTE(0)") {
		t.Errorf("Attribute(0) = %v", err)
	}
	d1, _ := l.Device(1)
	if name, _ := d1.Name(); name != cudatest.Dev1Name {
		t.Errorf("device 1 = %q", name)
	}
	if maj, min, err := d1.ComputeCapability(); err != nil || maj != cudatest.Dev1CCMajor || min != 0 {
		t.Errorf("device 1 CC = %d.%d, %v", maj, min, err)
	}
	if bus, _ := d1.PCIBusID(); bus != cudatest.Dev1BusID {
		t.Errorf("device 1 bus = %q", bus)
	}
}

func TestFakeErrorNames(t *testing.T) {
	l, _ := openFake(t)
	if got := l.ErrorName(cuda.ErrorInvalidPTX); got != "CUDA_ERROR_INVALID_PTX" {
		t.Errorf("ErrorName = %q", got)
	}
	if got := l.ErrorName(cuda.ErrorLaunchTimeout); got != "CUDA_ERROR_LAUNCH_TIMEOUT" { // unknown to the fake
		t.Errorf("ErrorName fallback = %q", got)
	}
	if got := l.ErrorString(cuda.ErrorInvalidPTX); got != "a PTX JIT compilation failed" {
		t.Errorf("ErrorString = %q", got)
	}
	// The driver's description appears in messages.
	e := &cuda.Error{Code: cuda.ErrorOutOfMemory, Func: "cuMemAlloc_v2"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestFakeInitFailures(t *testing.T) {
	for _, tt := range []struct {
		define string
		want   error
		code   cuda.Result
	}{
		{cudatest.NoDevice, cuda.ErrNoDevice, cuda.ErrorNoDevice},
		{cudatest.Stub, cuda.ErrLibraryNotFound, cuda.ErrorStubLibrary},
	} {
		t.Run(tt.define, func(t *testing.T) {
			l, _ := openFake(t, tt.define)
			_, err := l.DeviceCount()
			var ce *cuda.Error
			if !errors.Is(err, tt.want) || !errors.As(err, &ce) || ce.Code != tt.code || ce.Func != "cuInit" {
				t.Errorf("DeviceCount = %v, want %v from cuInit", err, tt.want)
			}
			if _, err := l.Device(0); !errors.Is(err, tt.want) {
				t.Errorf("Device(0) = %v", err)
			}
			if v, err := l.DriverVersion(); err != nil || v != cudatest.DriverVersion {
				t.Errorf("DriverVersion without cuInit = %d, %v", v, err)
			}
		})
	}
	t.Run(cudatest.NotCUDA, func(t *testing.T) {
		path := cudatest.Build(t, cudatest.NotCUDA)
		_, err := cuda.Open(path)
		if !errors.Is(err, cuda.ErrLibraryNotFound) || !strings.Contains(err.Error(), "is not libcuda (it has no cuInit)") {
			t.Errorf("Open = %v", err)
		}
	})
}

func TestFakeOldDriver(t *testing.T) {
	l, fake := openFake(t, cudatest.OldDriver)
	d, err := l.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := d.UUID(); err != nil || u != cudatest.Dev0UUID { // falls back to cuDeviceGetUuid
		t.Errorf("UUID = %q, %v", u, err)
	}
	if got := l.ErrorName(cuda.ErrorInvalidPTX); got != "CUDA_ERROR_INVALID_PTX" {
		t.Errorf("ErrorName without cuGetErrorName = %q", got)
	}
	c := newContext(t, l, fake, 0)
	_, _, err = c.MemInfo()
	var se *cuda.SymbolError
	if !errors.Is(err, cuda.ErrNotSupported) || !errors.As(err, &se) || se.Symbol != "cuMemGetInfo_v2" {
		t.Errorf("MemInfo = %v, want a SymbolError for cuMemGetInfo_v2", err)
	}
	m, err := c.LoadPTX(testPTX)
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function("fill_u32")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetMaxDynamicSharedMemory(100 << 10); !errors.Is(err, cuda.ErrNotSupported) ||
		!strings.Contains(err.Error(), "cuFuncSetAttribute") {
		t.Errorf("SetMaxDynamicSharedMemory = %v", err)
	}
	// cuEventElapsedTime (v1) stands in for the missing _v2.
	a, _ := c.NewEvent(cuda.EventDefault)
	b, _ := c.NewEvent(cuda.EventDefault)
	if err := errors.Join(a.Record(nil), b.Record(nil)); err != nil {
		t.Fatal(err)
	}
	if ms, err := cuda.ElapsedTime(a, b); err != nil || ms != cudatest.DefaultElapsedMS {
		t.Errorf("ElapsedTime = %v, %v", ms, err)
	}
}

func TestFakeMemory(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	if c.Device().Ordinal() != 0 || c.Handle() == 0 {
		t.Error("Device/Handle")
	}
	free0, total, err := c.MemInfo()
	if err != nil || total != cudatest.Dev0TotalMem || free0 != total {
		t.Fatalf("MemInfo = %d, %d, %v", free0, total, err)
	}
	const n = 4096
	a, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	if free, _, _ := c.MemInfo(); free != total-2*n {
		t.Errorf("free after 2 allocs = %d", total-free)
	}
	if live := c.Live(); live.Buffers != 2 || live.DeviceBytes != 2*n {
		t.Errorf("Live = %+v", live)
	}
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	if err := c.CopyHtoD(a, src); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoD(b, a, n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := c.CopyDtoH(got, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Error("HtoD -> DtoD -> DtoH did not round-trip")
	}
	// memset D8 on a sub-range, D32 on another.
	if err := c.MemsetD8(b.Add(16), 0xab, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.MemsetD32(b.Add(64), 0x01020304, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoH(got, b); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), src...)
	copy(want[16:24], bytes.Repeat([]byte{0xab}, 8))
	copy(want[64:80], bytes.Repeat([]byte{4, 3, 2, 1}, 4))
	if !bytes.Equal(got, want) {
		t.Errorf("memset: got %x", got[:96])
	}
	// Typed copies through AsBytes.
	fs := []float64{1.5, -2, math.Pi}
	if err := c.CopyHtoD(a, cuda.AsBytes(fs)); err != nil {
		t.Fatal(err)
	}
	back := make([]float64, 3)
	if err := c.CopyDtoH(cuda.AsBytes(back), a); err != nil || back[2] != math.Pi {
		t.Errorf("float64 round trip = %v, %v", back, err)
	}
	// Zero-length copies are no-ops; out-of-range ones are the driver's errors.
	if err := errors.Join(c.CopyHtoD(a, nil), c.CopyDtoH(nil, a)); err != nil {
		t.Error(err)
	}
	if err := c.CopyHtoD(a.Add(n-2), src[:4]); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("copy past the end = %v", err)
	}
	for _, n := range []int64{0, -1} {
		if _, err := c.Alloc(n); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Alloc(%d) = %v", n, err)
		}
	}
	if _, err := c.Alloc(1 << 40); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("Alloc(1 TiB) = %v", err)
	}
	if err := c.Free(a); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(a); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("double Free = %v", err)
	}
	if err := c.Free(b); err != nil {
		t.Fatal(err)
	}
	if n := fake.Counts(); n.Allocs != 0 {
		t.Errorf("allocations left: %d", n.Allocs)
	}
}

func TestFakeHostBuffersAndAsync(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	s, err := c.NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	if fake.LastStreamFlags() != 1 || s.Flags() != cuda.StreamNonBlocking || s.Context() != c {
		t.Errorf("stream flags = %d", fake.LastStreamFlags())
	}
	hb, err := c.AllocHost(1024, cuda.HostAllocPortable)
	if err != nil {
		t.Fatal(err)
	}
	if fake.LastHostAllocFlags() != 1 || hb.Len() != 1024 {
		t.Errorf("host flags %d, len %d", fake.LastHostAllocFlags(), hb.Len())
	}
	h := hb.Bytes()
	for i := range h {
		h[i] = byte(255 - i%256)
	}
	d, err := c.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoDAsync(d, h[:512], s); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyHtoDAsync(d.Add(512), h[512:], nil); err != nil {
		t.Fatal(err)
	}
	e, err := c.AllocHost(1024, cuda.HostAllocDefault)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoDAsync(d, d, 0, s); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyDtoHAsync(e.Bytes(), d, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Bytes(), h) {
		t.Error("async copies did not round-trip")
	}
	// Go memory is refused by the asynchronous copies (the driver may read it later).
	goMem := make([]byte, 16)
	if err := c.CopyHtoDAsync(d, goMem, s); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("async copy from Go memory = %v", err)
	}
	if err := c.CopyDtoHAsync(goMem, d, s); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("async copy to Go memory = %v", err)
	}
	if err := c.CopyHtoDAsync(d, h[1000:], s); err != nil {
		t.Errorf("tail of the buffer: %v", err)
	}
	if err := hb.Free(); err != nil {
		t.Fatal(err)
	}
	if hb.Bytes() != nil {
		t.Error("Bytes after Free is not nil")
	}
	if err := hb.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("second Free = %v", err)
	}
	if err := c.CopyHtoDAsync(d, h[:8], s); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("async copy from a freed buffer = %v", err)
	}
	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Synchronize": s.Synchronize(),
		"Destroy":     s.Destroy(),
		"copy":        c.CopyDtoDAsync(d, d, 4, s),
	} {
		if !errors.Is(err, cuda.ErrInvalidHandle) {
			t.Errorf("%s on a destroyed stream = %v", name, err)
		}
	}
	if n := fake.Counts(); n.HostAllocs != 1 || n.Streams != 0 { // e is left for Close
		t.Errorf("counts = %+v", n)
	}
}

func TestFakeModuleAndLaunch(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	m, err := c.LoadPTX(testPTX)
	if err != nil {
		t.Fatal(err)
	}
	if m.Context() != c || m.InfoLog != "fake ptxas: 3 entries" {
		t.Errorf("InfoLog = %q", m.InfoLog)
	}
	if lvl, nopts, verbose := fake.LastJIT(); lvl != -1 || nopts != 4 || verbose {
		t.Errorf("JIT options: level %d, %d options, verbose %v", lvl, nopts, verbose)
	}
	fill, err := m.Function("fill_u32")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Function("fill_u32"); again != fill || fill.Name() != "fill_u32" || fill.Module() != m {
		t.Error("Function is not cached")
	}
	if _, err := m.Function("nope"); !errors.Is(err, cuda.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Function(nope) = %v", err)
	}
	if regs, err := fill.NumRegs(); err != nil || regs != cudatest.FuncNumRegs {
		t.Errorf("NumRegs = %d, %v", regs, err)
	}
	if mt, err := fill.MaxThreadsPerBlock(); err != nil || mt != cudatest.FuncMaxThreads {
		t.Errorf("MaxThreadsPerBlock = %d, %v", mt, err)
	}

	// fill_u32 writes its u32 argument into the buffer argument: the proof that the
	// argument array reaches the kernel intact.
	const n = 1000
	buf, err := c.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MemsetD8(buf, 0, 4*n); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream(cuda.StreamDefault)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cuda.LaunchConfig{Grid: cuda.D1(4), Block: cuda.Dim3{X: 256}, Stream: s}
	if err := fill.Launch(cfg, cuda.Ptr(buf), cuda.U32(0xC0FFEE), cuda.U32(n-1)); err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, n)
	if err := c.CopyDtoH(cuda.AsBytes(out), buf); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if want := uint32(0xC0FFEE); i == n-1 {
			want = 0
			if v != want {
				t.Errorf("out[%d] = %#x, want %#x", i, v, want)
			}
		} else if v != want {
			t.Fatalf("out[%d] = %#x, want %#x", i, v, want)
		}
	}
	rec, ok := fake.LastLaunch()
	if !ok || rec.Kernel() != "fill_u32" || rec.Grid != [3]uint32{4, 1, 1} || rec.Block != [3]uint32{256, 1, 1} ||
		rec.Shared != 0 || rec.Stream == 0 || rec.NParams != 3 {
		t.Errorf("launch record = %+v", rec)
	}
	// The buffer's bounds are checked by the fake kernel.
	if err := fill.Launch(cfg, cuda.Ptr(buf), cuda.U32(1), cuda.U32(n+1)); !errors.Is(err, cuda.ErrLaunchFailed) {
		t.Errorf("out-of-bounds fill = %v", err)
	}

	// Arguments of every kind reach the kernel with their exact bytes.
	kinds, err := m.Function("kinds")
	if err != nil {
		t.Fatal(err)
	}
	args := []cuda.Arg{cuda.Ptr(buf), cuda.U32(0xfedcba98), cuda.I32(-5), cuda.U64(1<<40 + 3), cuda.I64(-7),
		cuda.F32(3.25), cuda.F64(-1e300)}
	cfg2 := cuda.LaunchConfig{Grid: cuda.D2(3, 2), Block: cuda.Dim3{X: 8, Y: 4, Z: 2}, SharedBytes: 1024}
	if err := c.Launch(kinds, cfg2, args...); err != nil {
		t.Fatal(err)
	}
	rec, _ = fake.LastLaunch()
	if rec.Kernel() != "kinds" || rec.NParams != 7 || rec.Grid != [3]uint32{3, 2, 1} ||
		rec.Block != [3]uint32{8, 4, 2} || rec.Shared != 1024 || rec.Stream != 0 {
		t.Errorf("launch record = %+v", rec)
	}
	for i, a := range args {
		if int(rec.PSize[i]) != a.Kind.Size() {
			t.Errorf("param %d: size %d, kind %v", i, rec.PSize[i], a.Kind)
		}
		if rec.Param[i] != a.Bits {
			t.Errorf("param %d (%v): kernel got %#x", i, a, rec.Param[i])
		}
	}
	if math.Float32frombits(uint32(rec.Param[5])) != 3.25 || math.Float64frombits(rec.Param[6]) != -1e300 {
		t.Error("float parameters")
	}
	// A kernel without parameters.
	noargs, _ := m.Function("noargs")
	if err := noargs.Launch(cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}); err != nil {
		t.Errorf("noargs launch: %v", err)
	}

	// Dynamic shared memory beyond 48 KiB needs the function attribute.
	big := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(32), SharedBytes: 100 << 10}
	if err := fill.Launch(big, cuda.Ptr(buf), cuda.U32(1), cuda.U32(1)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("100 KiB shared without the attribute = %v", err)
	}
	if v, _ := fill.Attribute(cuda.FuncMaxDynamicSharedSizeBytes); v != cudatest.DefaultDynShared {
		t.Errorf("default max dynamic shared = %d", v)
	}
	if err := fill.SetMaxDynamicSharedMemory(100 << 10); err != nil {
		t.Fatal(err)
	}
	if v, _ := fill.Attribute(cuda.FuncMaxDynamicSharedSizeBytes); v != 100<<10 {
		t.Errorf("max dynamic shared = %d", v)
	}
	if err := fill.Launch(big, cuda.Ptr(buf), cuda.U32(1), cuda.U32(1)); err != nil {
		t.Errorf("100 KiB shared with the attribute: %v", err)
	}
	if err := fill.SetMaxDynamicSharedMemory(cudatest.Dev0SharedOptin + 1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("shared above the opt-in limit = %v", err)
	}

	// Launches the binding refuses before the driver.
	before := fake.Counts().Launches
	for name, tt := range map[string]struct {
		cfg  cuda.LaunchConfig
		args []cuda.Arg
	}{
		"empty grid":     {cuda.LaunchConfig{Block: cuda.D1(1)}, nil},
		"empty block":    {cuda.LaunchConfig{Grid: cuda.D1(1)}, nil},
		"zero Arg":       {cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}, []cuda.Arg{{}}},
		"too many args":  {cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}, make([]cuda.Arg, 65)},
		"negative share": {cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1), SharedBytes: -1}, nil},
	} {
		if err := c.Launch(noargs, tt.cfg, tt.args...); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := c.Launch(noargs, cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(2048)}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("block of 2048: %v", err)
	}
	if after := fake.Counts().Launches; after != before {
		t.Errorf("%d refused launches reached the driver", after-before)
	}

	// Unloading invalidates the functions.
	if err := m.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(cfg, cuda.Ptr(buf), cuda.U32(1), cuda.U32(1)); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("launch after Unload = %v", err)
	}
	if _, err := m.Function("fill_u32"); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("Function after Unload = %v", err)
	}
	if err := m.Unload(); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("second Unload = %v", err)
	}
}

func TestFakeJITErrorLog(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	bad := strings.Replace(testPTX, "\tret;\n}\n\n.visible .entry kinds", "\tSYNTAX_ERROR;\n}\n\n.visible .entry kinds", 1)
	line := strings.Count(bad[:strings.Index(bad, "SYNTAX_ERROR")], "\n") + 1
	_, err := c.LoadPTX(bad)
	if !errors.Is(err, cuda.ErrInvalidPTX) {
		t.Fatalf("LoadPTX(bad) = %v, want ErrInvalidPTX", err)
	}
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Code != cuda.ErrorInvalidPTX || ce.Func != "cuModuleLoadDataEx" {
		t.Fatalf("error = %#v", err)
	}
	wantLog := fmt.Sprintf("ptxas application ptx input, line %d; error   : syntax error at 'SYNTAX_ERROR'\n"+
		"ptxas fatal   : Ptx assembly aborted due to errors", line)
	if ce.Log != wantLog {
		t.Errorf("Log = %q\nwant %q", ce.Log, wantLog)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "syntax error at 'SYNTAX_ERROR'; ptxas fatal") ||
		!strings.Contains(msg, "(a PTX JIT compilation failed)") {
		t.Errorf("message = %q", msg)
	}
	if n := fake.Counts(); n.Modules != 0 {
		t.Errorf("a failed load left %d modules", n.Modules)
	}
	// An image without any entry is an invalid image; its log comes through too.
	if _, err := c.LoadPTX(".version 8.0\n"); err == nil || !strings.Contains(err.Error(), "no .entry") {
		t.Errorf("LoadPTX(no entry) = %v", err)
	}
	// Text holding a NUL byte is refused before the driver.
	if _, err := c.LoadPTX(testPTX[:10] + "\x00" + testPTX[10:]); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("LoadPTX(NUL) = %v", err)
	}
	// Options reach the JIT.
	m, err := c.LoadPTXOptions(testPTX, cuda.JITOptions{Optimization: cuda.OptLevel3, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if lvl, nopts, verbose := fake.LastJIT(); lvl != 3 || nopts != 6 || !verbose {
		t.Errorf("JIT options: level %d, %d options, verbose %v", lvl, nopts, verbose)
	}
	if !strings.Contains(m.InfoLog, "Used 32 registers") {
		t.Errorf("InfoLog = %q", m.InfoLog)
	}
	if _, err := c.LoadPTXOptions(testPTX, cuda.JITOptions{Optimization: 9}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("level 9 = %v", err)
	}
}

func TestFakeEvents(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	s, _ := c.NewStream(cuda.StreamDefault)
	start, err := c.NewEvent(cuda.EventDefault)
	if err != nil {
		t.Fatal(err)
	}
	end, err := c.NewEvent(cuda.EventBlockingSync)
	if err != nil {
		t.Fatal(err)
	}
	if fake.LastEventFlags() != 1 {
		t.Errorf("event flags = %d", fake.LastEventFlags())
	}
	if _, err := cuda.ElapsedTime(start, end); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("ElapsedTime before Record = %v", err)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	fake.SetElapsedMS(2.75)
	if ms, err := cuda.ElapsedTime(start, end); err != nil || ms != 2.75 {
		t.Errorf("ElapsedTime = %v, %v", ms, err)
	}
	if d, err := cuda.Elapsed(start, end); err != nil || d != 2750*time.Microsecond {
		t.Errorf("Elapsed = %v, %v", d, err)
	}
	nt, _ := c.NewEvent(cuda.EventDisableTiming)
	_ = nt.Record(nil)
	if _, err := cuda.ElapsedTime(start, nt); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("ElapsedTime with a non-timing event = %v", err)
	}
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := start.Destroy(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Record":      start.Record(nil),
		"Synchronize": start.Synchronize(),
		"Destroy":     start.Destroy(),
		"ElapsedTime": func() error { _, err := cuda.ElapsedTime(start, end); return err }(),
	} {
		if !errors.Is(err, cuda.ErrInvalidHandle) {
			t.Errorf("%s on a destroyed event = %v", name, err)
		}
	}
	// Objects of one context are refused by another.
	c2 := newContext(t, l, fake, 1)
	e2, _ := c2.NewEvent(cuda.EventDefault)
	_ = e2.Record(nil)
	if _, err := cuda.ElapsedTime(end, e2); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("events of two contexts = %v", err)
	}
	if err := e2.Record(s); !errors.Is(err, cuda.ErrInvalidHandle) {
		t.Errorf("record on another context's stream = %v", err)
	}
}

func TestFakeCloseReleasesEverything(t *testing.T) {
	l, fake := openFake(t)
	d, _ := l.Device(0)
	c, err := cuda.NewContext(d)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.LoadPTX(testPTX)
	f, _ := m.Function("fill_u32")
	buf, _ := c.Alloc(64)
	_, _ = c.Alloc(128)
	hb, _ := c.AllocHost(256, cuda.HostAllocDefault)
	s, _ := c.NewStream(cuda.StreamNonBlocking)
	e, _ := c.NewEvent(cuda.EventDefault)
	if err := f.Launch(cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1), Stream: s}, cuda.Ptr(buf), cuda.U32(1), cuda.U32(16)); err != nil {
		t.Fatal(err)
	}
	n := fake.Counts()
	// 2 buffers; the host buffer and the context's pinned argument arena; 1 of each other.
	if n.Allocs != 2 || n.HostAllocs != 2 || n.Modules != 1 || n.Streams != 1 || n.Events != 1 || n.CtxRefs != 1 {
		t.Fatalf("before Close: %+v", n)
	}
	if live := c.Live(); live != (cuda.Live{Buffers: 2, HostBuffers: 1, Modules: 1, Streams: 1, Events: 1, DeviceBytes: 192}) {
		t.Errorf("Live = %+v", live)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fake.Counts(); n.Outstanding() != 0 || n.WrongThread != 0 {
		t.Errorf("after Close: %+v", n)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if live := c.Live(); live != (cuda.Live{}) {
		t.Errorf("Live after Close = %+v", live)
	}
	if hb.Bytes() != nil {
		t.Error("host buffer readable after Close")
	}
	for name, err := range map[string]error{
		"Alloc":  func() error { _, err := c.Alloc(1); return err }(),
		"Launch": f.Launch(cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}),
		"Record": e.Record(s),
		"Do":     c.Do(func() error { return nil }),
		"Free":   c.Free(buf),
		"Sync":   c.Synchronize(),
	} {
		if !errors.Is(err, cuda.ErrContextClosed) {
			t.Errorf("%s after Close = %v", name, err)
		}
	}
}

func TestFakeDo(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	// Methods called inside Do run directly on the context thread.
	var p cuda.DevicePtr
	err := c.Do(func() error {
		var err error
		if p, err = c.Alloc(16); err != nil {
			return err
		}
		return c.Do(func() error { return c.MemsetD32(p, 7, 4) })
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 4)
	if err := c.CopyDtoH(cuda.AsBytes(got), p); err != nil || got[3] != 7 {
		t.Errorf("got %v, %v", got, err)
	}
	// Errors come back; Close inside Do is refused.
	sentinel := errors.New("mine")
	if err := c.Do(func() error { return sentinel }); err != sentinel {
		t.Errorf("Do = %v", err)
	}
	if err := c.Do(c.Close); err == nil || !strings.Contains(err.Error(), "inside Do") {
		t.Errorf("Close inside Do = %v", err)
	}
	// A panic on the context thread reaches the caller, and the context lives on.
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "boom") {
				t.Errorf("recovered %v", r)
			}
		}()
		_ = c.Do(func() error { panic("boom") })
	}()
	if err := c.Synchronize(); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

func TestFakeConcurrent(t *testing.T) {
	l, fake := openFake(t)
	ctxs := []*cuda.Context{newContext(t, l, fake, 0), newContext(t, l, fake, 1), newContext(t, l, fake, 0)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctxs[g%len(ctxs)]
			m, err := c.LoadPTX(testPTX)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = m.Unload() }()
			f, err := m.Function("fill_u32")
			if err != nil {
				errs <- err
				return
			}
			for i := range 50 {
				n := 1 + (g*7+i)%200
				buf, err := c.Alloc(int64(4 * n))
				if err != nil {
					errs <- err
					return
				}
				v := uint32(g<<16 | i)
				cfg := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(32)}
				if err := f.Launch(cfg, cuda.Ptr(buf), cuda.U32(v), cuda.U32(uint32(n))); err != nil {
					errs <- err
					return
				}
				out := make([]uint32, n)
				if err := c.CopyDtoH(cuda.AsBytes(out), buf); err != nil {
					errs <- err
					return
				}
				for j, x := range out {
					if x != v {
						errs <- fmt.Errorf("goroutine %d iteration %d: out[%d] = %#x, want %#x", g, i, j, x, v)
						return
					}
				}
				if err := c.Free(buf); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fake.Counts(); n.WrongThread != 0 || n.Allocs != 0 || n.Modules != 0 || n.CtxRefs != 3 {
		t.Errorf("counts = %+v", n)
	}
	// Close concurrently with calls in flight: every call either completes or reports
	// ErrContextClosed.
	c := ctxs[2]
	var wg2 sync.WaitGroup
	for range 8 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for range 100 {
				p, err := c.Alloc(8)
				if errors.Is(err, cuda.ErrContextClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if err := c.Free(p); err != nil && !errors.Is(err, cuda.ErrContextClosed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(time.Millisecond)
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	wg2.Wait()
}

func TestFakeArgumentStorageIsNotGoMemory(t *testing.T) {
	// The kernel parameter block handed to cuLaunchKernel is the context's pinned arena:
	// the second host allocation the fake sees (after none from the user) is the arena,
	// and it outlives launches but not the context.
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	if n := fake.Counts(); n.HostAllocs != 0 {
		t.Fatalf("host allocations before any launch: %d", n.HostAllocs)
	}
	m, _ := c.LoadPTX(testPTX)
	f, _ := m.Function("kinds")
	for i := range 3 {
		args := []cuda.Arg{cuda.Ptr(1), cuda.U32(uint32(i)), cuda.I32(0), cuda.U64(0), cuda.I64(0), cuda.F32(0), cuda.F64(float64(i))}
		if err := f.Launch(cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}, args...); err != nil {
			t.Fatal(err)
		}
		rec, _ := fake.LastLaunch()
		if rec.Param[1] != uint64(i) || rec.Param[6] != math.Float64bits(float64(i)) {
			t.Errorf("launch %d: params %v", i, rec.Param[:7])
		}
	}
	if n := fake.Counts(); n.HostAllocs != 1 || fake.LastHostAllocFlags() != 0 {
		t.Errorf("host allocations = %d (want the arena only)", n.HostAllocs)
	}
}

// TestFakeHangBoundedWait: a kernel that never finishes (the fake's SetHang) is waited for
// within a bound by Event.Wait and Stream.Wait, which then fail with ErrHung, naming the
// call, where Synchronize would wait for ever; once the kernel ends they succeed (issue 20).
func TestFakeHangBoundedWait(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	t.Cleanup(func() { fake.SetHang(false) }) // before the context's Close
	m, err := c.LoadPTX(testPTX)
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function("noargs")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.NewStream(cuda.StreamNonBlocking)
	ev, _ := c.NewEvent(cuda.EventDefault)
	cfg := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(32), Stream: s}
	// A kernel that ends: Wait returns at once.
	if err := c.Launch(f, cfg); err != nil {
		t.Fatal(err)
	}
	if err := ev.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(time.Second); err != nil {
		t.Fatalf("Wait on a finished kernel: %v", err)
	}
	fake.SetHang(true)
	if err := c.Launch(f, cfg); err != nil {
		t.Fatal(err)
	}
	if err := ev.Record(s); err != nil {
		t.Fatal(err)
	}
	for name, wait := range map[string]func() error{
		"Event.Wait":  func() error { return ev.Wait(50 * time.Millisecond) },
		"Stream.Wait": func() error { return s.Wait(50 * time.Millisecond) },
	} {
		t0 := time.Now()
		err := wait()
		if d := time.Since(t0); d < 50*time.Millisecond || d > 2*time.Second {
			t.Errorf("%s took %v with a bound of 50ms", name, d)
		}
		if !errors.Is(err, cuda.ErrHung) || !strings.Contains(err.Error(), "had not finished after 50ms") {
			t.Errorf("%s on a hung kernel = %v, want ErrHung", name, err)
		}
	}
	fake.SetHang(false)
	if err := ev.Wait(time.Second); err != nil {
		t.Errorf("Wait once the kernel ended: %v", err)
	}
	if err := s.Wait(time.Second); err != nil {
		t.Errorf("Stream.Wait once the kernel ended: %v", err)
	}
}
