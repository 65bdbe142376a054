package sim

import (
	"fmt"
	"strings"
	"time"

	"gpuwatt/internal/sensor/simsensor"
	"gpuwatt/internal/trace"
	"gpuwatt/internal/units"
)

// chanKind is how a channel is built.
type chanKind int

const (
	kindPublished chanKind = iota // a value per update, repeated in between
	kindBuffered                  // a ring of timestamped samples
	kindCounter                   // a cumulative energy counter
	kindConst                     // the power limit
)

// truthKind is the true signal a channel observes.
type truthKind int

const (
	truthBoard  truthKind = iota // board power, W
	truthMemory                  // memory power, W
	truthBusy                    // 1 while a load or command runs, else 0
)

// chanSpec describes one channel of the sim device: the same name, quantity and unit as
// the real nvml channel, which truth it observes, and the real API it mirrors.
type chanSpec struct {
	name   string
	q      trace.Quantity
	kind   chanKind
	truth  truthKind
	source string // the real call
	what   string // what the truth is, for descriptions
}

// channelSpecs is the order of Device.Sensors.
var channelSpecs = []chanSpec{
	{"power.usage", trace.QPower, kindPublished, truthBoard, "nvmlDeviceGetPowerUsage", "board power"},
	{"power.instant", trace.QPower, kindPublished, truthBoard, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)", "board power"},
	{"power.average", trace.QPower, kindPublished, truthBoard, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_AVERAGE)", "board power"},
	{"power.module.instant", trace.QPower, kindPublished, truthBoard, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT, scope module)", "module power (= board power in the sim)"},
	{"power.module.average", trace.QPower, kindPublished, truthBoard, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_AVERAGE, scope module)", "module power (= board power in the sim)"},
	{"power.memory.instant", trace.QPower, kindPublished, truthMemory, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT, scope memory)", "memory power"},
	{"power.memory.average", trace.QPower, kindPublished, truthMemory, "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_AVERAGE, scope memory)", "memory power"},
	{"power.samples", trace.QPower, kindBuffered, truthBoard, "nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)", "board power"},
	{"energy.total", trace.QEnergy, kindCounter, truthBoard, "nvmlDeviceGetTotalEnergyConsumption", "board energy"},
	{"clock.sm", trace.QFrequency, kindPublished, truthBusy, "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)", "SM clock = offset + gain × busy"},
	{"clock.mem", trace.QFrequency, kindPublished, truthBusy, "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)", "memory clock = offset + gain × busy"},
	{"temp.gpu", trace.QTemperature, kindPublished, truthBoard, "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)", "temperature = ambient (offset) + gain × board power through a thermal lag (tau)"},
	{"throttle.reasons", trace.QReasons, kindPublished, truthBusy, "nvmlDeviceGetCurrentClocksEventReasons", "GpuIdle bit (0x1) while nothing runs: offset + gain × busy"},
	{"pstate", trace.QState, kindPublished, truthBusy, "nvmlDeviceGetPerformanceState", "P-state = offset + gain × busy"},
	{"util.gpu", trace.QUtilization, kindPublished, truthBusy, "nvmlDeviceGetUtilizationRates (gpu)", "percent of the window busy (gain × mean of busy)"},
	{"util.mem", trace.QUtilization, kindPublished, truthBusy, "nvmlDeviceGetUtilizationRates (memory)", "memory utilisation = gain × mean of busy"},
	{"power.limit", trace.QPower, kindConst, truthBoard, "nvmlDeviceGetEnforcedPowerLimit", "enforced power limit"},
}

// ChannelNames returns the names of the sim device's channels, in the order of Sensors.
func ChannelNames() []string {
	out := make([]string, len(channelSpecs))
	for i, s := range channelSpecs {
		out[i] = s.name
	}
	return out
}

func specOf(name string) (chanSpec, bool) {
	for _, s := range channelSpecs {
		if s.name == name {
			return s, true
		}
	}
	return chanSpec{}, false
}

// DefaultPreset is the preset used when none is named.
const DefaultPreset = "h100"

// presetOrder is the order of Presets.
var presetOrder = []string{"h100", "h200", "a100", "v100", "k20"}

// Presets returns the names of the built-in presets.
func Presets() []string { return append([]string(nil), presetOrder...) }

// Preset returns the named built-in config (case does not matter).
func Preset(name string) (Config, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "h100":
		return h100(), nil
	case "h200":
		return h200(), nil
	case "a100":
		return a100(), nil
	case "v100":
		return v100(), nil
	case "k20":
		return k20(), nil
	}
	return Config{}, fmt.Errorf("unknown preset %q (want one of %s)", name, strings.Join(presetOrder, ", "))
}

const ms = time.Millisecond

// board describes the sensors of one board for the preset builders.
type board struct {
	gain   float64     // the board's power-sensor gain error
	offset units.Power // and offset error
	phase  time.Duration
	jitter float64
}

