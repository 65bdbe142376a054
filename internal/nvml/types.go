package nvml

import (
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// C layouts. NVML runs on little-endian hosts only (x86-64, arm64, ppc64le), so a union
// member narrower than 8 bytes sits in the low bytes of the uint64 that holds the union.

// fieldValue is nvmlFieldValue_t.
type fieldValue struct {
	fieldID     uint32
	scopeID     uint32
	timestamp   int64 // µs since 1970
	latencyUsec int64
	valueType   uint32
	nvmlReturn  uint32
	value       uint64 // nvmlValue_t union
}

// sample is nvmlSample_t.
type sample struct {
	timeStamp uint64 // µs since 1970
	value     uint64 // nvmlValue_t union
}

// processUtilizationSample is nvmlProcessUtilizationSample_t (32 bytes: the pid padded to
// the 8-byte time stamp).
type processUtilizationSample struct {
	pid       uint32
	_         uint32
	timeStamp uint64 // µs since 1970
	smUtil    uint32
	memUtil   uint32
	encUtil   uint32
	decUtil   uint32
}

// ProcessUtilization is one per-process utilisation sample
// (nvmlDeviceGetProcessUtilization): the process's share of the sample's period, in
// percent, during which the SMs (and the memory, encoder, decoder) ran its work.
type ProcessUtilization struct {
	PID                               int
	TimeStampUS                       uint64 // µs since 1970
	SMUtil, MemUtil, EncUtil, DecUtil uint32
}

// pciInfo is nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3.
type pciInfo struct {
	busIDLegacy    [16]byte
	domain         uint32
	bus            uint32
	device         uint32
	pciDeviceID    uint32
	pciSubSystemID uint32
	busID          [32]byte
}

// utilization is nvmlUtilization_t.
type utilization struct {
	gpu    uint32
	memory uint32
}

// Compile-time layout checks: each line fails to compile ("constant overflows uintptr" or
// "invalid array length") when a size or offset differs from the C header.
var (
	_ [unsafe.Sizeof(fieldValue{}) - 40]struct{}
	_ [40 - unsafe.Sizeof(fieldValue{})]struct{}
	_ [unsafe.Offsetof(fieldValue{}.valueType) - 24]struct{}
	_ [24 - unsafe.Offsetof(fieldValue{}.valueType)]struct{}
	_ [unsafe.Offsetof(fieldValue{}.value) - 32]struct{}
	_ [32 - unsafe.Offsetof(fieldValue{}.value)]struct{}
	_ [unsafe.Sizeof(sample{}) - 16]struct{}
	_ [16 - unsafe.Sizeof(sample{})]struct{}
	_ [unsafe.Sizeof(pciInfo{}) - 68]struct{}
	_ [68 - unsafe.Sizeof(pciInfo{})]struct{}
	_ [unsafe.Offsetof(pciInfo{}.busID) - 36]struct{}
	_ [36 - unsafe.Offsetof(pciInfo{}.busID)]struct{}
	_ [unsafe.Sizeof(utilization{}) - 8]struct{}
	_ [8 - unsafe.Sizeof(utilization{})]struct{}
)

// Buffer sizes of nvml.h (the _V2 sizes, the largest).
const (
	deviceNameBufferSize    = 96 // NVML_DEVICE_NAME_V2_BUFFER_SIZE
	deviceUUIDBufferSize    = 96 // NVML_DEVICE_UUID_V2_BUFFER_SIZE
	systemVersionBufferSize = 80 // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, _NVML_VERSION_
)

// ValueType is nvmlValueType_t: which member of the nvmlValue_t union holds a value.
type ValueType uint32

// Value types of nvml.h.
const (
	ValueDouble           ValueType = 0
	ValueUnsignedInt      ValueType = 1
	ValueUnsignedLong     ValueType = 2
	ValueUnsignedLongLong ValueType = 3
	ValueSignedLongLong   ValueType = 4
	ValueSignedInt        ValueType = 5
	ValueUnsignedShort    ValueType = 6
)

var valueTypeNames = [...]string{"double", "uint", "ulong", "ulonglong", "slonglong", "sint", "ushort"}

// String returns a short name of t ("uint", "double", ...).
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "valuetype(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// decode returns the union bits raw read as type t, as a float64; ok is false for an
// unknown type.
func decode(t ValueType, raw uint64) (v float64, ok bool) {
	switch t {
	case ValueDouble:
		return math.Float64frombits(raw), true
	case ValueUnsignedInt:
		return float64(uint32(raw)), true
	case ValueUnsignedLong, ValueUnsignedLongLong: // unsigned long is 8 bytes on LP64
		return float64(raw), true
	case ValueSignedLongLong:
		return float64(int64(raw)), true
	case ValueSignedInt:
		return float64(int32(uint32(raw))), true
	case ValueUnsignedShort:
		return float64(uint16(raw)), true
	}
	return math.NaN(), false
}

// FieldID is an NVML field identifier (NVML_FI_*).
type FieldID uint32

// Field identifiers used by gpuwatt.
const (
	FieldPowerAverage FieldID = 185 // NVML_FI_DEV_POWER_AVERAGE, mW
	FieldPowerInstant FieldID = 186 // NVML_FI_DEV_POWER_INSTANT, mW
)

// Scope is the scopeId of a field request; for power fields an nvmlPowerScopeType_t.
type Scope uint32

// Power scopes.
const (
	ScopeGPU    Scope = 0 // NVML_POWER_SCOPE_GPU: the whole board
	ScopeModule Scope = 1 // NVML_POWER_SCOPE_MODULE: the module (e.g. Grace Hopper superchip)
	ScopeMemory Scope = 2 // NVML_POWER_SCOPE_MEMORY: GPU memory
)

// String returns "gpu", "module" or "memory".
func (s Scope) String() string {
	switch s {
	case ScopeGPU:
		return "gpu"
	case ScopeModule:
		return "module"
	case ScopeMemory:
		return "memory"
	}
	return "scope(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// FieldRequest asks for one field in one scope.
type FieldRequest struct {
	Field FieldID
	Scope Scope
}

// FieldValue is one entry of nvmlDeviceGetFieldValues' answer.
type FieldValue struct {
	Field       FieldID
	Scope       Scope
	TimestampUS int64 // as NVML gives it: µs since 1970
	LatencyUS   int64
	Type        ValueType
	Value       float64 // the decoded value, in the field's unit (mW for power fields)
	Raw         uint64  // the union's bits, for exact 64-bit integers
	Err         error   // the entry's own status (an *Error), nil on success
}

// SamplingType is nvmlSamplingType_t.
type SamplingType uint32

// Sampling types of nvml.h.
const (
	TotalPowerSamples        SamplingType = 0 // board power, mW
	GPUUtilizationSamples    SamplingType = 1
	MemoryUtilizationSamples SamplingType = 2
	EncoderUtilizationSample SamplingType = 3
	DecoderUtilizationSample SamplingType = 4
	ProcessorClockSamples    SamplingType = 5
	MemoryClockSamples       SamplingType = 6
)

// Sample is one entry of the driver's sample buffer.
type Sample struct {
	TimestampUS uint64  // µs since 1970
	Value       float64 // in the sampling type's unit (mW for TotalPowerSamples)
}

// ClockType is nvmlClockType_t.
type ClockType uint32

// Clock domains.
const (
	ClockGraphics ClockType = 0
	ClockSM       ClockType = 1
	ClockMem      ClockType = 2
	ClockVideo    ClockType = 3
)

// ClockReasons is a mask of clock-event (formerly throttle) reasons:
// nvmlClocksEventReason*.
type ClockReasons uint64

// Clock-event reason bits.
const (
	ReasonGPUIdle                   ClockReasons = 0x1
	ReasonApplicationsClocksSetting ClockReasons = 0x2
	ReasonSWPowerCap                ClockReasons = 0x4
	ReasonHWSlowdown                ClockReasons = 0x8
	ReasonSyncBoost                 ClockReasons = 0x10
	ReasonSWThermalSlowdown         ClockReasons = 0x20
	ReasonHWThermalSlowdown         ClockReasons = 0x40
	ReasonHWPowerBrakeSlowdown      ClockReasons = 0x80
	ReasonDisplayClockSetting       ClockReasons = 0x100
)

var reasonNames = [...]string{
	"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
	"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting",
}

// Names returns the names of the bits set in m, lowest bit first; unknown bits appear as
// hex ("0x200"). An empty mask gives no names.
func (m ClockReasons) Names() []string {
	var out []string
	for i := 0; i < 64; i++ {
		bit := ClockReasons(1) << i
		if m&bit == 0 {
			continue
		}
		if i < len(reasonNames) {
			out = append(out, reasonNames[i])
		} else {
			out = append(out, "0x"+strconv.FormatUint(uint64(bit), 16))
		}
	}
	return out
}

// String renders m as names joined by "|", or "none".
func (m ClockReasons) String() string {
	if m == 0 {
		return "none"
	}
	return strings.Join(m.Names(), "|")
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
