package measure

import (
	"path"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// DefaultChannels is the --channels pattern for the lean default: what the default
// estimator needs, read at the rate it needs. On a board with the driver's sample ring
// (power.samples) that is the ring and the energy counter (the calibrated ring is the
// default figure: docs/energy.md), with the clocks, temperature, throttle mask and power
// limit for the summary; the board power channels that the ring makes redundant
// (power.usage, power.instant, power.average, power.memory.*, power.module.*) and the
// utilisation and P-state readings are left out. A board without a working ring keeps its
// power channels. Every channel of another family (a CPU's RAPL, say) is kept. `--channels
// all` records everything, as before.
const DefaultChannels = "default"

// leanAlwaysOmits are left out by DefaultChannels on every board: readings the summary
// and the estimator never use.
var leanAlwaysOmits = []string{"util.*", "pstate"}

// leanOmits are the channels DefaultChannels leaves out where the GPU's ring works: those
// and the board power channels the ring makes redundant.
var leanOmits = append([]string{
	trace.ChPowerUsage, trace.ChPowerInstant, trace.ChPowerAverage, "power.memory.*", "power.module.*",
}, leanAlwaysOmits...)

// SelectSensors returns the sensors whose channel matches one of patterns, or all of them
// where there are none. The pattern DefaultChannels matches the lean set; "all" matches
// every channel.
func SelectSensors(sensors []sensor.Sensor, patterns []string) []sensor.Sensor {
	lean := false
	var globs []string
	for _, p := range patterns {
		if strings.TrimSpace(p) == DefaultChannels {
			lean = true
			continue
		}
		globs = append(globs, p)
	}
	if !lean {
		var out []sensor.Sensor
		for _, s := range sensors {
			if MatchChannel(s.Channel().Name, globs) {
				out = append(out, s)
			}
		}
		return out
	}
	ring := ringWorks(sensors)
	var out []sensor.Sensor
	for _, s := range sensors {
		ch := s.Channel()
		if (len(globs) > 0 && MatchChannel(ch.Name, globs)) || inLeanSet(ch, ring[ch.GPU]) {
			out = append(out, s)
		}
	}
	return out
}

// inLeanSet decides whether DefaultChannels records a channel of a GPU whose ring works
// (ring) or not.
func inLeanSet(ch trace.Channel, ring bool) bool {
	omit := leanAlwaysOmits
	if ring {
		omit = leanOmits
	}
	for _, p := range omit {
		if ok, _ := path.Match(p, ch.Name); ok {
			return false
		}
	}
	return true
}

// ringWorks tells, per GPU, whether its power.samples sensor answers a read: only then may
// the board's other power channels be left out. The read costs one call (~0.5 ms on an
// H200) and returns samples from before the recording, which the Sampler would read as
// such anyway.
func ringWorks(sensors []sensor.Sensor) map[int]bool {
	out := map[int]bool{}
	for _, s := range sensors {
		ch := s.Channel()
		if ch.Name != trace.ChPowerSamples {
			continue
		}
		if _, err := s.Read(nil); err == nil {
			out[ch.GPU] = true
		}
	}
	return out
}
