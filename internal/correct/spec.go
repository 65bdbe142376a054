package correct

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Spec is what `--sensor` names: a model, "auto" (a guess from the trace's metadata), or a
// sensor.json profile. Resolve turns it into the Model of one channel.
type Spec struct {
	text    string
	source  string // where a model came from, when not from --sensor (ModelSpec)
	auto    bool
	model   sensormodel.Model
	profile *Profile
}

// ParseSpec reads a --sensor value: none, auto, rc:..., boxcar:... (see sensormodel.Parse), or
// the path of a sensor.json file, which it reads and checks.
func ParseSpec(s string) (Spec, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	switch {
	case lower == "auto":
		return Spec{text: "auto", auto: true}, nil
	case lower == "none" || lower == "rc" || lower == "boxcar" ||
		strings.HasPrefix(lower, "none:") || strings.HasPrefix(lower, "rc:") || strings.HasPrefix(lower, "boxcar:"):
		m, err := sensormodel.Parse(t)
		if err != nil {
			return Spec{}, err
		}
		return Spec{text: m.String(), model: m}, nil
	case t == "":
		return Spec{}, errors.New("empty sensor spec: " + sensormodel.SpecForms)
	}
	data, err := infile.ReadFile(t, infile.SmallLimit)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(t, `/\.`) {
			return Spec{}, fmt.Errorf("unknown sensor model %q: %s", t, sensormodel.SpecForms)
		}
		return Spec{}, fmt.Errorf("sensor profile %s: %v (%s)", t, unwrapPath(err), sensormodel.SpecForms)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return Spec{}, fmt.Errorf("sensor profile %s: %v", t, err)
	}
	return Spec{text: t, profile: p}, nil
}

