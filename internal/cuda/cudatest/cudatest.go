// Package cudatest builds a fake libcuda (testdata/fakecuda.c) for tests of the cuda
// binding and of the packages above it, and reads the fake's bookkeeping: outstanding
// allocations, modules, streams, events and primary-context references, and the last
// kernel launch with the bytes of each parameter.
//
// The fake needs gcc; without it Build skips the test. Its devices and values are
// described at the top of the C file and mirrored by the constants below.
package cudatest

import (
	_ "embed"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/fakelib"
)

//go:embed testdata/fakecuda.c
var source []byte

// Known values of the fake library.
const (
	DriverVersion = 13000
	DeviceCount   = 2

	Dev0Name          = "Fake H100 80GB HBM3"
	Dev0UUID          = "GPU-5a3c1e2f-1122-3344-5566-778899aabbcc"
	Dev0BusID         = "0000:19:00.0"
	Dev0TotalMem      = 85520809984
	Dev0SMs           = 132
	Dev0ClockKHz      = 1980000
	Dev0MemClockKHz   = 2619000
	Dev0BusWidth      = 5120
	Dev0L2            = 52428800
	Dev0ThreadsPerSM  = 2048
	Dev0SharedPerSM   = 233472
	Dev0SharedOptin   = 232448
	Dev0CCMajor       = 9
	Dev0CCMinor       = 0
	Dev1Name          = "Fake Tesla V100-SXM2-16GB"
	Dev1BusID         = "0000:3B:00.0"
	Dev1SMs           = 80
	Dev1CCMajor       = 7
	FuncNumRegs       = 32   // every kernel's NUM_REGS
	FuncMaxThreads    = 1024 // every kernel's MAX_THREADS_PER_BLOCK
	DefaultDynShared  = 49152
	DefaultElapsedMS  = 1.5
	SyntaxErrorMarker = "SYNTAX_ERROR" // PTX holding this fails with CUDA_ERROR_INVALID_PTX
)

// Defines for Build.
const (
	// OldDriver: no cuGetErrorName/String, cuDeviceGetUuid_v2, cuEventElapsedTime_v2,
	// cuFuncSetAttribute or cuMemGetInfo_v2.
	OldDriver = "FAKE_OLD_DRIVER"
	// NoDevice: cuInit fails with CUDA_ERROR_NO_DEVICE.
	NoDevice = "FAKE_NO_DEVICE"
	// Stub: cuInit fails with CUDA_ERROR_STUB_LIBRARY.
	Stub = "FAKE_STUB"
	// NotCUDA: the library has no cuInit.
	NotCUDA = "FAKE_NOT_CUDA"
)

// Build compiles the fake into a fresh temporary directory and returns the path of the
// library (named libcuda.so.1). Each call gives a new library with its own state.
// defines are passed to gcc as -D flags. It skips t, saying why, when gcc is not on PATH
// (and fails it when GPUWATT_REQUIRE_CC is set, as .ci/run does).
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	return lib.Build(t, defines...)
}

var lib = fakelib.Lib{What: "libcuda", File: "libcuda.so.1", Source: source, CFlags: []string{"-pthread", "-O1"}}

// Launch is the fake's record of a kernel launch.
type Launch struct {
	Name    [64]byte
	Grid    [3]uint32
	Block   [3]uint32
	Shared  uint32
	NParams uint32
	Stream  uint64
	PSize   [32]uint32 // bytes of each parameter, from the PTX signature
	Param   [32]uint64 // each parameter's bytes, zero-extended
}

// Kernel returns the launched kernel's name.
func (l *Launch) Kernel() string {
	for i, c := range l.Name {
		if c == 0 {
			return string(l.Name[:i])
		}
	}
	return string(l.Name[:])
}

// Fake reads and drives a fake library built by Build.
type Fake struct {
	count      func(int32) int32
	setElapsed func(float32)
	setHang    func(int32)
	setPerLnch func(float32)
	lastLaunch func(*Launch) int32
	lastJIT    func(*int32, *int32, *int32)
	lastFlags  func(int32) uint32
}

// Control opens the fake at path (the same library cuda.Open(path) loads) and returns its
// controls.
func Control(t testing.TB, path string) *Fake {
	t.Helper()
	f := &Fake{}
	lib.Bind(t, path, map[string]any{
		"fakeCount":          &f.count,
		"fakeSetElapsedMS":   &f.setElapsed,
		"fakeSetHang":        &f.setHang,
		"fakeSetPerLaunchMS": &f.setPerLnch,
		"fakeLastLaunch":     &f.lastLaunch,
		"fakeLastJIT":        &f.lastJIT,
		"fakeLastFlags":      &f.lastFlags,
	})
	return f
}

// Counts are the fake's outstanding objects and totals.
type Counts struct {
	Allocs, HostAllocs, Modules, Streams, Events int // outstanding
	CtxRefs                                      int // primary-context references held
	Launches, InitCalls                          int // totals
	WrongThread                                  int // calls refused: no current context on the calling thread
}

// Counts returns the fake's bookkeeping.
func (f *Fake) Counts() Counts {
	c := func(i int32) int { return int(f.count(i)) }
	return Counts{
		Allocs: c(0), HostAllocs: c(1), Modules: c(2), Streams: c(3), Events: c(4),
		CtxRefs: c(5), Launches: c(6), InitCalls: c(7), WrongThread: c(8),
	}
}

// Outstanding returns the sum of the outstanding objects and context references (zero
// after every Context is closed).
func (c Counts) Outstanding() int {
	return c.Allocs + c.HostAllocs + c.Modules + c.Streams + c.Events + c.CtxRefs
}

// SetElapsedMS sets what cuEventElapsedTime returns.
func (f *Fake) SetElapsedMS(ms float32) { f.setElapsed(ms) }

// SetPerLaunchMS(ms > 0) makes the elapsed time between two events ms per launch made
// between their records (a run of n launches takes n × ms), instead of SetElapsedMS's fixed
// figure; 0 goes back to that.
func (f *Fake) SetPerLaunchMS(ms float32) { f.setPerLnch(ms) }

// SetHang(true) makes the next launch hang (never finish): events recorded after it are
// never ready, and the calls that wait for the device (cuEventSynchronize on such an event,
// cuStreamSynchronize, cuCtxSynchronize, cuMemFree, cuModuleUnload, the primary context's
// release) block until SetHang(false), which ends the hang. Call SetHang(false) in the
// test's cleanup, so that nothing is left blocked.
func (f *Fake) SetHang(on bool) {
	v := int32(0)
	if on {
		v = 1
	}
	f.setHang(v)
}

// LastLaunch returns the last successful launch; ok is false before the first.
func (f *Fake) LastLaunch() (l Launch, ok bool) {
	p := new(Launch) // on the heap: the fake writes into it during the call
	ok = f.lastLaunch(p) != 0
	return *p, ok
}

// LastJIT returns the options of the last cuModuleLoadDataEx: the optimisation level (-1
// when not given), the number of options and CU_JIT_LOG_VERBOSE.
func (f *Fake) LastJIT() (optLevel, nOpts int, verbose bool) {
	var o, n, v int32
	f.lastJIT(&o, &n, &v)
	return int(o), int(n), v != 0
}

// LastStreamFlags, LastEventFlags and LastHostAllocFlags return the flags of the last
// cuStreamCreate, cuEventCreate and cuMemHostAlloc.
func (f *Fake) LastStreamFlags() uint32    { return f.lastFlags(0) }
func (f *Fake) LastEventFlags() uint32     { return f.lastFlags(1) }
func (f *Fake) LastHostAllocFlags() uint32 { return f.lastFlags(2) }
