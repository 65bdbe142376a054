package sensormodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// modelJSON is a Model's JSON object: plain fields in SI units, in the documented order.
// Pointers let a partial object override only what it names (a preset's model in
// --sim-config); a nil field is absent.
type modelJSON struct {
	Model   *string  `json:"model,omitempty"` // the kind: none, rc or boxcar, checked against the parameters
	Period  *float64 `json:"period_s,omitempty"`
	Jitter  *float64 `json:"jitter,omitempty"` // fraction of the period
	Phase   *float64 `json:"phase_s,omitempty"`
	Window  *float64 `json:"window_s,omitempty"`
	Delay   *float64 `json:"delay_s,omitempty"`
	Tau     *float64 `json:"tau_s,omitempty"`
	Noise   *float64 `json:"noise_w,omitempty"`
	Quantum *float64 `json:"quantum_w,omitempty"`
	Gain    *float64 `json:"gain,omitempty"` // a factor
	Offset  *float64 `json:"offset_w,omitempty"`
	CI      *ciJSON  `json:"ci,omitempty"`
}

// ciJSON holds the 95 % intervals, [low, high] in the parameter's unit.
type ciJSON struct {
	Period *[2]float64 `json:"period_s,omitempty"`
	Window *[2]float64 `json:"window_s,omitempty"`
	Delay  *[2]float64 `json:"delay_s,omitempty"`
	Tau    *[2]float64 `json:"tau_s,omitempty"`
	Noise  *[2]float64 `json:"noise_w,omitempty"`
	Gain   *[2]float64 `json:"gain,omitempty"`
	Offset *[2]float64 `json:"offset_w,omitempty"`
}

// intervals pairs each of ciJSON's fields with the Interval it holds.
func (c *Intervals) pairs(j *ciJSON) []struct {
	key string
	js  **[2]float64
	iv  *Interval
} {
	return []struct {
		key string
		js  **[2]float64
		iv  *Interval
	}{
		{"period_s", &j.Period, &c.Period}, {"window_s", &j.Window, &c.Window}, {"delay_s", &j.Delay, &c.Delay},
		{"tau_s", &j.Tau, &c.Tau}, {"noise_w", &j.Noise, &c.Noise}, {"gain", &j.Gain, &c.Gain}, {"offset_w", &j.Offset, &c.Offset},
	}
}

// finite reports the first parameter that is not a finite number, or a time beyond
// MaxSeconds.
func (j modelJSON) finite() error {
	v := reflect.ValueOf(j)
	keys := jsonKeys(j)
	for i, k := range keys {
		p, ok := v.Field(i).Interface().(*float64)
		if !ok || p == nil {
			continue
		}
		switch {
		case math.IsNaN(*p) || math.IsInf(*p, 0):
			return fmt.Errorf("%s: not a finite number", k)
		case strings.HasSuffix(k, "_s") && math.Abs(*p) > MaxSeconds:
			return fmt.Errorf("%s: want at most %g seconds, got %s", k, MaxSeconds, formatFloat(*p))
		}
	}
	return nil
}

// jsonKeys returns the JSON keys of a struct type's fields, in order.
func jsonKeys(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, k)
	}
	return keys
}

// Keys returns the JSON keys of a Model's parameters in their documented order. A model's
// JSON object may also hold "model" (its kind: none, rc or boxcar, checked against the
// parameters) and "ci" (the 95 % intervals: {"tau_s": [low, high], ...}).
func Keys() []string {
	var keys []string
	for _, k := range jsonKeys(modelJSON{}) {
		if k != "model" && k != "ci" {
			keys = append(keys, k)
		}
	}
	return keys
}

// IntervalKeys lists the keys whose parameter may carry an interval.
func IntervalKeys() []string { return jsonKeys(ciJSON{}) }

// Map returns the known intervals by parameter key (nil when none is known).
func (c Intervals) Map() map[string][2]float64 {
	var out map[string][2]float64
	for _, p := range c.pairs(&ciJSON{}) {
		if p.iv.Known() {
			if out == nil {
				out = map[string][2]float64{}
			}
			out[p.key] = [2]float64{p.iv.Low, p.iv.High}
		}
	}
	return out
}

// Set sets the interval of the parameter named by its JSON key.
func (c *Intervals) Set(key string, low, high float64) error {
	for _, p := range c.pairs(&ciJSON{}) {
		if p.key != key {
			continue
		}
		if math.IsNaN(low) || math.IsNaN(high) || math.IsInf(low, 0) || math.IsInf(high, 0) || low > high {
			return fmt.Errorf("ci: %s: want [low, high] with low <= high, got [%s, %s]", key, formatFloat(low), formatFloat(high))
		}
		*p.iv = Interval{low, high}
		return nil
	}
	return fmt.Errorf("ci: unknown key %q (want one of %s)", key, strings.Join(IntervalKeys(), ", "))
}

