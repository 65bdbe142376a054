// Package sim is a simulated GPU for testing code that measures itself with gpuwatt,
// without a GPU: gpuwatt's digital twin of an NVIDIA board (presets h100, h200, a100,
// v100, k20) on a virtual clock, with every power channel of the real driver (each the
// true power through its board's sensor model: update period, window, lag, noise, gain
// and offset errors) and an energy counter, and the true power and energy known, so that
// a test can check what gpuwatt measured against the truth.
//
// Time is virtual: it moves only when the program waits for the simulated GPU
// (Synchronize) or for time to pass (Sleep), so a test of seconds of GPU work runs in
// milliseconds and gives the same figures every run. Work is queued on each GPU's stream
// as a real GPU's is: Launch returns at once, and the work runs after what was queued
// before it; Synchronize waits until it is done. A marker written before the work is
// done (no Synchronize) ends its region too early, and gpuwatt flags it, as on a GPU.
//
// Record on it with gpuwatt.Start(ctx, gpuwatt.Options{Sim: s}). Each GPU has a CUDA
// context open from time 0 (the program's): between launches it draws its active idle
// power, held (the h200 preset, as the H200 holds it while a context is open) or for a
// while before it steps down to idle (the others). The model and the presets are
// documented in the repository's docs/sim.md.
package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	isim "github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/simhook"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func init() {
	simhook.Of = func(v any) (gpu.System, *clock.Virtual, bool) {
		s, ok := v.(*System)
		if !ok || s == nil {
			return nil, nil, false
		}
		return s.sys, s.clk, true
	}
}

// Presets are the names New takes: the boards the twin models.
func Presets() []string { return isim.Presets() }

// Options of New. The zero value is one GPU of the h100 preset, seed 1.
type Options struct {
	// Preset names the board: h100 (default), h200, a100, v100, k20 or mi300x (an AMD board) (Presets).
	Preset string
	// GPUs is the number of GPUs (default 1); GPUs after the first carry board errors of
	// their own.
	GPUs int
	// Seed fixes the sensors' noise and timing and the boards' errors (default 1): one seed
	// gives the same readings every run.
	Seed uint64
	// Host, if set, puts the GPUs in a host whose RAPL counters the twin models: each CPU
	// package draws PackageIdleW, plus PackageBusyW while a GPU runs work; its DRAM DRAMW.
	Host *Host
}

// Host is the twin's host (Options.Host).
type Host struct {
	Sockets                    int // default 1
	PackageIdleW, PackageBusyW float64
	DRAMW                      float64
}

// System is a set of simulated GPUs on one virtual clock. It is not safe for use by
// several goroutines at once (a test drives it from one).
type System struct {
	clk  *clock.Virtual
	sys  *isim.System
	gpus []*GPU
}

// GPU is one simulated GPU and its stream.
type GPU struct {
	s     *System
	index int
	dev   *isim.Device
	// queued is when the work queued so far ends (<= now: the stream is idle).
	queued time.Duration
}

