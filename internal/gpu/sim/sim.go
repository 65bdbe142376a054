package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/simsensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

var (
	_ gpu.System          = (*System)(nil)
	_ gpu.Device          = (*Device)(nil)
	_ gpu.CommandObserver = (*Device)(nil)
	_ gpu.Truth           = (*Device)(nil)
)

// System is a set of sim devices on one clock.
type System struct {
	cfg  Config
	devs []*Device
	clk  clock.Clock
}

// Open returns a sim system of cfg.GPUs devices whose sensors run on clk. The t=0 of the
// config's load is the clock's origin.
func Open(clk clock.Clock, cfg Config) (*System, error) {
	if clk == nil {
		return nil, fmt.Errorf("sim: no clock")
	}
	cfg = cfg.clone()
	if cfg.Preset == "" {
		cfg.Preset = "custom"
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	s := &System{cfg: cfg, clk: clk}
	for i := range cfg.GPUs {
		d, err := newDevice(clk, cfg, i)
		if err != nil {
			return nil, err
		}
		s.devs = append(s.devs, d)
	}
	return s, nil
}

// Name implements gpu.System: "sim:<preset>".
func (s *System) Name() string { return "sim:" + s.cfg.Preset }

// Simulated implements gpu.System: always true.
func (s *System) Simulated() bool { return true }

// DriverVersion implements gpu.System.
func (s *System) DriverVersion() string { return "sim" }

// NVMLVersion implements gpu.System.
func (s *System) NVMLVersion() string { return "sim" }

// Devices implements gpu.System.
func (s *System) Devices() []gpu.Device {
	out := make([]gpu.Device, len(s.devs))
	for i, d := range s.devs {
		out[i] = d
	}
	return out
}

// Device returns device i with its truth accessors.
func (s *System) Device(i int) *Device { return s.devs[i] }

// Config returns the config the system was opened with.
func (s *System) Config() Config { return s.cfg.clone() }

// Close implements gpu.System: gpuwatt's own CUDA contexts close at the clock's now, as
// the real GPU's do when the process ends.
func (s *System) Close() error {
	for _, d := range s.devs {
		d.closeExecContext()
	}
	return nil
}

// activity is a period of load: power p over [start, end) (end = clock.Never while open),
// with the memory power and the levels of the clock.sm and throttle.reasons truths while
// it runs (1 and 1 for a command or scripted load: the top clock, no reason).
type activity struct {
	start, end time.Duration
	p          units.Power
	mem        units.Power
	clk, rsn   float64
}

// Device is one sim GPU. Its true board power is idle power when nothing has run; the
// highest of the loads running (scripted loads, measured commands, kernel runs); after the
// last load ends, active idle for the hold time, then IdleSteps equal steps down to idle,
// one every IdleStepInterval. Its memory power is MemoryIdle + MemoryLoadFraction ×
// (board − idle), except while a kernel runs (its own, from its DRAM bytes). It implements
// gpu.Executor (exec.go).
type Device struct {
	clk     clock.Clock
	cfg     Config // with this board's sensor models
	info    trace.GPU
	board   *simsensor.Load
	memory  *simsensor.Load
	busy    *simsensor.Load
	smClock *simsensor.Load // the level clock.sm observes
	reasons *simsensor.Load // the level throttle.reasons observes
	sensors []sensor.Sensor
	byName  map[string]sensor.Sensor

	runMu sync.Mutex // serialises kernel runs, as one stream does

	mu      sync.Mutex
	acts    []activity
	open    []int         // indexes in acts of running commands, innermost last
	horizon time.Duration // the latest end of all acts (clock.Never while one is open)
	last    int           // index in acts of an act ending at horizon (-1: none)
	// busySpan is 1 + the index in acts of the last AddBusy span, while it may still be
	// refined (0: none); busyPrev is the act that ended last before it (hasPrev).
	busySpan int
	busyPrev activity
	hasPrev  bool
	// ctxs are the CUDA contexts opened on the device, in the order opened: while one is
	// open and nothing runs, the device draws active idle; after the last closes, it
	// holds active idle, then steps down to idle at rest. execCtx is 1 + the index in ctxs
	// of gpuwatt's own context (the executor's, opened by Props or the first Prepare, as
	// the real GPU's; 0: none yet); cmdCtx are those of running commands, innermost last.
	ctxs    []ctxSpan
	execCtx int
	cmdCtx  []int
	// procSeen is when Processes was last called (procAsked: ever).
	procSeen  time.Duration
	procAsked bool
	// scratch is rebuildWith's working space, reused under mu.
	scratch rebuildScratch
}

// rebuildScratch holds the slices one rebuildWith works in: gpuwatt loadlevel's
// transactions on the sim give the device a span every millisecond, each rebuilding the
// truths from its start, and their allocations were a tenth of internal/cli's test CPU.
// Nothing in them outlives the call (simsensor.Load.SetSteps copies the steps).
type rebuildScratch struct {
	evs           []time.Duration
	acts, running []activity
	out           []truthState
	steps         []simsensor.Step
}

// ctxSpan is a CUDA context open over [open, close) (close = clock.Never while open).
type ctxSpan struct{ open, close time.Duration }

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unit returns a number in [0, 1) fixed by (seed, a, b).
func unit(seed, a, b uint64) float64 {
	return float64(mix(seed^mix(a^mix(b)))>>11) / (1 << 53)
}

// pciBuses are the bus numbers of the GPUs of an 8-GPU HGX board.
var pciBuses = []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// uuidPrefix is how a vendor's UUIDs start: NVML's "GPU-", amdsmi's nothing.
func uuidPrefix(vendor string) string {
	if vendor == VendorAMD {
		return ""
	}
	return "GPU-"
}

// traceVendor is trace.GPU.Vendor of a board of vendor.
func traceVendor(vendor string) string {
	if vendor == VendorAMD {
		return trace.VendorAMD
	}
	return ""
}

func newDevice(clk clock.Clock, cfg Config, index int) (*Device, error) {
	cfg = cfg.clone() // the board errors below are this device's own
	seed := mix(cfg.Seed ^ mix(uint64(index)+1))
	if index > 0 && cfg.BoardSpread > 0 {
		g := 1 + cfg.BoardSpread*(2*unit(cfg.Seed, uint64(index), 1)-1)
		o := units.Power(cfg.BoardSpread * float64(cfg.Idle) * (2*unit(cfg.Seed, uint64(index), 2) - 1))
		for _, spec := range specsFor(cfg.Vendor) {
			sc, ok := cfg.Sensors[spec.name]
			if !ok || spec.q != trace.QPower && spec.q != trace.QEnergy {
				continue
			}
			sc.Model.Gain *= g
			if spec.kind != kindCounter {
				sc.Model.Offset += o
			}
			cfg.Sensors[spec.name] = sc
		}
	}
	bus := 0x18 + 0x10*index
	if index < len(pciBuses) {
		bus = pciBuses[index]
	}
	def := cfg.DefaultPowerLimit
	if def == 0 {
		def = cfg.PowerLimit
	}
	d := &Device{
		clk: clk,
		cfg: cfg,
		info: trace.GPU{
			Index:             index,
			Name:              cfg.Name,
			UUID:              fmt.Sprintf("%s5a1d0000-%04x-4%03x-8%03x-%012x", uuidPrefix(cfg.Vendor), index, mix(seed)&0xfff, mix(seed+1)&0xfff, mix(seed+2)&0xffffffffffff),
			PCIBusID:          fmt.Sprintf("00000000:%02X:00.0", bus),
			PowerLimitW:       float64(cfg.PowerLimit),
			DefaultPowerLimit: float64(def),
			Vendor:            traceVendor(cfg.Vendor),
		},
		board:   simsensor.NewLoad(cfg.Idle),
		memory:  simsensor.NewLoad(cfg.MemoryIdle),
		busy:    simsensor.NewLoad(0),
		smClock: simsensor.NewLoad(0),
		reasons: simsensor.NewLoad(0),
		byName:  map[string]sensor.Sensor{},
		last:    -1,
	}
	for _, st := range cfg.Load {
		end := clock.Never
		if st.Duration > 0 {
			end = st.T + st.Duration
		}
		d.acts = append(d.acts, d.loadActivity(st.T, end, st.Power))
	}
	// A step without a duration lasts until the next step.
	for i := range d.acts {
		if cfg.Load[i].Duration == 0 && i+1 < len(d.acts) {
			d.acts[i].end = d.acts[i+1].start
		}
	}
	d.acts = append(d.acts, processActivities(cfg, index, d.loadActivity)...)
	d.findHorizon()
	d.rebuild(0)

	// Energy counters count from the driver's start, long before ours.
	start := units.Energy(math.Round(1e5 + 9e5*unit(seed, 3, 3)))
	for _, spec := range specsFor(cfg.Vendor) {
		sn, err := d.newSensor(spec, seed, start)
		if err != nil {
			return nil, fmt.Errorf("sim gpu %d: %w", index, err)
		}
		d.sensors = append(d.sensors, sn)
		d.byName[spec.name] = sn
	}
	return d, nil
}

func (d *Device) newSensor(spec chanSpec, seed uint64, start units.Energy) (sensor.Sensor, error) {
	ch := trace.Channel{
		GPU:      d.info.Index,
		Name:     spec.name,
		Quantity: spec.q,
		Unit:     spec.q.Unit(),
		Source:   "sim (as " + spec.source + ")",
	}
	sc, ok := d.cfg.Sensors[spec.name]
	if !ok || sc.Unsupported {
		ch.Description = fmt.Sprintf("sim: not supported on the %s, as on the real board (%s)", d.cfg.Name, spec.source)
		return simsensor.NewUnsupported(ch), nil
	}
	truth := d.board
	switch spec.truth {
	case truthMemory:
		truth = d.memory
	case truthBusy:
		truth = d.busy
	case truthSMClock:
		truth = d.smClock
	case truthReasons:
		truth = d.reasons
	}
	m := sc.Model
	switch spec.kind {
	case kindConst:
		ch.Description = fmt.Sprintf("sim: enforced power limit %s (power_limit_w)", d.cfg.PowerLimit)
		ch.Setting = true
		return simsensor.NewConst(ch, float64(d.cfg.PowerLimit), time.Second), nil
	case kindBuffered:
		ch.Description = fmt.Sprintf("sim: %s; ring of %d samples, %s", spec.what, sc.Ring, m.Describe(ch.Unit))
		if s := sc.Stamps; s.Share > 0 {
			ch.Description += fmt.Sprintf("; %.0f %% of the stamps off the grid (up to %s late, %s early)", 100*s.Share, s.Late, s.Early)
		}
		b, err := simsensor.NewBuffered(d.clk, truth, ch, m, seed, sc.Ring)
		if err != nil {
			return nil, err
		}
		return b, b.SetStamps(sc.Stamps)
	case kindCounter:
		ch.Description = fmt.Sprintf("sim: exact integral of the true board power, counting from %s at the clock's origin; %s",
			start, m.DescribeCounter())
		return simsensor.NewCounter(d.clk, truth, ch, m, seed, start)
	}
	ch.Description = fmt.Sprintf("sim: %s; %s", spec.what, m.Describe(ch.Unit))
	if p := sc.Pairs; p.Share > 0 {
		ch.Description += fmt.Sprintf("; %.0f %% of the updates come as a pair, a half-done value ~%s early", 100*p.Share, p.Lead)
	}
	p, err := simsensor.NewPublished(d.clk, truth, ch, m, seed)
	if err != nil {
		return nil, err
	}
	return p, p.SetPairs(sc.Pairs)
}

// Info implements gpu.Device.
func (d *Device) Info() trace.GPU { return d.info }

// Sensors implements gpu.Device: every channel of the real driver, in a stable order;
// channels the preset's board lacks fail with simsensor.ErrNotSupported.
func (d *Device) Sensors() []sensor.Sensor { return append([]sensor.Sensor(nil), d.sensors...) }

// Sensor returns the channel with the given name, or nil.
func (d *Device) Sensor(name string) sensor.Sensor { return d.byName[name] }

// Scheduled returns the channel with the given name with its truth accessors (update
// times, published values, model), or false for unsupported and constant channels.
func (d *Device) Scheduled(name string) (simsensor.Scheduled, bool) {
	s, ok := d.byName[name].(simsensor.Scheduled)
	return s, ok
}

// Model returns the sensor model of a channel of this board (with its board errors), and
// whether the channel is supported.
func (d *Device) Model(name string) (sensormodel.Model, bool) {
	s, ok := d.Scheduled(name)
	if !ok {
		return sensormodel.Model{}, false
	}
	return s.Model(), true
}

// Config returns the device's effective config (its sensor models include its board errors).
func (d *Device) Config() Config { return d.cfg.clone() }

// TruePower is the true board power at t.
func (d *Device) TruePower(t time.Duration) units.Power { return d.board.Power(t) }

// TrueEnergy is the exact true board energy over [t0, t1].
func (d *Device) TrueEnergy(t0, t1 time.Duration) units.Energy { return d.board.Energy(t0, t1) }

// TrueMemoryPower is the true memory power at t.
func (d *Device) TrueMemoryPower(t time.Duration) units.Power { return d.memory.Power(t) }

// Busy reports whether a load or command runs at t.
func (d *Device) Busy(t time.Duration) bool { return d.busy.Power(t) > 0 }

// Board returns the true board power, which the board power channels observe.
func (d *Device) Board() *simsensor.Load { return d.board }

// Memory returns the true memory power, which the memory power channels observe.
func (d *Device) Memory() *simsensor.Load { return d.memory }

// BusyLoad returns the busy signal (1 while a load or command runs, else 0), which the
// clock, state and utilisation channels observe.
func (d *Device) BusyLoad() *simsensor.Load { return d.busy }

// TrueIdle implements gpu.Truth: the board's idle at rest (idle_w: no CUDA context open,
// long after any load) and active idle (active_idle_w: a context open, nothing running).
func (d *Device) TrueIdle() gpu.Idle {
	return gpu.Idle{AtRest: d.cfg.Idle, Active: d.cfg.ActiveIdle}
}

// ContextOpen reports whether a CUDA context is open on the device at t.
func (d *Device) ContextOpen(t time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctxOpenAt(t)
}

func (d *Device) ctxOpenAt(t time.Duration) bool {
	for _, c := range d.ctxs {
		if c.open <= t && t < c.close {
			return true
		}
	}
	return false
}

// OpenContext opens a CUDA context at t, as a program does (cuCtxCreate or the primary
// context's retain), and returns its handle for CloseContext: from t on, while nothing
// runs, the device draws active idle instead of stepping down to idle at rest.
func (d *Device) OpenContext(t time.Duration) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.openCtx(t)
}

