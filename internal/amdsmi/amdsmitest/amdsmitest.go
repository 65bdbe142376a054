// Package amdsmitest builds a fake libamd_smi (testdata/fakeamdsmi.c) for tests of the
// amdsmi binding and of the packages above it, and drives its version, energy counter and
// socket power.
//
// The fake needs gcc; without it Build skips the test. Its GPUs and values are described at
// the top of the C file and mirrored by the constants below.
package amdsmitest

import (
	_ "embed"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/fakelib"
)

//go:embed testdata/fakeamdsmi.c
var source []byte

// Known values of the fake library.
const (
	DeviceCount = 2

	Dev0Name      = "AMD Instinct MI300X (fake)"
	Dev0UUID      = "a1ff74b5-0000-1000-80d0-0c0000000001"
	Dev0BusID     = "0000:0c:00.0"
	Dev0CurrentW  = 145
	Dev0EnergyRaw = 1000000
	Dev0GFXMHz    = 132
	Dev0MemMHz    = 900
	Dev0HotspotC  = 38
	Dev0CapW      = 750

	Dev1Name     = "AMD Instinct MI250X (fake)"
	Dev1UUID     = "a1ff74b5-0000-1000-80d0-2a0000000002"
	Dev1BusID    = "0001:2a:01.1"
	Dev1AverageW = 90
	Dev1CapW     = 500
	Dev1DefCapW  = 560

	// ResolutionUJ is the fake's counter resolution, as ROCm's library reports it.
	ResolutionUJ = 15.3
)

var lib = fakelib.Lib{What: "libamd_smi", File: "libamd_smi.so", Source: source, CFlags: []string{"-O1"}}

// Build compiles the fake into a fresh temporary directory and returns the path of the
// library (named libamd_smi.so). Each call gives a new library with its own state.
func Build(t testing.TB) string {
	t.Helper()
	return lib.Build(t)
}

// Fake drives a fake library built by Build.
type Fake struct {
	setVersion func(year, major, minor, release uint32)
	setEnergy  func(i int32, raw uint64)
	setPower   func(i int32, current, average uint32)
	initCount  func() int32
}

// Control opens the fake at path (the same library amdsmi.Open(path) loads) and returns
// its controls.
func Control(t testing.TB, path string) *Fake {
	t.Helper()
	f := &Fake{}
	lib.Bind(t, path, map[string]any{
		"fakeSetVersion": &f.setVersion,
		"fakeSetEnergy":  &f.setEnergy,
		"fakeSetPower":   &f.setPower,
		"fakeInitCount":  &f.initCount,
	})
	return f
}

// SetVersion sets what amdsmi_get_lib_version reports (year 0: the year-less shape of ROCm
// 6.4 and later) and the layout amdsmi_get_power_info writes.
func (f *Fake) SetVersion(year, major, minor, release uint32) {
	f.setVersion(year, major, minor, release)
}

// SetEnergy sets GPU i's raw energy accumulator.
func (f *Fake) SetEnergy(i int, raw uint64) { f.setEnergy(int32(i), raw) }

// SetPower sets GPU i's current and average socket power in W (0xFFFF: unsupported).
func (f *Fake) SetPower(i int, current, average uint32) { f.setPower(int32(i), current, average) }

// InitCount returns how many amdsmi_init calls have not been matched by amdsmi_shut_down.
func (f *Fake) InitCount() int { return int(f.initCount()) }
