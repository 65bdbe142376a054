// Package simsensor models the sensors of a GPU whose true power is known: the sim device's
// channels are the true power passed through a Model (update period, boxcar window, delay,
// first-order RC lag, noise, quantisation, gain and offset), evaluated exactly and lazily.
//
// The truth is a piecewise-constant Load. Because the input is piecewise constant, the RC
// lag and the boxcar mean of the lagged signal have closed forms, so every published value
// is exact (no time stepping), deterministic (noise and jitter come from a hash of the seed,
// the channel and the update index) and costs O(log n) in the number of load segments.
// Nothing here knows about GPUs, kernels or commands.
package simsensor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gpuwatt/internal/units"
)

// Model is how one channel turns the true signal into published values.
//
// The value published at update k is
//
//	quantise(Gain * mean over [t_k - Delay - Window, t_k - Delay] of lag(P) + Offset + Noise*z_k)
//
// where t_k = Phase + k*Period (+ a uniform jitter of at most ±Jitter*Period), lag is a
// first-order RC low-pass with time constant Tau (identity when Tau is 0), a zero Window is
// a point sample at t_k - Delay, z_k is a standard normal draw fixed by (seed, channel, k),
// and quantise rounds to a multiple of Quantum. Values below zero are published as zero.
// Between updates the last value is repeated.
//
// For channels other than power, the fields named in watts are in the channel's own unit
// (Hz, degC, %...), and Gain converts the truth into that unit.
type Model struct {
	Period  time.Duration // period_s: time between updates (> 0)
	Jitter  float64       // jitter: uniform jitter of each update instant, ± this fraction of Period, in [0, 0.5)
	Phase   time.Duration // phase_s: t_0 on the clock axis
	Window  time.Duration // window_s: boxcar averaging window; 0 = point sample
	Delay   time.Duration // delay_s: the window ends this long before the update instant
	Tau     time.Duration // tau_s: first-order RC lag applied before the window; 0 = none
	Noise   units.Power   // noise_w: standard deviation of the Gaussian noise added per update
	Quantum units.Power   // quantum_w: resolution of published values (0.001 = NVML's mW); 0 = none
	Gain    float64       // gain: multiplies the (lagged, averaged) truth; 1 = no gain error
	Offset  units.Power   // offset_w: added after the gain
}

// modelField is one JSON key of a Model.
type modelField struct {
	key  string
	what string
	get  func(*Model) float64
	set  func(*Model, float64)
}

var modelFields = []modelField{
	{"period_s", "seconds between updates", func(m *Model) float64 { return m.Period.Seconds() }, func(m *Model, v float64) { m.Period = Seconds(v) }},
	{"jitter", "fraction of the period", func(m *Model) float64 { return m.Jitter }, func(m *Model, v float64) { m.Jitter = v }},
	{"phase_s", "seconds", func(m *Model) float64 { return m.Phase.Seconds() }, func(m *Model, v float64) { m.Phase = Seconds(v) }},
	{"window_s", "seconds", func(m *Model) float64 { return m.Window.Seconds() }, func(m *Model, v float64) { m.Window = Seconds(v) }},
	{"delay_s", "seconds", func(m *Model) float64 { return m.Delay.Seconds() }, func(m *Model, v float64) { m.Delay = Seconds(v) }},
	{"tau_s", "seconds", func(m *Model) float64 { return m.Tau.Seconds() }, func(m *Model, v float64) { m.Tau = Seconds(v) }},
	{"noise_w", "watts", func(m *Model) float64 { return float64(m.Noise) }, func(m *Model, v float64) { m.Noise = units.Power(v) }},
	{"quantum_w", "watts", func(m *Model) float64 { return float64(m.Quantum) }, func(m *Model, v float64) { m.Quantum = units.Power(v) }},
	{"gain", "a factor", func(m *Model) float64 { return m.Gain }, func(m *Model, v float64) { m.Gain = v }},
	{"offset_w", "watts", func(m *Model) float64 { return float64(m.Offset) }, func(m *Model, v float64) { m.Offset = units.Power(v) }},
}

// ModelKeys returns the JSON keys of a Model in their documented order.
func ModelKeys() []string {
	keys := make([]string, len(modelFields))
	for i, f := range modelFields {
		keys[i] = f.key
	}
	return keys
}

// MaxSeconds bounds the times a JSON model or config may give (about 11.6 days), so that
// they convert to Durations, and back, exactly.
const MaxSeconds = 1e6

// Seconds converts a number of seconds to a Duration, rounded to the nanosecond.
func Seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}