// CloseContext closes the context h (from OpenContext) at t; after the last one closes
// the device holds active idle for active_idle_hold_s, then steps down to idle at rest.
// (Both change the truth only where context_active_idle is set.)
// Closing a context twice, or an unknown one, does nothing.
func (d *Device) CloseContext(h int, t time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeCtx(h, t)
}

func (d *Device) openCtx(t time.Duration) int {
	d.ctxs = append(d.ctxs, ctxSpan{open: t, close: clock.Never})
	d.busySpan = 0
	d.rebuild(t)
	return len(d.ctxs) - 1
}

func (d *Device) closeCtx(h int, t time.Duration) {
	if h < 0 || h >= len(d.ctxs) || d.ctxs[h].close != clock.Never {
		return
	}
	d.ctxs[h].close = max(t, d.ctxs[h].open)
	d.busySpan = 0
	d.rebuild(d.ctxs[h].close)
}

// openExecContext opens gpuwatt's own context at the clock's now unless it is open: the
// real GPU's executor opens it on Props or the first Prepare and holds it until the
// process ends (Close).
func (d *Device) openExecContext() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.execCtx == 0 {
		d.execCtx = 1 + d.openCtx(d.clk.Now())
	}
}

// closeExecContext closes gpuwatt's own context at the clock's now.
func (d *Device) closeExecContext() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.execCtx > 0 {
		d.closeCtx(d.execCtx-1, d.clk.Now())
	}
}

