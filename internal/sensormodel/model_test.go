package sensormodel

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestModelJSON(t *testing.T) {
	m := Model{Period: 100 * ms, Window: 25 * ms, Tau: 840 * ms, Noise: 0.15, Quantum: 0.001, Gain: 1.02, Offset: -1.2, Jitter: 0.01, Phase: 37 * ms, Delay: time.Millisecond}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Model
	if err := json.Unmarshal(b, &back); err != nil || back != m {
		t.Fatalf("round trip: %s -> %+v, %v", b, back, err)
	}
	// A partial object overrides only its keys.
	if err := json.Unmarshal([]byte(`{"window_s": 1, "gain": 1}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.Window != time.Second || back.Gain != 1 || back.Period != 100*ms || back.Tau != 840*ms {
		t.Errorf("override: %+v", back)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"perod_s": 0.1}`, `unknown key "perod_s"`},
		{`{"TAU_S": 0.1}`, `unknown key "TAU_S"`}, // encoding/json alone would take it as tau_s
		{`{"tau_s": 2e6}`, `tau_s: want at most`},
		{`[1, 2]`, `want an object`},
		{`{"period_s": "fast"}`, `period_s: want a number`},
		{`[1]`, `want an object`},
	} {
		err := json.Unmarshal([]byte(bad.in), &back)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.in, err, bad.want)
		}
	}
	for _, bad := range []Model{{}, {Period: ms, Jitter: 0.5, Gain: 1}, {Period: ms, Window: -1}, {Period: ms, Noise: -1}} {
		if bad.ValidateGenerating() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if (Model{Period: ms, Window: ms}).ValidateCounter() == nil {
		t.Error("a counter with a window validated")
	}
	if got := m.Describe("W"); !strings.Contains(got, "T=100 ms") || !strings.Contains(got, "boxcar W=25 ms") || !strings.Contains(got, "RC lag tau=840 ms") {
		t.Errorf("Describe: %q", got)
	}
}

func FuzzModelJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"period_s": 0.1, "gain": 1}`, `{"tau_s": 1e9}`, `{"jitter": "x"}`, `[]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m := Model{Period: 100 * ms, Gain: 1}
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Model
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Fatalf("round trip of %s: %+v, %v", b, back, err)
		}
	})
}

// TestIntervalsJSON: the 95 % intervals travel with the model, and a bad one is an error.
func TestIntervalsJSON(t *testing.T) {
	m := Model{Period: 20 * ms, Tau: 14 * ms, Delay: 3 * ms}
	if err := m.CI.Set("tau_s", 0.012, 0.016); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	if !strings.Contains(string(b), `"ci":{"tau_s":[0.012,0.016]}`) {
		t.Errorf("JSON %s lacks the interval", b)
	}
	var back Model
	if err := json.Unmarshal(b, &back); err != nil || back != m {
		t.Fatalf("round trip: %s -> %+v, %v", b, back, err)
	}
	c := m.MarshalCompact()
	if string(c) != `{"model":"rc","period_s":0.02,"delay_s":0.003,"tau_s":0.014,"ci":{"tau_s":[0.012,0.016]}}` {
		t.Errorf("compact %s", c)
	}
	back = Model{}
	if err := json.Unmarshal(c, &back); err != nil || back != m {
		t.Fatalf("compact round trip: %s -> %+v, %v", c, back, err)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"ci": {"jitter": [0, 1]}}`, `ci: unknown key "jitter"`},
		{`{"ci": {"tau_s": [2, 1]}}`, `low <= high`},
		{`{"ci": [1]}`, `ci: want an object`},
		{`{"model": "rc"}`, `model "rc" needs tau_s > 0`},
		{`{"model": "boxcar", "tau_s": 1}`, `needs window_s > 0`},
		{`{"model": "none", "window_s": 1}`, `takes no tau_s or window_s`},
		{`{"model": "lag"}`, `model "lag": want`},
	} {
		var x Model
		err := json.Unmarshal([]byte(bad.in), &x)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestKindAndCoverage(t *testing.T) {
	for _, c := range []struct {
		m      Model
		kind   Kind
		period time.Duration
		cover  float64
	}{
		{Model{Window: 25 * ms}, Boxcar, 100 * ms, 0.25},
		{Model{Window: time.Second, Tau: 14 * ms}, Boxcar, 100 * ms, 1},
		{Model{Tau: 16500 * time.Microsecond}, RC, 100 * ms, 0.33},
		{Model{Tau: 13 * ms}, RC, 20 * ms, 1},
		{Model{Tau: 10 * ms}, RC, 0, 1},
		{Model{Period: 100 * ms}, None, 100 * ms, 1},
	} {
		if got := c.m.Kind(); got != c.kind {
			t.Errorf("%+v: kind %v, want %v", c.m, got, c.kind)
		}
		if got := c.m.Coverage(c.period); math.Abs(got-c.cover) > 1e-12 {
			t.Errorf("%v every %v: coverage %v, want %v", c.m, c.period, got, c.cover)
		}
	}
	if q := Quantise(3.7, 2); q != 4 {
		t.Errorf("Quantise(3.7, 2) = %v", q)
	}
	if q := Quantise(1.23456, 0.001); q != 1.235 {
		t.Errorf("Quantise(1.23456, 0.001) = %v", q)
	}
}

// TestLag checks the closed forms against a fine Euler integration of tau·dy/dt = p − y
// over a piecewise-constant input.
func TestLag(t *testing.T) {
	const tau, dt = 0.05, 1e-6
	segs := []struct{ p, d float64 }{{100, 0.03}, {400, 0.12}, {50, 0.2}}
	y, integral := 100.0, 0.0
	ey, eint := 100.0, 0.0
	for _, s := range segs {
		var in float64
		y, in = Lag(y, s.p, s.d, tau)
		integral += in
		for x := 0.0; x < s.d-dt/2; x += dt {
			eint += ey * dt
			ey += dt * (s.p - ey) / tau
		}
	}
	if math.Abs(y-ey) > 1e-2 || math.Abs(integral-eint)/eint > 1e-4 {
		t.Errorf("Lag: y %v (Euler %v), integral %v (Euler %v)", y, ey, integral, eint)
	}
	if y, in := Lag(3, 7, 2, 0); y != 7 || in != 14 {
		t.Errorf("no lag: %v %v", y, in)
	}
	// The step response is the lag of a unit step, its integral, and its boxcar mean.
	for _, x := range []float64{0.001, 0.01, 0.1, 1} {
		_, in := Lag(0, 1, x, tau)
		if got := StepIntegral(x, tau); math.Abs(got-in) > 1e-12 {
			t.Errorf("StepIntegral(%v) = %v, want %v", x, got, in)
		}
		v, _ := Lag(0, 1, x, tau)
		if got := StepResponse(x, 0, tau); math.Abs(got-v) > 1e-12 {
			t.Errorf("StepResponse(%v, 0) = %v, want %v", x, got, v)
		}
		w := 0.025
		if got, want := StepResponse(x, w, tau), (StepIntegral(x, tau)-StepIntegral(x-w, tau))/w; math.Abs(got-want) > 1e-12 {
			t.Errorf("StepResponse(%v, %v) = %v, want %v", x, w, got, want)
		}
	}
	if StepResponse(-1, 0.025, tau) != 0 || StepValue(-1, 0) != 0 || StepValue(0, 0) != 1 {
		t.Error("a step responds before it begins")
	}
}
