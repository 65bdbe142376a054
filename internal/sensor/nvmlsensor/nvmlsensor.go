// Package nvmlsensor offers the channels of one NVIDIA GPU, read through NVML, as
// sensor.Sensors: power (the driver's 1 s average, the instant and average fields in three
// scopes, the driver's 20 ms sample buffer), the energy counter, clocks, temperature,
// clock-event reasons, performance state, utilization and the power limit.
//
// Sensors are safe to call from any goroutine and do not allocate on the success path:
// each one keeps its own buffers under its own lock.
package nvmlsensor

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Channel names, in the order Sensors returns them. The sim device uses the same names.
const (
	PowerUsage         = trace.ChPowerUsage
	PowerInstant       = trace.ChPowerInstant
	PowerAverage       = trace.ChPowerAverage
	PowerModuleInstant = trace.ChPowerModuleInstant
	PowerModuleAverage = trace.ChPowerModuleAverage
	PowerMemoryInstant = trace.ChPowerMemoryInstant
	PowerMemoryAverage = trace.ChPowerMemoryAverage
	PowerSamples       = trace.ChPowerSamples
	EnergyTotal        = trace.ChEnergyTotal
	ClockSM            = trace.ChClockSM
	ClockMem           = trace.ChClockMem
	TempGPU            = trace.ChTempGPU
	ThrottleReasons    = trace.ChThrottleReasons
	PState             = trace.ChPState
	UtilGPU            = trace.ChUtilGPU
	UtilMem            = trace.ChUtilMem
	PowerLimit         = trace.ChPowerLimit
)

// FirstSamplesMargin is how far before the first read of power.samples a buffered sample
// may lie and still be returned (see Sensors).
const FirstSamplesMargin = 40 * time.Millisecond

// Period hints: the driver's update period where it has one, else a slow default.
const (
	powerUpdateHint = 100 * time.Millisecond // power fields, power usage, energy counter
	samplesHint     = 20 * time.Millisecond  // the sample buffer's spacing
	slowHint        = time.Second            // clocks, temperature, state, utilization, limit
)

const (
	milliwattsPerWatt   = 1e3
	fieldValuesFunction = "nvmlDeviceGetFieldValues"
)

