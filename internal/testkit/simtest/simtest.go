// Package simtest opens the sim device on a virtual clock and records its sensors through
// the Sampler, for the tests of the packages above them: the few lines every such test
// began with, written once.
package simtest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Sim is an opened sim system on a virtual clock at its epoch (time zero), and its GPU 0.
type Sim struct {
	Clock *clock.Virtual
	Sys   *sim.System
	Cfg   sim.Config
	Dev   *sim.Device
}

// Preset returns the named preset's configuration; it fails t for an unknown name.
func Preset(t testing.TB, name string) sim.Config {
	t.Helper()
	cfg, err := sim.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Open opens the named preset (see OpenConfig).
func Open(t testing.TB, preset string) Sim {
	t.Helper()
	return OpenConfig(t, Preset(t, preset))
}

// OpenConfig opens cfg on a new virtual clock; it fails t where the sim refuses cfg.
func OpenConfig(t testing.TB, cfg sim.Config) Sim {
	t.Helper()
	clk := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Sim{Clock: clk, Sys: sys, Cfg: cfg, Dev: sys.Device(0)}
}

// Record runs GPU 0's sensors named in names (all of them when names is empty) through the
// Sampler with opt for span from the clock's now, and returns the trace. A name the device
// has no sensor for fails t. Add the device's loads before.
func (s Sim) Record(t testing.TB, names []string, opt sensor.Options, span time.Duration) *trace.Trace {
	t.Helper()
	sensors := s.Dev.Sensors()
	if len(names) > 0 {
		sensors = nil
		for _, n := range names {
			x := s.Dev.Sensor(n)
			if x == nil {
				t.Fatalf("%s has no sensor %s", s.Sys.Name(), n)
			}
			sensors = append(sensors, x)
		}
	}
	smp := sensor.New(s.Clock, sensors, opt)
	if err := smp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(span)
	chans, samples := smp.Stop()
	return &trace.Trace{Samples: samples, Meta: trace.Meta{
		Device: s.Sys.Name(), Duration: span.Seconds(), GPUs: []trace.GPU{s.Dev.Info()},
		Channels: chans, Unavailable: smp.Unavailable(), VirtualClock: true,
	}}
}

// Series splits tr's samples by channel.
func Series(tr *trace.Trace) map[string][]trace.Sample {
	m := map[string][]trace.Sample{}
	for _, x := range tr.Samples {
		m[x.Channel] = append(m[x.Channel], x)
	}
	return m
}

// ThinCounter keeps one reading of the energy counter every lo–hi (uniform) in tr, as a
// recorder that reads it sparingly (measure's lean default: every few seconds) leaves it.
func ThinCounter(tr *trace.Trace, rng *rand.Rand, lo, hi time.Duration) {
	next := time.Duration(-1)
	kept := tr.Samples[:0]
	for _, x := range tr.Samples {
		if x.Channel == trace.ChEnergyTotal {
			if x.T < next {
				continue
			}
			next = x.T + lo + time.Duration(rng.Float64()*float64(hi-lo))
		}
		kept = append(kept, x)
	}
	tr.Samples = kept
}
