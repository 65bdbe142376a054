package nvml

import (
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Device is the handle of one GPU. The zero Device is invalid: its calls return errors
// matching ErrUninitialized.
type Device struct {
	lib *Lib
	h   uintptr
}

// Valid reports whether d came from DeviceByIndex.
func (d Device) Valid() bool { return d.lib != nil && d.h != 0 }

// uint32Call runs one of the (device, *uint32) getters.
func (d Device) uint32Call(f func(*args, uintptr, *uint32) Return, name string) (uint32, error) {
	if d.lib == nil {
		return 0, check(ErrorUninitialized, name)
	}
	if f == nil {
		return 0, missing(name)
	}
	s := getScratch()
	defer putScratch(s)
	s.u32 = 0
	if err := check(f(&s.args, d.h, &s.u32), name); err != nil {
		return 0, err
	}
	return s.u32, nil
}

// l returns d's library, or a placeholder whose fields are all nil; the getters check
// d.lib before calling anything.
func (d Device) l() *Lib {
	if d.lib == nil {
		return &nilLib
	}
	return d.lib
}

var nilLib Lib

func (d Device) str(f func(*args, uintptr, *byte, uint32) Return, name string, size uint32) (string, error) {
	if d.lib == nil {
		return "", check(ErrorUninitialized, name)
	}
	if f == nil {
		return "", missing(name)
	}
	s := getScratch()
	defer putScratch(s)
	s.str = [len(s.str)]byte{}
	if err := check(f(&s.args, d.h, &s.str[0], size), name); err != nil {
		return "", err
	}
	return cString(s.str[:]), nil
}

// Name returns the product name, e.g. "NVIDIA H100 80GB HBM3".
func (d Device) Name() (string, error) {
	return d.str(d.l().deviceGetName, symName, deviceNameBufferSize)
}

// UUID returns the GPU's UUID, e.g. "GPU-5a3c...".
func (d Device) UUID() (string, error) {
	return d.str(d.l().deviceGetUUID, symUUID, deviceUUIDBufferSize)
}

// PCIBusID returns the PCI bus id, "domain:bus:device.function" (busId of
// nvmlDeviceGetPciInfo_v3).
func (d Device) PCIBusID() (string, error) {
	f := d.l().deviceGetPciInfo
	if d.lib == nil {
		return "", check(ErrorUninitialized, symPciInfo)
	}
	if f == nil {
		return "", missing(symPciInfo)
	}
	s := getScratch()
	defer putScratch(s)
	s.pci = pciInfo{}
	if err := check(f(&s.args, d.h, &s.pci), symPciInfo); err != nil {
		return "", err
	}
	if id := cString(s.pci.busID[:]); id != "" {
		return id, nil
	}
	return cString(s.pci.busIDLegacy[:]), nil
}

// PowerUsage returns nvmlDeviceGetPowerUsage, the board power. On Hopper it is a 1 s moving
// average that updates about every 100 ms.
func (d Device) PowerUsage() (units.Power, error) {
	mw, err := d.uint32Call(d.l().deviceGetPowerUsage, symPowerUsage)
	return units.Power(mw) * units.Milliwatt, err
}

// EnforcedPowerLimit returns the power limit the card enforces now.
func (d Device) EnforcedPowerLimit() (units.Power, error) {
	mw, err := d.uint32Call(d.l().deviceGetEnforcedPowerLimit, symEnforcedPowerLimit)
	return units.Power(mw) * units.Milliwatt, err
}

// DefaultPowerLimit returns the card's default power limit
// (nvmlDeviceGetPowerManagementDefaultLimit).
func (d Device) DefaultPowerLimit() (units.Power, error) {
	mw, err := d.uint32Call(d.l().deviceGetPowerManagementDefaultLimit, symDefaultPowerLimit)
	return units.Power(mw) * units.Milliwatt, err
}

// pstateUnknown is NVML_PSTATE_UNKNOWN.
const pstateUnknown = 32

// PerformanceState returns the performance state, 0 (P0, fastest) to 15. An unknown state
// gives an error matching ErrNoData.
func (d Device) PerformanceState() (int, error) {
	p, err := d.uint32Call(d.l().deviceGetPerformanceState, symPerformanceState)
	if err != nil {
		return 0, err
	}
	if p >= pstateUnknown {
		return 0, fmt.Errorf("%s: unknown performance state (%d): %w", symPerformanceState, p, ErrNoData)
	}
	return int(p), nil
}

// TotalEnergy returns the energy counter: the energy used since the driver was last
// loaded. It is slow (about 3 ms a call on an H200): never poll it in a hot loop.
func (d Device) TotalEnergy() (units.Energy, error) {
	mj, err := d.uint64Call(d.l().deviceGetTotalEnergyConsumption, symTotalEnergy)
	return units.Energy(mj) * units.Millijoule, err
}

func (d Device) uint64Call(f func(*args, uintptr, *uint64) Return, name string) (uint64, error) {
	if d.lib == nil {
		return 0, check(ErrorUninitialized, name)
	}
	if f == nil {
		return 0, missing(name)
	}
	s := getScratch()
	defer putScratch(s)
	s.u64 = 0
	if err := check(f(&s.args, d.h, &s.u64), name); err != nil {
		return 0, err
	}
	return s.u64, nil
}

// ClockEventReasons returns why the clocks are below their maximum now
// (nvmlDeviceGetCurrentClocksEventReasons, or nvmlDeviceGetCurrentClocksThrottleReasons
// on drivers older than 535 that lack it).
func (d Device) ClockEventReasons() (ClockReasons, error) {
	l := d.l()
	if l.deviceGetCurrentClocksEventReasons == nil && l.deviceGetCurrentClocksThrottleReasons != nil {
		m, err := d.uint64Call(l.deviceGetCurrentClocksThrottleReasons, symClocksThrottleReasons)
		return ClockReasons(m), err
	}
	m, err := d.uint64Call(l.deviceGetCurrentClocksEventReasons, symClocksEventReasons)
	return ClockReasons(m), err
}

// enumCall runs one of the (device, enum, *uint32) getters.
func (d Device) enumCall(f func(*args, uintptr, uint32, *uint32) Return, name string, e uint32) (uint32, error) {
	if d.lib == nil {
		return 0, check(ErrorUninitialized, name)
	}
	if f == nil {
		return 0, missing(name)
	}
	s := getScratch()
	defer putScratch(s)
	s.u32 = 0
	if err := check(f(&s.args, d.h, e, &s.u32), name); err != nil {
		return 0, err
	}
	return s.u32, nil
}

// Clock returns the current clock of domain c (nvmlDeviceGetClockInfo).
func (d Device) Clock(c ClockType) (units.Frequency, error) {
	mhz, err := d.enumCall(d.l().deviceGetClockInfo, symClockInfo, uint32(c))
	return units.Frequency(mhz) * units.Megahertz, err
}

// temperatureGPU is NVML_TEMPERATURE_GPU.
const temperatureGPU = 0

// Temperature returns the GPU die temperature (NVML_TEMPERATURE_GPU).
func (d Device) Temperature() (units.Temperature, error) {
	c, err := d.enumCall(d.l().deviceGetTemperature, symTemperature, temperatureGPU)
	return units.Temperature(c), err
}

// Utilization returns the percentage of time over the driver's last sample period during
// which a kernel ran (gpu) and device memory was read or written (mem).
func (d Device) Utilization() (gpu, mem uint32, err error) {
	f := d.l().deviceGetUtilizationRates
	if d.lib == nil {
		return 0, 0, check(ErrorUninitialized, symUtilizationRates)
	}
	if f == nil {
		return 0, 0, missing(symUtilizationRates)
	}
	s := getScratch()
	defer putScratch(s)
	s.util = utilization{}
	if err := check(f(&s.args, d.h, &s.util), symUtilizationRates); err != nil {
		return 0, 0, err
	}
	return s.util.gpu, s.util.memory, nil
}

// FieldValues reads fields in one call (nvmlDeviceGetFieldValues). The call as a whole
// fails only when NVML rejects it; each FieldValue carries its own status in Err.
func (d Device) FieldValues(reqs []FieldRequest) ([]FieldValue, error) {
	return d.AppendFieldValues(make([]FieldValue, 0, len(reqs)), reqs)
}

// AppendFieldValues is FieldValues appending to dst; it does not allocate when dst has
// room and no field fails.
func (d Device) AppendFieldValues(dst []FieldValue, reqs []FieldRequest) ([]FieldValue, error) {
	f := d.l().deviceGetFieldValues
	if d.lib == nil {
		return dst, check(ErrorUninitialized, symFieldValues)
	}
	if f == nil {
		return dst, missing(symFieldValues)
	}
	if len(reqs) == 0 {
		return dst, nil
	}
	s := getScratch()
	defer putScratch(s)
	var raw []fieldValue
	if len(reqs) <= len(s.fields) {
		raw = s.fields[:len(reqs)]
	} else {
		raw = make([]fieldValue, len(reqs))
	}
	for i, q := range reqs {
		raw[i] = fieldValue{fieldID: uint32(q.Field), scopeID: uint32(q.Scope)}
	}
	if err := check(f(&s.args, d.h, uint32(len(raw)), &raw[0]), symFieldValues); err != nil {
		return dst, err
	}
	for _, v := range raw {
		fv := FieldValue{
			Field:       FieldID(v.fieldID),
			Scope:       Scope(v.scopeID),
			TimestampUS: v.timestamp,
			LatencyUS:   v.latencyUsec,
			Type:        ValueType(v.valueType),
			Raw:         v.value,
		}
		var ok bool
		fv.Value, ok = decode(fv.Type, v.value)
		switch {
		case v.nvmlReturn != uint32(Success):
			fv.Err = &Error{Code: Return(v.nvmlReturn), Func: symFieldValues}
		case !ok:
			fv.Err = fmt.Errorf("%s: field %d: unknown value type %d", symFieldValues, v.fieldID, v.valueType)
		}
		dst = append(dst, fv)
	}
	return dst, nil
}

// Samples returns the entries of the driver's sample buffer of type typ that are newer than
// lastSeenUS (µs since 1970; 0 for all), oldest first as NVML gives them
// (nvmlDeviceGetSamples). No new samples is an empty result, not an error.
func (d Device) Samples(typ SamplingType, lastSeenUS uint64) ([]Sample, error) {
	return d.AppendSamples(nil, typ, lastSeenUS)
}

// AppendSamples is Samples appending to dst; it does not allocate when dst has room.
//
// It asks for the count first (NULL buffer; on driver 580 this costs 0.4 µs and gives the
// ring's capacity, 120 on an H200, whatever lastSeenUS is), then fetches into a buffer of
// that size (about 0.3 ms, spent in the kernel, even when nothing is new). Offering a
// smaller buffer is not safe: the driver then fills it and reports success.
func (d Device) AppendSamples(dst []Sample, typ SamplingType, lastSeenUS uint64) ([]Sample, error) {
	f := d.l().deviceGetSamples
	if d.lib == nil {
		return dst, check(ErrorUninitialized, symSamples)
	}
	if f == nil {
		return dst, missing(symSamples)
	}
	s := getScratch()
	defer putScratch(s)
	s.u32, s.u32b = 0, 0
	switch r := f(&s.args, d.h, uint32(typ), lastSeenUS, &s.u32b, &s.u32, nil); r {
	case Success:
	case ErrorNotFound: // no samples newer than lastSeenUS
		return dst, nil
	default:
		return dst, check(r, symSamples)
	}
	n := int(s.u32)
	for range 3 {
		if n == 0 {
			return dst, nil
		}
		if cap(s.samples) < n {
			s.samples = make([]sample, n)
		}
		buf := s.samples[:n]
		s.u32 = uint32(n)
		switch r := f(&s.args, d.h, uint32(typ), lastSeenUS, &s.u32b, &s.u32, &buf[0]); r {
		case Success:
			vt := ValueType(s.u32b)
			for _, e := range buf[:min(int(s.u32), n)] {
				v, ok := decode(vt, e.value)
				if !ok {
					return dst, fmt.Errorf("%s: unknown value type %d", symSamples, s.u32b)
				}
				dst = append(dst, Sample{TimestampUS: e.timeStamp, Value: v})
			}
			return dst, nil
		case ErrorNotFound:
			return dst, nil
		case ErrorInsufficientSize: // the ring grew between the calls: grow and retry
			n = max(int(s.u32), 2*n)
		default:
			return dst, check(r, symSamples)
		}
	}
	return dst, check(ErrorInsufficientSize, symSamples)
}

// ProcessUtilization returns the per-process utilisation samples newer than lastSeenUS
// (µs since 1970; 0 for all the driver keeps), nvmlDeviceGetProcessUtilization: one call
// with room for processSampleRoom samples, which is enough on any but a crowded board; where
// it is not (NVML_ERROR_INSUFFICIENT_SIZE and the count), again with room for the count. It
// asked the size first (a NULL buffer) before issue 35: two calls a read where one does
// (serve reads it every second for each GPU; in serve's profile on an H200 it was a fifth of
// serve's CPU, results/nvidia-h200/2026-11-28-lean-2). None newer is an empty result, not an
// error.
func (d Device) ProcessUtilization(lastSeenUS uint64) ([]ProcessUtilization, error) {
	const processSampleRoom = 64
	f := d.l().deviceGetProcessUtilization
	if d.lib == nil {
		return nil, check(ErrorUninitialized, symProcessUtilization)
	}
	if f == nil {
		return nil, missing(symProcessUtilization)
	}
	s := getScratch()
	defer putScratch(s)
	n := uint32(processSampleRoom)
	for range 3 {
		var buf []processUtilizationSample
		var p *processUtilizationSample
		if n > 0 {
			buf = make([]processUtilizationSample, n)
			p = &buf[0]
		}
		s.u32 = n
		switch r := f(&s.args, d.h, p, &s.u32, lastSeenUS); r {
		case Success:
			out := make([]ProcessUtilization, 0, s.u32)
			for _, e := range buf[:min(int(s.u32), len(buf))] {
				out = append(out, ProcessUtilization{PID: int(e.pid), TimeStampUS: e.timeStamp, SMUtil: e.smUtil, MemUtil: e.memUtil, EncUtil: e.encUtil, DecUtil: e.decUtil})
			}
			return out, nil
		case ErrorNotFound:
			return nil, nil
		case ErrorInsufficientSize:
			if s.u32 == 0 {
				return nil, nil
			}
			n = s.u32 + 4 // room for a process that starts between the calls
		default:
			return nil, check(r, symProcessUtilization)
		}
	}
	return nil, check(ErrorInsufficientSize, symProcessUtilization)
}
