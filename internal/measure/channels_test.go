package measure

import (
	"errors"
	"slices"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

type fakeSensor struct {
	ch  trace.Channel
	err error
}

func (f fakeSensor) Channel() trace.Channel { return f.ch }
func (f fakeSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	return dst, f.err
}

func boardSensors(gpu int, ringErr error) []sensor.Sensor {
	var out []sensor.Sensor
	for _, n := range []string{"energy.total", "power.samples", "power.usage", "power.instant", "power.average",
		"power.memory.average", "power.module.instant", "clock.sm", "temp.gpu", "throttle.reasons", "pstate", "util.gpu", "power.limit", "cpu.package"} {
		s := fakeSensor{ch: trace.Channel{GPU: gpu, Name: n}}
		if n == "power.samples" {
			s.err = ringErr
		}
		out = append(out, s)
	}
	return out
}

func names(ss []sensor.Sensor, gpu int) []string {
	var out []string
	for _, s := range ss {
		if s.Channel().GPU == gpu {
			out = append(out, s.Channel().Name)
		}
	}
	return out
}

// TestSelectSensorsLean: the default records the ring, the counter and the state channels
// the summary uses on a board whose ring answers, and keeps the power channels of a board
// whose ring does not; "all" and globs select as before.
func TestSelectSensorsLean(t *testing.T) {
	t.Parallel()
	all := append(boardSensors(0, nil), boardSensors(1, errors.New("not supported"))...)
	got := SelectSensors(all, []string{DefaultChannels})
	want0 := []string{"energy.total", "power.samples", "clock.sm", "temp.gpu", "throttle.reasons", "power.limit", "cpu.package"}
	if g := names(got, 0); !slices.Equal(g, want0) {
		t.Errorf("GPU 0 (ring works): %v, want %v", g, want0)
	}
	want1 := []string{"energy.total", "power.samples", "power.usage", "power.instant", "power.average",
		"power.memory.average", "power.module.instant", "clock.sm", "temp.gpu", "throttle.reasons", "power.limit", "cpu.package"}
	if g := names(got, 1); !slices.Equal(g, want1) {
		t.Errorf("GPU 1 (no ring): %v, want %v", g, want1)
	}
	if g := SelectSensors(all, nil); len(g) != len(all) {
		t.Errorf("no patterns: %d sensors, want all %d", len(g), len(all))
	}
	if g := names(SelectSensors(all, []string{DefaultChannels, "power.usage"}), 0); !slices.Contains(g, "power.usage") || !slices.Contains(g, "power.samples") {
		t.Errorf("default,power.usage on GPU 0: %v, want the lean set and power.usage", g)
	}
	if g := names(SelectSensors(all, []string{"power.*"}), 0); slices.Contains(g, "energy.total") || len(g) != 7 {
		t.Errorf("power.* on GPU 0: %v", g)
	}
}