// ModelSpec is a Spec holding model m, whose Choice says it came from source (such as
// "--device sim:k20: the model the sim configures for power.usage").
func ModelSpec(m sensormodel.Model, source string) Spec {
	return Spec{text: m.String(), model: m, source: source}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// String is the spec as given (a model in its canonical form).
func (s Spec) String() string {
	if s.text == "" {
		return "none"
	}
	return s.text
}

// Auto says the spec is "auto": a guess from the names, where a caller may know better
// (the sim's own model for a trace the sim recorded).
func (s Spec) Auto() bool { return s.auto }

// Choice is the model chosen for a channel, and where it came from.
type Choice struct {
	Model sensormodel.Model
	// Source says where the model came from: "--sensor rc:tau=840ms", "sensor.json x",
	// "auto: ...".
	Source string
	// Guess is true for "auto": a model picked from the channel's name and the board's
	// name, not measured on this board.
	Guess bool
	// Defaulted names the parameters the model was given without an interval, to which
	// DefaultIntervals gave the stated default ("tau ±20 %, delay ±5 ms"); "" where none.
	Defaulted string
}

// The default 95 % intervals of a model's parameters given without one (a --sensor spec,
// a sensor.json without intervals, profile's --sensor-profile): what a model typed from a
// datasheet or a paper is typically off by on another board and driver (Yang et al.: the
// same SKU's windows and delays differ; the K20's tau was fitted 0.84 s ±10 % by
// Burtscher et al.; gpuwatt sensor's fits on H200s moved tau by 15 % and delays by
// several ms run to run).
const (
	DefaultTauFraction    = 0.20
	DefaultWindowFraction = 0.10
	DefaultPeriodFraction = 0.02
	DefaultDelay          = 5 * time.Millisecond
)

// DefaultIntervals gives each parameter of m that matters for its kind and carries no
// interval the default one (above), and names them ("tau ±20 %, delay ±5 ms"; "" where
// every parameter had one or m has none to give).
func DefaultIntervals(m sensormodel.Model) (sensormodel.Model, string) {
	if m.Kind() == sensormodel.None && m.Delay == 0 {
		return m, ""
	}
	var names []string
	frac := func(iv *sensormodel.Interval, d time.Duration, f float64, name string) {
		if iv.Known() || d <= 0 {
			return
		}
		*iv = sensormodel.Interval{Low: d.Seconds() * (1 - f), High: d.Seconds() * (1 + f)}
		names = append(names, fmt.Sprintf("%s ±%.0f %%", name, 100*f))
	}
	frac(&m.CI.Tau, m.Tau, DefaultTauFraction, "tau")
	if m.Kind() == sensormodel.Boxcar {
		frac(&m.CI.Window, m.Window, DefaultWindowFraction, "window")
	}
	frac(&m.CI.Period, m.Period, DefaultPeriodFraction, "period")
	if !m.CI.Delay.Known() {
		m.CI.Delay = sensormodel.Interval{Low: max(0, (m.Delay - DefaultDelay).Seconds()), High: (m.Delay + DefaultDelay).Seconds()}
		names = append(names, fmt.Sprintf("delay ±%g ms", float64(DefaultDelay)/float64(time.Millisecond)))
	}
	return m, strings.Join(names, ", ")
}

// Resolve picks the model of channel ch of trace tr (tr may be nil: no metadata).
func (s Spec) Resolve(tr *trace.Trace, ch trace.Channel) (Choice, error) {
	switch {
	case s.auto:
		gpuName := ""
		if tr != nil {
			for _, g := range tr.Meta.GPUs {
				if g.Index == ch.GPU {
					gpuName = g.Name
				}
			}
		}
		m, why := Auto(ch.Name, gpuName)
		if ch.Stats != nil && ch.Stats.UpdatePeriod > 0 {
			m.Period = 0 // the period the Sampler learned (Options.Period) beats the table's
		}
		return Choice{Model: m, Source: "auto: " + why, Guess: true}, nil
	case s.profile != nil:
		cm, ok := s.profile.Channels[ch.Name]
		if !ok {
			names := make([]string, 0, len(s.profile.Channels))
			for n := range s.profile.Channels {
				names = append(names, n)
			}
			slices.Sort(names)
			return Choice{}, fmt.Errorf("sensor profile %s has no model for channel %s (it has %s)", s.text, ch.Name, strings.Join(names, ", "))
		}
		m, def := DefaultIntervals(cm.Model)
		src := "sensor profile " + s.text
		if s.profile.Device != "" {
			src += " (" + s.profile.Device + ")"
		}
		return Choice{Model: m, Source: src, Defaulted: def}, nil
	}
	if s.source != "" {
		// a model the caller made (the sim's own): its parameters are what they are
		return Choice{Model: s.model, Source: s.source}, nil
	}
	m, def := DefaultIntervals(s.model)
	return Choice{Model: m, Source: "--sensor " + s.String(), Defaulted: def}, nil
}

// Auto guesses the model of a power channel from its name and the board's product name. It
// returns the model (with the table's nominal period) and a line saying why. The table
// (docs/energy.md, docs/sensor.md) holds the published figures of Burtscher et al. (K20)
// and Yang et al. (SC'24, 70+ GPUs) and what gpuwatt sensor measured on H200s
// (results/nvidia-h200); boards and drivers differ, so a measured sensor.json beats it.
//
// Every parameter carries a 95 % interval (Model.CI) wide enough to hold what was measured
// on real boards (TestAutoHoldsMeasured checks every sensor.json under results/ against
// it), so that an energy through a guessed model states the model's part of its
// uncertainty. The nominal values and intervals (ms unless noted):
//
//	board                 channel                     model                 period       window       tau         delay
//	Kepler (K20, K40, K80) power.usage                rc tau 840            –            –            750–950     0–20
//	Volta, Pascal         power.usage, power.samples  boxcar 10 every 20    19–21        8–12         –           0–5
//	GeForce RTX 3090      power.usage                 boxcar 100 every 100  95–105       90–110       –           0–10
//	H200                  power.samples               rc 14, 3 late         19.9–20.3    –            12–16       2.5–4.5
//	                      power.instant               boxcar 25 of a 14 lag 95–105       0–80         0–20        2–17
//	                      power.usage, *.average      boxcar 1 s, 20 late   95–105       0.98–1.035 s –           8–30
//	                      power.memory.average        boxcar 1 s            95–105       0–4.3 s      0–3500      0–160
//	GH200                 power.instant               boxcar 20 every 100   95–105       15–30        –           0–15
//	others (A100, H100)   power.usage, *.average      boxcar 1 s every 100  95–105       0.98–1.03 s  –           0–30
//	                      power.instant, *.instant    boxcar 25 every 100   95–105       15–45        –           0–15
//	                      power.samples               boxcar 20 every 20    19.9–20.3    10–25        –           0–5
//	any                   any other (a plain CSV)     none
//
// The H200's power.instant fits as a 30–80 ms boxcar or a 17 ms lag run to run (no model
// fits it within 5 %), and its memory power barely moves under gpuwatt's load: their
// intervals are that wide because the measurements are. Spec.Resolve drops the table's
// period when the trace's metadata has the period the Sampler learned.
func Auto(channel, gpuName string) (sensormodel.Model, string) {
	board := strings.ToUpper(gpuName)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(board, s) {
				return true
			}
		}
		return false
	}
	ms := func(x float64) float64 { return x / 1e3 }
	// ci sets the intervals, in ms: period, window, tau, delay (nil: none).
	ci := func(m sensormodel.Model, period, window, tau, delay []float64) sensormodel.Model {
		for _, p := range []struct {
			key string
			iv  []float64
		}{{"period_s", period}, {"window_s", window}, {"tau_s", tau}, {"delay_s", delay}} {
			if p.iv != nil {
				_ = m.CI.Set(p.key, ms(p.iv[0]), ms(p.iv[1]))
			}
		}
		return m
	}
	boxcar := func(w, t time.Duration) sensormodel.Model { return sensormodel.Model{Window: w, Period: t} }
	average := channel == trace.ChPowerUsage || strings.HasSuffix(channel, ".average")
	instant := strings.HasSuffix(channel, ".instant")
	h200 := has("H200") && !has("GH200")
	name := gpuName
	if name == "" {
		name = "an unnamed board"
	}
	switch {
	case has("K20", "K40", "K80") && channel == trace.ChPowerUsage:
		return ci(sensormodel.Model{Tau: 840 * time.Millisecond}, nil, nil, []float64{750, 950}, []float64{0, 20}),
			fmt.Sprintf("%s on %s, a Kepler board: an RC lag of 0.84 s (Burtscher et al.)", channel, name)
	case has("V100", "P100") && (channel == trace.ChPowerUsage || channel == trace.ChPowerSamples):
		return ci(boxcar(10*time.Millisecond, 20*time.Millisecond), []float64{19, 21}, []float64{8, 12}, nil, []float64{0, 5}),
			fmt.Sprintf("%s on %s: a 10 ms window every 20 ms (Yang et al., Volta/Pascal)", channel, name)
	case has("RTX 3090") && channel == trace.ChPowerUsage:
		return ci(boxcar(100*time.Millisecond, 100*time.Millisecond), []float64{95, 105}, []float64{90, 110}, nil, []float64{0, 10}),
			fmt.Sprintf("%s on %s: a 100 ms window every 100 ms (Yang et al.)", channel, name)
	case h200 && channel == trace.ChPowerSamples:
		return ci(sensormodel.Model{Tau: 14 * time.Millisecond, Period: 20 * time.Millisecond, Delay: 3 * time.Millisecond}, []float64{19.9, 20.3}, nil, []float64{12, 16}, []float64{2.5, 4.5}),
			fmt.Sprintf("%s on %s: point samples every 20 ms of the power through a 14 ms lag, 3 ms late (measured on H200s, driver 580)", channel, name)
	case h200 && channel == trace.ChPowerInstant:
		return ci(sensormodel.Model{Window: 25 * time.Millisecond, Tau: 14 * time.Millisecond, Period: 100 * time.Millisecond, Delay: 3 * time.Millisecond},
				// delay up to 25 ms: a fit without a window puts the window's half into the
				// delay (rc, tau 14.3 ms, delay 15.9 ms on GPU-77843c84,
				// results/nvidia-h200/2026-11-24-profile-resolution; rc, tau 12.9 ms, delay
				// 21.3 ms on GPU-32d536a6, results/nvidia-h200/2026-11-28-four-gpus)
				[]float64{95, 105}, []float64{0, 80}, []float64{0, 20}, []float64{2, 25}),
			fmt.Sprintf("%s on %s: the last 25 ms of every ~100 ms of the power through a 14 ms lag, 3 ms late (measured on H200s, driver 580; fits vary run to run)", channel, name)
	case h200 && average && strings.Contains(channel, "memory"):
		// tau up to 3.5 s: GPU-3efb49b2 fitted rc, tau 2.92 s, delay 151 ms, its step 5 W
		// (results/nvidia-h200/2026-11-28-lean-2), which TestAutoHoldsMeasured caught
		return ci(boxcar(time.Second, 100*time.Millisecond), []float64{95, 105}, []float64{0, 4300}, []float64{0, 3500}, []float64{0, 160}),
			fmt.Sprintf("%s on %s: a 1 s moving average (the load barely moves it: fits on H200s spread from a 0.95–3.5 s window to a 0.86–2.9 s lag)", channel, name)
	case h200 && average:
		// window up to 1.035 s: gpu-3 of results/nvidia-h200/
		// 2026-11-28-four-gpus-2 fitted 1.0307 s on power.usage and power.average
		return ci(sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond, Delay: 20 * time.Millisecond}, []float64{95, 105}, []float64{980, 1035}, nil, []float64{8, 30}),
			fmt.Sprintf("%s on %s: a 1 s moving average every ~100 ms, published ~20 ms late (measured on H200s, driver 580)", channel, name)
	case has("GH200") && instant:
		return ci(boxcar(20*time.Millisecond, 100*time.Millisecond), []float64{95, 105}, []float64{15, 30}, nil, []float64{0, 15}),
			fmt.Sprintf("%s on %s: about 20 ms seen of every 100 ms (Yang et al., GH200)", channel, name)
	case average:
		return ci(boxcar(time.Second, 100*time.Millisecond), []float64{95, 105}, []float64{980, 1030}, nil, []float64{0, 30}),
			fmt.Sprintf("%s on %s: a 1 s moving average (NVML power usage and the average field on Ampere/Hopper)", channel, name)
	case instant:
		return ci(boxcar(25*time.Millisecond, 100*time.Millisecond), []float64{95, 105}, []float64{15, 45}, nil, []float64{0, 15}),
			fmt.Sprintf("%s on %s: the last 25 ms of every 100 ms (Yang et al., A100/H100)", channel, name)
	case channel == trace.ChPowerSamples:
		return ci(boxcar(20*time.Millisecond, 20*time.Millisecond), []float64{19.9, 20.3}, []float64{10, 25}, nil, []float64{0, 5}),
			fmt.Sprintf("%s on %s: the driver's buffer, a 20 ms mean every 20 ms", channel, name)
	}
	return sensormodel.Model{}, fmt.Sprintf("no model is known for channel %s: integrated as recorded", channel)
}

