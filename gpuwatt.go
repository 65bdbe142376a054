// Package gpuwatt measures the energy of regions of a Go program's own GPU work.
//
// Start records every power channel of the chosen GPUs (NVIDIA's driver through NVML,
// loaded at run time: no cgo, no CUDA toolkit) while the program runs; Begin and End
// bracket regions of it (nested, and with names that repeat); Stop gives each region's
// energy on each GPU with its 95 % interval, from the same estimator as the gpuwatt
// command: the driver's energy counter where it resolves the region, else the 20 ms
// sample ring calibrated to the counter, else a power channel with its sensor's lag or
// window undone. Warnings are values in the Result; a figure that cannot be given is
// marked so (Energy.OK false), never a silent number.
//
//	rec, err := gpuwatt.Start(ctx, gpuwatt.Options{})
//	...
//	r := rec.Begin("step")
//	runStep()                 // and wait for the GPU: cudaDeviceSynchronize or equivalent
//	r.End()
//	res, err := rec.Stop()
//	for _, reg := range res.Regions {
//		e := reg.GPUs[0]
//		fmt.Printf("%s: %.1f J (95 %%: %.1f to %.1f J)\n", reg.Name, e.Joules, e.Low, e.High)
//	}
//
// GPU work is asynchronous: End a region after the GPU finished its work (a
// synchronise), or the region ends when the work was queued. Stop flags a region whose
// end the power shows the work ran past (Warning code "unsynchronised_marker").
//
// Without a GPU, record on the simulated device of package sim (Options.Sim), whose true
// energy is known, in tests; or Options.Device "sim" for the twin on the wall clock.
// Traces are saved and read back with Trace (Result.Trace, LoadTrace). Programs in
// other languages mark regions for `gpuwatt measure` through the file named by
// $GPUWATT_MARKS (python/gpuwatt/markers.py, c/gpuwatt_marks.h; docs/markers.md).
package gpuwatt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/simhook"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
	"github.com/gpuwatt/gpuwatt/sim"
)

// Options configure a recording. The zero value records every GPU of the NVIDIA driver and
// of AMD's amdsmi, polling adaptively; without either, Start returns an error naming what
// it looked for (the sim device stands in only when asked).
type Options struct {
	// Device is "auto" (or ""): the NVIDIA and AMD GPUs of this machine; "nvml": the
	// NVIDIA driver only; "amdsmi": the AMD GPUs only (ROCm's libamd_smi); "sim" or
	// "sim:PRESET" (h100, h200, a100, v100, k20, mi300x): the sim device on the wall clock,
	// which cannot see the program's GPU work: it draws SimLoadW from Start to Stop (idle by
	// default), and the Result says so.
	Device string
	// SimLoadW is the power the wall-clock sim device (Device "sim") draws from Start to
	// Stop in W: 0 leaves it idle (a program that launches no sim work), SimPresetLoad its
	// preset's command_load_w. Ignored elsewhere.
	SimLoadW float64
	// Sim records on a simulated system (sim.New) and its virtual clock instead: work is
	// what the program launches on it, and its true energy is known. Device must then be
	// "" or "sim".
	Sim *sim.System
	// GPUs are the indices of the GPUs to record; nil means all.
	GPUs []int
	// Poll is the interval between two reads of each channel; 0 learns each channel's
	// update period and polls at an eighth of it (gpuwatt measure's --poll adaptive).
	Poll time.Duration
	// CounterEvery reads the energy counter that often (10 ms to 1 min; gpuwatt measure's
	// --counter-every) instead of at most 0.2 % of a core (every ~2-10 s on an H200): a
	// denser anchor for regions under a load no power channel resolves, at the counter's
	// CPU cost (an H200's call busy-waits 3.4-6.3 ms: every 100 ms is 3.5-6 % of a core;
	// docs/sampling.md). 0: the default.
	CounterEvery time.Duration
	// HostRoot is the powercap tree of the host's RAPL counters (default
	// /sys/class/powercap; a sim.System's own where its config models a host): each
	// region's CPU package and DRAM energy (RegionResult.Host) and the node's
	// (RegionResult.Node). NoHost reads none.
	HostRoot string
	NoHost   bool
	// Margin is recorded after Start and before Stop returns, so that every sensor has a
	// reading on both sides of every region (default 300 ms, instant on a sim.System;
	// negative: none).
	Margin time.Duration
}

// SimPresetLoad as Options.SimLoadW: the sim device's preset command_load_w.
const SimPresetLoad = -1

// DefaultMargin is Options.Margin's default.
const DefaultMargin = 300 * time.Millisecond

