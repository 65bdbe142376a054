// Package amdsensor offers the channels of one AMD GPU, read through amdsmi, as
// sensor.Sensors: the socket power (current and average), the energy counter (its wraps
// undone), the graphics and memory clocks, the hotspot temperature, the graphics and
// memory-controller activity and the power cap. The sim's AMD boards (vendor "amd") offer
// the same channels under the same names.
package amdsensor

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/amdsmi"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Channel names, in the order Sensors returns them.
const (
	PowerSocketCurrent = trace.ChPowerSocketCurrent
	PowerSocketAverage = trace.ChPowerSocketAverage
	EnergyTotal        = trace.ChEnergyTotal
	ClockGFX           = trace.ChClockSM
	ClockMem           = trace.ChClockMem
	TempHotspot        = trace.ChTempGPU
	UtilGFX            = trace.ChUtilGPU
	UtilMem            = trace.ChUtilMem
	PowerCap           = trace.ChPowerLimit
)

// Period hints. The socket power's update period is not published (docs/amd.md): the amdgpu
// driver refreshes the metrics table behind it at most every 1 ms, which the hint takes;
// the Sampler learns the real period.
const (
	powerHint = time.Millisecond
	slowHint  = time.Second
)

// Processor is what the sensors read: an amdsmi.Processor, or a test's stand-in.
type Processor interface {
	CurrentSocketPower() (float64, error)
	AverageSocketPower() (float64, error)
	EnergyCount() (amdsmi.EnergyCount, error)
	Clock(amdsmi.ClockType) (float64, error)
	Temperature(amdsmi.TempType) (float64, error)
	Activity() (gfx, umc uint32, err error)
	PowerCap() (float64, error)
}

// Wrap adapts an amdsmi.Processor to Processor.
func Wrap(p amdsmi.Processor) Processor { return wrapped{p} }

type wrapped struct{ p amdsmi.Processor }

func (w wrapped) CurrentSocketPower() (float64, error) {
	v, err := w.p.CurrentSocketPower()
	return v.Watts(), err
}

func (w wrapped) AverageSocketPower() (float64, error) {
	v, err := w.p.AverageSocketPower()
	return v.Watts(), err
}

func (w wrapped) EnergyCount() (amdsmi.EnergyCount, error) { return w.p.EnergyCount() }

func (w wrapped) Clock(c amdsmi.ClockType) (float64, error) {
	v, err := w.p.Clock(c)
	return v.Hz(), err
}

func (w wrapped) Temperature(s amdsmi.TempType) (float64, error) {
	v, err := w.p.Temperature(s)
	return v.Celsius(), err
}

func (w wrapped) Activity() (uint32, uint32, error) { return w.p.Activity() }

func (w wrapped) PowerCap() (float64, error) {
	v, _, err := w.p.PowerCap()
	return v.Watts(), err
}

// Sensors returns one sensor per channel of p, which gpuwatt numbers gpuIndex, in this
// order: power.socket_current, power.socket_average, energy.total, clock.sm, clock.mem,
// temp.gpu, util.gpu, util.mem, power.limit. Every channel is returned whether or not the
// board supports it; an unsupported one fails on Read with an error matching
// amdsmi.ErrNotSupported (MI300 boards have no average socket power, MI200 no current).
func Sensors(p Processor, gpuIndex int) []sensor.Sensor {
	ch := func(name string, q trace.Quantity, source, desc string) trace.Channel {
		return trace.Channel{GPU: gpuIndex, Name: name, Quantity: q, Unit: q.Unit(), Description: desc, Source: source}
	}
	scalar := func(c trace.Channel, hint time.Duration, read func() (float64, error)) sensor.Sensor {
		return &scalarSensor{ch: c, hint: hint, read: read}
	}
	energy := ch(EnergyTotal, trace.QEnergy, "amdsmi_get_energy_count",
		"energy used by the socket since the driver was loaded: the accumulator times its resolution "+
			"(15.3 µJ in ROCm's library), wraps undone; its update period is not published")
	energy.Cumulative = true
	limit := ch(PowerCap, trace.QPower, "amdsmi_get_power_cap_info", "power cap the board enforces now")
	limit.Setting = true
	var counter amdsmi.EnergyCounter
	return []sensor.Sensor{
		scalar(ch(PowerSocketCurrent, trace.QPower, "amdsmi_get_power_info (current_socket_power)",
			"socket power in whole watts (MI300 and later); its update period and averaging window are not "+
				"published (the driver refreshes it at most every 1 ms): characterise it with gpuwatt sensor"),
			powerHint, p.CurrentSocketPower),
		scalar(ch(PowerSocketAverage, trace.QPower, "amdsmi_get_power_info (average_socket_power)",
			"average socket power in whole watts (Navi, MI200 and earlier; not on MI300)"),
			powerHint, p.AverageSocketPower),
		scalar(energy, powerHint, func() (float64, error) {
			e, err := p.EnergyCount()
			if err != nil {
				return 0, err
			}
			j, err := counter.Update(e)
			return j.Joules(), err
		}),
		scalar(ch(ClockGFX, trace.QFrequency, "amdsmi_get_clock_info(AMDSMI_CLK_TYPE_GFX)", "graphics clock now"),
			slowHint, func() (float64, error) { return p.Clock(amdsmi.ClockGFX) }),
		scalar(ch(ClockMem, trace.QFrequency, "amdsmi_get_clock_info(AMDSMI_CLK_TYPE_MEM)", "memory clock now"),
			slowHint, func() (float64, error) { return p.Clock(amdsmi.ClockMem) }),
		scalar(ch(TempHotspot, trace.QTemperature, "amdsmi_get_temp_metric(AMDSMI_TEMPERATURE_TYPE_HOTSPOT)",
			"hotspot (junction) temperature"),
			slowHint, func() (float64, error) { return p.Temperature(amdsmi.TempHotspot) }),
		scalar(ch(UtilGFX, trace.QUtilization, "amdsmi_get_gpu_activity (gfx_activity)", "graphics engine activity, percent"),
			slowHint, func() (float64, error) {
				g, _, err := p.Activity()
				return float64(g), err
			}),
		scalar(ch(UtilMem, trace.QUtilization, "amdsmi_get_gpu_activity (umc_activity)", "memory controller activity, percent"),
			slowHint, func() (float64, error) {
				_, m, err := p.Activity()
				return float64(m), err
			}),
		scalar(limit, slowHint, p.PowerCap),
	}
}

var _ sensor.PeriodHinter = (*scalarSensor)(nil)

// scalarSensor reads one value with one call.
type scalarSensor struct {
	ch   trace.Channel
	hint time.Duration
	read func() (float64, error)
}

// Channel implements sensor.Sensor.
func (s *scalarSensor) Channel() trace.Channel { return s.ch }

// PeriodHint implements sensor.PeriodHinter.
func (s *scalarSensor) PeriodHint() time.Duration { return s.hint }

// Read implements sensor.Sensor.
func (s *scalarSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	v, err := s.read()
	if err != nil {
		return dst, err
	}
	return append(dst, sensor.Reading{Value: v}), nil
}