// ProfileFormat is the format field of a sensor.json that this version reads and writes.
const ProfileFormat = "gpuwatt-sensor/1"

// Profile is a sensor.json: the measured model of each power channel of a board, as the
// `sensor` verb writes it and `energy --sensor FILE` reads it.
//
//	{
//	  "format": "gpuwatt-sensor/1",          optional; if given, this value
//	  "device": "NVIDIA H200",                optional: what was characterised
//	  "channels": {                           required: channel name -> model
//	    "power.instant": {"model": "boxcar", "window_s": 0.025, "period_s": 0.1, "delay_s": 0},
//	    "power.usage":   {"model": "boxcar", "window_s": 1, "period_s": 0.1},
//	    "power.samples": {"model": "none"}
//	  },
//	  "meta": {...}                           optional, any JSON: how it was measured
//	}
//
// A channel's "model" is none, rc (with tau_s > 0) or boxcar (with window_s > 0); period_s
// and delay_s (>= 0, 0 = unknown/none) apply to both; "evidence" (any JSON) carries what
// the characterisation measured and is not read here. Times are in seconds, at most an
// hour. Any other key is an error naming it.
type Profile struct {
	Format   string                  `json:"format,omitempty"`
	Device   string                  `json:"device,omitempty"`
	Channels map[string]ChannelModel `json:"channels"`
	Meta     json.RawMessage         `json:"meta,omitempty"`
}