// Recorder records the chosen GPUs from Start to Stop. Its methods are safe for use by
// several goroutines.
type Recorder struct {
	ctx     context.Context
	clk     clock.Clock
	sys     gpu.System
	own     bool // sys was opened by Start (closed by Stop)
	devs    []gpu.Device
	smp     *sensor.Sampler
	poll    sensor.Options
	margin  time.Duration
	warn    []Warning
	started bool   // a CommandObserver was told the program started
	allGPUs bool   // every GPU of the system is recorded (a node total may be given)
	hostWhy string // why the host's RAPL counters are not recorded

	mu      sync.Mutex
	regions []*Region
	open    []*Region
	count   map[string]int
	stopped bool
}

// Region is a region begun by Recorder.Begin; End ends it.
type Region struct {
	rec        *Recorder
	name       string
	instance   int
	depth      int
	parent     *Region
	start, end time.Duration
	ended      bool
}

// Start opens the device and starts recording. ctx bounds the recording: when it is done,
// the sampler stops reading (Stop still returns what was read).
func Start(ctx context.Context, o Options) (*Recorder, error) {
	if o.Poll < 0 {
		return nil, fmt.Errorf("gpuwatt: Options.Poll %s: want 0 (adaptive) or a positive interval", o.Poll)
	}
	if err := sensor.CheckCounterEvery(o.CounterEvery); err != nil {
		return nil, fmt.Errorf("gpuwatt: Options.CounterEvery %v", err)
	}
	if o.SimLoadW < 0 && o.SimLoadW != SimPresetLoad || math.IsNaN(o.SimLoadW) || o.SimLoadW > 5000 {
		return nil, fmt.Errorf("gpuwatt: Options.SimLoadW %g: want 0 (idle), a power in W up to 5000, or SimPresetLoad", o.SimLoadW)
	}
	r := &Recorder{ctx: ctx, count: map[string]int{}, margin: o.Margin}
	if o.Margin == 0 {
		r.margin = DefaultMargin
	}
	r.margin = max(r.margin, 0)
	if o.Sim != nil {
		if d := strings.ToLower(strings.TrimSpace(o.Device)); d != "" && d != "sim" {
			return nil, fmt.Errorf("gpuwatt: Options.Device %q with Options.Sim: leave Device empty (or \"sim\") to record on the sim.System", o.Device)
		}
		sys, clk, ok := simhook.Of(o.Sim)
		if !ok {
			return nil, errors.New("gpuwatt: Options.Sim is not an opened sim.System")
		}
		r.sys, r.clk = sys, clk
	} else {
		if _, _, err := device.ParseName(o.Device, false); err != nil {
			return nil, fmt.Errorf("gpuwatt: Options.Device: %v", err)
		}
		op, err := device.Open(device.Spec{Device: o.Device}, device.Options{RealOnly: true})
		if err != nil {
			return nil, fmt.Errorf("gpuwatt: Options.Device: %w", err)
		}
		r.sys, r.clk, r.own = op.System, op.Clock, true
	}
	fail := func(err error) (*Recorder, error) {
		if r.own {
			r.sys.Close()
		}
		return nil, err
	}
	all := r.sys.Devices()
	if len(o.GPUs) == 0 {
		r.devs = all
	}
	for _, i := range o.GPUs {
		if i < 0 || i >= len(all) {
			return fail(fmt.Errorf("gpuwatt: Options.GPUs: no GPU %d (found %d)", i, len(all)))
		}
		if slices.Contains(o.GPUs[:slices.Index(o.GPUs, i)], i) {
			return fail(fmt.Errorf("gpuwatt: Options.GPUs: GPU %d named twice", i))
		}
		r.devs = append(r.devs, all[i])
	}
	if len(r.devs) == 0 {
		return fail(errors.New("gpuwatt: no GPU found"))
	}
	var sensors []sensor.Sensor
	for _, d := range r.devs {
		sensors = append(sensors, d.Sensors()...)
	}
	r.allGPUs = len(r.devs) == len(all)
	if o.NoHost {
		r.hostWhy = "not asked for (Options.NoHost)"
	} else if hs, err := device.HostSensors(r.sys, o.HostRoot); err != nil {
		r.hostWhy = err.Error()
	} else {
		sensors = append(sensors, hs...)
	}
	popt := sensor.Options{}
	if o.Poll > 0 {
		p, err := sensor.FixedPoll(o.Poll)
		if err != nil {
			return fail(fmt.Errorf("gpuwatt: Options.Poll %v", err))
		}
		popt = p
	}
	popt.CounterEvery = o.CounterEvery
	r.poll = popt
	r.smp = sensor.New(r.clk, sensors, popt)
	if err := r.smp.Start(ctx); err != nil {
		return fail(fmt.Errorf("gpuwatt: %w", err))
	}
	if o.Sim == nil && r.sys.Simulated() {
		r.warn = append(r.warn, r.chargeProgram(o.SimLoadW))
	}
	r.clk.Sleep(ctx, r.margin)
	r.smp.Poke()
	return r, nil
}