// Sensors returns one sensor per channel of dev, which NVML numbers gpuIndex, in this
// order: power.usage, power.instant, power.average, power.module.instant,
// power.module.average, power.memory.instant, power.memory.average, power.samples,
// energy.total, clock.sm, clock.mem, temp.gpu, throttle.reasons, pstate, util.gpu,
// util.mem, power.limit. Every channel is returned whether or not the GPU supports it; an
// unsupported one fails on Read with an error matching nvml.ErrNotSupported.
//
// clk maps the driver's timestamps (µs since 1970) of power.samples onto the recording's
// axis: T = time.UnixMicro(ts).Sub(clk.Epoch()). The driver's sample buffer holds the last
// ~2.4 s (119 samples 20 ms apart on an H200), most of it from before the recording began.
// power.samples never returns a sample taken more than FirstSamplesMargin (40 ms, two
// sample periods) before its first Read, so the sample covering the start of the recording
// is kept and older history is not. Each Read returns the samples newer than the newest
// one seen before, so none is returned twice. If the first data the buffer gives are all
// older than that (the driver stopped sampling, or its clock disagrees with the host's),
// the newest sample alone is returned and the cursor alone decides from then on.
func Sensors(dev nvml.Device, gpuIndex int, clk clock.Clock) []sensor.Sensor {
	ch := func(name string, q trace.Quantity, source, desc string) trace.Channel {
		return trace.Channel{GPU: gpuIndex, Name: name, Quantity: q, Unit: q.Unit(), Description: desc, Source: source}
	}
	field := func(name string, f nvml.FieldID, s nvml.Scope, desc string) sensor.Sensor {
		fname := "NVML_FI_DEV_POWER_INSTANT"
		if f == nvml.FieldPowerAverage {
			fname = "NVML_FI_DEV_POWER_AVERAGE"
		}
		src := fmt.Sprintf("%s(%s=%d, scope %s)", fieldValuesFunction, fname, f, s)
		return &fieldSensor{
			base: base{ch(name, trace.QPower, src, desc), powerUpdateHint},
			dev:  dev,
			req:  [1]nvml.FieldRequest{{Field: f, Scope: s}},
			buf:  make([]nvml.FieldValue, 0, 1),
		}
	}
	scalar := func(c trace.Channel, hint time.Duration, read func() (float64, error)) sensor.Sensor {
		return &scalarSensor{base: base{c, hint}, read: read}
	}
	return []sensor.Sensor{
		scalar(ch(PowerUsage, trace.QPower, "nvmlDeviceGetPowerUsage",
			"board power as the driver reports it by default; on Hopper a moving average over the "+
				"last 1 s that updates every 100 ms (the same value as power.average), so after a load "+
				"step it ramps linearly for 1 s"),
			powerUpdateHint, func() (float64, error) {
				p, err := dev.PowerUsage()
				return p.Watts(), err
			}),
		field(PowerInstant, nvml.FieldPowerInstant, nvml.ScopeGPU,
			"board power, instantaneous field; updates every 100 ms and follows a load step within "+
				"one update (A100/H100: it averages only the last ~25 ms of each period)"),
		field(PowerAverage, nvml.FieldPowerAverage, nvml.ScopeGPU,
			"board power averaged by the driver over the last 1 s (on Hopper); updates every "+
				"100 ms; the same value as power.usage"),
		field(PowerModuleInstant, nvml.FieldPowerInstant, nvml.ScopeModule,
			"module power (GPU plus CPU and shared parts on superchips such as GH200), instantaneous "+
				"field; not supported on discrete boards (H200 SXM, driver 580)"),
		field(PowerModuleAverage, nvml.FieldPowerAverage, nvml.ScopeModule,
			"module power (GPU plus CPU and shared parts on superchips such as GH200), 1 s average "+
				"field; not supported on discrete boards (H200 SXM, driver 580)"),
		field(PowerMemoryInstant, nvml.FieldPowerInstant, nvml.ScopeMemory,
			"GPU memory power, instantaneous field; not supported on an H200 (driver 580)"),
		field(PowerMemoryAverage, nvml.FieldPowerAverage, nvml.ScopeMemory,
			"GPU memory power, 1 s average field; updates every 100 ms (H200: 37-39 W at idle, "+
				"lower under a compute-only load)"),
		&samplesSensor{
			base: base{func() trace.Channel {
				c := ch(PowerSamples, trace.QPower, "nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)",
					"board power from the driver's sample buffer: timestamped samples 20 ms apart "+
						"on average (H200: 119 held, 2.36 s; follows a load step within one sample); "+
						"each read returns the samples newer than the last one returned, timed by the "+
						"driver; a read costs about 0.3 ms of CPU, so poll it every few hundred ms")
				c.Buffered = true
				return c
			}(), samplesHint},
			dev: dev,
			clk: clk,
			buf: make([]nvml.Sample, 0, 128),
		},
		scalar(func() trace.Channel {
			c := ch(EnergyTotal, trace.QEnergy, "nvmlDeviceGetTotalEnergyConsumption",
				"energy used by the board since the driver was loaded (counter in mJ); steps every "+
					"100 ms; a call takes about 3-4 ms of CPU time (in the kernel), so poll it slowly")
			c.Cumulative = true
			return c
		}(), powerUpdateHint, func() (float64, error) {
			e, err := dev.TotalEnergy()
			return e.Joules(), err
		}),
		scalar(ch(ClockSM, trace.QFrequency, "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)",
			"SM clock now; drops below its maximum under power or thermal capping"),
			slowHint, func() (float64, error) {
				f, err := dev.Clock(nvml.ClockSM)
				return f.Hz(), err
			}),
		scalar(ch(ClockMem, trace.QFrequency, "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)",
			"memory clock now"),
			slowHint, func() (float64, error) {
				f, err := dev.Clock(nvml.ClockMem)
				return f.Hz(), err
			}),
		scalar(ch(TempGPU, trace.QTemperature, "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)",
			"GPU die temperature"),
			slowHint, func() (float64, error) {
				c, err := dev.Temperature()
				return c.Celsius(), err
			}),
		scalar(ch(ThrottleReasons, trace.QReasons,
			"nvmlDeviceGetCurrentClocksEventReasons (nvmlDeviceGetCurrentClocksThrottleReasons before driver 535)",
			"why the clocks are below their maximum now, a bit mask: 0x1 gpu_idle, "+
				"0x2 applications_clocks_setting, 0x4 sw_power_cap, 0x8 hw_slowdown, 0x10 sync_boost, "+
				"0x20 sw_thermal_slowdown, 0x40 hw_thermal_slowdown, 0x80 hw_power_brake_slowdown, "+
				"0x100 display_clock_setting"),
			slowHint, func() (float64, error) {
				m, err := dev.ClockEventReasons()
				return float64(m), err
			}),
		scalar(ch(PState, trace.QState, "nvmlDeviceGetPerformanceState",
			"performance state, 0 (P0, fastest) to 15"),
			slowHint, func() (float64, error) {
				p, err := dev.PerformanceState()
				return float64(p), err
			}),
		scalar(ch(UtilGPU, trace.QUtilization, "nvmlDeviceGetUtilizationRates",
			"percent of the driver's last sample period (1/6 s to 1 s) in which a kernel ran"),
			slowHint, func() (float64, error) {
				g, _, err := dev.Utilization()
				return float64(g), err
			}),
		scalar(ch(UtilMem, trace.QUtilization, "nvmlDeviceGetUtilizationRates",
			"percent of the driver's last sample period in which device memory was read or written"),
			slowHint, func() (float64, error) {
				_, m, err := dev.Utilization()
				return float64(m), err
			}),
		scalar(setting(ch(PowerLimit, trace.QPower, "nvmlDeviceGetEnforcedPowerLimit",
			"power limit the board enforces now")),
			slowHint, func() (float64, error) {
				p, err := dev.EnforcedPowerLimit()
				return p.Watts(), err
			}),
	}
}

