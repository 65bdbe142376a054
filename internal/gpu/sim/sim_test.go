package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/simsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func open(t *testing.T, clk clock.Clock, cfg Config) *System {
	t.Helper()
	s, err := Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPreset(t *testing.T, name string) Config {
	t.Helper()
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEveryPresetOpensWithAllChannels(t *testing.T) {
	wantOrder := []string{"power.usage", "power.instant", "power.average", "power.module.instant", "power.module.average",
		"power.memory.instant", "power.memory.average", "power.samples", "energy.total", "clock.sm", "clock.mem", "temp.gpu",
		"throttle.reasons", "pstate", "util.gpu", "util.mem", "power.limit"}
	// An AMD board's channels, as amdsmi gives them.
	wantAMD := []string{"power.socket_current", "power.socket_average", "energy.total", "clock.sm", "clock.mem", "temp.gpu",
		"util.gpu", "util.mem", "power.limit"}
	wantQ := map[string]trace.Quantity{"energy.total": trace.QEnergy, "clock.sm": trace.QFrequency, "clock.mem": trace.QFrequency,
		"temp.gpu": trace.QTemperature, "throttle.reasons": trace.QReasons, "pstate": trace.QState, "util.gpu": trace.QUtilization, "util.mem": trace.QUtilization}
	unsupported := map[string][]string{
		"h100": {"power.module.instant", "power.module.average"},
		"h200": {"power.module.instant", "power.module.average"},
		"a100": {"power.module.instant", "power.module.average", "power.memory.instant", "power.memory.average"},
		"v100": {"power.instant", "power.average", "power.module.instant", "power.module.average", "power.memory.instant", "power.memory.average"},
		"k20": {"power.instant", "power.average", "power.module.instant", "power.module.average", "power.memory.instant", "power.memory.average",
			"power.samples", "energy.total"},
		"mi300x": {"power.socket_average"}, // "N/A" on MI300 (ROCm/pytorch PR 1457)
	}
	if !reflect.DeepEqual(Presets(), []string{"h100", "h200", "a100", "v100", "k20", "mi300x"}) {
		t.Errorf("Presets() = %v", Presets())
	}
	for _, name := range Presets() {
		t.Run(name, func(t *testing.T) {
			cfg := mustPreset(t, name)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			// The preset's JSON form reads back to the same config.
			b, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			back, err := LoadConfig(strings.NewReader(string(b)))
			if err != nil {
				t.Fatalf("LoadConfig(Marshal(preset)): %v\n%s", err, b)
			}
			if !reflect.DeepEqual(back, cfg) {
				b2, _ := json.Marshal(back)
				t.Errorf("round trip differs:\n%s\n%s", b2, b)
			}
			v := clock.NewVirtual(time.Time{})
			sys := open(t, v, cfg)
			if sys.Name() != "sim:"+name || sys.DriverVersion() != "sim" || sys.NVMLVersion() != "sim" {
				t.Errorf("system %q %q %q", sys.Name(), sys.DriverVersion(), sys.NVMLVersion())
			}
			devs := sys.Devices()
			if len(devs) != 1 {
				t.Fatalf("%d devices", len(devs))
			}
			info := devs[0].Info()
			order, prefix := wantOrder, "GPU-"
			if cfg.Vendor == VendorAMD {
				order, prefix = wantAMD, "" // amdsmi's UUIDs have no "GPU-"
				if info.Vendor != trace.VendorAMD {
					t.Errorf("vendor %q, want amd", info.Vendor)
				}
			} else if info.Vendor != "" {
				t.Errorf("vendor %q on an NVIDIA board", info.Vendor)
			}
			if !strings.HasPrefix(info.Name, "gpuwatt sim ") || !strings.HasPrefix(info.UUID, prefix+"5a1d0000-") || len(info.UUID) != 36+len(prefix) ||
				info.PCIBusID == "" || info.PowerLimitW != float64(cfg.PowerLimit) || info.DefaultPowerLimit != float64(cfg.PowerLimit) {
				t.Errorf("info %+v", info)
			}
			v.AdvanceTo(5 * time.Second)
			var names []string
			for _, s := range devs[0].Sensors() {
				ch := s.Channel()
				names = append(names, ch.Name)
				q := wantQ[ch.Name]
				if q == "" {
					q = trace.QPower
				}
				if ch.Quantity != q || ch.Unit != q.Unit() || !strings.HasPrefix(ch.Description, "sim: ") || ch.GPU != 0 {
					t.Errorf("%s: %+v", ch.Name, ch)
				}
				_, err := s.Read(nil)
				wantErr := contains(unsupported[name], ch.Name)
				if wantErr != (err != nil) || err != nil && !errors.Is(err, simsensor.ErrNotSupported) {
					t.Errorf("%s: Read error %v, want unsupported %v", ch.Name, err, wantErr)
				}
				if err == nil {
					if _, ok := s.(sensor.PeriodHinter); !ok {
						t.Errorf("%s: no PeriodHint", ch.Name)
					}
				}
			}
			if !reflect.DeepEqual(names, order) || !reflect.DeepEqual(ChannelNames(), wantOrder) || !reflect.DeepEqual(AMDChannelNames(), wantAMD) {
				t.Errorf("channels %v", names)
			}
		})
	}
	if _, err := Preset("h300"); err == nil || !strings.Contains(err.Error(), "h100, h200") {
		t.Errorf("unknown preset: %v", err)
	}
	if c, err := Preset(" H200 "); err != nil || c.Preset != "h200" {
		t.Errorf("Preset(H200) = %v, %v", c.Preset, err)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestLoadConfig(t *testing.T) {
	t.Run("default preset", func(t *testing.T) {
		c, err := LoadConfig(strings.NewReader(`{}`))
		if err != nil || !reflect.DeepEqual(c, mustPreset(t, "h100")) {
			t.Errorf("{} gave %+v, %v", c.Preset, err)
		}
	})
	t.Run("overrides", func(t *testing.T) {
		c, err := LoadConfig(strings.NewReader(`{
			"sensors": {"power.instant": {"window_s": 0.01, "noise_w": 0}, "power.module.instant": {"unsupported": false},
			            "power.samples": {"ring": 10}, "energy.total": {"unsupported": true}},
			"preset": "k20", "seed": 42, "gpus": 2, "idle_w": 30, "active_idle_hold_s": 1.5,
			"load": [{"t_s": 1, "power_w": 100}, {"t_s": 2, "duration_s": 0.5, "power_w": 120}],
			"eps_flop_fp32_pj": 4.89, "pi0_w": 169}`))
		if err != nil {
			t.Fatal(err)
		}
		base := mustPreset(t, "k20")
		if c.Preset != "k20" || c.Seed != 42 || c.GPUs != 2 || c.Idle != 30 || c.ActiveIdleHold != 1500*time.Millisecond ||
			c.ActiveIdle != base.ActiveIdle || c.Pi0 != 169 || math.Abs(float64(c.EpsFlopFP32)-4.89e-12) > 1e-24 {
			t.Errorf("scalars: %+v", c)
		}
		want := []LoadStep{{T: time.Second, Power: 100}, {T: 2 * time.Second, Duration: 500 * time.Millisecond, Power: 120}}
		if !reflect.DeepEqual(c.Load, want) {
			t.Errorf("load %+v", c.Load)
		}
		in := c.Sensors["power.instant"]
		if in.Model.Window != 10*time.Millisecond || in.Model.Noise != 0 || in.Model.Period != base.Sensors["power.instant"].Model.Period || !in.Unsupported {
			t.Errorf("power.instant %+v (keys not given keep the preset's, unsupported included)", in)
		}
		if c.Sensors["power.module.instant"].Unsupported || c.Sensors["power.samples"].Ring != 10 || !c.Sensors["energy.total"].Unsupported {
			t.Errorf("sensors %+v", c.Sensors)
		}
		// The preset itself is untouched.
		if !reflect.DeepEqual(base, mustPreset(t, "k20")) {
			t.Error("LoadConfig changed the preset")
		}
	})
	bad := []struct{ in, want string }{
		{`{"idle_ww": 1}`, `unknown key "idle_ww"`},
		{`{"sensors": {"power.instnt": {}}}`, `unknown channel "power.instnt"`},
		{`{"sensors": {"power.instant": {"perod_s": 0.1}}}`, `sensors["power.instant"]: unknown key "perod_s"`},
		{`{"sensors": {"power.instant": {"ring": 3}}}`, `unknown key "ring"`},
		{`{"sensors": {"power.limit": {"gain": 3}}}`, `only "unsupported"`},
		{`{"load": [{"t_s": 1, "powr_w": 3}]}`, `load[0]: unknown key "powr_w"`},
		{`{"load": [{"t_s": 1}]}`, `load[0]: missing key "power_w"`},
		{`{"load": [{"t_s": 2, "power_w": 1}, {"t_s": 1, "power_w": 1}]}`, `load[1]: t_s 1 is before`},
		{`{"preset": "h300"}`, `unknown preset "h300"`},
		{`{"idle_w": "lots"}`, `idle_w: want a number`},
		{`{"seed": -1}`, `seed: want a whole number >= 0, got -1`},
		{`{"preset": 3}`, `preset: want a string, got 3`},
		{`{"name": ["x"]}`, `name: want a string, got ["x"]`},
		{`{"launch_overhead_s": 1e12}`, `launch_overhead_s: want at most 1e+06 seconds`},
		{`{"IDLE_W": 1}`, `unknown key "IDLE_W"`},
		{`{"gpus": 0}`, `gpus: want 1 to 64`},
		{`{"sensors": {"power.instant": {"jitter": 0.7}}}`, `sensors["power.instant"]: jitter`},
		{`{"sensors": {"energy.total": {"window_s": 1}}}`, `sensors["energy.total"]: window_s`},
		{`{"idle_w": 1} {}`, `unexpected data`},
		{`[1]`, `want an object`},
		{`{"idle_w": `, `not valid JSON`},
	}
	for _, tt := range bad {
		_, err := LoadConfig(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sim config: ") {
			t.Errorf("%s: err = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestLoadConfigFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(p, []byte(`{"preset": "v100", "gpus": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfigFile(p)
	if err != nil || c.Preset != "v100" || c.GPUs != 3 {
		t.Errorf("%+v, %v", c, err)
	}
	os.WriteFile(p, []byte(`{"bogus": 1}`), 0o644)
	if _, err := LoadConfigFile(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("err = %v", err)
	}
}

// quiet is a preset without noise, so that readings can be compared with the truth.
func quiet(t *testing.T, name string) Config {
	c := mustPreset(t, name)
	for k, sc := range c.Sensors {
		sc.Model.Noise = 0
		c.Sensors[k] = sc
	}
	return c
}

func TestCommandLoadThenActiveIdleThenIdle(t *testing.T) {
	tests := []struct {
		preset string
		steps  []units.Power // the stair after the hold
	}{
		{"h100", []units.Power{118}},
		{"k20", []units.Power{45.625, 38.75, 31.875, 25}},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			cfg := mustPreset(t, tt.preset)
			v := clock.NewVirtual(time.Time{})
			d := open(t, v, cfg).Device(0)
			start, end := 2*time.Second, 5*time.Second
			v.AdvanceTo(start)
			d.CommandStarted(start)
			v.AdvanceTo(end)
			d.CommandEnded(end)
			hold := cfg.ActiveIdleHold
			check := func(at time.Duration, want units.Power) {
				t.Helper()
				if got := d.TruePower(at); math.Abs(float64(got-want)) > 1e-9 {
					t.Errorf("TruePower(%v) = %v, want %v", at, got, want)
				}
			}
			check(0, cfg.Idle)
			check(start-1, cfg.Idle)
			check(start, cfg.CommandLoad)
			check(end-1, cfg.CommandLoad)
			check(end, cfg.ActiveIdle)
			check(end+hold-1, cfg.ActiveIdle)
			for j, p := range tt.steps {
				at := end + hold + time.Duration(j)*cfg.IdleStepInterval
				check(at, p)
			}
			check(time.Hour, cfg.Idle)
			wantE := float64(cfg.Idle)*2 + float64(cfg.CommandLoad)*3 + float64(cfg.ActiveIdle)*hold.Seconds()
			for j, p := range tt.steps[:len(tt.steps)-1] {
				_ = j
				wantE += float64(p) * cfg.IdleStepInterval.Seconds()
			}
			tail := end + hold + time.Duration(len(tt.steps)-1)*cfg.IdleStepInterval
			wantE += float64(cfg.Idle) * (20*time.Second - tail).Seconds()
			if got := d.TrueEnergy(0, 20*time.Second); math.Abs(float64(got)-wantE) > 1e-6 {
				t.Errorf("TrueEnergy = %v, want %v", got, wantE)
			}
			if !d.Busy(3*time.Second) || d.Busy(end) {
				t.Error("busy signal wrong")
			}
			// Memory power follows the board above idle.
			wantMem := cfg.MemoryIdle + units.Power(cfg.MemoryLoadFraction)*(cfg.CommandLoad-cfg.Idle)
			if got := d.TrueMemoryPower(3 * time.Second); math.Abs(float64(got-wantMem)) > 1e-9 {
				t.Errorf("memory power %v, want %v", got, wantMem)
			}
		})
	}
}

func TestCommandDuringActiveIdle(t *testing.T) {
	cfg := mustPreset(t, "k20")
	v := clock.NewVirtual(time.Time{})
	d := open(t, v, cfg).Device(0)
	d.CommandStarted(time.Second)
	d.CommandEnded(2 * time.Second)
	// A second command inside the hold cancels the step down.
	d.CommandStarted(3 * time.Second)
	d.CommandEnded(4 * time.Second)
	for _, c := range []struct {
		at   time.Duration
		want units.Power
	}{{2500 * time.Millisecond, 52.5}, {3500 * time.Millisecond, 158}, {5 * time.Second, 52.5}, {7400 * time.Millisecond, 52.5}, {7500 * time.Millisecond, 45.625}, {20 * time.Second, 25}} {
		if got := d.TruePower(c.at); got != c.want {
			t.Errorf("TruePower(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	// CommandEnded without a running command does nothing.
	d.CommandEnded(30 * time.Second)
	if d.TruePower(40*time.Second) != 25 {
		t.Error("stray CommandEnded changed the truth")
	}
}

// TestContextIdle holds the two idle levels the H200 shows (results/nvidia-h200
// 2026-11-21-foundation: 76–81 W at rest, ~120 W with a CUDA context open): a context held
// open keeps the board at active idle for as long as it is open, however long after a
// load; closing it starts the hold and the stair down to idle at rest; gpuwatt's own
// context opens with Props or Prepare and closes with the system; TrueIdle names both.
func TestContextIdle(t *testing.T) {
	cfg := mustPreset(t, "h200")
	if cfg.Idle < 76 || cfg.Idle > 81 || cfg.ActiveIdle < 118 || cfg.ActiveIdle > 124 {
		t.Errorf("h200 idle at rest %v, active idle %v: want 76–81 W and ~120 W as measured", cfg.Idle, cfg.ActiveIdle)
	}
	v := clock.NewVirtual(time.Time{})
	sys := open(t, v, cfg)
	d := sys.Device(0)
	if got := d.TrueIdle(); got.AtRest != cfg.Idle || got.Active != cfg.ActiveIdle {
		t.Errorf("TrueIdle %+v, want at rest %v, active %v", got, cfg.Idle, cfg.ActiveIdle)
	}
	var _ gpu.Truth = d
	s := time.Second
	h := d.OpenContext(2 * s)
	d.AddLoad(3*s, 4*s, 500)
	d.CloseContext(h, 20*s)
	d.CloseContext(h, 30*s) // a second close does nothing
	hold := cfg.ActiveIdleHold
	for _, c := range []struct {
		at   time.Duration
		want units.Power
		ctx  bool
	}{
		{s, cfg.Idle, false}, {2 * s, cfg.ActiveIdle, true}, {3 * s, 500, true}, {4 * s, cfg.ActiveIdle, true},
		{4*s + hold + s, cfg.ActiveIdle, true}, // past the hold: still active idle, the context is open
		{20*s - 1, cfg.ActiveIdle, true}, {20 * s, cfg.ActiveIdle, false}, {20*s + hold - 1, cfg.ActiveIdle, false},
		{20*s + hold, cfg.Idle, false}, {time.Hour, cfg.Idle, false},
	} {
		if got := d.TruePower(c.at); got != c.want || d.ContextOpen(c.at) != c.ctx {
			t.Errorf("at %v: TruePower %v, context open %t; want %v, %t", c.at, got, d.ContextOpen(c.at), c.want, c.ctx)
		}
	}
	if d.Busy(10 * s) {
		t.Error("an open context is not a load: busy must stay 0")
	}
	// A measured command opens a context of its own and closes it when it ends.
	d.CommandStarted(100 * s)
	if !d.ContextOpen(100 * s) {
		t.Error("no context open while the command runs")
	}
	d.CommandEnded(101 * s)
	if d.ContextOpen(101*s) || d.TruePower(101*s+hold) != cfg.Idle {
		t.Errorf("after the command: context open %t, power %v; want closed, idle at rest", d.ContextOpen(101*s), d.TruePower(101*s+hold))
	}
	// gpuwatt's own context: from Props (as the real GPU, which asks the driver) until Close.
	v.AdvanceTo(200 * s)
	d.Props()
	v.AdvanceTo(300 * s)
	if _, err := d.Prepare(fma(132)); err != nil {
		t.Fatal(err)
	}
	v.AdvanceTo(400 * s)
	sys.Close()
	for _, c := range []struct {
		at   time.Duration
		want units.Power
	}{{200*s - 1, cfg.Idle}, {200 * s, cfg.ActiveIdle}, {399 * s, cfg.ActiveIdle}, {400*s + hold, cfg.Idle}} {
		if got := d.TruePower(c.at); got != c.want {
			t.Errorf("own context: TruePower(%v) = %v, want %v", c.at, got, c.want)
		}
	}
}

// TestContextNoHold: on a board whose contexts do not hold it up (context_active_idle
// false: the h100 and k20 presets), an open context changes nothing.
func TestContextNoHold(t *testing.T) {
	cfg := mustPreset(t, "k20")
	if cfg.ContextActiveIdle {
		t.Fatal("k20: context_active_idle set")
	}
	d := open(t, clock.NewVirtual(time.Time{}), cfg).Device(0)
	d.OpenContext(time.Second)
	d.AddLoad(2*time.Second, 3*time.Second, 158)
	if got := d.TruePower(1500 * time.Millisecond); got != cfg.Idle {
		t.Errorf("with a context open before a load: %v, want idle at rest %v", got, cfg.Idle)
	}
	if got := d.TruePower(time.Minute); got != cfg.Idle || !d.ContextOpen(time.Minute) {
		t.Errorf("a minute after the load, context open: %v, want idle at rest %v", got, cfg.Idle)
	}
}

func TestScriptedLoad(t *testing.T) {
	cfg := mustPreset(t, "h200")
	cfg.Load = []LoadStep{
		{T: time.Second, Power: 300},                            // until the next step
		{T: 2 * time.Second, Duration: time.Second, Power: 500}, // then active idle
		{T: 10 * time.Second, Duration: time.Second, Power: 400},
	}
	v := clock.NewVirtual(time.Time{})
	d := open(t, v, cfg).Device(0)
	// A command overlapping the scripted load: the higher power wins.
	d.CommandStarted(10500 * time.Millisecond)
	d.CommandEnded(12 * time.Second)
	for _, c := range []struct {
		at   time.Duration
		want units.Power
	}{{500 * time.Millisecond, 78}, {time.Second, 300}, {2 * time.Second, 500}, {3 * time.Second, 121}, {4999 * time.Millisecond, 121},
		{5 * time.Second, 78}, {10 * time.Second, 400}, {10500 * time.Millisecond, 690}, {11500 * time.Millisecond, 690}, {12 * time.Second, 121}, {14 * time.Second, 78}} {
		if got := d.TruePower(c.at); got != c.want {
			t.Errorf("TruePower(%v) = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestChannelsAgainstTruth(t *testing.T) {
	cfg := quiet(t, "h100")
	cfg.Load = []LoadStep{{T: 2 * time.Second, Duration: 3 * time.Second, Power: 600}}
	v := clock.NewVirtual(time.Time{})
	d := open(t, v, cfg).Device(0)
	inst, _ := d.Scheduled("power.instant")
	avg, _ := d.Scheduled("power.usage")
	m := inst.Model()
	for at := time.Duration(0); at < 8*time.Second; at += 7 * time.Millisecond {
		v.AdvanceTo(at)
		r, err := inst.Read(nil)
		if err != nil {
			t.Fatal(err)
		}
		tk := inst.UpdateTime(inst.UpdateIndex(at))
		want := m.Gain*float64(d.Board().Mean(tk-m.Window, tk, 0)) + float64(m.Offset)
		if math.Abs(r[0].Value-want) > 0.0005+1e-9 {
			t.Fatalf("instant at %v: %v, want %v", at, r[0].Value, want)
		}
	}
	// The 1 s average has fully risen 1 s after the step.
	ma := avg.Model()
	k := avg.UpdateIndex(3100 * time.Millisecond)
	if got, want := avg.ValueAt(k), ma.Gain*600+float64(ma.Offset); math.Abs(got-want) > 0.001 {
		t.Errorf("average after 1.1 s: %v, want %v", got, want)
	}
	// The energy counter integrates the truth, with the board's gain.
	e, _ := d.Scheduled("energy.total")
	k0, k1 := e.UpdateIndex(time.Second), e.UpdateIndex(7*time.Second)
	got := e.ValueAt(k1) - e.ValueAt(k0)
	want := e.Model().Gain * float64(d.TrueEnergy(e.UpdateTime(k0), e.UpdateTime(k1)))
	if math.Abs(got-want) > 0.001 {
		t.Errorf("counter delta %v J, true %v J", got, want)
	}
	// State channels follow the busy signal.
	readAt := func(name string, at time.Duration) float64 {
		v.AdvanceTo(at)
		r, err := d.Sensor(name).Read(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r[0].Value
	}
	v2 := clock.NewVirtual(time.Time{})
	d2 := open(t, v2, cfg).Device(0)
	d, v = d2, v2
	if got := readAt("clock.sm", 1500*time.Millisecond); got != 345e6 {
		t.Errorf("idle SM clock %v", got)
	}
	if got := readAt("throttle.reasons", 1500*time.Millisecond); got != 1 {
		t.Errorf("idle reasons %v", got)
	}
	if got := readAt("clock.sm", 3*time.Second); got != 1980e6 {
		t.Errorf("busy SM clock %v", got)
	}
	if got := readAt("util.gpu", 3*time.Second); got != 100 {
		t.Errorf("busy util %v", got)
	}
	if got := readAt("throttle.reasons", 3*time.Second); got != 0 {
		t.Errorf("busy reasons %v", got)
	}
	if got := readAt("power.limit", 3*time.Second); got != 700 {
		t.Errorf("limit %v", got)
	}
	if got := readAt("temp.gpu", 4900*time.Millisecond); got <= 32 || got >= 70 {
		t.Errorf("temperature %v", got)
	}
	if got := readAt("util.gpu", 7*time.Second); got != 0 {
		t.Errorf("idle util %v", got)
	}
}

func TestK20Sensor(t *testing.T) {
	cfg := quiet(t, "k20")
	cfg.Load = []LoadStep{{T: time.Second, Duration: 5 * time.Second, Power: 158}}
	d := open(t, clock.NewVirtual(time.Time{}), cfg).Device(0)
	u, _ := d.Scheduled("power.usage")
	m := u.Model()
	if m.Tau != 840*time.Millisecond || m.Jitter == 0 {
		t.Fatalf("model %+v", m)
	}
	// Updates average 66.7 Hz.
	n := len(u.UpdateTimes(0, 10*time.Second))
	if n < 660 || n > 674 {
		t.Errorf("%d updates in 10 s, want ~667", n)
	}
	for _, at := range []time.Duration{1500 * time.Millisecond, 2 * time.Second, 4 * time.Second} {
		k := u.UpdateIndex(at)
		tk := u.UpdateTime(k)
		lag := 158 + (25-158)*math.Exp(-(tk-time.Second).Seconds()/0.84)
		want := math.Round((m.Gain*lag+float64(m.Offset))*1000) / 1000
		if got := u.ValueAt(k); math.Abs(got-want) > 1e-9 {
			t.Errorf("at %v: %v, want %v", at, got, want)
		}
	}
}

func TestMultiGPUBoardErrors(t *testing.T) {
	cfg := mustPreset(t, "h100")
	cfg.GPUs = 4
	sys := open(t, clock.NewVirtual(time.Time{}), cfg)
	uuids := map[string]bool{}
	gains := map[float64]bool{}
	for i, dev := range sys.Devices() {
		info := dev.Info()
		if info.Index != i || uuids[info.UUID] {
			t.Errorf("gpu %d: %+v", i, info)
		}
		uuids[info.UUID] = true
		m, _ := sys.Device(i).Model("power.instant")
		gains[m.Gain] = true
		base := cfg.Sensors["power.instant"].Model
		if i == 0 && m != base {
			t.Errorf("GPU 0 model %+v, want the preset's %+v", m, base)
		}
		if math.Abs(m.Gain/base.Gain-1) > cfg.BoardSpread+1e-12 {
			t.Errorf("gpu %d gain %v out of spread", i, m.Gain)
		}
		// Channels carry the GPU index.
		for _, s := range dev.Sensors() {
			if s.Channel().GPU != i {
				t.Errorf("gpu %d channel %s has GPU %d", i, s.Channel().Name, s.Channel().GPU)
			}
		}
	}
	if len(gains) != 4 {
		t.Errorf("gains %v: want one per board", gains)
	}
	// Same seed, same system.
	sys2 := open(t, clock.NewVirtual(time.Time{}), cfg)
	for i := range sys.Devices() {
		if sys.Device(i).Info() != sys2.Device(i).Info() {
			t.Error("not deterministic")
		}
	}
	// The preset's sensor map is not shared between devices.
	if m, _ := sys.Device(0).Model("power.instant"); m != cfg.Sensors["power.instant"].Model {
		t.Error("board errors leaked into GPU 0")
	}
}

func TestCountUpdatesASamplerCaught(t *testing.T) {
	// What a test of the Sampler would do: poll at 10 ms, dedupe, and compare the number of
	// new values with the number of updates.
	cfg := mustPreset(t, "h100")
	v := clock.NewVirtual(time.Time{})
	d := open(t, v, cfg).Device(0)
	s, _ := d.Scheduled("power.instant")
	prev, fresh := math.NaN(), 0
	for at := time.Duration(0); at <= 5*time.Second; at += 10 * time.Millisecond {
		v.AdvanceTo(at)
		r, _ := s.Read(nil)
		if r[0].Value != prev {
			fresh++
		}
		prev = r[0].Value
	}
	if want := s.UpdateIndex(5*time.Second) - s.UpdateIndex(0) + 1; fresh != want {
		t.Errorf("caught %d values, %d updates (with the first reading)", fresh, want)
	}
}

func TestConcurrentCommandsAndReads(t *testing.T) {
	clk := clock.NewReal()
	sys := open(t, clk, mustPreset(t, "h100"))
	d := sys.Device(0)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	// Under -race this finds data races; without it, the channels must still read without
	// error (but for the preset's unsupported ones; a channel that updates slowly may have
	// nothing new) while commands start and end.
	var wg sync.WaitGroup
	sensors := d.Sensors()
	readings := make([]int, len(sensors))
	errs := make([]error, len(sensors))
	for i, s := range sensors {
		wg.Go(func() {
			var buf []sensor.Reading
			for ctx.Err() == nil {
				var err error
				if buf, err = s.Read(buf[:0]); err != nil && !errors.Is(err, simsensor.ErrNotSupported) && errs[i] == nil {
					errs[i] = err
				}
				readings[i] += len(buf)
			}
		})
	}
	commands := 0
	wg.Go(func() {
		var o gpu.CommandObserver = d
		for ctx.Err() == nil {
			o.CommandStarted(clk.Now())
			time.Sleep(2 * time.Millisecond)
			o.CommandEnded(clk.Now())
			time.Sleep(time.Millisecond)
			commands++
		}
	})
	wg.Wait()
	total := 0
	for i, s := range sensors {
		total += readings[i]
		if errs[i] != nil {
			t.Errorf("%s: %v", s.Channel().Name, errs[i])
		}
	}
	if total == 0 {
		t.Errorf("no readings from %d channels", len(sensors))
	}
	if commands == 0 {
		t.Error("no command started and ended")
	}
}

// AddBusy: a span's power is active idle plus its share of the way to command_load_w; a
// span restarted at the same start replaces the earlier one; after the last, active idle.
func TestAddBusy(t *testing.T) {
	clk := clock.NewVirtual(time.Time{})
	cfg, err := Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := sys.Device(0)
	ms := time.Millisecond
	ai, cl := float64(cfg.ActiveIdle), float64(cfg.CommandLoad)
	d.AddBusy(10*ms, 11*ms, 0.5)
	d.AddBusy(11*ms, 11*ms+300*time.Microsecond, 0.2)
	d.AddBusy(11*ms, 12*ms, 1) // refines the span above
	d.AddBusy(12*ms, 13*ms, 0)
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{
		{5 * ms, float64(cfg.Idle)},
		{10*ms + 500*time.Microsecond, ai + 0.5*(cl-ai)},
		{11*ms + 500*time.Microsecond, cl},
		{12*ms + 500*time.Microsecond, ai},
		{100 * ms, ai}, // held after the last span
	} {
		if got := float64(d.TruePower(c.t)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("true power at %v: %.3f W, want %.3f", c.t, got, c.want)
		}
	}
	if e, want := d.TrueEnergy(10*ms, 12*ms).Joules(), 1e-3*(ai+0.5*(cl-ai))+1e-3*cl; math.Abs(e-want) > 1e-9 {
		t.Errorf("true energy %.6f J, want %.6f", e, want)
	}
}

// TestPostLoadDip: with post_load_dip_w set, the board draws that much below active idle
// right after each load, the dip closing in four equal steps over post_load_dip_s, with a
// context open (h200) and in the hold before the stair down (k20); a load that starts
// inside the dip cuts it short; the true energy holds the dip; the key round-trips.
func TestPostLoadDip(t *testing.T) {
	for _, preset := range []string{"h200", "k20"} {
		t.Run(preset, func(t *testing.T) {
			cfg := mustPreset(t, preset)
			cfg.PostLoadDip, cfg.PostLoadDipLength = 4, 160*time.Millisecond
			v := clock.NewVirtual(time.Time{})
			d := open(t, v, cfg).Device(0)
			if preset == "h200" {
				d.OpenContext(0)
			}
			ms := time.Millisecond
			d.AddLoad(time.Second, time.Second+50*ms, 600)
			d.AddLoad(time.Second+150*ms, time.Second+200*ms, 600) // inside the first dip
			ai, before := cfg.ActiveIdle, cfg.Idle
			if preset == "h200" {
				before = ai
			}
			for _, c := range []struct {
				at   time.Duration
				want units.Power
			}{{999 * ms, before}, {1010 * ms, 600}, {1060 * ms, ai - 4}, {1095 * ms, ai - 3}, {1130 * ms, ai - 2}, {1145 * ms, ai - 2},
				{1160 * ms, 600}, {1210 * ms, ai - 4}, {1330 * ms, ai - 1}, {1360 * ms, ai}, {1900 * ms, ai}} {
				if got := d.TruePower(c.at); math.Abs(float64(got-c.want)) > 1e-9 {
					t.Errorf("TruePower(%v) = %v, want %v", c.at, got, c.want)
				}
			}
			// the second load's dip, whole: 4 × 40 ms at 4, 3, 2, 1 W below
			got := float64(d.TrueEnergy(1200*ms, 1400*ms)) - float64(ai)*0.2
			if want := -(4 + 3 + 2 + 1) * 0.040; math.Abs(got-want) > 1e-9 {
				t.Errorf("the dip's energy %.6f J, want %.6f", got, want)
			}
		})
	}
	cfg := mustPreset(t, "h200")
	cfg.PostLoadDip, cfg.PostLoadDipLength = 5, 150*time.Millisecond
	b, err := json.Marshal(cfg.file())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"post_load_dip_w":5`) || !strings.Contains(string(b), `"post_load_dip_s":0.15`) {
		t.Errorf("the effective config lacks the dip: %s", b)
	}
}