// MarshalJSON writes every key of m, in the documented order, with SI values.
func (m Model) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range modelFields {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", f.key, formatFloat(f.get(&m)))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON overrides the fields of m named in the JSON object and leaves the others
// as they are, so a partial object overrides a preset. An unknown key is an error naming it.
func (m *Model) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return fmt.Errorf("want an object of %s", strings.Join(ModelKeys(), ", "))
	}
	// Report the first unknown key in document order.
	for _, k := range objectKeyOrder(data) {
		if _, ok := lookupField(k); !ok {
			return fmt.Errorf("unknown key %q (want one of %s)", k, strings.Join(ModelKeys(), ", "))
		}
	}
	next := *m
	for _, f := range modelFields {
		v, ok := raw[f.key]
		if !ok {
			continue
		}
		var x float64
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("%s: want a number (%s), got %s", f.key, f.what, bytes.TrimSpace(v))
		}
		if f.what == "seconds" && math.Abs(x) > MaxSeconds {
			return fmt.Errorf("%s: want at most %g seconds, got %s", f.key, MaxSeconds, bytes.TrimSpace(v))
		}
		f.set(&next, x)
	}
	*m = next
	return nil
}

func lookupField(key string) (modelField, bool) {
	for _, f := range modelFields {
		if f.key == key {
			return f, true
		}
	}
	return modelField{}, false
}

// objectKeyOrder returns the keys of a JSON object in document order (nil if data is not
// an object).
func objectKeyOrder(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Validate reports the first field of m that is out of range.
func (m Model) Validate() error {
	for _, f := range modelFields {
		if v := f.get(&m); math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: not a finite number", f.key)
		}
	}
	switch {
	case m.Period <= 0:
		return fmt.Errorf("period_s: want > 0, got %s", formatFloat(m.Period.Seconds()))
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

// ValidateCounter is Validate for an energy counter, which integrates the truth exactly:
// it has no window, lag or noise.
func (m Model) ValidateCounter() error {
	if err := m.Validate(); err != nil {
		return err
	}
	switch {
	case m.Window != 0:
		return errors.New("window_s: an energy counter integrates; want 0")
	case m.Tau != 0:
		return errors.New("tau_s: an energy counter integrates; want 0")
	case m.Noise != 0:
		return errors.New("noise_w: an energy counter has no noise; want 0")
	}
	return nil
}

// Describe writes the model in a short human form, e.g.
// "T=100 ms, boxcar W=25 ms, gain 1.021, offset -1.2 W, noise 0.15 W, quantum 1 mW";
// unit is the channel's unit for noise, offset and quantum.
func (m Model) Describe(unit string) string {
	var parts []string
	p := fmt.Sprintf("T=%s", dur(m.Period))
	if m.Jitter > 0 {
		p += fmt.Sprintf(" ±%s%% jitter", formatFloat(m.Jitter*100))
	}
	parts = append(parts, p)
	if m.Phase != 0 {
		parts = append(parts, "phase "+dur(m.Phase))
	}
	if m.Tau > 0 {
		parts = append(parts, "RC lag tau="+dur(m.Tau))
	}
	if m.Window > 0 {
		parts = append(parts, "boxcar W="+dur(m.Window))
	} else {
		parts = append(parts, "point sample")
	}
	if m.Delay > 0 {
		parts = append(parts, "delay "+dur(m.Delay))
	}
	parts = append(parts, "gain "+formatFloat(m.Gain))
	if m.Offset != 0 {
		parts = append(parts, "offset "+quantity(float64(m.Offset), unit))
	}
	if m.Noise > 0 {
		parts = append(parts, "noise "+quantity(float64(m.Noise), unit))
	}
	if m.Quantum > 0 {
		parts = append(parts, "quantum "+quantity(float64(m.Quantum), unit))
	}
	return strings.Join(parts, ", ")
}

func dur(d time.Duration) string {
	s := d.Seconds()
	if s != 0 && math.Abs(s) < 1 {
		return strconv.FormatFloat(s*1e3, 'g', 6, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'g', 6, 64) + " s"
}

func quantity(v float64, unit string) string {
	if unit == "W" {
		return units.Power(v).String()
	}
	if unit == "J" {
		return units.Energy(v).String()
	}
	if unit == "Hz" {
		return units.Frequency(v).String()
	}
	return formatFloat(v) + " " + unit
}

// quantise rounds v to a multiple of q (q <= 0: no rounding). For resolutions that are the
// inverse of an integer (1 mW, 1 mJ) it divides, so that values print cleanly.
func quantise(v, q float64) float64 {
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
