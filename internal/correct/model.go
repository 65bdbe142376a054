package correct

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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

// Model is a power sensor's model: what the readings of one channel are, as a function of
// the true power. Energy inverts it. The zero Model is None.
type Model struct {
	Kind Kind
	// Tau is the RC time constant (RC: > 0; Boxcar: >= 0, a lag before the window).
	Tau time.Duration
	// Window is the boxcar's averaging window (Boxcar only; > 0).
	Window time.Duration
	// Period is the update period T; 0 means unknown (Energy then learns it from the
	// readings, or takes the trace's figure). It decides whether a boxcar covers all of the
	// time (Window >= Period) or only part of it, and the warnings.
	Period time.Duration
	// Delay is how long before its timestamp the window of a reading ends (Boxcar), or the
	// lagged power was sampled (RC); >= 0.
	Delay time.Duration
}

// MaxDuration bounds every time in a model (an hour: far beyond any sensor's window).
const MaxDuration = time.Hour

// ParseModel parses a model spec:
//
//	none
//	rc:tau=D[,period=D][,delay=D]
//	boxcar:window=D[,tau=D][,period=D][,delay=D]
//
// where D is a duration with its unit (0.84s, 25ms, 1s). Keys may come in any order, each
// at most once. "auto" and sensor.json paths are ParseSpec's: they need the trace.
func ParseModel(spec string) (Model, error) {
	s := strings.TrimSpace(spec)
	kind, params, hasParams := strings.Cut(s, ":")
	var m Model
	switch strings.ToLower(kind) {
	case "none":
		if hasParams {
			return Model{}, fmt.Errorf("sensor model %q: none takes no parameters", spec)
		}
		return Model{}, nil
	case "rc":
		m.Kind = RC
	case "boxcar":
		m.Kind = Boxcar
	default:
		return Model{}, fmt.Errorf("unknown sensor model %q: %s", spec, specForms)
	}
	required := "tau"
	if m.Kind == Boxcar {
		required = "window"
	}
	if !hasParams || strings.TrimSpace(params) == "" {
		return Model{}, fmt.Errorf("sensor model %q: %s needs %s=DURATION (e.g. %s)", spec, m.Kind, required, example(m.Kind))
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		key, val, ok := strings.Cut(kv, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !ok || key == "" {
			return Model{}, fmt.Errorf("sensor model %q: parameter %q is not KEY=DURATION (e.g. %s)", spec, strings.TrimSpace(kv), example(m.Kind))
		}
		var dst *time.Duration
		switch {
		case key == "tau":
			dst = &m.Tau
		case key == "window" && m.Kind == Boxcar:
			dst = &m.Window
		case key == "period":
			dst = &m.Period
		case key == "delay":
			dst = &m.Delay
		default:
			return Model{}, fmt.Errorf("sensor model %q: unknown parameter %q for %s (want %s, tau, period, delay)", spec, key, m.Kind, required)
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
		return Model{}, fmt.Errorf("sensor model %q: %s needs %s=DURATION (e.g. %s)", spec, m.Kind, required, example(m.Kind))
	}
	if err := m.Validate(); err != nil {
		return Model{}, fmt.Errorf("sensor model %q: %v", spec, err)
	}
	return m, nil
}

const specForms = "want none, auto, rc:tau=DURATION, boxcar:window=DURATION[,period=DURATION][,delay=DURATION], or a sensor.json file"

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

// Validate reports the first parameter of m that is out of range.
func (m Model) Validate() error {
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
	switch m.Kind {
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
		return fmt.Errorf("unknown kind %d", int(m.Kind))
	}
	if err := check("period", m.Period, false); err != nil {
		return err
	}
	return check("delay", m.Delay, false)
}

// String returns the spec that ParseModel reads back as m.
func (m Model) String() string {
	var b strings.Builder
	b.WriteString(m.Kind.String())
	sep := byte(':')
	add := func(k string, d time.Duration) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(d.String())
	}
	switch m.Kind {
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

// dense reports whether a boxcar's windows overlap enough to be deconvolved: W >= 1.5 T.
// Below that (W close to T, or W < T) each reading stands for its own period.
func (m Model) dense(period time.Duration) bool {
	return m.Kind == Boxcar && period > 0 && 2*m.Window >= 3*period
}

// shortLag reports whether an RC lag is short against the update period (tau < rcShort·T,
// the H200's power.samples: 14 ms read every 20 ms): too few readings lie within reach of a
// region's end to fit the lag there, and regions are inverted interval by interval, with
// their edges as breakpoints of the power.
func (m Model) shortLag(period time.Duration) bool {
	return m.Kind == RC && period > 0 && m.Tau < rcShort*period
}

// Coverage is the share of the time that the readings see, at most 1: W/T for a boxcar;
// 2·tau/T for an RC lag read every T, since a first-order lag passes the noise of a boxcar
// of width 2·tau (equal noise bandwidth): read far apart, it weighs the last ~2·tau before
// each reading and all but ignores the time before that (the H200's power.instant, fitted
// as a 16.5 ms lag read every 101 ms, sees 33 %, as its 36 ms boxcar fit says). 1 for no
// model and for an unknown period.
func (m Model) Coverage(period time.Duration) float64 {
	var seen time.Duration
	switch {
	case period <= 0:
		return 1
	case m.Kind == Boxcar:
		seen = m.Window
	case m.Kind == RC:
		seen = 2 * m.Tau
	default:
		return 1
	}
	return min(1, float64(seen)/float64(period))
}

// seenAs says what the readings see, for a coverage warning: "a 25 ms window every 100 ms".
func (m Model) seenAs(period time.Duration) string {
	if m.Kind == RC {
		return fmt.Sprintf("a lag of tau=%s read every %s", fmtDur(m.Tau), fmtDur(period))
	}
	return fmt.Sprintf("a %s window every %s", fmtDur(m.Window), fmtDur(period))
}

// Method says in one line how Energy inverts m, given the update period in use.
func (m Model) Method(period time.Duration) string {
	switch m.Kind {
	case RC:
		if m.shortLag(period) {
			return fmt.Sprintf("RC lag tau=%s inverted interval by interval: the power constant between readings, split at the region's edges (over the whole trace: ∫reading + tau·Δreading)", fmtDur(m.Tau))
		}
		return fmt.Sprintf("RC lag tau=%s inverted: ∫P = ∫reading + tau·(reading(b) − reading(a)), the ends fitted to the lag's step response", fmtDur(m.Tau))
	case Boxcar:
		switch {
		case m.dense(period):
			return fmt.Sprintf("boxcar W=%s deconvolved: E[a,b] = W·(r(b) − r(a)) + E[a−W, b−W], until the readings are steady", fmtDur(m.Window))
		case m.Coverage(period) < 1:
			return fmt.Sprintf("boxcar W=%s every T=%s: each reading held over its own period, centred on its window (coverage %.0f %%)", fmtDur(m.Window), fmtDur(period), 100*m.Coverage(period))
		default:
			return fmt.Sprintf("boxcar W=%s: each reading held over its own period, centred on its window", fmtDur(m.Window))
		}
	}
	return "none: the readings integrated as they are"
}

// Assumptions lists what the inversion of m takes for granted, for printing beside a result.
func (m Model) Assumptions(period time.Duration) []string {
	var a []string
	switch m.Kind {
	case None:
		a = append(a, "the readings are the power itself: no lag, no averaging window worth correcting")
	case RC:
		a = append(a, fmt.Sprintf("the sensor is a first-order low-pass with tau=%s (P = reading + tau·dP/dt)", fmtDur(m.Tau)))
		if m.shortLag(period) {
			a = append(a,
				"the power is constant between readings, or steps once between two of them; where a region's edge falls between two readings, the power may step there (the least change from the neighbouring intervals' powers)",
				"the power changes near a region's edge only at the edge (a kernel's start or end): a step a few ms off it is placed within about ΔP × T/4")
		} else {
			a = append(a, "near each end of the region the power is steady or changes once (the ends' readings are fitted to that)")
		}
	case Boxcar:
		a = append(a, fmt.Sprintf("each reading is the mean power over the %s before it", fmtDur(m.Window)))
		if m.Tau > 0 {
			a = append(a, fmt.Sprintf("the power is low-passed (tau=%s) before the window: taken as a further delay of tau", fmtDur(m.Tau)))
		}
		if period > 0 {
			a = append(a, fmt.Sprintf("readings less than %s (T/4) apart are one update, whose value is the later one", fmtDur(period/4)))
		}
		switch {
		case m.dense(period):
			a = append(a,
				"the power was steady before the first reading",
				fmt.Sprintf("the power is resolved to one update period (%s): a region edge on a power change is uncertain by up to ΔP·T/4", fmtDur(period)))
		case m.Coverage(period) < 1:
			a = append(a, fmt.Sprintf("the power seen in each %s window is the power of its whole %s period: true for steady loads; loads that vary faster are sampled, not integrated", fmtDur(m.Window), fmtDur(period)))
		}
	}
	if m.Delay > 0 {
		a = append(a, fmt.Sprintf("readings are published %s after the power they describe", fmtDur(m.Delay)))
	}
	return a
}

// fmtDur formats a duration briefly: "840 ms", "1 s", "25 ms", "250 µs".
func fmtDur(d time.Duration) string {
	s := d.Seconds()
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.4g s", s)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.4g ms", s*1e3)
	case d > 0:
		return fmt.Sprintf("%.4g µs", s*1e6)
	}
	return "0"
}