// ChannelModel is one channel's entry in a sensor.json: the model (in the compact JSON of
// sensormodel, with "model" naming its kind and only the parameters that are not zero,
// and "ci" the 95 % intervals a characterisation measured) and the evidence.
type ChannelModel struct {
	sensormodel.Model
	// Evidence (any JSON) carries what the characterisation measured; not read here.
	Evidence json.RawMessage
}

// MarshalJSON writes the entry: the model's compact JSON with "evidence" beside it.
func (c ChannelModel) MarshalJSON() ([]byte, error) {
	b := c.Model.MarshalCompact()
	if len(c.Evidence) > 0 {
		b = append(b[:len(b)-1], `,"evidence":`...)
		b = append(b, c.Evidence...)
		b = append(b, '}')
	}
	return b, nil
}

// UnmarshalJSON reads and checks an entry. Files written before the model had gain,
// noise and intervals (model, tau_s, window_s, period_s, delay_s, evidence) read as they did.
func (c *ChannelModel) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("want an object with \"model\", got %s", bytes.TrimSpace(data))
	}
	if _, ok := raw["model"]; !ok {
		return errors.New(`no "model": want "none", "rc" or "boxcar"`)
	}
	for _, k := range []string{"tau_s", "window_s", "period_s", "delay_s"} {
		v, ok := raw[k]
		if !ok {
			continue
		}
		var x float64
		if err := json.Unmarshal(v, &x); err != nil || math.IsNaN(x) || x < 0 || x > MaxDuration.Seconds() {
			return fmt.Errorf("%s = %s: want seconds in [0, %g]", k, bytes.TrimSpace(v), MaxDuration.Seconds())
		}
		if x > 0 && sensormodel.Seconds(x) == 0 {
			return fmt.Errorf("%s = %s: the time rounds to 0 ns: want a positive duration", k, bytes.TrimSpace(v))
		}
	}
	ev := raw["evidence"]
	delete(raw, "evidence")
	rest, _ := json.Marshal(raw)
	var m sensormodel.Model
	if err := m.UnmarshalJSON(rest); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	c.Model, c.Evidence = m, ev
	return nil
}