// setting marks a channel as a configured value rather than a measurement.
func setting(c trace.Channel) trace.Channel {
	c.Setting = true
	return c
}

// base holds what every sensor has.
type base struct {
	ch   trace.Channel
	hint time.Duration
}

// Channel implements sensor.Sensor.
func (b *base) Channel() trace.Channel { return b.ch }

// PeriodHint implements sensor.PeriodHinter.
func (b *base) PeriodHint() time.Duration { return b.hint }

var (
	_ sensor.PeriodHinter = (*scalarSensor)(nil)
	_ sensor.PeriodHinter = (*fieldSensor)(nil)
	_ sensor.PeriodHinter = (*samplesSensor)(nil)
)

// scalarSensor reads one value with one call.
type scalarSensor struct {
	base
	read func() (float64, error)
}

// Read implements sensor.Sensor.
func (s *scalarSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	v, err := s.read()
	if err != nil {
		return dst, err
	}
	return append(dst, sensor.Reading{Value: v}), nil
}

// fieldSensor reads one power field in one scope.
//
// Its readings carry no DriverUS: NVML stamps a field value with the time of the call, not
// of the sensor's update (driver 580 on an H200: the timestamp changed on 2,830,059 of
// 2,830,060 back-to-back calls while the value changed 59 times), so the timestamp cannot
// tell a repeat from an update. The Sampler tells them apart by value.
type fieldSensor struct {
	base
	dev nvml.Device
	mu  sync.Mutex
	req [1]nvml.FieldRequest
	buf []nvml.FieldValue
}

// Read implements sensor.Sensor.
func (s *fieldSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	s.buf, err = s.dev.AppendFieldValues(s.buf[:0], s.req[:])
	if err != nil {
		return dst, err
	}
	if len(s.buf) != 1 {
		return dst, fmt.Errorf("%s: %d values for one field", fieldValuesFunction, len(s.buf))
	}
	fv := s.buf[0]
	if fv.Err != nil {
		return dst, fmt.Errorf("field %d, scope %s: %w", fv.Field, fv.Scope, fv.Err)
	}
	return append(dst, sensor.Reading{Value: fv.Value / milliwattsPerWatt}), nil
}

// samplesSensor reads the driver's TOTAL_POWER sample buffer with a cursor.
type samplesSensor struct {
	base
	dev      nvml.Device
	clk      clock.Clock
	mu       sync.Mutex
	started  bool   // the first Read has run
	cutoffUS uint64 // samples older than this predate the recording (0: no cutoff)
	returned bool   // some sample has been returned
	lastUS   uint64 // timestamp of the newest sample seen so far
	buf      []nvml.Sample
}

// Read implements sensor.Sensor: it appends the samples newer than the newest one it saw
// before, oldest first, each timed by the driver.
func (s *samplesSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	epoch := s.clk.Epoch()
	if !s.started {
		s.started = true
		if c := epoch.Add(s.clk.Now() - FirstSamplesMargin).UnixMicro(); c > 0 {
			s.cutoffUS = uint64(c)
		}
	}
	var err error
	s.buf, err = s.dev.AppendSamples(s.buf[:0], nvml.TotalPowerSamples, s.lastUS)
	if err != nil {
		return dst, err
	}
	if len(s.buf) == 0 {
		return dst, nil
	}
	// The driver returns its ring oldest first; sort anyway, the cursor relies on it.
	if !slices.IsSortedFunc(s.buf, cmpSample) {
		slices.SortFunc(s.buf, cmpSample)
	}
	n0 := len(dst)
	for _, x := range s.buf {
		if x.TimestampUS <= s.lastUS || x.TimestampUS < s.cutoffUS {
			continue
		}
		dst = append(dst, reading(x, epoch))
	}
	newest := s.buf[len(s.buf)-1]
	if len(dst) == n0 && !s.returned && newest.TimestampUS > s.lastUS {
		// Every sample predates the first Read by more than the margin: the driver has
		// stopped sampling, or its clock disagrees with ours. Return the newest alone and
		// follow the cursor from now on.
		dst = append(dst, reading(newest, epoch))
		s.cutoffUS = 0
	}
	s.returned = s.returned || len(dst) > n0
	s.lastUS = max(s.lastUS, newest.TimestampUS)
	return dst, nil
}

func reading(x nvml.Sample, epoch time.Time) sensor.Reading {
	return sensor.Reading{
		Timed:    true,
		T:        time.UnixMicro(int64(x.TimestampUS)).Sub(epoch),
		Value:    x.Value / milliwattsPerWatt,
		DriverUS: int64(x.TimestampUS),
	}
}

func cmpSample(a, b nvml.Sample) int {
	switch {
	case a.TimestampUS < b.TimestampUS:
		return -1
	case a.TimestampUS > b.TimestampUS:
		return 1
	}
	return 0
}
