package serve

import (
	"sort"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

// CorrectedBin is the span the corrected power gauge is the mean over.
const CorrectedBin = time.Second

// forgetProcess is how long a process that no longer shows up keeps its counter.
const forgetProcess = 5 * time.Minute

type reading struct {
	v float64
	t time.Duration
}

// gpuState is what serve knows about one GPU: the latest readings (filled by the Sampler's
// sink, under mu) and the derived figures (worked out by update, under Server.mu).
type gpuState struct {
	dev  gpu.Device
	info trace.GPU
	keep time.Duration

	// Set once by setChannels, read-only after.
	powerChans []string
	corrChan   string
	model      sensormodel.Model
	modelWhy   string
	hasCounter bool
	unread     []trace.Missing
	procs      gpu.ProcessLister
	workloads  Workloads

	mu          sync.Mutex
	latest      map[string]reading
	ring        []trace.Sample // the corrected channel's recent readings
	ctrHave     bool
	ctrLast     float64
	ctrSum      float64 // the counter's rises since the first reading
	ctrResets   int
	ctrT        time.Duration // when the counter last rose (its reading's stamp)
	ringScratch []trace.Sample

	// The grid of a driver buffer's stamps (power.samples), fitted once a minute rather
	// than by every update's correct.Prepare (correct.FitLattice's fixed cost was most of
	// serve's CPU); prepOpt are the options Prepare gets.
	lat      correct.Lattice
	latOK    bool
	latAt    time.Duration
	latTried bool
	snapped  []trace.Sample
	prepOpt  correct.Options

	// Derived, under Server.mu.
	up                  bool
	reason              string
	corrW               float64
	hasCorr             bool
	delay               time.Duration
	corrJ               float64
	corrUpTo            time.Duration
	corrStarted         bool
	idleW               float64
	hasIdle             bool
	energyJ             float64
	prevEnergyJ         float64
	prevT               time.Duration
	splitStarted        bool
	splitBaseJ          float64       // energyJ when the split began
	splitBaseT          time.Duration // the time that energy describes (energyTo then)
	energyTo            time.Duration // the time energyJ describes the board up to
	energyFrom          time.Duration // ... and where the split's last share ended
	useHist             []useSpan     // the processes' SM use per update, the last minute
	proc                map[int]*procState
	unattributedJ       float64
	procsFail           bool     // the last read of the processes failed: their use is not known
	procRead            procRead // the processes read for the next update, outside the server's lock
	pendUnJ             float64  // energy held with no process's share while no idle floor was known
	polls, errs, missed int64
}

type procState struct {
	comm     string
	workload workload.Workload // asked once, when the process is first seen
	energyJ  float64
	share    float64
	lastSeen time.Duration
	// pendJ and pendS: the energy given to it (above 0 W) and its share of the time while
	// no idle floor was known (serve started on a busy GPU), settled when one is.
	pendJ, pendS float64
}

// procRead is one read of a GPU's processes, made by Server.Update before it takes the
// server's lock: the driver's call can block for seconds while a process creates its CUDA
// context (scrapes timed out for 15 s on four H200s as GEMM processes started,
// results/nvidia-h200/2026-11-28-four-gpus), and a scrape must never wait for the driver.
type procRead struct {
	use  []gpu.ProcessUse
	err  error
	done bool
}

// readProcesses reads the processes for the next update (nothing where the device lists none).
func (g *gpuState) readProcesses() {
	if g.procs == nil {
		return
	}
	use, err := g.procs.Processes()
	g.procRead = procRead{use: use, err: err, done: true}
}

// useSpan is the processes' SM use (percent, by pid) over [from, to).
type useSpan struct {
	from, to time.Duration
	use      map[int]float64
}

func newGPUState(d gpu.Device, o Options) *gpuState {
	g := &gpuState{dev: d, info: d.Info(), keep: o.Keep, latest: map[string]reading{}, proc: map[int]*procState{}, up: true}
	g.procs, _ = d.(gpu.ProcessLister)
	return g
}

// setChannels notes which channels the Sampler reads for this GPU and picks the one the
// corrected power comes from (trace.PowerPreference: the driver's buffer first).
func (g *gpuState) setChannels(chans []trace.Channel, missing []trace.Missing) {
	have := map[string]bool{}
	for _, c := range chans {
		if c.GPU != g.info.Index {
			continue
		}
		have[c.Name] = true
		if c.Quantity == trace.QPower && !c.Setting {
			g.powerChans = append(g.powerChans, c.Name)
		}
	}
	for _, m := range missing {
		if m.GPU == g.info.Index {
			g.unread = append(g.unread, m)
		}
	}
	g.hasCounter = have[trace.ChEnergyTotal]
	if name, ok := trace.Preferred(trace.PowerPreference, func(n string) bool { return have[n] }); ok {
		g.corrChan = name
		g.model, g.modelWhy = correct.Auto(name, g.info.Name)
	}
	if len(have) == 0 {
		g.up = false
		g.reason = "no channel could be read"
		if len(g.unread) > 0 {
			g.reason = g.unread[0].Name + ": " + g.unread[0].Reason
		}
	}
}

// add files a new sample (the Sampler's sink).
func (g *gpuState) add(x trace.Sample, clk clock.Clock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.latest[x.Channel] = reading{x.Value, x.T}
	switch x.Channel {
	case g.corrChan:
		g.ring = append(g.ring, x)
		// Drop what is older than keep, a quarter of keep at a time (each drop copies).
		if cut := x.T - g.keep; g.ring[0].T < cut-g.keep/4 {
			i := sort.Search(len(g.ring), func(i int) bool { return g.ring[i].T >= cut })
			g.ring = append(g.ring[:0], g.ring[i:]...)
		}
	case trace.ChEnergyTotal:
		if g.ctrHave {
			if d := x.Value - g.ctrLast; d > 0 {
				g.ctrSum += d
				g.ctrT = x.T
			} else if d < 0 {
				g.ctrResets++ // a driver reload: count on from the new value
			}
		}
		g.ctrHave, g.ctrLast = true, x.Value
	}
}

// update works out the derived figures at now. chans are this GPU's channels with their
// statistics; last the statistics at the previous update (by GPU and channel).
func (g *gpuState) update(now time.Duration, chans []trace.Channel, last map[statKey]trace.ChannelStats) {
	g.health(chans, last)

	g.mu.Lock()
	ring := append(g.ringScratch[:0], g.ring...)
	g.ringScratch = ring
	ctrHave, ctrSum, ctrT := g.ctrHave, g.ctrSum, g.ctrT
	g.mu.Unlock()

	g.correct(now, ring)
	prev := g.energyJ
	switch {
	case g.hasCounter && ctrHave:
		g.energyJ, g.energyTo = ctrSum, ctrT
	case !g.hasCounter:
		g.energyJ, g.energyTo = g.corrJ, g.corrUpTo
	}
	g.energyJ = max(g.energyJ, prev) // a counter never goes back
	g.split(now)
}

// health sets up and the sampling counters from the Sampler's statistics: a GPU whose
// every call since the previous update failed is down.
func (g *gpuState) health(chans []trace.Channel, last map[statKey]trace.ChannelStats) {
	if len(chans) == 0 {
		return // nothing read from the start: setChannels said why
	}
	var polls, errs, missed int64
	polled, failing := 0, 0
	why := ""
	for _, c := range chans {
		st := c.Stats
		if st == nil {
			continue
		}
		polls += int64(st.Polls)
		errs += int64(st.Errors)
		missed += int64(st.Missed)
		prev := last[statKey{c.GPU, c.Name}]
		dp, de := st.Polls-prev.Polls, st.Errors-prev.Errors
		if dp > 0 {
			polled++
			if de >= dp {
				failing++
				if why == "" {
					why = c.Name + ": " + st.LastError
				}
			}
		}
	}
	g.polls, g.errs, g.missed = polls, errs, missed
	if polled > 0 {
		g.up = failing < polled
		g.reason = ""
		if !g.up {
			g.reason = why
		}
	}
}

// tail is how long after a reading the inversion of the model still needs readings: the
// corrected power up to t is settled once readings reach t + tail.
func tail(m sensormodel.Model, period time.Duration) time.Duration {
	return m.Window + m.Delay + 3*m.Tau + period
}

// correct integrates the corrected power of the readings in ring up to the settled time,
// and sets the corrected power gauge (the mean over the last settled CorrectedBin) and
// the idle floor.
func (g *gpuState) correct(now time.Duration, ring []trace.Sample) {
	if len(ring) < 4 {
		return
	}
	// Only the stretch this update needs is inverted (what is not yet integrated, and the
	// gauge's second, with the inversion's tail before them and half a second to spare):
	// the readings' grid fit (correct.FitLattice) costs in proportion to them, and on
	// 8 s of an H200's power.samples it was most of serve's CPU.
	if g.corrStarted {
		per := g.model.Period
		if per <= 0 {
			per = 100 * time.Millisecond
		}
		from := min(g.corrUpTo, ring[len(ring)-1].T-tail(g.model, per)-CorrectedBin) - tail(g.model, per) - 500*time.Millisecond
		if i := sort.Search(len(ring), func(i int) bool { return ring[i].T >= from }); i > 0 && len(ring)-i >= 4 {
			ring = ring[i:]
		}
	}
	ser := correct.Prepare(g.snap(now, ring), g.model, g.prepOpt)
	per := ser.Period()
	tl := tail(g.model, per)
	head := ring[0].T + tl
	settled := ring[len(ring)-1].T - tl
	if settled <= head {
		return
	}
	if !g.corrStarted {
		g.corrStarted, g.corrUpTo = true, settled
	}
	// Readings lost (the GPU was down longer than the ring holds): the integral goes on
	// from what the ring describes, without the gap.
	g.corrUpTo = max(g.corrUpTo, head)
	if settled > g.corrUpTo {
		if e, ok := ser.Joules(g.corrUpTo, settled); ok {
			g.corrJ += max(e, 0)
			g.corrUpTo = settled
		}
	}
	if settled-CorrectedBin >= head {
		if e, ok := ser.Joules(settled-CorrectedBin, settled); ok {
			g.corrW, g.hasCorr = e/CorrectedBin.Seconds(), true
			g.delay = max(now-settled, 0)
			if (!g.hasIdle || g.corrW < g.idleW) && g.noUse(settled-CorrectedBin, settled) {
				g.idleW, g.hasIdle = g.corrW, true
			}
		}
	}
}

// noUse says whether no process showed SM use over [from, to), as far as the use seen
// says: a second of a busy GPU is not its idle floor. Where processes are not read, any.
func (g *gpuState) noUse(from, to time.Duration) bool {
	if g.procs == nil || g.procsFail {
		return true
	}
	covered := time.Duration(0)
	for i, sp := range g.useHist {
		if i == len(g.useHist)-1 && sp.to < to && to-sp.to <= 2*time.Second {
			sp.to = to // the latest use goes on until the next read of it
		}
		ov := min(to, sp.to) - max(from, sp.from)
		if ov <= 0 {
			continue
		}
		for _, u := range sp.use {
			if u > 0 {
				return false
			}
		}
		covered += ov
	}
	return covered >= (to-from)/2 // the use of most of the second is known
}

// settlePending gives the energy held while no idle floor was known, now that one is:
// each process its energy above the floor over its share of the time, the rest
// unattributed.
func (g *gpuState) settlePending() {
	if !g.hasIdle {
		return
	}
	for _, p := range g.proc {
		if p.pendJ == 0 && p.pendS == 0 {
			continue
		}
		e := max(p.pendJ-g.idleW*p.pendS, 0)
		p.energyJ += e
		g.unattributedJ += p.pendJ - e
		p.pendJ, p.pendS = 0, 0
	}
	g.unattributedJ += g.pendUnJ
	g.pendUnJ = 0
}

// split gives the energy since the previous update above the idle floor to the processes
// by their share of the SM utilisation (see docs/serve.md); the rest is unattributed.
func (g *gpuState) split(now time.Duration) {
	if !g.splitStarted {
		g.splitStarted, g.prevEnergyJ, g.prevT, g.splitBaseJ, g.splitBaseT = true, g.energyJ, now, g.energyJ, g.energyTo
		g.energyFrom = g.energyTo
		g.procRead = procRead{} // that read started the driver's window here
		return
	}
	if now <= g.prevT {
		return
	}
	// The processes' use over this update, kept for a minute: the energy that arrives
	// describes its own stretch of time (the board's counter rises in steps, an H200's read
	// about every 2 s; the corrected integral trails by its delay), and is split by the use
	// over that stretch.
	if r := g.procRead; r.done {
		g.procRead = procRead{}
		use, err := r.use, r.err
		g.procsFail = err != nil
		if err == nil {
			sp := useSpan{from: g.prevT, to: now, use: map[int]float64{}}
			for _, u := range use {
				p := g.proc[u.PID]
				if p == nil {
					p = &procState{}
					if g.workloads != nil {
						p.workload = g.workloads.Lookup(g.info.UUID, u.PID)
					}
					g.proc[u.PID] = p
				}
				p.comm, p.lastSeen = u.Comm, now
				sp.use[u.PID] += max(u.SMUtil, 0)
			}
			g.useHist = append(g.useHist, sp)
		}
	}
	g.prevT = now
	for len(g.useHist) > 0 && g.useHist[0].to < now-time.Minute {
		g.useHist = g.useHist[1:]
	}
	dE := g.energyJ - g.prevEnergyJ
	if dE <= 0 {
		return // nothing new drawn: the use waits for its energy
	}
	g.prevEnergyJ = g.energyJ
	a, b := g.energyFrom, g.energyTo
	if b <= a {
		a = b - time.Second // a stretch of unknown length: the last second's use
	}
	g.energyFrom = b
	weight := map[int]float64{}
	total := 0.0
	for _, sp := range g.useHist {
		ov := (min(b, sp.to) - max(a, sp.from)).Seconds()
		if ov <= 0 {
			continue
		}
		for pid, u := range sp.use {
			weight[pid] += u * ov
			total += u * ov
		}
	}
	if !g.hasIdle && g.procs != nil && !g.procsFail {
		// No idle floor yet: every second so far had a process at work (serve started on
		// a busy GPU; its processes were given ~0 J against thousands unattributed). The
		// energy waits, split by use, until a second without one gives the floor.
		g.pendUnJ += dE
		for pid, p := range g.proc {
			p.share = 0
			if w := weight[pid]; total > 0 && w > 0 {
				p.share = w / total
				p.pendJ += dE * p.share
				p.pendS += (b - a).Seconds() * p.share
				g.pendUnJ -= dE * p.share
			}
		}
		return
	}
	g.settlePending()
	above := 0.0
	if g.hasIdle {
		above = min(max(dE-g.idleW*(b-a).Seconds(), 0), dE)
	}
	attributed := 0.0
	for pid, p := range g.proc {
		p.share = 0
		if w := weight[pid]; total > 0 && w > 0 {
			p.share = w / total
			e := above * p.share
			p.energyJ += e
			attributed += e
		}
	}
	g.unattributedJ += max(dE-attributed, 0)
	for pid, p := range g.proc {
		if now-p.lastSeen > forgetProcess {
			delete(g.proc, pid)
		}
	}
}

// snap returns ring ready for correct.Prepare. A driver buffer's readings (every one with a
// driver stamp) are moved onto their grid as correct.Prepare would (snapToGrid: the H200
// stamps 20-28 % of its samples up to 14 ms off the 20 ms grid, their values the grid
// instant's), with a grid fitted at most once a minute on the ring, and handed over
// without driver stamps and with deduplication off (the Sampler dropped the repeats), so
// that Prepare does not fit the grid again. Other channels go as they are.
func (g *gpuState) snap(now time.Duration, ring []trace.Sample) []trace.Sample {
	g.prepOpt = correct.Options{}
	if g.corrChan != trace.ChPowerSamples {
		return ring
	}
	for _, x := range ring {
		if x.DriverUS == 0 {
			return ring
		}
	}
	per := g.model.Period
	if per <= 0 {
		per = 20 * time.Millisecond
	}
	if (!g.latTried || now-g.latAt >= time.Minute) && len(ring) >= 64 {
		ts := make([]time.Duration, len(ring))
		for i, x := range ring {
			ts[i] = x.T
		}
		g.lat, g.latOK = correct.FitLattice(ts, per)
		g.latAt, g.latTried = now, true
	}
	if !g.latTried {
		return ring // too few readings yet: Prepare's own way
	}
	out := g.snapped[:0]
	for _, x := range ring {
		if g.latOK {
			x.T = g.lat.Snap(x.T)
		}
		if n := len(out); n > 0 && x.T <= out[n-1].T {
			continue // two stamps on one instant: keep the first
		}
		x.DriverUS = 0
		out = append(out, x)
	}
	g.snapped = out
	g.prepOpt = correct.Options{Dedupe: -1, Period: per}
	return out
}

// knownReasons are the clock-event reasons every GPU exposes a series for.
var knownReasons = func() []string {
	var out []string
	for i := 0; i < 9; i++ {
		out = append(out, nvml.ClockReasons(1<<i).Names()...)
	}
	return out
}()

func (g *gpuState) snapshot(host string, wall time.Time, clk clock.Clock) snapshot.GPU {
	s := snapshot.GPU{
		Index: g.info.Index, UUID: g.info.UUID, Model: g.info.Name, Hostname: host, At: wall,
		Up: g.up, Reason: g.reason,
		EnergyJ: g.energyJ, EnergySource: snapshot.SourceCorrected, EnergyChannel: g.corrChan,
		CorrectedW: g.corrW, HasCorrected: g.hasCorr, CorrectedChannel: g.corrChan, CorrectedDelay: g.delay,
		IdleW: g.idleW, HasIdle: g.hasIdle, UnattributedJ: g.unattributedJ,
		Polls: g.polls, Errors: g.errs, Missed: g.missed,
	}
	if g.hasCounter {
		s.EnergySource, s.EnergyChannel = snapshot.SourceCounter, trace.ChEnergyTotal
	}
	at := func(t time.Duration) time.Time { return clk.Epoch().Add(t) }
	g.mu.Lock()
	if g.ctrHave {
		s.CounterJ, s.HasCounter = g.ctrLast, true
	}
	for _, name := range g.powerChans {
		if r, ok := g.latest[name]; ok {
			s.Power = append(s.Power, snapshot.ChannelPower{Channel: name, W: r.v, At: at(r.t)})
		}
	}
	for _, name := range []string{trace.ChClockSM, trace.ChClockMem, trace.ChClockGr} {
		if r, ok := g.latest[name]; ok {
			if s.ClocksHz == nil {
				s.ClocksHz = map[string]float64{}
			}
			s.ClocksHz[name] = r.v
		}
	}
	for _, name := range []string{trace.ChTempGPU, trace.ChTempMem} {
		if r, ok := g.latest[name]; ok {
			if s.TempC == nil {
				s.TempC = map[string]float64{}
			}
			s.TempC[name] = r.v
		}
	}
	if r, ok := g.latest[trace.ChThrottleReasons]; ok {
		mask := nvml.ClockReasons(uint64(r.v))
		active := map[string]bool{}
		for _, n := range mask.Names() {
			active[n] = true
		}
		for _, n := range knownReasons {
			s.ClockEvents = append(s.ClockEvents, snapshot.ClockEvent{Reason: n, Active: active[n]})
		}
	}
	g.mu.Unlock()
	pids := make([]int, 0, len(g.proc))
	for pid := range g.proc {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		p := g.proc[pid]
		s.Processes = append(s.Processes, snapshot.Process{PID: pid, Comm: p.comm, EnergyJ: p.energyJ, SMShare: p.share,
			Namespace: p.workload.Namespace, Pod: p.workload.Pod, Container: p.workload.Container, ContainerID: p.workload.ContainerID})
	}
	return s
}
