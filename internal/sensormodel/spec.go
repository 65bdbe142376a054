package sensormodel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxDuration bounds every time in a spec or a sensor.json (an hour: far beyond any
// sensor's window).
const MaxDuration = time.Hour

// Parse parses a model spec:
//
//	none
//	rc:tau=D[,period=D][,delay=D]
//	boxcar:window=D[,tau=D][,period=D][,delay=D]
//
// where D is a duration with its unit (0.84s, 25ms, 1s). Keys may come in any order, each
// at most once. "auto" and sensor.json paths are correct.ParseSpec's: they need the trace.
func Parse(spec string) (Model, error) {
	s := strings.TrimSpace(spec)
	name, params, hasParams := strings.Cut(s, ":")
	var m Model
	var kind Kind
	switch strings.ToLower(name) {
	case "none":
		if hasParams {
			return Model{}, fmt.Errorf("sensor model %q: none takes no parameters", spec)
		}
		return Model{}, nil
	case "rc":
		kind = RC
	case "boxcar":
		kind = Boxcar
	default:
		return Model{}, fmt.Errorf("unknown sensor model %q: %s", spec, SpecForms)
	}
	required := "tau"
	if kind == Boxcar {
		required = "window"
	}
	if !hasParams || strings.TrimSpace(params) == "" {
		return Model{}, fmt.Errorf("sensor model %q: %s needs %s=DURATION (e.g. %s)", spec, kind, required, example(kind))
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		key, val, ok := strings.Cut(kv, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !ok || key == "" {
			return Model{}, fmt.Errorf("sensor model %q: parameter %q is not KEY=DURATION (e.g. %s)", spec, strings.TrimSpace(kv), example(kind))
		}
		var dst *time.Duration
		switch {
		case key == "tau":
			dst = &m.Tau
		case key == "window" && kind == Boxcar:
			dst = &m.Window
		case key == "period":
			dst = &m.Period
		case key == "delay":
			dst = &m.Delay
		default:
			return Model{}, fmt.Errorf("sensor model %q: unknown parameter %q for %s (want %s, tau, period, delay)", spec, key, kind, required)
		}
		if seen[key] {
			return Model{}, fmt.Errorf("sensor model %q: %s given twice", spec, key)
		}
		seen[key] = true
		d, err := parseDuration(val)
		if err != nil {
			return Model{}, fmt.Errorf("sensor model %q: %s=%s: %v", spec, key, val, err)
		}
		*dst = d
	}
	if !seen[required] {
		return Model{}, fmt.Errorf("sensor model %q: %s needs %s=DURATION (e.g. %s)", spec, kind, required, example(kind))
	}
	if err := m.validateSpec(kind); err != nil {
		return Model{}, fmt.Errorf("sensor model %q: %v", spec, err)
	}
	if seen["period"] && m.Period == 0 {
		// An update period of 0 means "unknown" inside a Model: given, it must be one.
		return Model{}, fmt.Errorf("sensor model %q: period=0s: want > 0 (leave period out when it is not known)", spec)
	}
	return m, nil
}

// SpecForms lists the forms a --sensor value takes, for error messages.
const SpecForms = "want none, auto, rc:tau=DURATION, boxcar:window=DURATION[,period=DURATION][,delay=DURATION], or a sensor.json file"

func example(k Kind) string {
	if k == RC {
		return "rc:tau=0.84s"
	}
	return "boxcar:window=25ms,period=100ms"
}

// parseDuration reads a duration that must carry a unit: a bare number is an error.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("want a duration with a unit, such as 25ms")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			return 0, fmt.Errorf("want a duration with a unit (%ss or %sms), got a bare number", s, s)
		}
		return 0, errors.New("want a duration with a unit, such as 25ms")
	}
	return d, nil
}

// validateSpec reports the first parameter of a spec that is out of range for kind k.
func (m Model) validateSpec(k Kind) error {
	check := func(name string, d time.Duration, positive bool) error {
		switch {
		case positive && d <= 0:
			return fmt.Errorf("%s=%v: want > 0", name, d)
		case d < 0:
			return fmt.Errorf("%s=%v: want >= 0", name, d)
		case d > MaxDuration:
			return fmt.Errorf("%s=%v: want at most %v", name, d, MaxDuration)
		}
		return nil
	}
	switch k {
	case None:
		if m.Tau != 0 || m.Window != 0 {
			return errors.New("none has no tau or window")
		}
	case RC:
		if m.Window != 0 {
			return errors.New("rc has no window")
		}
		if err := check("tau", m.Tau, true); err != nil {
			return err
		}
	case Boxcar:
		if err := check("window", m.Window, true); err != nil {
			return err
		}
		if err := check("tau", m.Tau, false); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown kind %d", int(k))
	}
	if err := check("period", m.Period, false); err != nil {
		return err
	}
	return check("delay", m.Delay, false)
}

// String returns the spec (none, rc:..., boxcar:...; the error terms and intervals are not
// written) that Parse reads back as m.
func (m Model) String() string {
	var b strings.Builder
	b.WriteString(m.Kind().String())
	sep := byte(':')
	add := func(k string, d time.Duration) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(d.String())
	}
	switch m.Kind() {
	case None:
		// period and delay mean nothing without a model: not written.
		return b.String()
	case RC:
		add("tau", m.Tau)
	case Boxcar:
		add("window", m.Window)
		if m.Tau > 0 {
			add("tau", m.Tau)
		}
	}
	if m.Period > 0 {
		add("period", m.Period)
	}
	if m.Delay > 0 {
		add("delay", m.Delay)
	}
	return b.String()
}
