package cuda

import (
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Device is one GPU as the driver numbers it (a CUdevice). The zero Device is invalid: its
// calls return errors matching ErrInvalidDevice.
type Device struct {
	lib     *Lib
	ordinal int
	h       int32 // the CUdevice handle
}

// Valid reports whether d came from Lib.Device.
func (d Device) Valid() bool { return d.lib != nil }

// Ordinal returns d's index in the driver's order (CUDA_VISIBLE_DEVICES applies).
func (d Device) Ordinal() int { return d.ordinal }

// Lib returns the library d came from.
func (d Device) Lib() *Lib { return d.lib }

func (d Device) invalid(fn string) error {
	return refuse(ErrorInvalidDevice, fn, "zero Device")
}

// Name returns the product name, e.g. "NVIDIA H200".
func (d Device) Name() (string, error) {
	if !d.Valid() {
		return "", d.invalid(symDeviceGetName)
	}
	if d.lib.cuDeviceGetName == nil {
		return "", missing(symDeviceGetName)
	}
	buf := make([]byte, 256)
	if err := check(d.lib.cuDeviceGetName(&buf[0], int32(len(buf)), d.h), symDeviceGetName); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// UUID returns the GPU's UUID in nvidia-smi's form, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
// (cuDeviceGetUuid_v2, or cuDeviceGetUuid on drivers without it).
func (d Device) UUID() (string, error) {
	if !d.Valid() {
		return "", d.invalid(symDeviceGetUuidV2)
	}
	if d.lib.cuDeviceGetUuid == nil {
		return "", missing(symDeviceGetUuidV2)
	}
	u := new([16]byte)
	if err := check(d.lib.cuDeviceGetUuid(u, d.h), d.lib.symUUID); err != nil {
		return "", err
	}
	return FormatUUID(*u), nil
}

// FormatUUID renders 16 bytes as "GPU-" and 8-4-4-4-12 hex digits.
func FormatUUID(b [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// TotalMemory returns the device memory in bytes (cuDeviceTotalMem_v2).
func (d Device) TotalMemory() (int64, error) {
	if !d.Valid() {
		return 0, d.invalid(symDeviceTotalMem)
	}
	if d.lib.cuDeviceTotalMem == nil {
		return 0, missing(symDeviceTotalMem)
	}
	var b uint64
	if err := check(d.lib.cuDeviceTotalMem(&b, d.h), symDeviceTotalMem); err != nil {
		return 0, err
	}
	return int64(b), nil
}

// Attribute returns one device attribute (cuDeviceGetAttribute).
func (d Device) Attribute(a Attribute) (int, error) {
	if !d.Valid() {
		return 0, d.invalid(symDeviceGetAttribute)
	}
	if d.lib.cuDeviceGetAttribute == nil {
		return 0, missing(symDeviceGetAttribute)
	}
	var v int32
	if r := d.lib.cuDeviceGetAttribute(&v, a, d.h); r != Success {
		return 0, &Error{Code: r, Func: symDeviceGetAttribute, Log: "attribute " + a.String()}
	}
	return int(v), nil
}

// PCIBusID returns the PCI address, "domain:bus:device.function" as the driver writes it,
// e.g. "0000:19:00.0" (cuDeviceGetPCIBusId).
func (d Device) PCIBusID() (string, error) {
	if !d.Valid() {
		return "", d.invalid(symDeviceGetPCIBusId)
	}
	if d.lib.cuDeviceGetPCIBusId == nil {
		return "", missing(symDeviceGetPCIBusId)
	}
	buf := make([]byte, 64)
	if err := check(d.lib.cuDeviceGetPCIBusId(&buf[0], int32(len(buf)), d.h), symDeviceGetPCIBusId); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// ComputeCapability returns the compute capability, e.g. 9, 0 for Hopper.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// Properties are the device figures that throughput models need.
type Properties struct {
	Ordinal                  int
	Name                     string
	UUID                     string // "" where the driver lacks cuDeviceGetUuid
	PCIBusID                 string
	ComputeMajor             int
	ComputeMinor             int
	SMs                      int
	SMClock                  units.Frequency // CLOCK_RATE: the maximum (boost) SM clock
	MemoryClock              units.Frequency // MEMORY_CLOCK_RATE: the peak memory clock
	MemoryBusWidthBits       int
	L2Bytes                  int
	MemoryBytes              int64
	MaxThreadsPerBlock       int
	MaxThreadsPerSM          int
	SharedPerSMBytes         int
	SharedPerBlockOptinBytes int // the most dynamic shared memory a block may opt in to
	WarpSize                 int
}

// ComputeCapability returns "major.minor", e.g. "9.0".
func (p Properties) ComputeCapability() string {
	return fmt.Sprintf("%d.%d", p.ComputeMajor, p.ComputeMinor)
}

// FP32LanesPerSM returns the FP32 lanes of one SM for the compute capabilities this
// package knows (128 on Maxwell, Pascal consumer parts, Ampere GA10x, Ada, Hopper and
// Blackwell; 64 on GP100, Volta, Turing and GA100), or 0.
func (p Properties) FP32LanesPerSM() int {
	switch p.ComputeMajor {
	case 5, 8, 9, 10, 12:
		if p.ComputeMajor == 8 && p.ComputeMinor == 0 {
			return 64 // A100
		}
		return 128
	case 6:
		if p.ComputeMinor == 0 {
			return 64 // P100
		}
		return 128
	case 7:
		return 64
	}
	return 0
}

// PeakFP32FLOPS returns the nominal FP32 rate: SMs × lanes × 2 (an FMA is two operations)
// × the SM clock; 0 when the lanes per SM are unknown.
func (p Properties) PeakFP32FLOPS() float64 {
	return float64(p.SMs) * float64(p.FP32LanesPerSM()) * 2 * p.SMClock.Hz()
}

// PeakMemoryBandwidth returns the nominal DRAM bandwidth in bytes/s: 2 (double data rate)
// × the memory clock × the bus width in bytes.
func (p Properties) PeakMemoryBandwidth() float64 {
	return 2 * p.MemoryClock.Hz() * float64(p.MemoryBusWidthBits) / 8
}

// Properties reads d's name, identity, memory and the attributes of Properties. The UUID
// is left empty where the driver lacks it; any other failure is returned.
func (d Device) Properties() (Properties, error) {
	p := Properties{Ordinal: d.ordinal}
	var err error
	if p.Name, err = d.Name(); err != nil {
		return p, err
	}
	if p.UUID, err = d.UUID(); err != nil && !isMissing(err) {
		return p, err
	}
	if p.PCIBusID, err = d.PCIBusID(); err != nil {
		return p, err
	}
	if p.MemoryBytes, err = d.TotalMemory(); err != nil {
		return p, err
	}
	var smKHz, memKHz int
	for _, a := range []struct {
		attr Attribute
		dst  *int
	}{
		{AttrComputeCapabilityMajor, &p.ComputeMajor},
		{AttrComputeCapabilityMinor, &p.ComputeMinor},
		{AttrMultiprocessorCount, &p.SMs},
		{AttrClockRate, &smKHz},
		{AttrMemoryClockRate, &memKHz},
		{AttrGlobalMemoryBusWidth, &p.MemoryBusWidthBits},
		{AttrL2CacheSize, &p.L2Bytes},
		{AttrMaxThreadsPerBlock, &p.MaxThreadsPerBlock},
		{AttrMaxThreadsPerMultiprocessor, &p.MaxThreadsPerSM},
		{AttrMaxSharedMemoryPerMultiprocessor, &p.SharedPerSMBytes},
		{AttrMaxSharedMemoryPerBlockOptin, &p.SharedPerBlockOptinBytes},
		{AttrWarpSize, &p.WarpSize},
	} {
		if *a.dst, err = d.Attribute(a.attr); err != nil {
			return p, err
		}
	}
	p.SMClock = units.Frequency(smKHz) * units.Kilohertz
	p.MemoryClock = units.Frequency(memKHz) * units.Kilohertz
	return p, nil
}

// isMissing reports whether err is a *SymbolError.
func isMissing(err error) bool {
	_, ok := err.(*SymbolError)
	return ok
}
