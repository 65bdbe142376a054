package serve

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// simConfig is a small sim system: n GPUs of preset, with a load of 420 W over [6 s, 14 s)
// on top of whatever the preset runs.
func simConfig(t testing.TB, preset string, n int) sim.Config {
	t.Helper()
	cfg, err := sim.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GPUs = n
	cfg.Load = append(cfg.Load, sim.LoadStep{T: 6 * time.Second, Duration: 8 * time.Second, Power: 420})
	return cfg
}

// virtualServer opens cfg on a virtual clock and a Server on it.
func virtualServer(t testing.TB, cfg sim.Config, o Options) (*Server, *clock.Virtual, *sim.System) {
	t.Helper()
	v := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	s, err := New(context.Background(), sys, v, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, v, sys
}

// runTo advances v to t in steps of 100 ms, calling Update every second as Run does.
func runTo(s *Server, v *clock.Virtual, t time.Duration) {
	for v.Now() < t {
		next := min(v.Now()+100*time.Millisecond, t)
		v.AdvanceTo(next)
		if next%time.Second == 0 {
			s.Update()
		}
	}
}

func gpuOf(t testing.TB, snaps []snapshot.GPU, i int) snapshot.GPU {
	t.Helper()
	for _, g := range snaps {
		if g.Index == i {
			return g
		}
	}
	t.Fatalf("no GPU %d in the snapshot", i)
	return snapshot.GPU{}
}

// TestEnergyAgainstTruth: the energy counter grows by the twin's true energy (from the
// board's counter), and, on a board without one, the corrected integral does too; the
// corrected power gauge is the true mean over the second it says it describes.
func TestEnergyAgainstTruth(t *testing.T) {
	for _, tc := range []struct {
		name, preset string
		noCounter    bool
		only         string // the one power channel left (none: all)
		tol          float64
	}{
		{"h100 counter", "h100", false, "", 0.01},
		{"h200 corrected", "h200", true, "", 0.02},
		{"v100 corrected", "v100", true, "", 0.03},
		{"h200 usage", "h200", true, "power.usage", 0.02},
		// An AMD board (the twin's MI300X): its counter, and power.socket_current alone.
		{"mi300x counter", "mi300x", false, "", 0.01},
		{"mi300x corrected", "mi300x", true, "", 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig(t, tc.preset, 1)
			if tc.noCounter {
				sc := cfg.Sensors["energy.total"]
				sc.Unsupported = true
				cfg.Sensors["energy.total"] = sc
			}
			if tc.only != "" {
				for _, n := range []string{"power.samples", "power.instant", "power.usage"} {
					if n != tc.only {
						sc := cfg.Sensors[n]
						sc.Unsupported = true
						cfg.Sensors[n] = sc
					}
				}
			}
			s, v, sys := virtualServer(t, cfg, Options{})
			truth := sys.Device(0)
			runTo(s, v, 4*time.Second)
			g1 := gpuOf(t, s.Snapshot(), 0)
			runTo(s, v, 20*time.Second)
			g2 := gpuOf(t, s.Snapshot(), 0)
			want := snapshot.SourceCounter
			if tc.noCounter {
				want = snapshot.SourceCorrected
			}
			if g2.EnergySource != want {
				t.Fatalf("energy source %q, want %q", g2.EnergySource, want)
			}
			// The counter's figure is up to date; the corrected one trails by its delay.
			t1, t2 := 4*time.Second, 20*time.Second
			if tc.noCounter {
				t1, t2 = t1-g1.CorrectedDelay, t2-g2.CorrectedDelay
			}
			// On the board's scale: the twin's truth through the channel's gain and offset
			// (the board's error, which serve reports as it is, like the driver).
			m, ok := truth.Model(g2.EnergyChannel)
			if !ok {
				t.Fatalf("no model of %s", g2.EnergyChannel)
			}
			board := func(t1, t2 time.Duration) float64 {
				e := m.GainOrOne() * float64(truth.TrueEnergy(t1, t2))
				if g2.EnergyChannel != "energy.total" {
					e += float64(m.Offset) * (t2 - t1).Seconds()
				}
				return e
			}
			got := g2.EnergyJ - g1.EnergyJ
			tru := board(t1, t2)
			t.Logf("%s (%s): %.1f J over [%.2f, %.2f] s, truth on the board's scale %.1f J (%+.2f %%); corrected %.1f W (delay %s), idle %.1f W", g2.EnergySource, g2.EnergyChannel, got, t1.Seconds(), t2.Seconds(), tru, 100*(got/tru-1), g2.CorrectedW, g2.CorrectedDelay, g2.IdleW)
			if math.Abs(got/tru-1) > tc.tol {
				t.Errorf("energy %.1f J, truth %.1f J: off by more than %.0f %%", got, tru, 100*tc.tol)
			}
			// The gauge: the mean over [settled - 1 s, settled], settled = now - delay, on
			// the scale of the corrected channel.
			mc, _ := truth.Model(g2.CorrectedChannel)
			end := v.Now() - g2.CorrectedDelay
			mean := mc.GainOrOne()*float64(truth.TrueEnergy(end-CorrectedBin, end))/CorrectedBin.Seconds() + float64(mc.Offset)
			if !g2.HasCorrected || math.Abs(g2.CorrectedW/mean-1) > tc.tol {
				t.Errorf("corrected power %.1f W (has %v), true mean %.1f W", g2.CorrectedW, g2.HasCorrected, mean)
			}
			// The idle floor: the twin rests at idle before the load (no context open).
			idle := mc.GainOrOne()*float64(truth.TrueIdle().AtRest) + float64(mc.Offset)
			if !g2.HasIdle || math.Abs(g2.IdleW/idle-1) > 0.02 {
				t.Errorf("idle %.1f W (has %v), the twin's idle at rest %.1f W on the board's scale", g2.IdleW, g2.HasIdle, idle)
			}
		})
	}
}

