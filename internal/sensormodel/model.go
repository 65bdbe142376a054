package sensormodel

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Model is how one channel turns the true signal into published values. For channels other
// than power, the fields named in watts are in the channel's own unit (Hz, degC, %...), and
// Gain converts the truth into that unit.
//
// A zero Period means unknown (an inversion learns it from the readings); a model that
// generates readings needs one (ValidateGenerating). A zero Gain means "not given": a
// model parsed from a spec or an older sensor.json says nothing of gain (GainOrOne).
type Model struct {
	Period  time.Duration // period_s: time between updates
	Jitter  float64       // jitter: uniform jitter of each update instant, ± this fraction of Period, in [0, 0.5)
	Phase   time.Duration // phase_s: t_0 on the clock axis
	Window  time.Duration // window_s: boxcar averaging window; 0 = point sample
	Delay   time.Duration // delay_s: the window ends this long before the update instant
	Tau     time.Duration // tau_s: first-order RC lag applied before the window; 0 = none
	Noise   units.Power   // noise_w: standard deviation of the Gaussian noise added per update
	Quantum units.Power   // quantum_w: resolution of published values (0.001 = NVML's mW); 0 = none
	Gain    float64       // gain: multiplies the (lagged, averaged) truth; 1 = no gain error
	Offset  units.Power   // offset_w: added after the gain

	// CI holds the 95 % interval of each parameter where a characterisation measured it;
	// a zero Interval is "not measured".
	CI Intervals
}

// Interval is a 95 % interval [Low, High] of one parameter, in the parameter's JSON unit
// (seconds for times, watts, or a factor). The zero Interval is absent.
type Interval struct{ Low, High float64 }

// Known reports whether the interval was measured.
func (i Interval) Known() bool { return i != Interval{} }

// Intervals are the 95 % intervals of a model's parameters (zero: not measured).
type Intervals struct {
	Period, Window, Delay, Tau, Gain, Offset, Noise Interval
}

// Kind is the shape of a sensor model.
type Kind uint8

// Kinds of sensor model.
const (
	// None: the readings are the power (a point sample of it, or an average over a window
	// much shorter than the changes of interest). Energy is their trapezoid integral.
	None Kind = iota
	// RC: a first-order lag (the K20's "capacitor", Burtscher et al.): the reading y obeys
	// tau·dy/dt = P − y, so P = y + tau·dy/dt.
	RC
	// Boxcar: each reading is the mean of the power over the Window that ends Delay before
	// it, published every Period. With Tau > 0 the window averages the power passed through
	// a first-order lag first (the H200's power.instant: a 25 ms window of the same 14 ms
	// low-pass that its power.samples read).
	Boxcar
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case RC:
		return "rc"
	case Boxcar:
		return "boxcar"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Kind is the shape of m: Boxcar with a window, RC with a lag and no window, else None.
func (m Model) Kind() Kind {
	switch {
	case m.Window > 0:
		return Boxcar
	case m.Tau > 0:
		return RC
	}
	return None
}

// GainOrOne is the gain, 1 where it was not given (0).
func (m Model) GainOrOne() float64 {
	if m.Gain == 0 {
		return 1
	}
	return m.Gain
}

// Shape is m without its error terms (noise, quantum, gain, offset, jitter, phase) and
// intervals: what an inversion needs.
func (m Model) Shape() Model {
	return Model{Period: m.Period, Window: m.Window, Delay: m.Delay, Tau: m.Tau}
}

// MaxSeconds bounds the times a model may give (about 11.6 days), so that they convert to
// Durations, and back, exactly.
const MaxSeconds = 1e6

// Seconds converts a number of seconds to a Duration, rounded to the nanosecond.
func Seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}

// Validate reports the first field of m that is out of range. A zero Period (unknown) is
// valid here.
func (m Model) Validate() error {
	if err := m.toJSON(false).finite(); err != nil {
		return err
	}
	switch {
	case m.Period < 0:
		return fmt.Errorf("period_s: want >= 0, got %s", formatFloat(m.Period.Seconds()))
	case m.Jitter < 0 || m.Jitter >= 0.5:
		return fmt.Errorf("jitter: want a fraction of the period in [0, 0.5), got %s", formatFloat(m.Jitter))
	case m.Window < 0:
		return fmt.Errorf("window_s: want >= 0, got %s", formatFloat(m.Window.Seconds()))
	case m.Delay < 0:
		return fmt.Errorf("delay_s: want >= 0, got %s", formatFloat(m.Delay.Seconds()))
	case m.Tau < 0:
		return fmt.Errorf("tau_s: want >= 0, got %s", formatFloat(m.Tau.Seconds()))
	case m.Noise < 0:
		return fmt.Errorf("noise_w: want >= 0, got %s", formatFloat(float64(m.Noise)))
	case m.Quantum < 0:
		return fmt.Errorf("quantum_w: want >= 0, got %s", formatFloat(float64(m.Quantum)))
	}
	return nil
}

