package amdsmi

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Processor is the handle of one AMD GPU. The zero Processor is invalid: its calls return
// errors matching ErrNotInit.
type Processor struct {
	lib *Lib
	h   uintptr
}

// Valid reports whether p came from Lib.GPUs.
func (p Processor) Valid() bool { return p.lib != nil && p.h != 0 }

// ClockType is an amdsmi_clk_type_t.
type ClockType uint32

// Clock domains (amdsmi_clk_type_t).
const (
	ClockGFX ClockType = 0 // AMDSMI_CLK_TYPE_GFX (= SYS)
	ClockMem ClockType = 4 // AMDSMI_CLK_TYPE_MEM
)

// TempType is an amdsmi_temperature_type_t.
type TempType uint32

// Temperature sensors (amdsmi_temperature_type_t).
const (
	TempEdge    TempType = 0 // AMDSMI_TEMPERATURE_TYPE_EDGE
	TempHotspot TempType = 1 // AMDSMI_TEMPERATURE_TYPE_HOTSPOT (= JUNCTION)
	TempVRAM    TempType = 2 // AMDSMI_TEMPERATURE_TYPE_VRAM
)

// tempCurrent is AMDSMI_TEMP_CURRENT.
const tempCurrent = 0

// uuidSize is AMDSMI_GPU_UUID_SIZE.
const uuidSize = 38

// buf is a zeroed buffer for a struct C fills: larger than the struct in any known version,
// 8-byte aligned, on the heap.
func buf() *[structBufferBytes / 8]uint64 { return new([structBufferBytes / 8]uint64) }

func bytesOf(b *[structBufferBytes / 8]uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(b)), structBufferBytes)
}

// get runs one (handle, *struct) getter into a fresh buffer and returns its bytes.
func (p Processor) get(fn uintptr, name string, extra ...uintptr) ([]byte, error) {
	if p.lib == nil {
		return nil, check(StatusNotInit, name)
	}
	if fn == 0 {
		return nil, missing(name)
	}
	b := buf()
	var r Status
	switch len(extra) {
	case 0:
		r = call(fn, p.h, uintptr(unsafe.Pointer(b)))
	case 1:
		r = call(fn, p.h, extra[0], uintptr(unsafe.Pointer(b)))
	default:
		r = call(fn, p.h, extra[0], extra[1], uintptr(unsafe.Pointer(b)))
	}
	runtime.KeepAlive(b)
	if err := check(r, name); err != nil {
		return nil, err
	}
	return bytesOf(b), nil
}

func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func u64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

// unsupported reports whether a uint32 field holds the library's "not supported" marker:
// UINT32_MAX (documented in 7.x) or 0xFFFF (what 6.x writes into fields the metrics lack).
func unsupported(v uint32) bool { return v == math.MaxUint32 || v == math.MaxUint16 }

// fieldErr is the error of a field the library marks unsupported.
func fieldErr(fn, field string) error {
	return fmt.Errorf("%s: %s: %w (the library marks it unsupported on this board)", fn, field, ErrNotSupported)
}

// MarketName returns the board's name (amdsmi_asic_info_t.market_name, the struct's first
// field in every release), e.g. "AMD Instinct MI300X".
func (p Processor) MarketName() (string, error) {
	b, err := p.get(p.l().asicInfo, symASICInfo)
	if err != nil {
		return "", err
	}
	return bufString(b[:256]), nil
}

// UUID returns the GPU's UUID (amdsmi_get_gpu_device_uuid).
func (p Processor) UUID() (string, error) {
	if p.lib == nil {
		return "", check(StatusNotInit, symUUID)
	}
	if p.lib.uuid == 0 {
		return "", missing(symUUID)
	}
	n := new(uint32)
	*n = 64
	s := new([64]byte)
	if err := check(call(p.lib.uuid, p.h, uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(s))), symUUID); err != nil {
		return "", err
	}
	runtime.KeepAlive(n)
	runtime.KeepAlive(s)
	return bufString(s[:]), nil
}

// PCIBusID returns the PCI address, "domain:bus:device.function", from amdsmi_bdf_t
// (function bits 0-2, device 3-7, bus 8-15, domain 16-63).
func (p Processor) PCIBusID() (string, error) {
	b, err := p.get(p.l().bdf, symBDF)
	if err != nil {
		return "", err
	}
	v := u64(b, 0)
	return fmt.Sprintf("%04x:%02x:%02x.%x", v>>16, (v>>8)&0xff, (v>>3)&0x1f, v&0x7), nil
}

// l returns p's library, or a placeholder whose symbols are all 0.
func (p Processor) l() *Lib {
	if p.lib == nil {
		return &nilLib
	}
	return p.lib
}

var nilLib Lib

// powerInfo reads amdsmi_power_info_t and returns the uint32 at the offset the library's
// version puts the field.
func (p Processor) powerField(field string, off func(*Layout) int) (units.Power, error) {
	lay := p.l().Layout()
	if p.lib != nil && lay == nil {
		return 0, fmt.Errorf("%s: %w: Init has not checked the library's version", symPowerInfo, ErrNotInit)
	}
	b, err := p.get(p.l().powerInfo, symPowerInfo)
	if err != nil {
		return 0, err
	}
	v := u32(b, off(lay))
	if unsupported(v) {
		return 0, fieldErr(symPowerInfo, field)
	}
	return units.Power(v) * units.Watt, nil
}

