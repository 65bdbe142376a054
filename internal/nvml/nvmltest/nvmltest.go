// Package nvmltest builds a fake libnvidia-ml (testdata/fakenvml.c) for tests of the nvml
// binding and of the packages above it, and drives its simulated time and sample buffer.
//
// The fake needs gcc; without it Build skips the test. Its devices and values are
// described at the top of the C file and mirrored by the constants below.
package nvmltest

import (
	_ "embed"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/fakelib"
)

//go:embed testdata/fakenvml.c
var source []byte

// Known values of the fake library.
const (
	DriverVersion = "999.88.77"
	NVMLVersion   = "13.999.88.77"
	DeviceCount   = 2
	// EpochUS is the fake's default "now": 2026-01-01T00:00:00Z in µs since 1970, the
	// epoch of gpuwatt's virtual clocks.
	EpochUS = 1767225600000000
	// RingSize is the capacity of the fake's sample buffer.
	RingSize = 120

	Dev0Name           = "Fake H100 80GB HBM3"
	Dev0UUID           = "GPU-00000000-1111-2222-3333-444444444444"
	Dev0BusID          = "00000000:19:00.0"
	Dev0PowerMW        = 123456
	Dev0LimitMW        = 700000
	Dev0DefaultLimitMW = 700000
	Dev0SMMHz          = 1980
	Dev0MemMHz         = 2619
	Dev0TempC          = 41
	Dev0UtilGPU        = 87
	Dev0UtilMem        = 42
	Dev0EnergyMJ       = 123456789012
	Dev0EventReasons   = 0x5  // from nvmlDeviceGetCurrentClocksEventReasons
	Dev0ThrottleMask   = 0x40 // from nvmlDeviceGetCurrentClocksThrottleReasons
	// Power fields of device 0 in mW; the memory-scope instant field is NOT_SUPPORTED.
	Dev0InstantMW       = 250000
	Dev0AverageMW       = 240000
	Dev0ModuleInstantMW = 400000
	Dev0ModuleAverageMW = 380000
	Dev0MemoryAverageMW = 39000.5

	Dev1Name           = "Fake Tesla V100"
	Dev1UUID           = "GPU-55555555-6666-7777-8888-999999999999"
	Dev1BusID          = "00000000:3B:00.0"
	Dev1PowerMW        = 55000
	Dev1LimitMW        = 250000
	Dev1DefaultLimitMW = 300000
)

// BigRing is a define for Build: a sample ring of 300 entries, more than a real driver's.
const BigRing = "FAKE_RING=300"

// OldDriver is a define for Build: the library then lacks
// nvmlDeviceGetCurrentClocksEventReasons, like drivers older than 535.
const OldDriver = "FAKE_OLD_DRIVER"

// Build compiles the fake into a fresh temporary directory and returns the path of the
// library (named libnvidia-ml.so.1). Each call gives a new library with its own state.
// defines are passed to gcc as -D flags. It skips t, saying why, when gcc is not on PATH
// (and fails it when GPUWATT_REQUIRE_CC is set, as .ci/run does).
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	return lib.Build(t, defines...)
}

var lib = fakelib.Lib{What: "libnvidia-ml", File: "libnvidia-ml.so.1", Source: source, CFlags: []string{"-O1"}}

// Fake drives a fake library built by Build.
type Fake struct {
	setTimeUS    func(uint64)
	addSample    func(uint64, uint32)
	clearSamples func()
	initCount    func() int32
	setLost      func(int32)
	setHang      func(string)
	addProc      func(uint32, uint64, uint32)
	clearProcs   func()
	procCalls    func() int32
}

// Control opens the fake at path (the same library nvml.Open(path) loads) and returns its
// controls.
func Control(t testing.TB, path string) *Fake {
	t.Helper()
	f := &Fake{}
	lib.Bind(t, path, map[string]any{
		"fakeSetTimeUS":           &f.setTimeUS,
		"fakeAddSample":           &f.addSample,
		"fakeClearSamples":        &f.clearSamples,
		"fakeInitCount":           &f.initCount,
		"fakeSetLost":             &f.setLost,
		"fakeSetHang":             &f.setHang,
		"fakeAddProcessSample":    &f.addProc,
		"fakeClearProcessSamples": &f.clearProcs,
		"fakeProcessCalls":        &f.procCalls,
	})
	return f
}

// SetTimeUS sets the fake's "now" in µs since 1970.
func (f *Fake) SetTimeUS(us uint64) { f.setTimeUS(us) }

// AddSample appends a TOTAL_POWER sample to the ring (the oldest drops out when full).
func (f *Fake) AddSample(tsUS uint64, mw uint32) { f.addSample(tsUS, mw) }

// ClearSamples empties the ring.
func (f *Fake) ClearSamples() { f.clearSamples() }

// InitCount returns how many nvmlInit_v2 calls have not been matched by nvmlShutdown.
func (f *Fake) InitCount() int { return int(f.initCount()) }

// SetLost makes every later call on a device fail with NVML_ERROR_GPU_IS_LOST (true), or
// work again (false): a GPU that falls off the bus part-way through a run.
func (f *Fake) SetLost(lost bool) {
	v := int32(0)
	if lost {
		v = 1
	}
	f.setLost(v)
}

// SetHang makes every later call of the NVML function fn block, as a driver call that
// never returns, until SetHang("") lets the calls go on.
func (f *Fake) SetHang(fn string) { f.setHang(fn) }

// ProcessCalls returns how many nvmlDeviceGetProcessUtilization calls were made.
func (f *Fake) ProcessCalls() int { return int(f.procCalls()) }

// AddProcessSample adds a per-process utilisation sample of device 0 (pid, its time in µs
// since 1970, SM utilisation in percent), as nvmlDeviceGetProcessUtilization returns them.
func (f *Fake) AddProcessSample(pid uint32, tsUS uint64, sm uint32) { f.addProc(pid, tsUS, sm) }