// toJSON fills the JSON object of m: every parameter, or (compact) the kind and only the
// parameters that are not zero; "ci" when an interval is known.
func (m Model) toJSON(compact bool) modelJSON {
	num := func(v float64) *float64 {
		if compact && v == 0 {
			return nil
		}
		return &v
	}
	j := modelJSON{
		Period: num(m.Period.Seconds()), Jitter: num(m.Jitter), Phase: num(m.Phase.Seconds()),
		Window: num(m.Window.Seconds()), Delay: num(m.Delay.Seconds()), Tau: num(m.Tau.Seconds()),
		Noise: num(float64(m.Noise)), Quantum: num(float64(m.Quantum)), Gain: num(m.Gain), Offset: num(float64(m.Offset)),
	}
	if compact {
		kind := m.Kind().String()
		j.Model = &kind
	}
	var ci ciJSON
	known := false
	for _, p := range m.CI.pairs(&ci) {
		if p.iv.Known() {
			*p.js = &[2]float64{p.iv.Low, p.iv.High}
			known = true
		}
	}
	if known {
		j.CI = &ci
	}
	return j
}

// MarshalJSON writes every parameter of m, in the documented order, with SI values, and
// "ci" when an interval is known.
func (m Model) MarshalJSON() ([]byte, error) {
	return json.Marshal(m.toJSON(false))
}

// MarshalCompact writes m as a sensor.json entry does: "model" (the kind) first, then only
// the parameters that are not zero, and "ci" when an interval is known.
func (m Model) MarshalCompact() []byte {
	b, err := json.Marshal(m.toJSON(true))
	if err != nil {
		panic(err) // plain numbers and strings: cannot fail
	}
	return b
}

// UnmarshalJSON overrides the fields of m named in the JSON object and leaves the others
// as they are, so a partial object overrides a preset. An unknown key (spelt other than
// exactly as documented) is an error naming it. A "model" key (none, rc, boxcar) must
// agree with the parameters the object leaves.
func (m *Model) UnmarshalJSON(data []byte) error {
	var j modelJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	keys, isObject := objectKeyOrder(data)
	if !isObject {
		return fmt.Errorf("want an object of %s", strings.Join(Keys(), ", "))
	}
	// encoding/json matches keys regardless of case: hold them to their exact spelling.
	known := jsonKeys(modelJSON{})
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return fmt.Errorf("unknown key %q (want one of %s)", k, strings.Join(Keys(), ", "))
		}
	}
	ciKeys, _ := objectKeyOrder(ciRaw(data))
	for _, k := range ciKeys {
		if !slices.Contains(IntervalKeys(), k) {
			return fmt.Errorf("ci: unknown key %q (want one of %s)", k, strings.Join(IntervalKeys(), ", "))
		}
	}
	if err := dec.Decode(&j); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if strings.HasPrefix(field, "ci") {
				return fmt.Errorf(`ci: want an object of [low, high] pairs, e.g. {"tau_s": [0.012, 0.016]}: %s`, field)
			}
			if field == "model" {
				return fmt.Errorf(`model: want "none", "rc" or "boxcar", got a %s`, te.Value)
			}
			return fmt.Errorf("%s: want a number, got a %s", field, te.Value)
		}
		return fmt.Errorf("not a model object: %v", err)
	}
	next := *m
	secs := func(key string, v *float64, dst *time.Duration) error {
		if v == nil {
			return nil
		}
		if math.Abs(*v) > MaxSeconds {
			return fmt.Errorf("%s: want at most %g seconds, got %s", key, MaxSeconds, formatFloat(*v))
		}
		*dst = Seconds(*v)
		return nil
	}
	for _, f := range []struct {
		key string
		v   *float64
		dst *time.Duration
	}{{"period_s", j.Period, &next.Period}, {"phase_s", j.Phase, &next.Phase}, {"window_s", j.Window, &next.Window},
		{"delay_s", j.Delay, &next.Delay}, {"tau_s", j.Tau, &next.Tau}} {
		if err := secs(f.key, f.v, f.dst); err != nil {
			return err
		}
	}
	set := func(v *float64, dst *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(j.Jitter, &next.Jitter)
	set(j.Gain, &next.Gain)
	for _, w := range []struct {
		v   *float64
		dst *units.Power
	}{{j.Noise, &next.Noise}, {j.Quantum, &next.Quantum}, {j.Offset, &next.Offset}} {
		if w.v != nil {
			*w.dst = units.Power(*w.v)
		}
	}
	if j.CI != nil {
		next.CI = Intervals{}
		for _, p := range next.CI.pairs(j.CI) {
			if *p.js != nil {
				if err := next.CI.Set(p.key, (*p.js)[0], (*p.js)[1]); err != nil {
					return err
				}
			}
		}
	}
	if j.Model != nil {
		if err := checkKind(*j.Model, next); err != nil {
			return err
		}
	}
	*m = next
	return nil
}

// ciRaw returns the raw "ci" member of a JSON object (nil if absent).
func ciRaw(data []byte) []byte {
	var raw struct {
		CI json.RawMessage `json:"ci"`
	}
	_ = json.Unmarshal(data, &raw)
	return raw.CI
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

// objectKeyOrder returns the keys of a JSON object in document order, and whether data
// is an object at all.
func objectKeyOrder(data []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys, true
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys, true
		}
	}
	return keys, true
}