// TestMemoryFlat: the ring keeps Keep of readings, however long serve runs.
func TestMemoryFlat(t *testing.T) {
	s, v, _ := virtualServer(t, simConfig(t, "h100", 1), Options{Keep: 4 * time.Second})
	runTo(s, v, 30*time.Second)
	n1 := len(s.gpus[0].ring)
	runTo(s, v, 90*time.Second)
	n2 := len(s.gpus[0].ring)
	if n2 > n1*3/2+10 || n2 == 0 {
		t.Errorf("the ring holds %d readings at 30 s, %d at 90 s", n1, n2)
	}
}

// failing wraps a sim device whose every sensor read fails from a time on.
type failing struct {
	gpu.Device
	clk  clock.Clock
	from time.Duration
}

type failingSensor struct {
	sensor.Sensor
	f *failing
}

func (f *failing) Sensors() []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range f.Device.Sensors() {
		out = append(out, failingSensor{s, f})
	}
	return out
}

func (s failingSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	if s.f.clk.Now() >= s.f.from {
		return dst, errors.New("GPU is lost")
	}
	return s.Sensor.Read(dst)
}

type wrapSys struct {
	gpu.System
	devs []gpu.Device
}

func (w wrapSys) Devices() []gpu.Device { return w.devs }

// TestGPUDown: a GPU whose calls start failing is down (gpuwatt_gpu_up 0, the reason
// said) while the other goes on.
func TestGPUDown(t *testing.T) {
	v := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(v, simConfig(t, "h100", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	devs := sys.Devices()
	w := wrapSys{sys, []gpu.Device{&failing{devs[0], v, 5 * time.Second}, devs[1]}}
	s, err := New(context.Background(), w, v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runTo(s, v, 4*time.Second)
	if g := gpuOf(t, s.Snapshot(), 0); !g.Up {
		t.Fatalf("GPU 0 down before its calls fail: %s", g.Reason)
	}
	runTo(s, v, 10*time.Second)
	before := gpuOf(t, s.Snapshot(), 1).EnergyJ
	runTo(s, v, 12*time.Second)
	snaps := s.Snapshot()
	g0, g1 := gpuOf(t, snaps, 0), gpuOf(t, snaps, 1)
	if g0.Up || !strings.Contains(g0.Reason, "GPU is lost") {
		t.Errorf("GPU 0: up %v, reason %q", g0.Up, g0.Reason)
	}
	if !g1.Up || g1.EnergyJ <= before {
		t.Errorf("GPU 1: up %v, energy %.1f -> %.1f J", g1.Up, before, g1.EnergyJ)
	}
	text := scrape(t, s)
	for _, want := range []string{`gpuwatt_gpu_up{gpu="0",uuid="` + g0.UUID + `"} 0`, `gpuwatt_gpu_up{gpu="1",uuid="` + g1.UUID + `"} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func scrape(t testing.TB, s *Server) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// promtool returns the path of Prometheus's promtool, or skips (fails where
// GPUWATT_REQUIRE_PROMETHEUS is set, as .ci/run does when it could install it).
func promtool(t testing.TB) string {
	return prometheusTool(t, "promtool")
}

func prometheusTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("GPUWATT_REQUIRE_PROMETHEUS") != "" {
			t.Fatalf("%s is not on PATH and GPUWATT_REQUIRE_PROMETHEUS is set", name)
		}
		t.Skipf("%s is not on PATH (Debian: apt-get install prometheus)", name)
	}
	return p
}

// TestPromtoolCheckMetrics: the exposition passes `promtool check metrics` (its lint
// included), with and without --dcgm-names, on a system with a GPU down and processes.
func TestPromtoolCheckMetrics(t *testing.T) {
	tool := promtool(t)
	for _, dcgm := range []bool{false, true} {
		s, v, _ := virtualServer(t, simConfig(t, "h200", 2), Options{DCGMNames: dcgm})
		runTo(s, v, 3*time.Second)
		text := scrape(t, s)
		for _, want := range []string{"gpuwatt_gpu_energy_joules_total{", `gpuwatt_gpu_power_watts{channel="corrected"`, "gpuwatt_gpu_up{", "gpuwatt_sampler_cpu_seconds_total"} {
			if !strings.Contains(text, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if dcgm != strings.Contains(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{") {
			t.Errorf("--dcgm-names %v, DCGM names in /metrics: %v", dcgm, !dcgm)
		}
		cmd := exec.Command(tool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.CombinedOutput()
		if err != nil && !dcgm {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
		// dcgm-exporter's names break two of promtool's style rules (camelCase labels,
		// a counter without _total): kept as dcgm-exporter has them, so that its
		// dashboards work unchanged. Nothing else may be reported.
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && !strings.HasPrefix(l, "DCGM_FI_DEV_") {
				t.Errorf("promtool check metrics (--dcgm-names): %s", l)
			}
		}
	}
}

var _ = units.Power(0)

// TestCounterEveryKept: serve --counter-every reaches the Sampler on the lean default
// (whose options are built anew from a few of the given ones) and on a fixed poll, and a
// value out of range is bad input naming it.
func TestCounterEveryKept(t *testing.T) {
	for _, p := range []*sensor.Options{{Lean: true, CounterEvery: 100 * time.Millisecond}, {Mode: sensor.Fixed, Interval: time.Second, CounterEvery: 100 * time.Millisecond}} {
		if got := (Options{Poll: p}).withDefaults().Poll.CounterEvery; got != 100*time.Millisecond {
			t.Errorf("poll %v: the Sampler's CounterEvery %v, want 100ms", p, got)
		}
	}
	err := Options{Poll: &sensor.Options{Lean: true, CounterEvery: time.Millisecond}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "--counter-every 1ms") {
		t.Errorf("CounterEvery 1ms: %v, want an error naming it", err)
	}
}
