package trace

import (
	"slices"
	"testing"
)

func TestPowerPreference(t *testing.T) {
	want := []string{"power.samples", "power.instant", "power.socket_current", "power.usage", "power.average", "power.socket_average", "power"}
	if !slices.Equal(PowerPreference, want) {
		t.Errorf("PowerPreference = %v, want %v", PowerPreference, want)
	}
	if !slices.Equal(CounterPreference, append([]string{"energy.total"}, want...)) {
		t.Errorf("CounterPreference = %v", CounterPreference)
	}
	for _, n := range PowerPreference {
		if QuantityOf(n) != QPower {
			t.Errorf("%s: quantity %q, want power", n, QuantityOf(n))
		}
	}
	if QuantityOf(ChEnergyTotal) != QEnergy || QuantityOf(ChClockSM) != QFrequency || QuantityOf(ChTempGPU) != QTemperature {
		t.Error("a channel constant's prefix does not give its quantity")
	}
}

func TestPreferred(t *testing.T) {
	have := map[string]bool{ChPowerUsage: true, ChPowerInstant: true, ChEnergyTotal: true}
	if n, ok := Preferred(PowerPreference, func(n string) bool { return have[n] }); !ok || n != ChPowerInstant {
		t.Errorf("Preferred(power) = %q, %v; want power.instant", n, ok)
	}
	if n, ok := Preferred(CounterPreference, func(n string) bool { return have[n] }); !ok || n != ChEnergyTotal {
		t.Errorf("Preferred(counter) = %q, %v; want energy.total", n, ok)
	}
	if n, ok := Preferred(PowerPreference, func(string) bool { return false }); ok || n != "" {
		t.Errorf("Preferred(none) = %q, %v; want \"\", false", n, ok)
	}
}
