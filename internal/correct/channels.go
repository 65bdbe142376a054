package correct

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// BoardChannels are the whole-board power channels, best first for an energy figure:
// trace.PowerPreference, the one order (its comment says why).
var BoardChannels = trace.PowerPreference

// PickChannel returns the best board power channel of GPU gpu that has readings in tr.
func PickChannel(tr *trace.Trace, gpu int) (string, error) {
	have := channelsOf(tr, gpu)
	if n, ok := trace.Preferred(BoardChannels, func(n string) bool { return have[n] }); ok {
		return n, nil
	}
	return "", fmt.Errorf("GPU %d has no board power channel (%s); name one with --channel (power channels: %s)",
		gpu, strings.Join(BoardChannels, ", "), listOr(PowerChannels(tr, gpu), "none"))
}

// PowerChannels lists the power channels of GPU gpu in tr that have readings, by name.
func PowerChannels(tr *trace.Trace, gpu int) []string {
	have := channelsOf(tr, gpu)
	var out []string
	for n := range have {
		if IsPower(tr, gpu, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// IsPower reports whether channel name of GPU gpu is a measured power (W), not a setting.
func IsPower(tr *trace.Trace, gpu int, name string) bool {
	if c, ok := tr.Channel(gpu, name); ok {
		q := c.Quantity
		if q == "" {
			q = trace.QuantityOf(name)
		}
		return q == trace.QPower && !c.Setting && name != trace.ChPowerLimit
	}
	return trace.QuantityOf(name) == trace.QPower && name != trace.ChPowerLimit
}

// channelsOf is the set of GPU gpu's channels that have readings in tr.
func channelsOf(tr *trace.Trace, gpu int) map[string]bool {
	have := map[string]bool{}
	for _, k := range tr.Keys() {
		if k.GPU == gpu {
			have[k.Name] = true
		}
	}
	return have
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}