// CommandLoad is the true power the device draws while a measured command runs
// (command_load_w): the twin cannot see a real command's GPU work, so this is its charge,
// which measure states beside every figure.
func (d *Device) CommandLoad() units.Power {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.CommandLoad
}

// SetCommandLoad sets the charge of the commands started from now on (measure --sim-load).
func (d *Device) SetCommandLoad(p units.Power) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg.CommandLoad = p
}

// CommandStarted implements gpu.CommandObserver: at t the command opens its CUDA context
// and from t on the device draws command_load_w until CommandEnded.
func (d *Device) CommandStarted(t time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cmdCtx = append(d.cmdCtx, d.openCtx(t))
	d.add(d.loadActivity(t, clock.Never, d.cfg.CommandLoad))
	d.open = append(d.open, len(d.acts)-1)
}

// CommandEnded implements gpu.CommandObserver: the innermost running command ends at t
// and its context closes with it; the device holds active idle, then steps down to idle
// at rest (or stays at active idle while another context is open). Without a running
// command it does nothing.
func (d *Device) CommandEnded(t time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.open) == 0 {
		return
	}
	i := d.open[len(d.open)-1]
	d.open = d.open[:len(d.open)-1]
	d.acts[i].end = max(t, d.acts[i].start)
	if n := len(d.cmdCtx); n > 0 {
		h := d.cmdCtx[n-1]
		d.cmdCtx = d.cmdCtx[:n-1]
		if d.ctxs[h].close == clock.Never {
			d.ctxs[h].close = max(t, d.ctxs[h].open)
		}
	}
	d.findHorizon()
	d.rebuild(d.acts[i].end)
}