// chargeProgram gives the wall-clock sim device the program's load (Options.SimLoadW) and
// returns the warning that states it: the twin cannot see the program's GPU work.
func (r *Recorder) chargeProgram(w float64) Warning {
	msg := "recorded on the sim device " + r.sys.Name() + ": every figure is simulated; "
	if w == 0 {
		return Warning{Code: "simulated", Message: msg + "its GPUs stayed idle from Start to Stop (Options.SimLoadW 0: the program launches no sim work)"}
	}
	var loads []string
	for _, d := range r.devs {
		c, ok := d.(interface {
			CommandLoad() units.Power
			SetCommandLoad(units.Power)
		})
		ob, ok2 := d.(gpu.CommandObserver)
		if !ok || !ok2 {
			continue
		}
		if w > 0 {
			c.SetCommandLoad(units.Power(w))
		}
		loads = append(loads, c.CommandLoad().String())
		ob.CommandStarted(r.clk.Now())
		r.started = true
	}
	return Warning{Code: "simulated", Message: msg + "its GPUs drew " + strings.Join(loads, ", ") + " from Start to Stop whatever the program did (Options.SimLoadW)"}
}

// Begin begins a region named name (one word: no blanks or control characters) now, and
// returns it; End ends it. Regions may nest, and a name may be used again: each Begin is
// a region of its own (RegionResult.Instance counts them per name). Begin after Stop
// returns a region that is not recorded. A bad name is not recorded either: Stop's
// Result warns about it.
func (r *Recorder) Begin(name string) *Region {
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	g := &Region{rec: r, name: name, start: now}
	if r.stopped {
		return g
	}
	if err := marks.ValidName(name); err != nil {
		r.warn = append(r.warn, Warning{Code: string(marks.CodeBadLine), Message: fmt.Sprintf("Begin(%q) at %.3f s: %v; not recorded", name, now.Seconds(), err)})
		return g
	}
	r.count[name]++
	g.instance, g.depth = r.count[name], len(r.open)
	if n := len(r.open); n > 0 {
		g.parent = r.open[n-1]
	}
	r.regions = append(r.regions, g)
	r.open = append(r.open, g)
	return g
}

// End ends the region now. A second End does nothing.
func (g *Region) End() {
	r := g.rec
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if g.ended || g.instance == 0 || r.stopped {
		return
	}
	g.end, g.ended = now, true
	if i := slices.Index(r.open, g); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
}

// Name is the region's name.
func (g *Region) Name() string { return g.name }