// ValidateGenerating is Validate for a model that generates readings (the sim's): it needs
// a period.
func (m Model) ValidateGenerating() error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Period <= 0 {
		return fmt.Errorf("period_s: want > 0, got %s", formatFloat(m.Period.Seconds()))
	}
	return nil
}

// ValidateCounter is ValidateGenerating for an energy counter, which integrates the truth
// exactly: it has no window, lag or noise.
func (m Model) ValidateCounter() error {
	if err := m.ValidateGenerating(); err != nil {
		return err
	}
	switch {
	case m.Window != 0:
		return fmt.Errorf("window_s: an energy counter integrates; want 0")
	case m.Tau != 0:
		return fmt.Errorf("tau_s: an energy counter integrates; want 0")
	case m.Noise != 0:
		return fmt.Errorf("noise_w: an energy counter has no noise; want 0")
	}
	return nil
}

// Coverage is the share of the time that the readings see, at most 1: W/T for a boxcar;
// 2·tau/T for an RC lag read every T, since a first-order lag passes the noise of a boxcar
// of width 2·tau (equal noise bandwidth): read far apart, it weighs the last ~2·tau before
// each reading and all but ignores the time before that (the H200's power.instant, fitted
// as a 16.5 ms lag read every 101 ms, sees 33 %, as its 36 ms boxcar fit says). 1 for no
// model and for an unknown period (period <= 0).
func (m Model) Coverage(period time.Duration) float64 {
	var seen time.Duration
	switch {
	case period <= 0:
		return 1
	case m.Kind() == Boxcar:
		seen = m.Window
	case m.Kind() == RC:
		seen = 2 * m.Tau
	default:
		return 1
	}
	return min(1, float64(seen)/float64(period))
}

// Describe writes the model in a short human form, e.g.
// "T=100 ms, boxcar W=25 ms, gain 1.021, offset -1.2 W, noise 0.15 W, quantum 1 mW";
// unit is the channel's unit for noise, offset and quantum.
func (m Model) Describe(unit string) string {
	var parts []string
	p := fmt.Sprintf("T=%s", units.FormatDuration(m.Period, 6))
	if m.Jitter > 0 {
		p += fmt.Sprintf(" ±%s%% jitter", formatFloat(m.Jitter*100))
	}
	parts = append(parts, p)
	if m.Phase != 0 {
		parts = append(parts, "phase "+units.FormatDuration(m.Phase, 6))
	}
	if m.Tau > 0 {
		parts = append(parts, "RC lag tau="+units.FormatDuration(m.Tau, 6))
	}
	if m.Window > 0 {
		parts = append(parts, "boxcar W="+units.FormatDuration(m.Window, 6))
	} else {
		parts = append(parts, "point sample")
	}
	if m.Delay > 0 {
		parts = append(parts, "delay "+units.FormatDuration(m.Delay, 6))
	}
	parts = append(parts, "gain "+formatFloat(m.Gain))
	if m.Offset != 0 {
		parts = append(parts, "offset "+Quantity(float64(m.Offset), unit))
	}
	if m.Noise > 0 {
		parts = append(parts, "noise "+Quantity(float64(m.Noise), unit))
	}
	if m.Quantum > 0 {
		parts = append(parts, "quantum "+Quantity(float64(m.Quantum), unit))
	}
	return strings.Join(parts, ", ")
}

// DescribeCounter writes the model of an energy counter in a short human form, e.g.
// "published every 100 ms, gain 1.021, quantum 1 mJ".
func (m Model) DescribeCounter() string {
	s := fmt.Sprintf("published every %s", units.FormatDuration(m.Period, 6))
	if m.Jitter > 0 {
		s += fmt.Sprintf(" ±%s%% jitter", formatFloat(m.Jitter*100))
	}
	if m.Delay > 0 {
		s += ", delay " + units.FormatDuration(m.Delay, 6)
	}
	s += ", gain " + formatFloat(m.Gain)
	if m.Offset != 0 {
		s += ", offset " + m.Offset.String()
	}
	if m.Quantum > 0 {
		s += ", quantum " + units.Energy(m.Quantum).String()
	}
	return s
}

// Quantity formats v in unit: W, J and Hz with SI prefixes, any other unit as a plain number.
func Quantity(v float64, unit string) string {
	switch unit {
	case "W":
		return units.Power(v).String()
	case "J":
		return units.Energy(v).String()
	case "Hz":
		return units.Frequency(v).String()
	}
	return formatFloat(v) + " " + unit
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Quantise rounds v to a multiple of q (q <= 0: no rounding). For resolutions that are the
// inverse of an integer (1 mW, 1 mJ) it divides, so that values print cleanly.
func Quantise(v, q float64) float64 {
	if q <= 0 {
		return v
	}
	if q < 1 {
		inv := 1 / q
		if r := math.Round(inv); math.Abs(inv-r) < 1e-9*r {
			return math.Round(v*r) / r
		}
	}
	return math.Round(v/q) * q
}
