package trace

// Channel names. A channel's quantity follows from the part before the first dot (see
// QuantityOf); NVML's channels and the sim device's carry these names, nvidia-smi's query
// fields are mapped onto them, and a plain CSV without a channel column reads as ChPower.
const (
	ChPowerUsage         = "power.usage"          // nvmlDeviceGetPowerUsage: ~1 s average, updated every ~100 ms (20 ms on older boards)
	ChPowerInstant       = "power.instant"        // NVML_FI_DEV_POWER_INSTANT: a ~25 ms window of every 100 ms on A100/H100
	ChPowerAverage       = "power.average"        // NVML_FI_DEV_POWER_AVERAGE: ~1 s average
	ChPowerModuleInstant = "power.module.instant" // as power.instant, module scope (GPU + CPU on Grace boards)
	ChPowerModuleAverage = "power.module.average"
	ChPowerMemoryInstant = "power.memory.instant" // as power.instant, memory scope
	ChPowerMemoryAverage = "power.memory.average"
	ChPowerSamples       = "power.samples" // nvmlDeviceGetSamples: the driver's buffer of timestamped samples every 20 ms
	// AMD boards (amdsmi_get_power_info): the socket power, whole watts.
	ChPowerSocketCurrent = "power.socket_current" // current_socket_power: MI300 and later
	ChPowerSocketAverage = "power.socket_average" // average_socket_power: Navi, MI200 and earlier
	ChPower              = "power"                // a plain CSV's only channel
	ChPowerLimit         = "power.limit"          // the enforced power limit: a setting, not a reading
	ChEnergyTotal        = "energy.total"         // nvmlDeviceGetTotalEnergyConsumption, amdsmi_get_energy_count: the board's energy counter
	ChClockSM            = "clock.sm"
	ChClockMem           = "clock.mem"
	ChClockGr            = "clock.gr"
	ChTempGPU            = "temp.gpu"
	ChTempMem            = "temp.mem"
	ChThrottleReasons    = "throttle.reasons"
	ChPState             = "pstate"
	ChUtilGPU            = "util.gpu"
	ChUtilMem            = "util.mem"
)

// PowerPreference is THE order in which every part of gpuwatt picks a whole-board power
// channel (for an energy figure, a region's headline without a counter, a profile or a
// sensor table), best first:
//
//   - power.samples: the driver's 20 ms buffer, read in bulk, sees (nearly) every part of
//     the time with its own timestamps: the finest resolution and no gaps;
//   - power.instant: a ~25 ms window of every 100 ms (A100/H100, Yang et al. SC'24): it
//     samples rather than integrates a load faster than 100 ms, but does not lag;
//   - power.usage: a ~1 s average updated every ~100 ms: lags by about a second (on older
//     boards, K20 to V100, it is the only channel and then the one to use);
//   - power.average: the same ~1 s average through the field API, where usage is missing;
//   - power.socket_current: an AMD board's current socket power (MI300 and later; its
//     update period and window are not published: docs/amd.md), placed with power.instant;
//   - power.socket_average: an AMD board's average socket power (MI200 and earlier), placed
//     with the 1 s averages;
//   - power: a plain CSV's only channel, whatever it was measured with.
//
// A board offers either NVIDIA's channels or AMD's, never both.
//
// The energy counter (ChEnergyTotal) is not in the list: where a figure can use it, it
// comes first, before every channel here (see CounterPreference).
var PowerPreference = []string{ChPowerSamples, ChPowerInstant, ChPowerSocketCurrent, ChPowerUsage, ChPowerAverage, ChPowerSocketAverage, ChPower}

// CounterPreference is the order for a region's headline energy: the board's energy
// counter where it has readings (it integrates every microsecond in hardware), then the
// power channels in PowerPreference order.
var CounterPreference = append([]string{ChEnergyTotal}, PowerPreference...)

// Preferred returns the first name of order for which has is true, and whether there is one.
func Preferred(order []string, has func(name string) bool) (string, bool) {
	for _, n := range order {
		if has(n) {
			return n, true
		}
	}
	return "", false
}