// Stop records the margin, stops recording and gives every ended region its energy. A
// region not ended by then is left out, with a warning. The error is non-nil only where
// nothing could be recorded; a recording cut short (ctx done, a driver call that hangs)
// is returned marked Incomplete. Stop closes the device it opened; a second Stop returns
// an error.
func (r *Recorder) Stop() (*Result, error) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, errors.New("gpuwatt: Stop called twice")
	}
	r.mu.Unlock()
	r.clk.Sleep(r.ctx, r.margin)
	r.mu.Lock()
	r.stopped = true
	regions, open := slices.Clone(r.regions), slices.Clone(r.open)
	warns := slices.Clone(r.warn)
	r.mu.Unlock()

	if r.started {
		for _, d := range r.devs {
			if ob, ok := d.(gpu.CommandObserver); ok {
				ob.CommandEnded(r.clk.Now())
			}
		}
	}
	chans, samples := r.smp.Stop()
	_, end := r.smp.Span()
	meta := trace.Meta{
		Format: trace.Format, Version: version(), Device: r.sys.Name(), Simulated: r.sys.Simulated(),
		DriverVersion: r.sys.DriverVersion(), NVMLVersion: r.sys.NVMLVersion(), Start: r.clk.Epoch(),
		Duration: end.Seconds(), Poll: trace.Poll{Mode: r.poll.String()}, Channels: chans, Unavailable: r.smp.Unavailable(),
		Marks: []trace.Mark{}, VirtualClock: clock.IsVirtual(r.clk),
	}
	if r.poll.Mode == sensor.Fixed {
		meta.Poll = trace.Poll{Mode: "fixed", Interval: r.poll.Interval.Seconds()}
	}
	meta.Poll.CounterEvery = r.poll.CounterEvery.Seconds()
	for _, d := range r.devs {
		meta.GPUs = append(meta.GPUs, d.Info())
	}
	if hung := r.smp.Hung(); len(hung) > 0 {
		meta.Incomplete, meta.IncompleteWhy = true, "a driver call hangs: "+strings.Join(hung, "; ")
	} else if r.ctx.Err() != nil {
		meta.Incomplete, meta.IncompleteWhy = true, "the context was done before Stop: "+r.ctx.Err().Error()
	}
	if r.own {
		r.sys.Close()
	}

	var spans []marks.Span
	index := map[*Region]int{}
	for _, g := range regions {
		if !g.ended {
			continue
		}
		index[g] = len(spans)
		parent := -1
		for p := g.parent; p != nil; p = p.parent {
			if i, ok := index[p]; ok {
				parent = i
				break
			}
		}
		spans = append(spans, marks.Span{Name: g.name, Instance: g.instance, Depth: g.depth, Parent: parent, Start: g.start, End: g.end,
			Begin: marks.Event{Begin: true, Name: g.name, T: g.start}, Stop: marks.Event{Name: g.name, T: g.end}})
		meta.Marks = append(meta.Marks, trace.Mark{T: g.start.Seconds(), Name: "begin " + g.name}, trace.Mark{T: g.end.Seconds(), Name: "end " + g.name})
	}
	for _, g := range open {
		warns = append(warns, Warning{Code: string(marks.CodeUnended), Subject: g.name,
			Message: fmt.Sprintf("region %s #%d began at %.3f s and was not ended before Stop; left out (no energy is given for it)", g.name, g.instance, g.start.Seconds())})
	}
	slices.SortStableFunc(meta.Marks, func(a, b trace.Mark) int { return cmpF(a.T, b.T) })
	tr := &trace.Trace{Meta: meta, Samples: samples}
	tr.RoundToStored() // the figures are those of the trace as Save writes it
	res := newResult(tr, spans, warns, r.allGPUs)
	res.HostUnavailable = r.hostWhy
	return res, nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// newResult gives the spans of tr their energies (with the check for unsynchronised ends).
func newResult(tr *trace.Trace, spans []marks.Span, warns []Warning, allGPUs bool) *Result {
	res := &Result{Device: tr.Meta.Device, Simulated: tr.Meta.Simulated, Incomplete: tr.Meta.Incomplete,
		IncompleteReason: tr.Meta.IncompleteWhy, Trace: &Trace{tr: tr}, Warnings: warns, Regions: []RegionResult{}}
	if res.Warnings == nil {
		res.Warnings = []Warning{}
	}
	for _, g := range tr.Meta.GPUs {
		res.GPUs = append(res.GPUs, gpuOf(g))
	}
	for _, reg := range energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true}) {
		out := regionOf(reg)
		hostOf(tr, &out, allGPUs)
		res.Regions = append(res.Regions, out)
	}
	return res
}

// hostOf gives a region the host's RAPL domains' energy, and the node's where every GPU of
// the machine and every domain has a figure.
func hostOf(tr *trace.Trace, g *RegionResult, allGPUs bool) {
	hs := energy.HostRegions(tr, g.Start, g.End)
	if len(hs) == 0 {
		return
	}
	var parts []energy.Interval
	node := allGPUs
	for _, e := range g.GPUs {
		node = node && e.OK
		parts = append(parts, e.interval())
	}
	for _, h := range hs {
		e := energyOf(h.Figure)
		e.GPU, e.OK, e.MeanWatts = trace.HostGPU, h.OK(), h.MeanPowerW
		g.Host = append(g.Host, HostEnergy{Domain: h.Name, Kind: h.Kind, Energy: e})
		node = node && h.OK()
		if h.Kind != "psys" { // the platform's figure holds the packages and DRAM
			parts = append(parts, h.Interval)
		}
	}
	if n, ok := energy.NodeTotal(parts); ok && node {
		sum := energyOfInterval(n)
		sum.GPU, sum.OK, sum.Method, sum.Source = trace.HostGPU, true, "sum", "the GPUs, CPU packages and DRAM"
		g.Node = &sum
		if d := g.Duration(); d > 0 {
			g.Node.MeanWatts = n.EnergyJ / d.Seconds()
		}
	}
}

// version is gpuwatt's module version as the program was built with it.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	const mod = "github.com/gpuwatt/gpuwatt"
	if bi.Main.Path == mod && bi.Main.Version != "" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == mod {
			if d.Replace != nil {
				return d.Version + " (replaced by " + d.Replace.Path + ")"
			}
			return d.Version
		}
	}
	return "devel"
}
