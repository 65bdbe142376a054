package sensormodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"gpuwatt/internal/units"
)

// field is one JSON key of a Model.
type field struct {
	key  string
	what string
	get  func(*Model) float64
	set  func(*Model, float64)
	ci   func(*Intervals) *Interval // nil: no interval
}

var fields = []field{
	{"period_s", "seconds", func(m *Model) float64 { return m.Period.Seconds() }, func(m *Model, v float64) { m.Period = Seconds(v) }, func(c *Intervals) *Interval { return &c.Period }},
	{"jitter", "fraction of the period", func(m *Model) float64 { return m.Jitter }, func(m *Model, v float64) { m.Jitter = v }, nil},
	{"phase_s", "seconds", func(m *Model) float64 { return m.Phase.Seconds() }, func(m *Model, v float64) { m.Phase = Seconds(v) }, nil},
	{"window_s", "seconds", func(m *Model) float64 { return m.Window.Seconds() }, func(m *Model, v float64) { m.Window = Seconds(v) }, func(c *Intervals) *Interval { return &c.Window }},
	{"delay_s", "seconds", func(m *Model) float64 { return m.Delay.Seconds() }, func(m *Model, v float64) { m.Delay = Seconds(v) }, func(c *Intervals) *Interval { return &c.Delay }},
	{"tau_s", "seconds", func(m *Model) float64 { return m.Tau.Seconds() }, func(m *Model, v float64) { m.Tau = Seconds(v) }, func(c *Intervals) *Interval { return &c.Tau }},
	{"noise_w", "watts", func(m *Model) float64 { return float64(m.Noise) }, func(m *Model, v float64) { m.Noise = units.Power(v) }, func(c *Intervals) *Interval { return &c.Noise }},
	{"quantum_w", "watts", func(m *Model) float64 { return float64(m.Quantum) }, func(m *Model, v float64) { m.Quantum = units.Power(v) }, nil},
	{"gain", "a factor", func(m *Model) float64 { return m.Gain }, func(m *Model, v float64) { m.Gain = v }, func(c *Intervals) *Interval { return &c.Gain }},
	{"offset_w", "watts", func(m *Model) float64 { return float64(m.Offset) }, func(m *Model, v float64) { m.Offset = units.Power(v) }, func(c *Intervals) *Interval { return &c.Offset }},
}

// Keys returns the JSON keys of a Model's parameters in their documented order. A model's
// JSON object may also hold "model" (its kind: none, rc or boxcar, checked against the
// parameters) and "ci" (the 95 % intervals: {"tau_s": [low, high], ...}).
func Keys() []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

func lookup(key string) (field, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// IntervalKeys lists the keys whose parameter may carry an interval.
func IntervalKeys() []string {
	var keys []string
	for _, f := range fields {
		if f.ci != nil {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// Map returns the known intervals by parameter key (nil when none is known).
func (c Intervals) Map() map[string][2]float64 {
	var out map[string][2]float64
	for _, f := range fields {
		if f.ci == nil {
			continue
		}
		if iv := *f.ci(&c); iv.Known() {
			if out == nil {
				out = map[string][2]float64{}
			}
			out[f.key] = [2]float64{iv.Low, iv.High}
		}
	}
	return out
}

// Set sets the interval of the parameter named by its JSON key.
func (c *Intervals) Set(key string, low, high float64) error {
	f, ok := lookup(key)
	if !ok || f.ci == nil {
		return fmt.Errorf("ci: unknown key %q (want one of %s)", key, strings.Join(IntervalKeys(), ", "))
	}
	if math.IsNaN(low) || math.IsNaN(high) || math.IsInf(low, 0) || math.IsInf(high, 0) || low > high {
		return fmt.Errorf("ci: %s: want [low, high] with low <= high, got [%s, %s]", key, formatFloat(low), formatFloat(high))
	}
	*f.ci(c) = Interval{low, high}
	return nil
}

// MarshalJSON writes every parameter of m, in the documented order, with SI values, and
// "ci" when an interval is known.
func (m Model) MarshalJSON() ([]byte, error) {
	return m.appendJSON(nil, false), nil
}

// MarshalCompact writes m as a sensor.json entry does: "model" (the kind) first, then only
// the parameters that are not zero, and "ci" when an interval is known.
func (m Model) MarshalCompact() []byte {
	return m.appendJSON(nil, true)
}

func (m Model) appendJSON(dst []byte, compact bool) []byte {
	b := bytes.NewBuffer(dst)
	b.WriteByte('{')
	n := 0
	if compact {
		fmt.Fprintf(b, "%q:%q", "model", m.Kind().String())
		n++
	}
	for _, f := range fields {
		v := f.get(&m)
		if compact && v == 0 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(b, "%q:%s", f.key, formatFloat(v))
	}
	if ci := m.CI.Map(); ci != nil {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"ci":{`)
		i := 0
		for _, f := range fields {
			iv, ok := ci[f.key]
			if !ok {
				continue
			}
			if i > 0 {
				b.WriteByte(',')
			}
			i++
			fmt.Fprintf(b, "%q:[%s,%s]", f.key, formatFloat(iv[0]), formatFloat(iv[1]))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// UnmarshalJSON overrides the fields of m named in the JSON object and leaves the others
// as they are, so a partial object overrides a preset. An unknown key is an error naming
// it. A "model" key (none, rc, boxcar) must agree with the parameters the object leaves.
func (m *Model) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return fmt.Errorf("want an object of %s", strings.Join(Keys(), ", "))
	}
	// Report the first unknown key in document order.
	for _, k := range objectKeyOrder(data) {
		if _, ok := lookup(k); !ok && k != "model" && k != "ci" {
			return fmt.Errorf("unknown key %q (want one of %s)", k, strings.Join(Keys(), ", "))
		}
	}
	next := *m
	for _, f := range fields {
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
	if v, ok := raw["ci"]; ok {
		var ci map[string][2]float64
		if err := json.Unmarshal(v, &ci); err != nil {
			return fmt.Errorf(`ci: want an object of [low, high] pairs, e.g. {"tau_s": [0.012, 0.016]}, got %s`, bytes.TrimSpace(v))
		}
		keys := make([]string, 0, len(ci))
		for k := range ci {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		next.CI = Intervals{}
		for _, k := range keys {
			if err := next.CI.Set(k, ci[k][0], ci[k][1]); err != nil {
				return err
			}
		}
	}
	if v, ok := raw["model"]; ok {
		var kind string
		if err := json.Unmarshal(v, &kind); err != nil {
			return fmt.Errorf(`model: want "none", "rc" or "boxcar", got %s`, bytes.TrimSpace(v))
		}
		if err := checkKind(kind, next); err != nil {
			return err
		}
	}
	*m = next
	return nil
}

// checkKind reports whether the kind named in a JSON object agrees with the parameters.
func checkKind(kind string, m Model) error {
	switch kind {
	case "none":
		if m.Tau != 0 || m.Window != 0 {
			return fmt.Errorf(`model "none" takes no tau_s or window_s`)
		}
	case "rc":
		if m.Window != 0 {
			return fmt.Errorf(`model "rc" takes tau_s, not window_s`)
		}
		if m.Tau <= 0 {
			return fmt.Errorf(`model "rc" needs tau_s > 0`)
		}
	case "boxcar":
		if m.Window <= 0 {
			return fmt.Errorf(`model "boxcar" needs window_s > 0`)
		}
	case "":
		return fmt.Errorf(`no "model": want "none", "rc" or "boxcar"`)
	default:
		return fmt.Errorf(`model %q: want "none", "rc" or "boxcar"`, kind)
	}
	return nil
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
