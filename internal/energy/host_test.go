package energy_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/raplsensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// hostTwin opens an H100 twin in a two-socket host whose RAPL counters wrap every ~0.3 s
// (max_energy_range_uj 40 J), records its energy counter and the host's counters for 12 s
// over GPU loads, and returns the trace.
func hostTwin(t *testing.T) (*trace.Trace, *sim.System, [][2]time.Duration) {
	t.Helper()
	cfg := simtest.Preset(t, "h100")
	cfg.Host = &sim.Host{Sockets: 2, PackageIdle: 60, PackageBusy: 95, DRAM: 9, DRAMBusy: 14, MaxRangeUJ: 40_000_000, EnergyUnitUJ: 61.035}
	s := simtest.OpenConfig(t, cfg)
	busy := [][2]time.Duration{{2 * time.Second, 4 * time.Second}, {6 * time.Second, 6*time.Second + 300*time.Millisecond}, {8 * time.Second, 10 * time.Second}}
	for _, b := range busy {
		s.Dev.AddLoad(b[0], b[1], units.Power(500))
	}
	hs, err := s.Sys.HostSensors()
	if err != nil {
		t.Fatal(err)
	}
	sensors := append([]sensor.Sensor{s.Dev.Sensor(trace.ChEnergyTotal)}, hs...)
	smp := sensor.New(s.Clock, sensors, sensor.Options{})
	if err := smp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(12 * time.Second)
	chans, samples := smp.Stop()
	tr := &trace.Trace{Samples: samples, Meta: trace.Meta{Device: s.Sys.Name(), Duration: 12, GPUs: []trace.GPU{s.Dev.Info()}, Channels: chans, VirtualClock: true}}
	return tr, s.Sys, busy
}

// TestHostRegionHoldsTruth: on the twin, each RAPL domain's energy over random regions
// (0.05 to 4 s, across load edges and counter wraps) has the true energy inside its
// interval, and the interval is narrow (the edges' brackets only).
func TestHostRegionHoldsTruth(t *testing.T) {
	t.Parallel()
	tr, sys, _ := hostTwin(t)
	chans := energy.HostChannels(tr)
	var names []string
	for _, ch := range chans {
		names = append(names, ch.Name)
	}
	if got := strings.Join(names, " "); got != "cpu.dram.0 cpu.dram.1 cpu.package.0 cpu.package.1" {
		t.Fatalf("host channels %q", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		from := time.Duration(rng.Float64() * 7.5 * float64(time.Second))
		d := time.Duration((0.05 + rng.Float64()*3.95) * float64(time.Second))
		to := min(from+d, 11*time.Second)
		for _, ch := range chans {
			f := energy.HostRegion(tr, ch.Name, from, to)
			truth := sys.TrueHostEnergy(energy.HostKind(ch.Name), from, to).Joules()
			if !f.OK() || truth < f.LowJ || truth > f.HighJ || f.EnergyJ < f.LowJ || f.EnergyJ > f.HighJ {
				t.Errorf("region %d %s %.3f–%.3f s: %.3f J [%.3f, %.3f], truth %.3f J", i, ch.Name, from.Seconds(), to.Seconds(), f.EnergyJ, f.LowJ, f.HighJ, truth)
			}
			// The brackets: a few poll intervals of the domain's power at each edge.
			if hw := (f.HighJ - f.LowJ) / 2; hw > 0.02*truth+1.5 {
				t.Errorf("region %d %s: half-width %.3f J of %.3f J", i, ch.Name, hw, truth)
			}
			if !f.Partial || f.Method != energy.MethodHostCounter {
				t.Errorf("%s: partial %v method %s: RAPL's own accuracy is not in the interval", ch.Name, f.Partial, f.Method)
			}
		}
	}
	if f := energy.HostRegion(tr, "cpu.package.0", 11.9e9, 20e9); f.OK() {
		t.Errorf("a region past the recording got a figure: %+v", f)
	}
}

var _ = raplsensor.Package

// TestHostEdgeReadingAfterEdge: a RAPL reading shows the counter as of its last update, up to
// one update period U before the call; stamped half a period back (as the Sampler stamps it),
// a reading stamped before an edge may hold energy from after it. A domain drawing 1000 W
// that stops 0.3 ms after a region begins (its counter updated every millisecond, read
// every 0.4 ms): for every placement of the edge against the updates, the interval holds
// the truth, 0.3 J.
func TestHostEdgeReadingAfterEdge(t *testing.T) {
	t.Parallel()
	const p = 1000.0
	u := raplsensor.UpdatePeriod
	for from := 5 * time.Millisecond; from < 7*time.Millisecond; from += 50 * time.Microsecond {
		stop := from + 300*time.Microsecond
		e := func(t time.Duration) float64 { return p * min(t, stop).Seconds() }
		tr := &trace.Trace{Meta: trace.Meta{Channels: []trace.Channel{{GPU: trace.HostGPU, Name: "cpu.package.0", Cumulative: true}}}}
		for tc := 100 * time.Microsecond; tc < 40*time.Millisecond; tc += 400 * time.Microsecond {
			tr.Samples = append(tr.Samples, trace.Sample{T: tc - u/2, GPU: trace.HostGPU, Channel: "cpu.package.0", Value: e(tc / u * u)})
		}
		to := 30 * time.Millisecond
		f := energy.HostRegion(tr, "cpu.package.0", from, to)
		truth := e(to) - e(from)
		if !f.OK() || truth < f.LowJ-1e-9 || truth > f.HighJ+1e-9 {
			t.Errorf("[%v, %v]: %.4f J [%.4f, %.4f], truth %.4f J", from, to, f.EnergyJ, f.LowJ, f.HighJ, truth)
		}
	}
}
