package correct

import (
	"fmt"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// dense reports whether a boxcar's windows overlap enough to be deconvolved: W >= 1.5 T.
// Below that (W close to T, or W < T) each reading stands for its own period.
func denseBoxcar(m sensormodel.Model, period time.Duration) bool {
	return m.Kind() == sensormodel.Boxcar && period > 0 && 2*m.Window >= 3*period
}

// shortLag reports whether an RC lag is short against the update period (tau < rcShort·T,
// the H200's power.samples: 14 ms read every 20 ms): too few readings lie within reach of a
// region's end to fit the lag there, and regions are inverted interval by interval, with
// their edges as breakpoints of the power.
func shortLag(m sensormodel.Model, period time.Duration) bool {
	return m.Kind() == sensormodel.RC && period > 0 && m.Tau < rcShort*period
}

// seenAs says what the readings see, for a coverage warning: "a 25 ms window every 100 ms".
func seenAs(m sensormodel.Model, period time.Duration) string {
	if m.Kind() == sensormodel.RC {
		return fmt.Sprintf("a lag of tau=%s read every %s", units.FormatDuration(m.Tau, 4), units.FormatDuration(period, 4))
	}
	return fmt.Sprintf("a %s window every %s", units.FormatDuration(m.Window, 4), units.FormatDuration(period, 4))
}

// Method says in one line how Energy inverts m, given the update period in use.
func Method(m sensormodel.Model, period time.Duration) string {
	switch m.Kind() {
	case sensormodel.RC:
		if shortLag(m, period) {
			return fmt.Sprintf("RC lag tau=%s inverted interval by interval: the power constant between readings, split at the region's edges (over the whole trace: ∫reading + tau·Δreading)", units.FormatDuration(m.Tau, 4))
		}
		return fmt.Sprintf("RC lag tau=%s inverted: ∫P = ∫reading + tau·(reading(b) − reading(a)), the ends fitted to the lag's step response", units.FormatDuration(m.Tau, 4))
	case sensormodel.Boxcar:
		switch {
		case denseBoxcar(m, period):
			return fmt.Sprintf("boxcar W=%s deconvolved: E[a,b] = W·(r(b) − r(a)) + E[a−W, b−W], until the readings are steady", units.FormatDuration(m.Window, 4))
		case m.Coverage(period) < 1:
			return fmt.Sprintf("boxcar W=%s every T=%s: each reading held over its own period, centred on its window (coverage %.0f %%)", units.FormatDuration(m.Window, 4), units.FormatDuration(period, 4), 100*m.Coverage(period))
		default:
			return fmt.Sprintf("boxcar W=%s: each reading held over its own period, centred on its window", units.FormatDuration(m.Window, 4))
		}
	}
	return "none: the readings integrated as they are"
}

// Assumptions lists what the inversion of m takes for granted, for printing beside a result.
func Assumptions(m sensormodel.Model, period time.Duration) []string {
	var a []string
	switch m.Kind() {
	case sensormodel.None:
		a = append(a, "the readings are the power itself: no lag, no averaging window worth correcting")
	case sensormodel.RC:
		a = append(a, fmt.Sprintf("the sensor is a first-order low-pass with tau=%s (P = reading + tau·dP/dt)", units.FormatDuration(m.Tau, 4)))
		if shortLag(m, period) {
			a = append(a,
				"the power is constant between readings, or steps once between two of them; where a region's edge falls between two readings, the power may step there (the least change from the neighbouring intervals' powers)",
				"the power changes near a region's edge only at the edge (a kernel's start or end): a step a few ms off it is placed within about ΔP × T/4")
		} else {
			a = append(a, "near each end of the region the power is steady or changes once (the ends' readings are fitted to that)")
		}
	case sensormodel.Boxcar:
		a = append(a, fmt.Sprintf("each reading is the mean power over the %s before it", units.FormatDuration(m.Window, 4)))
		if m.Tau > 0 {
			a = append(a, fmt.Sprintf("the power is low-passed (tau=%s) before the window: taken as a further delay of tau", units.FormatDuration(m.Tau, 4)))
		}
		if period > 0 {
			a = append(a, fmt.Sprintf("readings less than %s (T/4) apart are one update, whose value is the later one", units.FormatDuration(period/4, 4)))
		}
		switch {
		case denseBoxcar(m, period):
			a = append(a,
				"the power was steady before the first reading",
				fmt.Sprintf("the power is resolved to one update period (%s): a region edge on a power change is uncertain by up to ΔP·T/4", units.FormatDuration(period, 4)))
		case m.Coverage(period) < 1:
			a = append(a, fmt.Sprintf("the power seen in each %s window is the power of its whole %s period: true for steady loads; loads that vary faster are sampled, not integrated", units.FormatDuration(m.Window, 4), units.FormatDuration(period, 4)))
		}
	}
	if m.Delay > 0 {
		a = append(a, fmt.Sprintf("readings are published %s after the power they describe", units.FormatDuration(m.Delay, 4)))
	}
	return a
}

// FmtDur is units.FormatDuration to four digits.
//
// Deprecated: use units.FormatDuration (internal/energy still calls it).
func FmtDur(d time.Duration) string { return units.FormatDuration(d, 4) }