// power returns a power-channel model of the board.
func (b board) power(period, window time.Duration, noise units.Power) simsensor.Model {
	return simsensor.Model{Period: period, Jitter: b.jitter, Phase: b.phase, Window: window, Noise: noise, Quantum: units.Milliwatt, Gain: b.gain, Offset: b.offset}
}

// state returns a model of a channel that follows the busy signal: offset + gain × busy.
func state(period time.Duration, gain, offset, quantum float64) simsensor.Model {
	return simsensor.Model{Period: period, Gain: gain, Offset: units.Power(offset), Quantum: units.Power(quantum)}
}

// utilPeriod is NVML's utilisation sample period on recent boards (1/6 s).
const utilPeriod = time.Second / 6

// common fills the channels every preset shares: clocks, temperature, state, utilisation.
func common(s map[string]SensorConfig, smIdle, smMax, memIdle, memMax float64, idlePState int) {
	s["clock.sm"] = SensorConfig{Model: state(100*ms, (smMax-smIdle)*1e6, smIdle*1e6, 1e6)}
	s["clock.mem"] = SensorConfig{Model: state(100*ms, (memMax-memIdle)*1e6, memIdle*1e6, 1e6)}
	s["temp.gpu"] = SensorConfig{Model: simsensor.Model{Period: time.Second, Tau: 30 * time.Second, Gain: 0.07, Offset: 24, Quantum: 1}}
	s["throttle.reasons"] = SensorConfig{Model: state(100*ms, -1, 1, 1)}
	s["pstate"] = SensorConfig{Model: state(100*ms, float64(-idlePState), float64(idlePState), 1)}
	s["util.gpu"] = SensorConfig{Model: simsensor.Model{Period: utilPeriod, Window: utilPeriod, Gain: 100, Quantum: 1}}
	s["util.mem"] = SensorConfig{Model: simsensor.Model{Period: utilPeriod, Window: utilPeriod, Gain: 35, Quantum: 1}}
	s["power.limit"] = SensorConfig{}
}

// hopper is the sensor set of an H100/H200 with a recent driver (FACTS.md, measured on an
// H200 with driver 580): power.usage and the average field are 1 s moving averages updated
// every ~100 ms; the instant field averages the last 25 ms of each 100 ms (Yang et al.);
// a ring of 119 samples every 20 ms that follows a step within one sample; an energy
// counter stepping every ~100 ms; memory power readings; no module scope.
func hopper(b board, mem board) map[string]SensorConfig {
	s := map[string]SensorConfig{
		"power.usage":          {Model: b.power(100*ms, time.Second, 0.05)},
		"power.instant":        {Model: b.power(100*ms, 25*ms, 0.15)},
		"power.average":        {Model: b.power(100*ms, time.Second, 0.05)},
		"power.module.instant": {Model: b.power(100*ms, 25*ms, 0.15), Unsupported: true},
		"power.module.average": {Model: b.power(100*ms, time.Second, 0.05), Unsupported: true},
		"power.memory.instant": {Model: mem.power(100*ms, 25*ms, 0.05)},
		"power.memory.average": {Model: mem.power(100*ms, time.Second, 0.02)},
		"power.samples":        {Model: simsensor.Model{Period: 20 * ms, Phase: 3 * ms, Window: 20 * ms, Noise: 0.3, Quantum: units.Milliwatt, Gain: b.gain, Offset: b.offset}, Ring: 119},
		"energy.total":         {Model: simsensor.Model{Period: 100 * ms, Jitter: b.jitter, Phase: 61 * ms, Quantum: units.Power(units.Millijoule), Gain: b.gain}},
	}
	return s
}

func h100() Config {
	b := board{gain: 1.021, offset: -1.2, phase: 37 * ms, jitter: 0.01}
	s := hopper(b, board{gain: 1.04, offset: -0.4, phase: 37 * ms, jitter: 0.01})
	common(s, 345, 1980, 2619, 2619, 0)
	return Config{
		Preset: "h100", Seed: 1, GPUs: 1, Name: "gpuwatt sim H100 (SXM 80GB)",
		Idle: 118, ActiveIdle: 128, ActiveIdleHold: 2 * time.Second, IdleSteps: 1, IdleStepInterval: time.Second,
		CommandLoad: 650, PowerLimit: 700,
		MemoryIdle: 36, MemoryLoadFraction: 0.12, BoardSpread: 0.03,
		Sensors: s,
	}
}

func h200() Config {
	b := board{gain: 0.985, offset: 2.1, phase: 52 * ms, jitter: 0.01}
	s := hopper(b, board{gain: 0.97, offset: 0.6, phase: 52 * ms, jitter: 0.01})
	common(s, 345, 1980, 3201, 3201, 0)
	return Config{
		Preset: "h200", Seed: 1, GPUs: 1, Name: "gpuwatt sim H200 (SXM 141GB)",
		Idle: 122, ActiveIdle: 132, ActiveIdleHold: 2 * time.Second, IdleSteps: 1, IdleStepInterval: time.Second,
		CommandLoad: 690, PowerLimit: 700,
		MemoryIdle: 39, MemoryLoadFraction: 0.15, BoardSpread: 0.03,
		Sensors: s,
	}
}