// MaxDuration bounds every time in a sensor.json (an hour: far beyond any sensor's window).
const MaxDuration = sensormodel.MaxDuration

// ParseProfile reads and checks a sensor.json.
func ParseProfile(data []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	// The channels are read one by one below, so that an error names its channel.
	var raw struct {
		Format   string                     `json:"format,omitempty"`
		Device   string                     `json:"device,omitempty"`
		Channels map[string]json.RawMessage `json:"channels"`
		Meta     json.RawMessage            `json:"meta,omitempty"`
	}
	if err := dec.Decode(&raw); err != nil {
		if err == io.EOF {
			return nil, errors.New(`empty file: want a JSON object {"channels": {"power.instant": {"model": "boxcar", "window_s": 0.025, "period_s": 0.1}, ...}}`)
		}
		return nil, fmt.Errorf("%v: want a JSON object with \"channels\" (see docs/energy.md)", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value: want one object")
	}
	p := Profile{Format: raw.Format, Device: raw.Device, Meta: raw.Meta, Channels: map[string]ChannelModel{}}
	if p.Format != "" && p.Format != ProfileFormat {
		return nil, fmt.Errorf("format %q is not supported: this gpuwatt reads %q", p.Format, ProfileFormat)
	}
	if len(raw.Channels) == 0 {
		return nil, errors.New(`no "channels": want at least one channel's model`)
	}
	names := make([]string, 0, len(raw.Channels))
	for n := range raw.Channels {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n == "" {
			return nil, errors.New("a channel with an empty name")
		}
		var c ChannelModel
		if err := c.UnmarshalJSON(raw.Channels[n]); err != nil {
			return nil, fmt.Errorf("channel %s: %v", n, err)
		}
		p.Channels[n] = c
	}
	return &p, nil
}

// WriteProfile writes p as indented JSON with its format set.
func WriteProfile(w io.Writer, p Profile) error {
	p.Format = ProfileFormat
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