// AddLoad adds a load of power p over [start, end) (end = clock.Never: for ever) on top of
// what is there: the true power is the highest of the loads running.
func (d *Device) AddLoad(start, end time.Duration, p units.Power) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.add(d.loadActivity(start, max(end, start), p))
}

// AddBusy tells the device that work it does not run itself kept it busy a share (0 to 1) of
// [start, end): gpuwatt loadlevel's CPU transactions stand for its kernels that way. Over
// the span it draws active idle plus that share of the way to command_load_w; after the
// last span, active idle and the stair down to idle, as after any load. A call whose start
// equals the previous span's start replaces that span (its share is refined as the work
// becomes known); spans otherwise come in time order, after every other load.
func (d *Device) AddBusy(start, end time.Duration, share float64) {
	d.AddBusyAt(start, end, min(max(share, 0), 1), d.cfg.CommandLoad)
}

// AddBusyAt is AddBusy with the power of a fully busy device given: over [start, end) the
// device draws active idle plus share (0 or more: several kernels that each fill part of
// the device can run at once) of the way to full, at most power_limit_w. gpuwatt
// loadlevel's transactions on the sim give their kernels' power (LaunchModel) as full.
func (d *Device) AddBusyAt(start, end time.Duration, share float64, full units.Power) {
	share = max(share, 0)
	p := d.cfg.ActiveIdle + units.Power(share)*(full-d.cfg.ActiveIdle)
	if d.cfg.PowerLimit > 0 {
		p = min(p, d.cfg.PowerLimit)
	}
	a := d.loadActivity(start, max(end, start), p)
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := d.busySpan - 1; i >= 0 && i == len(d.acts)-1 && d.acts[i].start == start && len(d.open) == 0 {
		d.acts[i] = a
		d.horizon, d.last = a.end, i
		if d.hasPrev {
			d.rebuildWith(start, []activity{d.busyPrev, a})
		} else {
			d.rebuildWith(start, []activity{a})
		}
		return
	}
	d.busySpan = 0
	switch {
	case d.last < 0:
		d.hasPrev = false
	case start >= d.horizon && d.acts[d.last].end != clock.Never:
		d.busyPrev, d.hasPrev = d.acts[d.last], true
	default:
		d.add(a) // overlaps other loads: not refined later
		return
	}
	d.add(a)
	d.busySpan = len(d.acts)
}