// New opens a simulated system at time 0 of its virtual clock.
func New(o Options) (*System, error) {
	name := o.Preset
	if name == "" {
		name = "h100"
	}
	cfg, err := isim.Preset(name)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if o.GPUs < 0 {
		return nil, fmt.Errorf("sim: GPUs %d: want 1 or more (0: one)", o.GPUs)
	}
	if o.GPUs > 0 {
		cfg.GPUs = o.GPUs
	}
	if o.Seed != 0 {
		cfg.Seed = o.Seed
	}
	if h := o.Host; h != nil {
		cfg.Host = &isim.Host{Sockets: max(h.Sockets, 1), PackageIdle: units.Power(h.PackageIdleW), PackageBusy: units.Power(h.PackageBusyW),
			DRAM: units.Power(h.DRAMW), MaxRangeUJ: 262143328850, EnergyUnitUJ: 61.035}
	}
	clk := clock.NewVirtual(time.Time{})
	sys, err := isim.Open(clk, cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &System{clk: clk, sys: sys}
	for i := range cfg.GPUs {
		d := sys.Device(i)
		d.OpenContext(0)
		s.gpus = append(s.gpus, &GPU{s: s, index: i, dev: d})
	}
	return s, nil
}

// TrueHostEnergy is the true energy of one of each socket's host domains, "package" or
// "dram", over [from, to] in joules (0 without Options.Host).
func (s *System) TrueHostEnergy(kind string, from, to time.Duration) float64 {
	return s.sys.TrueHostEnergy(kind, from, to).Joules()
}

// Name is the system's name as gpuwatt reports it ("sim:h200").
func (s *System) Name() string { return s.sys.Name() }

// Now is the virtual clock's time since the system was opened.
func (s *System) Now() time.Duration { return s.clk.Now() }

// Sleep lets d pass on the host: the virtual clock moves on by d, queued work runs.
func (s *System) Sleep(d time.Duration) {
	if d > 0 {
		s.clk.Advance(d)
	}
}

// Synchronize waits until the work queued on every GPU is done (as cudaDeviceSynchronize
// on each): the virtual clock moves on to its end.
func (s *System) Synchronize() {
	end := s.clk.Now()
	for _, g := range s.gpus {
		end = max(end, g.queued)
	}
	s.clk.AdvanceTo(end)
}

// GPUs is the number of GPUs.
func (s *System) GPUs() int { return len(s.gpus) }

// GPU returns GPU i (0 ≤ i < GPUs); it panics for any other i.
func (s *System) GPU(i int) *GPU {
	if i < 0 || i >= len(s.gpus) {
		panic(fmt.Sprintf("sim: GPU %d: the system has %d (0..%d)", i, len(s.gpus), len(s.gpus)-1))
	}
	return s.gpus[i]
}

// Launch queues work on GPU 0 (see GPU.Launch).
func (s *System) Launch(d time.Duration, watts float64) { s.GPU(0).Launch(d, watts) }

// Launch queues work that keeps the GPU busy for d at a true board power of watts, after
// the work queued before it, and returns at once (the clock does not move). Watts above
// the board's power limit are capped at it, as the board does by lowering its clocks.
// It panics where d is negative or watts is not a positive number.
func (g *GPU) Launch(d time.Duration, watts float64) {
	if d < 0 || !(watts > 0) || math.IsInf(watts, 0) {
		panic(fmt.Sprintf("sim: Launch(%v, %v W): want a duration >= 0 and a power > 0", d, watts))
	}
	if lim := g.dev.Config().PowerLimit; lim > 0 {
		watts = min(watts, float64(lim))
	}
	start := max(g.queued, g.s.clk.Now())
	g.queued = start + d
	if d > 0 {
		g.dev.AddLoad(start, start+d, units.Power(watts))
	}
}

// Synchronize waits until the work queued on this GPU is done.
func (g *GPU) Synchronize() { g.s.clk.AdvanceTo(max(g.queued, g.s.clk.Now())) }

// TruePower is the GPU's true board power at t, in watts.
func (g *GPU) TruePower(t time.Duration) float64 { return float64(g.dev.TruePower(t)) }

// TrueEnergy is the GPU's true board energy over [from, to], in joules: what a perfect
// meter on the board would read. A region's energy from gpuwatt lies within its
// interval of it (the interval with the board's gain error, Energy.AbsLow to AbsHigh).
func (g *GPU) TrueEnergy(from, to time.Duration) float64 {
	return g.dev.TrueEnergy(from, to).Joules()
}

// ActiveIdle is the GPU's true power with a context open and nothing running, in watts.
func (g *GPU) ActiveIdle() float64 { return float64(g.dev.TrueIdle().Active) }

// PowerLimit is the board's power limit, in watts.
func (g *GPU) PowerLimit() float64 { return float64(g.dev.Config().PowerLimit) }