// a100: instant T=100 ms W=25 ms (Yang et al.); the rest as on Hopper with a recent driver,
// without memory power readings (assumed).
func a100() Config {
	b := board{gain: 1.032, offset: -0.8, phase: 71 * ms, jitter: 0.01}
	s := hopper(b, b)
	for _, n := range []string{"power.memory.instant", "power.memory.average"} {
		sc := s[n]
		sc.Unsupported = true
		s[n] = sc
	}
	common(s, 210, 1410, 1593, 1593, 0)
	return Config{
		Preset: "a100", Seed: 1, GPUs: 1, Name: "gpuwatt sim A100 (SXM4 80GB)",
		Idle: 62, ActiveIdle: 75, ActiveIdleHold: 2 * time.Second, IdleSteps: 1, IdleStepInterval: time.Second,
		CommandLoad: 350, PowerLimit: 400,
		MemoryIdle: 20, MemoryLoadFraction: 0.15, BoardSpread: 0.03,
		Sensors: s,
	}
}

// v100: power.usage every 20 ms over the last 10 ms (Yang et al.); fields 185/186 and the
// memory/module scopes are not supported.
func v100() Config {
	b := board{gain: 0.975, offset: 1.5, phase: 7 * ms, jitter: 0.02}
	s := map[string]SensorConfig{
		"power.usage":          {Model: b.power(20*ms, 10*ms, 0.2)},
		"power.instant":        {Model: b.power(20*ms, 10*ms, 0.2), Unsupported: true},
		"power.average":        {Model: b.power(20*ms, time.Second, 0.05), Unsupported: true},
		"power.module.instant": {Model: b.power(20*ms, 10*ms, 0.2), Unsupported: true},
		"power.module.average": {Model: b.power(20*ms, time.Second, 0.05), Unsupported: true},
		"power.memory.instant": {Model: b.power(20*ms, 10*ms, 0.2), Unsupported: true},
		"power.memory.average": {Model: b.power(20*ms, time.Second, 0.05), Unsupported: true},
		"power.samples":        {Model: simsensor.Model{Period: 20 * ms, Phase: 7 * ms, Window: 10 * ms, Noise: 0.2, Quantum: units.Milliwatt, Gain: b.gain, Offset: b.offset}, Ring: 119},
		"energy.total":         {Model: simsensor.Model{Period: 20 * ms, Jitter: b.jitter, Phase: 7 * ms, Quantum: units.Power(units.Millijoule), Gain: b.gain}},
	}
	common(s, 135, 1530, 877, 877, 0)
	return Config{
		Preset: "v100", Seed: 1, GPUs: 1, Name: "gpuwatt sim V100 (SXM2 32GB)",
		Idle: 42, ActiveIdle: 55, ActiveIdleHold: 2 * time.Second, IdleSteps: 1, IdleStepInterval: time.Second,
		CommandLoad: 250, PowerLimit: 300,
		MemoryIdle: 15, MemoryLoadFraction: 0.15, BoardSpread: 0.03,
		Sensors: s,
	}
}

// k20 is the Tesla K20c of Burtscher, Zecena and Zong: the sensor behaves as an RC circuit
// with C = 0.84 s; true updates at 66.7 Hz on average with widely varying intervals, repeated
// readings in between; active idle 52.5 W held ~3.5 s after a kernel, then stepping down
// every second to idle; the NB kernel draws ~158 W; within the 5 W absolute accuracy. No
// energy counter, power fields or sample buffer on Kepler.
func k20() Config {
	b := board{gain: 1.01, offset: 2.4, phase: 0, jitter: 0.45}
	usage := b.power(15*ms, 0, 0.3)
	usage.Tau = 840 * ms
	s := map[string]SensorConfig{
		"power.usage":          {Model: usage},
		"power.instant":        {Model: usage, Unsupported: true},
		"power.average":        {Model: usage, Unsupported: true},
		"power.module.instant": {Model: usage, Unsupported: true},
		"power.module.average": {Model: usage, Unsupported: true},
		"power.memory.instant": {Model: usage, Unsupported: true},
		"power.memory.average": {Model: usage, Unsupported: true},
		"power.samples":        {Model: usage, Unsupported: true, Ring: 119},
		"energy.total":         {Model: simsensor.Model{Period: 15 * ms, Gain: b.gain, Quantum: units.Power(units.Millijoule)}, Unsupported: true},
	}
	common(s, 324, 705, 324, 2600, 8)
	return Config{
		Preset: "k20", Seed: 1, GPUs: 1, Name: "gpuwatt sim K20c (5GB)",
		Idle: 25, ActiveIdle: 52.5, ActiveIdleHold: 3500 * ms, IdleSteps: 4, IdleStepInterval: time.Second,
		CommandLoad: 158, PowerLimit: 225,
		MemoryIdle: 8, MemoryLoadFraction: 0.15, BoardSpread: 0.03,
		Sensors: s,
	}
}