// CurrentSocketPower returns amdsmi_power_info_t.current_socket_power in W (whole watts):
// the socket power of MI300-series boards.
func (p Processor) CurrentSocketPower() (units.Power, error) {
	return p.powerField("current_socket_power", func(l *Layout) int { return l.CurrentOffset })
}

// AverageSocketPower returns amdsmi_power_info_t.average_socket_power in W (whole watts):
// the socket power of Navi and MI200 and earlier boards.
func (p Processor) AverageSocketPower() (units.Power, error) {
	return p.powerField("average_socket_power", func(l *Layout) int { return l.AverageOffset })
}

// PowerCap returns the power cap now and its default (amdsmi_power_cap_info_t, in µW: its
// power_cap and default_power_cap, the first two uint64 fields in every release).
func (p Processor) PowerCap() (now, def units.Power, err error) {
	b, err := p.get(p.l().powerCapInfo, symPowerCapInfo, 0)
	if err != nil {
		return 0, 0, err
	}
	return units.Power(u64(b, 0)) * 1e-6, units.Power(u64(b, 8)) * 1e-6, nil
}

// EnergyCount is one reading of the energy accumulator.
type EnergyCount struct {
	Raw          uint64  // the accumulator, in units of Resolution
	ResolutionUJ float32 // µJ per count (15.3 in ROCm's library: 2^-16 J rounded)
	TimestampNS  uint64  // the library's timestamp of the reading (ns; not wall time)
}

// Energy is Raw × Resolution.
func (e EnergyCount) Energy() units.Energy {
	return units.Energy(float64(e.Raw) * float64(e.ResolutionUJ) * 1e-6)
}

// EnergyCount reads the energy accumulator (amdsmi_get_energy_count). The raw count wraps
// where the firmware's accumulator is narrower than 64 bits: EnergyCounter unwraps it.
func (p Processor) EnergyCount() (EnergyCount, error) {
	if p.lib == nil {
		return EnergyCount{}, check(StatusNotInit, symEnergyCount)
	}
	if p.lib.energyCount == 0 {
		return EnergyCount{}, missing(symEnergyCount)
	}
	out := new(struct {
		acc uint64
		res float32
		_   uint32
		ts  uint64
	})
	r := call(p.lib.energyCount, p.h, uintptr(unsafe.Pointer(&out.acc)), uintptr(unsafe.Pointer(&out.res)), uintptr(unsafe.Pointer(&out.ts)))
	runtime.KeepAlive(out)
	if err := check(r, symEnergyCount); err != nil {
		return EnergyCount{}, err
	}
	if !(out.res > 0) || math.IsInf(float64(out.res), 0) {
		return EnergyCount{}, fmt.Errorf("%s: counter resolution %g µJ: %w", symEnergyCount, out.res, ErrNoData)
	}
	return EnergyCount{Raw: out.acc, ResolutionUJ: out.res, TimestampNS: out.ts}, nil
}

// Clock returns the current clock of domain c (amdsmi_clk_info_t.clk, MHz, the first field
// in every release).
func (p Processor) Clock(c ClockType) (units.Frequency, error) {
	b, err := p.get(p.l().clockInfo, symClockInfo, uintptr(c))
	if err != nil {
		return 0, err
	}
	v := u32(b, 0)
	if unsupported(v) {
		return 0, fieldErr(symClockInfo, "clk")
	}
	return units.Frequency(v) * units.Megahertz, nil
}

// Temperature returns the current temperature of sensor s in °C (amdsmi_get_temp_metric,
// AMDSMI_TEMP_CURRENT; the library divides the kernel's millidegrees by 1000).
func (p Processor) Temperature(s TempType) (units.Temperature, error) {
	if p.lib == nil {
		return 0, check(StatusNotInit, symTempMetric)
	}
	if p.lib.tempMetric == 0 {
		return 0, missing(symTempMetric)
	}
	t := new(int64)
	r := call(p.lib.tempMetric, p.h, uintptr(s), tempCurrent, uintptr(unsafe.Pointer(t)))
	runtime.KeepAlive(t)
	if err := check(r, symTempMetric); err != nil {
		return 0, err
	}
	return units.Temperature(*t), nil
}

// Activity returns the graphics engine's and the memory controller's activity in percent
// (amdsmi_engine_usage_t.gfx_activity and umc_activity, its first two fields).
func (p Processor) Activity() (gfx, umc uint32, err error) {
	b, err := p.get(p.l().activity, symActivity)
	if err != nil {
		return 0, 0, err
	}
	gfx, umc = u32(b, 0), u32(b, 4)
	if unsupported(gfx) {
		return 0, 0, fieldErr(symActivity, "gfx_activity")
	}
	return gfx, umc, nil
}