// loadActivity is a scripted load or a command: memory power from the board's, the top
// clock, no throttle reason.
func (d *Device) loadActivity(start, end time.Duration, p units.Power) activity {
	return activity{start: start, end: end, p: p, mem: d.memoryPower(p), clk: 1, rsn: 1}
}

// add appends a and rewrites the truths from its start on. Called with d.mu held.
func (d *Device) add(a activity) {
	d.acts = append(d.acts, a)
	if a.start >= d.horizon && d.last >= 0 && d.acts[d.last].end != clock.Never {
		// The common case of kernels run one after another: a starts after everything
		// else has ended, so only a and the act that ended last shape the truths from
		// a.start on.
		prev := d.acts[d.last]
		d.note(len(d.acts) - 1)
		d.rebuildWith(a.start, []activity{prev, a})
		return
	}
	d.note(len(d.acts) - 1)
	d.rebuild(a.start)
}

// note updates horizon and last for the new act i.
func (d *Device) note(i int) {
	if d.last < 0 || d.acts[i].end >= d.horizon {
		d.horizon, d.last = d.acts[i].end, i
	}
}

// findHorizon recomputes horizon and last from every act.
func (d *Device) findHorizon() {
	d.horizon, d.last = 0, -1
	for i := range d.acts {
		d.note(i)
	}
}

// rebuild rewrites the truths from `from` on. Called with d.mu held (or before d is shared).
func (d *Device) rebuild(from time.Duration) {
	d.rebuildWith(from, d.relevant(from))
}

