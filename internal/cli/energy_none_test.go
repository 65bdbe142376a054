package cli

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// An external meter's irregular log given with --sensor none (issue 28): bursts logged
// every ~2 ms between stretches logged every ~100 ms. The readings are the power: every
// distinct one counts (no half-done values dropped: 497 of 553 were, −17 % with an interval
// that left the truth out), and the energy is within 2 % of the exact integral, inside the
// interval.
func TestEnergySensorNoneIrregular(t *testing.T) {
	t.Parallel()
	// The truth: 100 W, and bursts to 500 W with 10 ms ramps.
	bursts := [][2]float64{{1, 1.25}, {3, 3.2}, {5.5, 5.9}, {8, 8.15}}
	const idle, peak, ramp = 100.0, 500.0, 0.01
	power := func(t float64) float64 {
		for _, b := range bursts {
			switch {
			case t >= b[0] && t < b[0]+ramp:
				return idle + (peak-idle)*(t-b[0])/ramp
			case t >= b[0]+ramp && t < b[1]-ramp:
				return peak
			case t >= b[1]-ramp && t < b[1]:
				return idle + (peak-idle)*(b[1]-t)/ramp
			}
		}
		return idle
	}
	exact := func(a, z float64) float64 { // ∫power over [a, z], with every burst inside
		e := idle * (z - a)
		for _, b := range bursts {
			e += (peak - idle) * (b[1] - b[0] - ramp)
		}
		return e
	}
	rng := rand.New(rand.NewPCG(28, 1))
	busy := func(t float64) bool {
		for _, b := range bursts {
			if t > b[0]-0.15 && t < b[1]+0.02 { // the meter logs fast from before each burst
				return true
			}
		}
		return false
	}
	n, distinct, last := 0, 0, -1.0
	p := writeCSV(t, "meter.csv", func(add func(ts, w float64)) {
		for x := 0.0; x < 10; {
			w := math.Round(power(x)*100) / 100
			add(x, w)
			n++
			if w != last && x >= 0.5 && x <= 9.5 {
				distinct++ // a reading that is not a repeat of the one before
			}
			last = w
			if busy(x) {
				x += 0.002 * (0.75 + 0.5*rng.Float64())
			} else {
				x += 0.1 * (0.8 + 0.4*rng.Float64())
			}
		}
	})
	v := energyJSON(t, "--trace", p, "--sensor", "none", "--from", "0.5s", "--to", "9.5s")
	want := exact(0.5, 9.5)
	got := v["energy_j"].(float64)
	if d := (got - want) / want; math.Abs(d) > 0.02 {
		t.Errorf("energy %.2f J, exact %.2f J: %+.2f %%, want within 2 %%", got, want, 100*d)
	}
	lo, hi := v["energy_low_j"].(float64), v["energy_high_j"].(float64)
	if want < lo || want > hi {
		t.Errorf("exact %.2f J outside the interval [%.2f, %.2f] J", want, lo, hi)
	}
	if hd, _ := v["half_done_dropped"].(float64); hd != 0 {
		t.Errorf("%v half-done values dropped from a `none` channel, want none", hd)
	}
	if s := v["samples"].(float64); s < float64(distinct) {
		t.Errorf("%v readings used, want every one of the %d distinct readings in the region", s, distinct)
	}
	t.Logf("%d readings, energy %.2f J (exact %.2f, %+.3f %%), interval [%.2f, %.2f], samples %v dropped %v",
		n, got, want, 100*(got-want)/want, lo, hi, v["samples"], v["dropped"])
}

// A model typed on the command line carries no intervals: the energy states the default
// ones (correct.DefaultIntervals), propagated into the model component, and a warning names
// them (issue 28). A 10 % wrong window is then inside what the figure allows.
func TestEnergyModelDefaultIntervals(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"boxcar:window=1s", "boxcar:window=900ms"} {
		v := energyJSON(t, "--trace", h100Fixture, "--channel", "power.usage", "--sensor", spec, "--from", "0.8s", "--to", "1.7s")
		warned := ""
		for _, w := range v["warnings"].([]any) {
			if m := w.(map[string]any); m["code"] == "model_default_uncertainty" {
				warned = m["message"].(string)
			}
		}
		if !strings.Contains(warned, "window ±10 %") || !strings.Contains(warned, "delay ±5 ms") {
			t.Errorf("%s: warning %q, want one naming window ±10 %% and delay ±5 ms", spec, warned)
		}
		u := v["uncertainty"].(map[string]any)
		var model map[string]any
		for _, c := range u["components"].([]any) {
			if m := c.(map[string]any); m["name"] == "model" {
				model = m
			}
		}
		if model == nil || model["known"] != true || model["half_width_j"].(float64) <= 0 || u["partial"] == true {
			t.Errorf("%s: model component %v (partial %v), want a known, non-zero one", spec, model, u["partial"])
		}
	}
}
