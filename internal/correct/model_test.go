package correct_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const profileJSON = `{
  "format": "gpuwatt-sensor/1",
  "device": "NVIDIA H200",
  "channels": {
    "power.instant": {"model": "boxcar", "window_s": 0.025, "period_s": 0.1, "delay_s": 0},
    "power.usage": {"model": "boxcar", "window_s": 1, "period_s": 0.1, "evidence": {"rise_s": 0.93}},
    "power.samples": {"model": "none"}
  },
  "meta": {"gpuwatt_version": "test"}
}`

func TestParseSpecAndResolve(t *testing.T) {
	k20 := &trace.Trace{Meta: trace.Meta{GPUs: []trace.GPU{{Index: 0, Name: "Tesla K20c"}}}}
	usage := trace.Channel{Name: "power.usage"}
	for _, tc := range []struct {
		spec  string
		tr    *trace.Trace
		ch    trace.Channel
		want  string
		guess bool
	}{
		{"auto", k20, usage, "rc:tau=840ms", true},
		{"auto", nil, trace.Channel{Name: "power.instant"}, "boxcar:window=25ms,period=100ms", true},
		{"auto", nil, trace.Channel{Name: "power.instant", Stats: &trace.ChannelStats{UpdatePeriod: 0.0999}}, "boxcar:window=25ms", true},
		{"auto", nil, trace.Channel{Name: "power"}, "none", true},
		{"rc:tau=0.5s", k20, usage, "rc:tau=500ms", false},
		{"none", k20, usage, "none", false},
		{writeFile(t, "sensor.json", profileJSON), nil, usage, "boxcar:window=1s,period=100ms", false},
	} {
		sp, err := correct.ParseSpec(tc.spec)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		c, err := sp.Resolve(tc.tr, tc.ch)
		if err != nil || c.Model.String() != tc.want || c.Guess != tc.guess || c.Source == "" {
			t.Errorf("%q for %s: %+v (%s), %v; want %s", tc.spec, tc.ch.Name, c, c.Model, err, tc.want)
		}
	}
	sp, _ := correct.ParseSpec(writeFile(t, "s.json", profileJSON))
	if _, err := sp.Resolve(nil, trace.Channel{Name: "power.average"}); err == nil || !strings.Contains(err.Error(), "no model for channel power.average (it has power.instant, power.samples, power.usage)") {
		t.Errorf("missing channel: %v", err)
	}
}

func TestParseSpecErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ in, want string }{
		{"", "empty sensor spec"},
		{"bogus", `unknown sensor model "bogus"`},
		{filepath.Join(dir, "missing.json"), "no such file"},
		{writeFile(t, "bad.json", `{"channels": {"power.usage": {"model": "rc"}}}`), `channel power.usage: model "rc" needs tau_s > 0`},
		{"rc:tau=1", "bare number"},
	} {
		_, err := correct.ParseSpec(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestParseProfileErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "empty file"},
		{`[]`, "want a JSON object"},
		{`{"channels": {}}`, `no "channels"`},
		{`{"chanels": {}}`, `unknown field "chanels"`},
		{`{"format": "gpuwatt-sensor/9", "channels": {"p": {"model": "none"}}}`, `format "gpuwatt-sensor/9" is not supported`},
		{`{"channels": {"p": {"model": "lag"}}}`, `model "lag": want "none", "rc" or "boxcar"`},
		{`{"channels": {"p": {}}}`, `no "model"`},
		{`{"channels": {"p": {"model": "boxcar", "tau_s": 1}}}`, "needs window_s > 0"},
		{`{"channels": {"p": {"model": "rc", "tau_s": 1, "window_s": 1}}}`, "takes tau_s, not window_s"},
		{`{"channels": {"p": {"model": "none", "window_s": 1}}}`, "takes no tau_s or window_s"},
		{`{"channels": {"p": {"model": "boxcar", "window_s": -1}}}`, "window_s = -1"},
		{`{"channels": {"p": {"model": "boxcar", "window_s": 1e-12}}}`, "rounds to 0 ns"},
		{`{"channels": {"p": {"model": "boxcar", "window_s": 1, "period_s": 7200}}}`, "period_s = 7200"},
		{`{"channels": {"p": {"model": "boxcar", "window_s": 1, "colour": 1}}}`, `unknown key "colour"`},
		{`{"channels": {"": {"model": "none"}}}`, "empty name"},
		{`{"channels": {"p": {"model": "none"}}} {}`, "more than one JSON value"},
	} {
		_, err := correct.ParseProfile([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestProfileRoundTrip(t *testing.T) {
	p := correct.Profile{Device: "sim H100", Channels: map[string]correct.ChannelModel{
		"power.instant": correct.ChannelModel{Model: sensormodel.Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond}},
		"power.usage":   correct.ChannelModel{Model: sensormodel.Model{Tau: 840 * time.Millisecond, Delay: 3 * time.Millisecond}},
	}}
	var b bytes.Buffer
	if err := correct.WriteProfile(&b, p); err != nil {
		t.Fatal(err)
	}
	back, err := correct.ParseProfile(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for name, cm := range p.Channels {
		if got := back.Channels[name].Model; got != cm.Model {
			t.Errorf("%s: %+v; want %+v", name, got, cm.Model)
		}
	}
	if back.Format != correct.ProfileFormat || back.Device != "sim H100" {
		t.Errorf("format %q device %q", back.Format, back.Device)
	}
}

func TestAuto(t *testing.T) {
	for _, tc := range []struct{ ch, gpu, want string }{
		{"power.usage", "Tesla K20c", "rc:tau=840ms"},
		{"power.usage", "gpuwatt sim K20c (5GB)", "rc:tau=840ms"},
		{"power.usage", "Tesla V100-SXM2-32GB", "boxcar:window=10ms,period=20ms"},
		{"power.samples", "Tesla V100-SXM2-32GB", "boxcar:window=10ms,period=20ms"},
		{"power.usage", "NVIDIA GeForce RTX 3090", "boxcar:window=100ms,period=100ms"},
		{"power.instant", "NVIDIA GH200 480GB", "boxcar:window=20ms,period=100ms"},
		{"power.usage", "NVIDIA H200", "boxcar:window=1s,period=100ms,delay=20ms"},
		{"power.memory.average", "NVIDIA H200", "boxcar:window=1s,period=100ms"},
		{"power.average", "NVIDIA A100-SXM4-80GB", "boxcar:window=1s,period=100ms"},
		{"power.memory.average", "NVIDIA H100 80GB HBM3", "boxcar:window=1s,period=100ms"},
		{"power.instant", "NVIDIA H100 80GB HBM3", "boxcar:window=25ms,period=100ms"},
		{"power.module.instant", "", "boxcar:window=25ms,period=100ms"},
		{"power.samples", "NVIDIA H200", "rc:tau=14ms,period=20ms,delay=3ms"},
		{"power.instant", "NVIDIA H200", "boxcar:window=25ms,tau=14ms,period=100ms,delay=3ms"},
		{"power.samples", "NVIDIA H100 80GB HBM3", "boxcar:window=20ms,period=20ms"},
		{"power", "", "none"},
		{"power.draw", "NVIDIA H200", "none"},
	} {
		m, why := correct.Auto(tc.ch, tc.gpu)
		if m.String() != tc.want || why == "" {
			t.Errorf("%s on %q: %s (%s), want %s", tc.ch, tc.gpu, m, why, tc.want)
		}
	}
}