// relevant returns the acts that shape the truths from `from` on, in their order in
// d.acts: those that end after from, and the one that ended last at or before it (a gap
// that covers from began at its end, and restarts the stair down to idle there).
func (d *Device) relevant(from time.Duration) []activity {
	var out []activity
	lastEnded := -1
	for i, a := range d.acts {
		if a.end > from {
			continue
		}
		if lastEnded < 0 || a.end > d.acts[lastEnded].end {
			lastEnded = i
		}
	}
	for i, a := range d.acts {
		if a.end > from || i == lastEnded {
			out = append(out, a)
		}
	}
	return out
}

// rebuildWith rewrites the truths from `from` on, from the acts given (the relevant ones).
func (d *Device) rebuildWith(from time.Duration, acts []activity) {
	st := d.profile(acts)
	d.setSteps(d.board, from, st, d.cfg.Idle, func(s truthState) units.Power { return s.board })
	d.setSteps(d.memory, from, st, d.cfg.MemoryIdle, func(s truthState) units.Power { return s.mem })
	d.setSteps(d.busy, from, st, 0, func(s truthState) units.Power { return units.Power(s.busy) })
	d.setSteps(d.smClock, from, st, 0, func(s truthState) units.Power { return units.Power(s.clk) })
	d.setSteps(d.reasons, from, st, 0, func(s truthState) units.Power { return units.Power(s.rsn) })
}

// setSteps gives l the truth level picks from st, from `from` on: one step at from with
// the value that holds there, then the later ones (built in d's scratch space). Called
// with d.mu held.
func (d *Device) setSteps(l *simsensor.Load, from time.Duration, st []truthState, p0 units.Power, level func(truthState) units.Power) {
	i := sort.Search(len(st), func(i int) bool { return st[i].t > from })
	if i > 0 {
		p0 = level(st[i-1])
	}
	steps := append(d.scratch.steps[:0], simsensor.Step{T: from, P: p0})
	for _, s := range st[i:] {
		steps = append(steps, simsensor.Step{T: s.t, P: level(s)})
	}
	d.scratch.steps = steps
	l.SetSteps(from, steps)
}

func (d *Device) memoryPower(board units.Power) units.Power {
	return d.cfg.MemoryIdle + units.Power(d.cfg.MemoryLoadFraction)*max(board-d.cfg.Idle, 0)
}

// truthState is the value of every truth from t on.
type truthState struct {
	t              time.Duration
	board, mem     units.Power
	busy, clk, rsn float64
}

// profile returns the truths as steps, from the activities given and the device's
// contexts: while loads run, the one of highest power (the first of them on a tie) sets
// every truth; while none runs and a context is open (on a board whose contexts hold it
// up: context_active_idle), active idle; after the last load ends and the last context
// closes (whichever is later), active idle for the hold time, then the stair down to idle
// at rest; idle at rest before anything happened.
func (d *Device) profile(given []activity) []truthState {
	sc := &d.scratch
	evs := sc.evs[:0]
	for _, a := range given {
		evs = append(evs, a.start)
		if a.end != clock.Never {
			evs = append(evs, a.end)
		}
	}
	ctxs := d.ctxs
	if !d.cfg.ContextActiveIdle {
		ctxs = nil // contexts change nothing on this board
	}
	for _, c := range ctxs {
		evs = append(evs, c.open)
		if c.close != clock.Never {
			evs = append(evs, c.close)
		}
	}
	slices.Sort(evs)
	evs = compact(evs)
	sc.evs = evs
	// (a new name, not the parameter's: the caller's []activity{prev, a} stays on its
	// stack)
	acts := append(sc.acts[:0], given...)
	slices.SortStableFunc(acts, func(a, b activity) int { return cmp.Compare(a.start, b.start) })
	sc.acts = acts
	out := sc.out[:0]
	running := sc.running[:0]
	next := 0
	for i, e := range evs {
		for next < len(acts) && acts[next].start <= e {
			running = append(running, acts[next])
			next++
		}
		var top activity
		on := false
		kept := running[:0]
		for _, a := range running {
			if a.end > e {
				kept = append(kept, a)
				if a.start <= e && (!on || a.p > top.p) {
					top, on = a, true
				}
			}
		}
		running = kept
		if on {
			out = append(out, truthState{t: e, board: top.p, mem: top.mem, busy: 1, clk: top.clk, rsn: top.rsn})
			continue
		}
		until := clock.Never
		if i+1 < len(evs) {
			until = evs[i+1]
		}
		// The last load's end (its release): the dip below active idle after it.
		le, ended := time.Duration(0), false
		for _, a := range acts {
			if a.end != clock.Never && a.end <= e && (!ended || a.end > le) {
				le, ended = a.end, true
			}
		}
		if ctxs != nil && d.ctxOpenAt(e) {
			out = append(out, d.idleState(e, d.cfg.ActiveIdle-d.dip(e, le, ended)))
			out = d.dipSteps(out, e, until, le, ended, func(t time.Duration) units.Power { return d.cfg.ActiveIdle })
			continue
		}
		// A gap at rest: active idle from the release (the last load's end or context's
		// close), then steps down to idle at rest.
		r, released := le, ended
		for _, c := range ctxs {
			if c.close != clock.Never && c.close <= e && (!released || c.close > r) {
				r, released = c.close, true
			}
		}
		if !released {
			out = append(out, d.idleState(e, d.cfg.Idle))
			continue
		}
		m := len(out)
		out = append(out, d.idleState(e, d.stair(e-r)-d.dip(e, le, ended)))
		out = d.dipSteps(out, e, until, le, ended, func(t time.Duration) units.Power { return d.stair(t - r) })
		n := d.cfg.IdleSteps
		for j := 1; j <= n; j++ {
			t := r + d.cfg.ActiveIdleHold + time.Duration(j-1)*d.cfg.IdleStepInterval
			if t >= until {
				break
			}
			if t > e {
				out = append(out, d.idleState(t, d.stair(t-r)-d.dip(t, le, ended)))
			}
		}
		if d.cfg.PostLoadDip != 0 && len(out)-m > 1 {
			// a dip's steps may fall between the stair's
			seg := out[m:]
			sort.SliceStable(seg, func(a, b int) bool { return seg[a].t < seg[b].t })
		}
	}
	sc.out, sc.running = out, running
	return out
}

// dipSteps appends the dip's own steps after the load that ended at le, inside (e, until),
// on the level base gives, in time order.
func (d *Device) dipSteps(out []truthState, e, until, le time.Duration, ended bool, base func(t time.Duration) units.Power) []truthState {
	if !ended || d.cfg.PostLoadDip == 0 || d.cfg.PostLoadDipLength <= 0 {
		return out
	}
	for j := 1; j <= dipSteps; j++ {
		t := le + time.Duration(j)*d.cfg.PostLoadDipLength/dipSteps
		if t > e && t < until {
			out = append(out, d.idleState(t, base(t)-d.dip(t, le, ended)))
		}
	}
	return out
}

// dipSteps is the number of equal steps the post-load dip closes in.
const dipSteps = 4

// dip is how far below active idle the board draws at t after a load that ended at le
// (Config.PostLoadDip): the full dip, closing in dipSteps equal steps over its length.
func (d *Device) dip(t, le time.Duration, ended bool) units.Power {
	c := &d.cfg
	if !ended || c.PostLoadDip == 0 || c.PostLoadDipLength <= 0 || t < le || t-le >= c.PostLoadDipLength {
		return 0
	}
	j := int((t - le) * dipSteps / c.PostLoadDipLength)
	return c.PostLoadDip * units.Power(dipSteps-j) / dipSteps
}

// stair is the idle power a time since after the release: active idle for the hold time,
// then idle_steps equal steps down to idle at rest, one every idle_step_s.
func (d *Device) stair(since time.Duration) units.Power {
	c := &d.cfg
	if since < c.ActiveIdleHold {
		return c.ActiveIdle
	}
	j := c.IdleSteps
	if c.IdleStepInterval > 0 {
		j = min(int((since-c.ActiveIdleHold)/c.IdleStepInterval)+1, c.IdleSteps)
	}
	if j >= c.IdleSteps {
		return c.Idle
	}
	return c.ActiveIdle + (c.Idle-c.ActiveIdle)*units.Power(j)/units.Power(c.IdleSteps)
}

func (d *Device) idleState(t time.Duration, p units.Power) truthState {
	return truthState{t: t, board: p, mem: d.memoryPower(p)}
}

// compact removes repeated values from a sorted slice.
func compact(s []time.Duration) []time.Duration {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
