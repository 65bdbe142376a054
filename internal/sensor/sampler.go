package sensor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Sampler records many channels of many GPUs at once with timestamps from one monotonic
// clock. A reading that only repeats the previous one (same value, same driver timestamp)
// is not a new sample: it is counted, not stored.
//
// On a Real clock the Sampler polls from its own goroutines: one lane per GPU, and a lane
// of its own for every channel whose call is slow (so the ~3 ms energy counter never delays
// a power reading). On a Virtual clock it registers as a participant of the clock and polls
// whenever the clock is advanced through a due time, on the caller's goroutine.
type Sampler struct {
	clk   clock.Clock
	opt   Options
	chans []*chanState
	miss  []trace.Missing

	mu       sync.Mutex
	running  bool
	lanes    []*lane         // on a real clock
	laneDone <-chan struct{} // closed when the lanes are told to stop
	cancel   context.CancelFunc
	hung     []string // the calls Stop gave up waiting for
	virt     *virtualLane
	start    time.Duration
	end      time.Duration
	cpu0     time.Duration
	cpu      time.Duration
}

// FirstReadHangs: Start takes a channel's first call as hung after this many times
// Options.HangTimeout.
const FirstReadHangs = 5

// ringDepth is the fewest samples a driver's power ring is taken to hold (an H200's holds
// 119): two reads further apart than that many sample periods may have lost samples.
const ringDepth = 100

// capCalls is how many calls a channel's latency is known from before CPUShare and
// SlowShare cap its rate (the median of three): at 8, an H200's energy counter (5.2 ms a
// call on one host) was read 8 times at the adaptive rate first, half of its 17 reads in a
// 20 s measure (results/nvidia-h200/2026-11-28-lean-2).
const capCalls = 3

// slowCall is the call latency above which a channel gets a lane of its own (the
// driver sample buffer, ~0.3 ms, and the energy counter, ~3.8 ms, on an H200).
const slowCall = 100 * time.Microsecond

type chanKind int

const (
	kindPower chanKind = iota // catch every update
	kindBuffered
	kindCumulative
	kindState
)

type lockState int

const (
	unlocked  lockState = iota
	searching           // polling finely until an update is caught precisely
	locked              // sleeping between windows around the expected updates
)

// lane is the channels one goroutine polls on a real clock.
type lane struct {
	chans []*chanState
	poke  chan chan struct{}
	done  chan struct{} // closed when the goroutine returns
	// mu is held while a poll files what its call returned (not during the call): Stop
	// takes it to read the channels of a lane it gave up waiting for.
	mu        sync.Mutex
	abandoned bool        // Stop gave up on the lane: what a late call returns is dropped
	stuck     atomic.Bool // a Poke went unanswered: later Pokes do not wait for the lane
	// cpu is the CPU time of the lane's thread from its start to its return, plus 1 ns
	// (0: not known: still running, abandoned, or no per-thread figure on this system).
	cpu atomic.Int64
}

type chanState struct {
	s    Sensor
	ch   trace.Channel
	kind chanKind
	hint time.Duration

	lane   *lane        // nil on a virtual clock
	inCall atomic.Int64 // the clock's time + 1 ns at the start of the call under way, 0 between calls
	hung   string       // the call Stop gave up waiting for

	interval time.Duration
	due      time.Duration

	have     bool
	lastVal  float64
	lastDrv  int64
	lastPoll time.Duration // stamp of the previous call (midpoint)
	lastNew  time.Duration // stamp of the previous new sample

	samples  []trace.Sample
	nSamples int // new samples filed (kept in samples, or handed to Options.Sink)
	polls    int
	repeats  int
	errs     int
	lastErr  string
	// slowDropped counts a counter's readings left out because their calls took too long
	// to place them in time (untimeable); slowMax is the longest such call.
	slowDropped int
	slowMax     time.Duration
	afterDrop   bool // the last call's reading was left out
	lat         ring
	latMed      time.Duration // cached median of lat
	latMean     time.Duration // cached mean of lat: what a call costs on average (cpuFloor)
	intervals   ring
	sinceNew    int           // polls since the last new value
	period      time.Duration // learned update period (median interval between new values)
	periodNs    atomic.Int64  // period, readable from other goroutines (UpdatePeriod)
	pollBase    time.Duration // what the poll interval is derived from: period, or the short intervals of an irregular channel
	irregular   bool
	missed      int
	pollLost    int // at most this many updates fell in gaps between calls (kindPower)

	// Phase lock (adaptive mode, regular measurement channels): once the period is known,
	// the Sampler sleeps until just before the next expected update and polls finely
	// around it, so an update is stamped within a millisecond for a few polls per period.
	lock   lockState
	anchor time.Duration // precisely stamped time of the last update caught in a window
	// Windows that caught their update, and updates that came outside their window; too
	// many of the latter and the channel is polled at T/8 for good (noLock).
	lockHits, lockMisses int
	noLock               bool
	probe                []time.Duration // updates stamped precisely while searching
	rng                  uint64          // dither state
	buf                  []Reading
	sink                 func(trace.Sample) // SetSink
	paced                time.Duration      // Paced's interval (0: none)
}

// New returns a Sampler for the given sensors. Call Start to begin recording.
func New(clk clock.Clock, sensors []Sensor, opt Options) *Sampler {
	s := &Sampler{clk: clk, opt: opt.withDefaults()}
	for _, sn := range sensors {
		ch := sn.Channel()
		cs := &chanState{s: sn, ch: ch}
		switch {
		case ch.Buffered:
			cs.kind = kindBuffered
		case ch.Cumulative:
			cs.kind = kindCumulative
		case ch.Quantity == trace.QPower && !ch.Setting:
			cs.kind = kindPower
		default:
			cs.kind = kindState
		}
		if h, ok := sn.(PeriodHinter); ok {
			cs.hint = h.PeriodHint()
		}
		if p, ok := sn.(Paced); ok {
			cs.paced = p.PollInterval()
		}
		s.chans = append(s.chans, cs)
	}
	return s
}

// Start reads every channel once (a channel whose first read fails is left out and listed
// by Unavailable with the reason), then starts polling.
func (s *Sampler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return errors.New("sampler already started")
	}
	s.start = s.clk.Now()
	// The first read of every channel; on a real clock from a goroutine of its own, each
	// call waited for FirstReadHangs × HangTimeout at most: a driver call that never returns fails Start,
	// naming it, instead of holding the run before anything is recorded.
	type first struct {
		ok   []*chanState
		miss []trace.Missing
	}
	chans := s.chans
	read := func() first {
		var f first
		for _, cs := range chans {
			t0 := s.clk.Now()
			cs.inCall.Store(int64(t0) + 1)
			buf, err := cs.s.Read(cs.buf[:0])
			t1 := s.clk.Now()
			cs.inCall.Store(0)
			cs.buf = buf
			if err != nil {
				f.miss = append(f.miss, trace.Missing{GPU: cs.ch.GPU, Name: cs.ch.Name, Reason: err.Error()})
				continue
			}
			cs.addLatency(t1 - t0)
			cs.polls++
			cs.record(t0+(t1-t0)/2, cs.buf)
			cs.interval = s.intervalFor(cs, t1)
			cs.due = t1 + cs.interval
			f.ok = append(f.ok, cs)
		}
		return f
	}
	var f first
	if clock.IsVirtual(s.clk) {
		f = read()
	} else {
		done := make(chan first, 1)
		go func() { done <- read() }()
		// A first call may be slower than later ones (the driver sets the GPU up for
		// it where persistence mode is off): five times the bound.
		bound := FirstReadHangs * s.opt.HangTimeout
		tick := time.NewTicker(max(bound/100, time.Millisecond))
		defer tick.Stop()
	wait:
		for {
			select {
			case f = <-done:
				break wait
			case <-tick.C:
			}
			for _, cs := range chans {
				t0 := cs.inCall.Load()
				if t0 == 0 || s.clk.Now()-time.Duration(t0-1) < bound {
					continue
				}
				what := cs.ch.Name + " on GPU " + fmt.Sprint(cs.ch.GPU)
				if cs.ch.Source != "" {
					what = cs.ch.Source + " (" + what + ")"
				}
				s.chans = nil // the goroutine still holds them
				return fmt.Errorf("%s hangs: its first read had not returned after %s", what, bound)
			}
		}
	}
	ok := f.ok
	s.miss = append(s.miss, f.miss...)
	s.chans = ok
	if len(ok) == 0 {
		return errors.New("no channel could be read")
	}
	s.cpu0 = processCPU()
	s.running = true
	if v, isV := s.clk.(*clock.Virtual); isV {
		s.virt = &virtualLane{s: s, chans: ok}
		v.Add(s.virt)
		return nil
	}
	// The lanes run until Stop, not until the caller's context ends: a Ctrl-C must not
	// stop the recording while the command is still shutting down.
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.laneDone = ctx.Done()
	lanes := map[int][]*chanState{}
	var order []int
	for i, cs := range ok {
		key := cs.ch.GPU
		if cs.latMed > slowCall {
			key = -1 - i // a lane of its own
		}
		if _, seen := lanes[key]; !seen {
			order = append(order, key)
		}
		lanes[key] = append(lanes[key], cs)
	}
	for _, k := range order {
		l := &lane{chans: lanes[k], poke: make(chan chan struct{}), done: make(chan struct{})}
		for _, cs := range l.chans {
			cs.lane = l
		}
		s.lanes = append(s.lanes, l)
		go s.runLane(ctx, l)
	}
	return nil
}

// Poke reads every channel now and returns when all have been read. Call it at the
// boundaries of a region (a command's start and end) so that slowly polled channels, above
// all the energy counter, have a reading right there rather than up to a poll interval away.
func (s *Sampler) Poke() {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return
	}
	if s.virt != nil {
		s.mu.Unlock()
		for _, cs := range s.chans {
			s.poll(cs)
		}
		return
	}
	lanes, stop := s.lanes, s.laneDone
	s.mu.Unlock()
	// A lane whose call hangs takes no poke: each is given HangTimeout in all, then
	// passed over (and not waited for again; Stop names the call).
	timeout := time.NewTimer(s.opt.HangTimeout)
	defer timeout.Stop()
	dones := make([]chan struct{}, len(lanes))
	for i, l := range lanes {
		if l.stuck.Load() {
			continue
		}
		d := make(chan struct{})
		select {
		case l.poke <- d:
			dones[i] = d
		case <-stop:
			return
		case <-timeout.C:
			l.stuck.Store(true)
		}
	}
	for i, d := range dones {
		if d == nil {
			continue
		}
		select {
		case <-d: // a lane that took the poke closes d even if it is stopping
		case <-timeout.C:
			lanes[i].stuck.Store(true)
		}
	}
}

// Stop ends the recording and returns the channels (with their stats) and the samples in
// time order. It may be called once; later calls return the same result.
func (s *Sampler) Stop() ([]trace.Channel, []trace.Sample) {
	s.mu.Lock()
	if s.running {
		s.running = false
		if s.cancel != nil {
			s.cancel()
		}
		if s.virt != nil {
			s.clk.(*clock.Virtual).Remove(s.virt)
			s.mu.Unlock()
			// A last read of every channel, so the recording reaches the moment of Stop.
			for _, cs := range s.chans {
				s.poll(cs)
			}
		} else {
			s.mu.Unlock()
			// Each lane makes a last read of its channels and returns; one whose call
			// does not return within HangTimeout is left behind, its readings so far kept.
			s.waitLanes()
		}
		s.mu.Lock()
		s.end = s.clk.Now()
		s.cpu = processCPU() - s.cpu0
	}
	defer s.mu.Unlock()
	var chans []trace.Channel
	var all []trace.Sample
	for _, cs := range s.chans {
		if l := cs.lane; l != nil {
			l.mu.Lock() // an abandoned lane's goroutine may still be running
		}
		ch := cs.ch
		ch.Stats = cs.stats()
		if cs.polls > 1 && s.end > s.start {
			ch.Stats.PollInterval = (s.end - s.start).Seconds() / float64(cs.polls-1)
		}
		chans = append(chans, ch)
		all = append(all, cs.samples...)
		if l := cs.lane; l != nil {
			l.mu.Unlock()
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].T < all[j].T })
	return chans, all
}

// waitLanes waits for the lanes (told to stop) to return, HangTimeout at most in all; a
// lane still inside a call then is abandoned, and the call named in s.hung.
func (s *Sampler) waitLanes() {
	timeout := time.NewTimer(s.opt.HangTimeout)
	defer timeout.Stop()
	expired := false
	for _, l := range s.lanes {
		if !expired {
			select {
			case <-l.done:
				continue
			case <-timeout.C:
				expired = true
			}
		}
		select {
		case <-l.done:
			continue
		default:
		}
		l.mu.Lock()
		l.abandoned = true
		var calls, others []string
		last := time.Duration(0)
		for _, cs := range l.chans {
			if t0 := cs.inCall.Load(); t0 != 0 {
				what := cs.ch.Name
				if cs.ch.Source != "" {
					what = cs.ch.Source + " (" + cs.ch.Name + ")"
				}
				cs.hung = fmt.Sprintf("%s on GPU %d hangs: the call made at %.3f s had not returned %s after the recording was told to stop", what, cs.ch.GPU, time.Duration(t0-1).Seconds(), s.opt.HangTimeout)
				cs.errs++
				cs.lastErr = cs.hung
				calls = append(calls, cs.hung)
				last = max(last, cs.lastPoll)
			} else {
				others = append(others, cs.ch.Name)
			}
		}
		why := strings.Join(calls, "; ")
		if why == "" {
			why = fmt.Sprintf("a lane of GPU %d did not stop within %s", l.chans[0].ch.GPU, s.opt.HangTimeout)
		}
		if len(others) > 0 {
			if len(others) > 4 {
				others = append(others[:3], fmt.Sprintf("and %d more", len(others)-3))
			}
			why += fmt.Sprintf("; the %d other channel(s) polled with it (%s) were not read after %.3f s", len(l.chans)-len(calls), strings.Join(others, ", "), last.Seconds())
		}
		s.hung = append(s.hung, why)
		l.mu.Unlock()
	}
}

// SetSink makes the Sampler hand every new sample to sink as it is filed (on the goroutine
// that polled it: calls for channels of different lanes may come at once) and keep none:
// Stop then returns no samples, and memory stays flat however long the recording runs
// (gpuwatt serve). Call it before Start.
func (s *Sampler) SetSink(sink func(trace.Sample)) {
	for _, cs := range s.chans {
		cs.sink = sink
	}
}

// Stats describes the recorded channels with their statistics so far (polls, samples,
// errors, missed updates, the last error). Safe to call while recording on a real clock;
// on a virtual clock, call it from the goroutine that advances the clock.
func (s *Sampler) Stats() []trace.Channel {
	s.mu.Lock()
	chans := s.chans
	s.mu.Unlock()
	out := make([]trace.Channel, 0, len(chans))
	for _, cs := range chans {
		if l := cs.lane; l != nil {
			l.mu.Lock()
		}
		ch := cs.ch
		// The call latency's median as last refreshed (every 16 calls): no sort here.
		ch.Stats = cs.statsWith(func() time.Duration { return cs.latMed })
		if l := cs.lane; l != nil {
			l.mu.Unlock()
		}
		out = append(out, ch)
	}
	return out
}

// Snapshot returns the channels (with their statistics so far) and a copy of the samples
// recorded so far, in time order, while the recording goes on: the recorder behind the
// Python package gives a window its energy from it as soon as the window ends. Safe to
// call while recording on a real clock; on a virtual clock, call it from the goroutine
// that advances the clock. With SetSink it returns no samples.
func (s *Sampler) Snapshot() ([]trace.Channel, []trace.Sample) {
	s.mu.Lock()
	chans := s.chans
	start := s.start
	s.mu.Unlock()
	now := s.clk.Now()
	outCh := make([]trace.Channel, 0, len(chans))
	var all []trace.Sample
	for _, cs := range chans {
		if l := cs.lane; l != nil {
			l.mu.Lock()
		}
		ch := cs.ch
		ch.Stats = cs.statsWith(func() time.Duration { return cs.latMed })
		if cs.polls > 1 && now > start {
			ch.Stats.PollInterval = (now - start).Seconds() / float64(cs.polls-1)
		}
		all = append(all, cs.samples...)
		if l := cs.lane; l != nil {
			l.mu.Unlock()
		}
		outCh = append(outCh, ch)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].T < all[j].T })
	return outCh, all
}

// Hung says which driver calls had not returned when Stop gave up waiting for them (and
// which channels went unread behind them), one line each; nil when none: the recording
// of those channels ends early, and is incomplete. Call it after Stop.
func (s *Sampler) Hung() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hung)
}

// UpdatePeriod is the update period learned so far for a channel (its hint before it has
// been learned, 0 if unknown or not recorded). Safe to call while recording.
func (s *Sampler) UpdatePeriod(gpu int, name string) time.Duration {
	for _, cs := range s.chans {
		if cs.ch.GPU == gpu && cs.ch.Name == name {
			if p := time.Duration(cs.periodNs.Load()); p > 0 {
				return p
			}
			return cs.hint
		}
	}
	return 0
}

// Channels describes the recorded channels (without stats). Safe to call while recording.
func (s *Sampler) Channels() []trace.Channel {
	var out []trace.Channel
	for _, cs := range s.chans {
		out = append(out, cs.ch)
	}
	return out
}

// Unavailable lists the channels whose first read failed, with the reason.
func (s *Sampler) Unavailable() []trace.Missing { return slices.Clone(s.miss) }

// CPUTime is the process CPU time (user + system) spent between Start and Stop, all
// goroutines together; on a virtual clock it measures the simulation, not a real cost.
func (s *Sampler) CPUTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cpu
}

// GPUCPUTime is, for each GPU, the CPU time its lanes' threads spent polling it (their
// channels' calls and the Sampler's bookkeeping), after Stop on a real clock with
// Options.ThreadCPU. A GPU is absent where that is not known: without ThreadCPU, on a
// virtual clock, on systems without per-thread CPU figures, or where a lane of the GPU
// was abandoned in a hung call.
func (s *Sampler) GPUCPUTime() map[int]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running || len(s.lanes) == 0 {
		return nil
	}
	out := map[int]time.Duration{}
	unknown := map[int]bool{}
	for _, l := range s.lanes {
		g := l.chans[0].ch.GPU
		c := l.cpu.Load()
		if c == 0 {
			unknown[g] = true
			continue
		}
		out[g] += time.Duration(c - 1)
	}
	for g := range unknown {
		delete(out, g)
	}
	return out
}

// Span is the time from Start to Stop.
func (s *Sampler) Span() (start, end time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start, s.end
}

func (s *Sampler) runLane(ctx context.Context, l *lane) {
	defer close(l.done)
	var cpu0 time.Duration
	cpuOK := false
	if s.opt.ThreadCPU {
		// The lane keeps one OS thread, so that the thread's CPU time is the lane's: the
		// polling cost of each GPU on its own. The thread ends with the goroutine.
		runtime.LockOSThread()
		cpu0, cpuOK = threadCPU()
	}
	chans, poke := l.chans, l.poke
	defer func() {
		// A last read of every channel, so the recording reaches the moment of Stop.
		for _, cs := range chans {
			s.poll(cs)
		}
		if c, ok := threadCPU(); ok && cpuOK {
			l.cpu.Store(int64(c-cpu0) + 1)
		}
	}()
	busy := s.opt.Mode == Max
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	pollAll := func(done chan struct{}) {
		for _, cs := range chans {
			s.poll(cs)
		}
		close(done)
	}
	for ctx.Err() == nil {
		next := s.pollDue(chans, s.clk.Now())
		if l.stuck.Load() {
			l.stuck.Store(false) // back: Poke waits for it again
		}
		if busy {
			select {
			case done := <-poke:
				pollAll(done)
			default:
			}
			continue
		}
		wait := next - s.clk.Now()
		if wait <= 0 {
			// Late (calls slower than the schedule): a poke must still be answered, or
			// Poke, and the run waiting on it, would wait for ever.
			select {
			case done := <-poke:
				pollAll(done)
			default:
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case done := <-poke:
			pollAll(done)
		case <-timer.C:
		}
	}
}

// pollDue polls the channels of a lane that are due at now (or nearly: a channel due
// within a quarter of its interval is polled now too, so wakeups are shared) and returns
// the lane's next due time.
func (s *Sampler) pollDue(chans []*chanState, now time.Duration) time.Duration {
	next := clock.Never
	for _, cs := range chans {
		if cs.due-cs.slack() <= now {
			s.poll(cs)
		}
		next = min(next, cs.due)
	}
	return next
}

func (s *Sampler) poll(cs *chanState) {
	t0 := s.clk.Now()
	cs.inCall.Store(int64(t0) + 1)
	buf, err := cs.s.Read(cs.buf[:0])
	t1 := s.clk.Now()
	if l := cs.lane; l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.abandoned {
			return // Stop has read the channel: a call that hung and came back too late
		}
	}
	cs.inCall.Store(0)
	cs.buf = buf
	cs.polls++
	cs.addLatency(t1 - t0)
	switch {
	case err != nil:
		cs.errs++
		cs.lastErr = err.Error()
	case cs.untimeable(t1 - t0):
		cs.slowDropped++
		cs.slowMax = max(cs.slowMax, t1-t0)
		cs.afterDrop = true
	default:
		cs.record(t0+(t1-t0)/2, cs.buf)
	}
	cs.interval = s.intervalFor(cs, t1)
	cs.due = t1 + cs.interval
}

// untimeable says whether a counter's call took too long for its reading to be placed in
// time: the value may have been taken anywhere inside the call, so a call longer than half
// the counter's update period puts more error in its stamp than the update period itself.
// Such a reading is left out (the counter loses nothing: the next reading holds its
// energy). On a host whose driver was busy with other NVML clients (two measures and two
// busy pollers on a two-H200 host, run 2026-11-28-intervals-shapes-10), counter calls
// took up to ~3 s and their readings, stamped at the calls' middles, lay ~1.4 s early.
func (cs *chanState) untimeable(d time.Duration) bool {
	if cs.kind != kindCumulative {
		return false
	}
	// The sensor's own period where it gives one: the learned one grows with every reading
	// left out (it is the interval between the readings kept).
	T := cs.hint
	if T <= 0 {
		T = cs.updatePeriod()
	}
	return T > 0 && d > T/2
}

// record files the readings of one call made at stamp tc.
func (cs *chanState) record(tc time.Duration, rs []Reading) {
	// The updates the polling itself may have lost: a gap between two calls longer than
	// the update period can hold an update that the next one overwrote before it was read.
	// (A long interval between new values is more often the sensor holding its value.)
	if cs.kind == kindPower && cs.have && cs.period > 0 && !cs.irregular {
		p := cs.period
		if cs.hint > 0 && cs.hint < p {
			p = cs.hint // polled slower than it updates, it shows the poll interval
		}
		if g := tc - cs.lastPoll; g > p {
			cs.pollLost += int(g / p)
		}
	}
	if cs.kind == kindBuffered && cs.have && cs.period > 0 && !cs.irregular {
		// The ring loses samples only where two reads lie further apart than it is deep:
		// ringDepth periods at least (119 on an H200, read every 25).
		if g := tc - cs.lastPoll; g > ringDepth*cs.period {
			cs.pollLost += int((g - ringDepth*cs.period) / cs.period)
		}
	}
	anyNew := false
	for _, r := range rs {
		if cs.have && r.Value == cs.lastVal && r.DriverUS == cs.lastDrv {
			cs.repeats++
			continue
		}
		if cs.kind == kindBuffered && cs.have && r.DriverUS != 0 && r.DriverUS <= cs.lastDrv {
			cs.repeats++
			continue
		}
		t := r.T
		if !r.Timed {
			t = cs.stamp(tc)
			cs.relock(t, tc)
		}
		if cs.have && !cs.afterDrop {
			// (The interval across a reading left out is the drop's, not the counter's:
			// learned, it would stretch the update period the next stamps are set by.)
			iv := t - cs.lastNew
			if iv > 0 {
				cs.intervals.add(iv)
				if cs.period > 0 && !cs.irregular && cs.kind != kindState && iv > cs.period*18/10 {
					cs.missed += int((iv+cs.period/2)/cs.period) - 1
				}
			}
		}
		smp := trace.Sample{T: t, GPU: cs.ch.GPU, Channel: cs.ch.Name, Value: r.Value, DriverUS: r.DriverUS}
		if cs.sink != nil {
			cs.sink(smp)
		} else {
			cs.samples = append(cs.samples, smp)
		}
		cs.nSamples++
		cs.have, cs.lastVal, cs.lastDrv, cs.lastNew = true, r.Value, r.DriverUS, t
		anyNew = true
	}
	cs.afterDrop = false
	if anyNew {
		cs.sinceNew = 0
		cs.learn()
	} else {
		cs.sinceNew++
	}
	cs.lastPoll = tc
}

// relock updates the phase lock with an update stamped t, first seen by the call at tc.
func (cs *chanState) relock(t, tc time.Duration) {
	if cs.lock == unlocked {
		return
	}
	fine, guard := cs.window()
	precise := cs.have && tc-cs.lastPoll <= fine*5/2
	switch {
	case precise && cs.lock == locked && t-cs.anchor <= 2*guard:
		// The second change of a burst (the H200 publishes some updates as two changes
		// a fraction of a millisecond apart): the update's time is the first change's.
	case precise && cs.lock == locked:
		cs.lockHits++
		cs.anchor = t
	case precise && cs.lock == searching:
		if n := len(cs.probe); n > 0 && t-cs.probe[n-1] <= 2*guard {
			break // a burst
		}
		cs.probe = append(cs.probe, t)
		if len(cs.probe) < 9 {
			break
		}
		if cs.steady(guard) {
			cs.lock, cs.anchor = locked, t
		} else {
			// The updates do not keep time (the H200's come 101 ± 5 ms apart, each
			// interval drawn anew): windows would have to be wider than the T/8
			// polling they replace.
			cs.noLock, cs.lock = true, unlocked
		}
		cs.probe = cs.probe[:0]
	case cs.lock == locked:
		// The update came outside its window: find the phase again.
		cs.lock = searching
		cs.lockMisses++
	}
	if n := cs.lockHits + cs.lockMisses; n >= 20 && cs.lockMisses*10 > n {
		cs.noLock, cs.lock = true, unlocked
	}
}

// steady reports whether the precisely stamped updates in probe keep time well enough for
// windows of half-width guard: the spread of their intervals (each divided by the number
// of periods it spans, so repeated values do not count) must be under guard/3.
func (cs *chanState) steady(guard time.Duration) bool {
	var x []float64
	for i := 1; i < len(cs.probe); i++ {
		iv := cs.probe[i] - cs.probe[i-1]
		k := (iv + cs.period/2) / cs.period
		if k < 1 {
			continue
		}
		x = append(x, float64(iv)/float64(k))
	}
	if len(x) < 4 {
		return false
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	varsum := 0.0
	for _, v := range x {
		varsum += (v - mean) * (v - mean)
	}
	return math.Sqrt(varsum/float64(len(x)-1)) < float64(guard)/3
}

// window returns the fine poll interval around an expected update and the half-width of
// the window: 2 ms and 4 ms for a 100 ms channel, 0.5 ms and 1 ms for a 20 ms one.
func (cs *chanState) window() (fine, guard time.Duration) {
	fine = clampDur(cs.period/50, 500*time.Microsecond, 2*time.Millisecond)
	guard = max(2*fine, cs.period/25)
	return fine, guard
}

// stamp estimates when an update first seen by the call at tc happened. It happened after
// the previous call (which still saw the old value) and, if the channel updates every T, no
// earlier than tc - T: the middle of that interval is the unbiased estimate. Polled faster
// than it updates, that is the midpoint between the two calls; polled slower (the energy
// counter), it is tc - T/2, not half a poll interval back. The first reading of a recording
// is stamped tc - T/2 too: it may lie before the recording's start, which is the truth.
// State channels (clocks, temperature, reasons) are read as "the state now": their first
// reading is stamped at the call.
func (cs *chanState) stamp(tc time.Duration) time.Duration {
	lo, known := cs.lastPoll, cs.have
	if T := cs.updatePeriod(); T > 0 && cs.kind != kindState && (!known || tc-T > lo) {
		lo, known = tc-T, true
	}
	if !known {
		return tc
	}
	return lo + (tc-lo)/2
}

// updatePeriod is the best knowledge of how often the channel updates: what was learned,
// except for a counter polled more slowly than it updates, whose learned intervals are the
// poll interval; then the sensor's hint.
func (cs *chanState) updatePeriod() time.Duration {
	if cs.kind == kindCumulative && cs.hint > 0 && (cs.period == 0 || cs.interval*2 > cs.period) {
		return cs.hint
	}
	if cs.period > 0 {
		return cs.period
	}
	return cs.hint
}

// learn re-estimates the update period from the recent intervals between new values.
//
// Some channels publish an update as two changes a fraction of a millisecond apart (the
// H200's power.instant does, see internal/nvml/REAL_GPU_NOTES.md). Intervals shorter than a
// quarter of the long ones (the 90th percentile) are such bursts: they do not set the poll
// rate, or the Sampler would poll a 100 ms channel every 0.5 ms.
func (cs *chanState) learn() {
	if cs.intervals.n < 4 {
		return
	}
	var buf, bigBuf [ringLen]time.Duration
	all := cs.intervals.sorted(&buf)
	q90 := all[int(0.9*float64(len(all)-1)+0.5)]
	big := bigBuf[:0]
	for _, iv := range all {
		if iv >= q90/4 {
			big = append(big, iv)
		}
	}
	med := big[len(big)/2]
	lo := big[int(0.1*float64(len(big)-1)+0.5)]
	// The median alone is biased by the beat between poll and update times (intervals
	// alternate between T+d and T-d): average the intervals near it instead.
	var sum time.Duration
	n := 0
	for _, iv := range big {
		if iv >= med*7/10 && iv <= med*13/10 {
			sum += iv
			n++
		}
	}
	med = sum / time.Duration(n)
	cs.period, cs.pollBase = med, med
	if cs.kind == kindCumulative && cs.hint > 0 {
		// A counter read sparingly shows its poll interval, not its updates: tell the
		// sensor's own period to those who ask (UpdatePeriod).
		cs.periodNs.Store(int64(cs.hint))
	} else {
		cs.periodNs.Store(int64(med))
	}
	cs.irregular = lo < med*6/10
	if cs.irregular {
		// An irregular channel (the K20 updates at 0.27 to 130 ms intervals): poll for
		// its short intervals, not its typical one. A long interval is not a miss here.
		cs.pollBase = lo
	}
}

// intervalFor chooses a channel's next poll interval after a call that ended at now.
func (s *Sampler) intervalFor(cs *chanState, now time.Duration) time.Duration {
	o := s.opt
	virtual := s.virt != nil || clock.IsVirtual(s.clk)
	if o.CounterEvery > 0 && cs.kind == kindCumulative && cs.ch.Name == trace.ChEnergyTotal {
		// Asked for: the user pays the counter's CPU for a denser anchor.
		return o.CounterEvery
	}
	if cs.paced > 0 {
		// Paced, but a counter or a slow channel no more often than its CPU cap allows:
		// an H200's energy counter paced at 1 s would take 0.5 % of a core (~5 ms a call).
		return max(cs.paced, s.cpuFloor(cs, virtual))
	}
	switch o.Mode {
	case Max:
		if virtual {
			return o.VirtualStep
		}
		return 0
	case Fixed:
		if cs.kind != kindBuffered {
			return max(o.Interval, s.cpuFloor(cs, virtual))
		}
		// The buffer: its own rule below: every read returns all new samples anyway, and
		// a read costs ~0.5 ms of CPU on an H200.
	}
	var iv time.Duration
	switch cs.kind {
	case kindBuffered:
		p := cs.period
		if p <= 0 {
			p = cs.hint
		}
		if p <= 0 {
			p = 20 * time.Millisecond
		}
		// The H200's ring holds 119 samples (2.4 s) and a read costs ~0.3 ms of CPU
		// whatever it returns: read it every 25 sample periods, a fifth of its depth.
		iv = clampDur(25*p, 20*time.Millisecond, 500*time.Millisecond)
	default:
		if iv, ok := s.lockedInterval(cs, now); ok {
			return iv
		}
		switch {
		case cs.pollBase > 0:
			iv = clampDur(cs.pollBase/time.Duration(o.Divisor), o.MinInterval, o.MaxInterval)
		case cs.hint > 0:
			// Learning: poll fast enough to see the intervals clearly (5 ms for a 100 ms
			// power channel, 50 ms for a clock or temperature hinted at 1 s).
			iv = clampDur(cs.hint/20, o.MinInterval, o.MaxInterval)
		default:
			iv = time.Millisecond
		}
		if cs.sinceNew > 200 && (cs.kind != kindPower || cs.pollBase == 0) {
			// Nothing new for a long while: a constant channel, or an idle counter. Poll it
			// like a state channel until it moves again. Not a power channel whose period
			// is known: boards hold their instant power for several updates at idle (320 ms
			// on an H200), and polled slowly the first update of a load would be stamped
			// late, or lost (TestLostUpdatesBound).
			iv = max(iv, o.StateInterval)
		}
		// Dither the interval by ±25 %: with a fixed interval the phase between polls and
		// updates drifts slowly, so consecutive timestamp errors are alike and do not
		// average out over a measurement (on the sim, a counter's rate over 5 s was off
		// by 0.2 % that way); dithered, they are independent.
		iv = time.Duration(float64(iv) * (0.75 + 0.5*cs.rand()))
	}
	// A counter is slowed down for CPU: its readings lose no energy when spaced out. So is
	// a slow state channel where SlowShare asks (a clock or the throttle mask cost 1.2-1.5
	// ms a call on an H200: polled every 100 ms, most of measure's lane CPU); its value is
	// sampled and held, so reading it less often coarsens its time shares, nothing else.
	// Power channels are cheap (~1 µs) and must catch every update, and the ring must be
	// read before it wraps: a slow call there means contention for the driver.
	if !virtual && cs.lat.n >= capCalls {
		share := 0.0
		switch {
		case cs.kind == kindCumulative:
			share = o.CPUShare
		case cs.kind == kindState && o.SlowShare > 0 && cs.latMed > slowCall:
			share = o.SlowShare
		}
		if share > 0 {
			if floor := time.Duration(float64(cs.latMed) / share); iv < floor {
				iv = floor
			}
		}
	}
	if o.Lean && cs.kind == kindState {
		iv = max(iv, LeanStateInterval)
	}
	return iv
}

// cpuFloor is the shortest interval Fixed polling and a paced channel keep to on a real
// clock: a counter's calls take at most CPUShare of the wall time, and where SlowShare is
// set, so do the calls of every other channel slower than slowCall (the buffer aside);
// 0 where no cap applies (yet: a channel's latency is known after capCalls calls). The
// share is of the calls' mean duration, not their median: a call that is cheap most times
// and costly now and then (a driver refreshing what it answers from) costs its mean, and
// capped by its median such a channel would be read at the poll interval, its costly calls
// far over the share.
func (s *Sampler) cpuFloor(cs *chanState, virtual bool) time.Duration {
	o := s.opt
	switch {
	case virtual || cs.lat.n < capCalls || cs.kind == kindBuffered:
		return 0
	case cs.kind == kindCumulative:
		return time.Duration(float64(cs.latMean) / o.CPUShare)
	case o.SlowShare > 0 && cs.latMed > slowCall:
		return time.Duration(float64(cs.latMean) / o.SlowShare)
	}
	return 0
}

// lockedInterval is the poll interval of a phase-locked channel, and whether the channel is
// one: a regular power channel or a cheap counter whose period is known.
func (s *Sampler) lockedInterval(cs *chanState, now time.Duration) (time.Duration, bool) {
	lockable := (cs.kind == kindPower || (cs.kind == kindCumulative && cs.latMed < slowCall)) &&
		!cs.irregular && !cs.noLock && cs.period > 0 && cs.intervals.n >= 8 && cs.sinceNew <= 200 && s.opt.PhaseLock
	if !lockable {
		cs.lock = unlocked
		return 0, false
	}
	fine, guard := cs.window()
	if cs.lock == unlocked {
		cs.lock = searching
	}
	if cs.lock == searching || now < cs.anchor+fine {
		// Searching; or just caught: one more fine poll catches the second change of a
		// burst.
		return fine, true
	}
	next := cs.anchor + cs.period
	for next+guard < now {
		next += cs.period // a window passed with no change: the value repeated
	}
	if open := next - guard; now < open-fine {
		return open - now, true
	}
	return fine, true
}

func (cs *chanState) stats() *trace.ChannelStats {
	return cs.statsWith(cs.lat.median)
}

func (cs *chanState) statsWith(latency func() time.Duration) *trace.ChannelStats {
	period := cs.period
	if cs.kind == kindCumulative {
		period = cs.updatePeriod()
	}
	return &trace.ChannelStats{
		Polls:        cs.polls,
		Samples:      cs.nSamples,
		Repeats:      cs.repeats,
		Errors:       cs.errs,
		LastError:    cs.lastErr,
		UpdatePeriod: period.Seconds(),
		PollInterval: cs.interval.Seconds(),
		PhaseLocked:  cs.lock == locked,
		CallLatency:  latency().Seconds(),

		Missed:      cs.missed,
		LostMax:     cs.pollLost,
		SlowDropped: cs.slowDropped,
		SlowestCall: cs.slowMax.Seconds(),
		Periodic:    (cs.kind == kindPower || cs.kind == kindBuffered) && !cs.irregular,
	}
}

// slack is how early a channel may be polled when its lane wakes for another: a quarter
// of its interval, so wakeups are shared; a phase-locked channel keeps to its schedule.
func (cs *chanState) slack() time.Duration {
	if cs.lock != unlocked {
		return 0
	}
	return cs.interval / 4
}

// rand returns a pseudo-random number in [0, 1), deterministic per channel (xorshift64*).
func (cs *chanState) rand() float64 {
	if cs.rng == 0 {
		cs.rng = 0x9e3779b97f4a7c15 ^ uint64(len(cs.ch.Name))<<32 ^ uint64(cs.ch.GPU+1)
		for _, c := range cs.ch.Name {
			cs.rng = cs.rng*31 + uint64(c)
		}
	}
	cs.rng ^= cs.rng >> 12
	cs.rng ^= cs.rng << 25
	cs.rng ^= cs.rng >> 27
	return float64((cs.rng*2685821657736338717)>>11) / (1 << 53)
}

// addLatency records a call's duration; the median is refreshed every 16 calls (and on
// the first few) to keep sorting off the hot path.
func (cs *chanState) addLatency(d time.Duration) {
	cs.lat.add(d)
	if cs.lat.n < 16 || cs.polls%16 == 0 {
		cs.latMed = cs.lat.median()
		cs.latMean = cs.lat.mean()
	}
}

func clampDur(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// virtualLane drives all channels from a Virtual clock.
type virtualLane struct {
	s     *Sampler
	chans []*chanState
}

func (v *virtualLane) Next() time.Duration {
	next := clock.Never
	for _, cs := range v.chans {
		next = min(next, cs.due) // as a real lane: wake at the first due time
	}
	return next
}

func (v *virtualLane) Fire(now time.Duration) { v.s.pollDue(v.chans, now) }

// ringLen is how many durations a ring keeps.
const ringLen = 64

// ring keeps the last ringLen durations.
type ring struct {
	v [ringLen]time.Duration
	n int
	i int
}

func (r *ring) add(d time.Duration) {
	r.v[r.i] = d
	r.i = (r.i + 1) % len(r.v)
	if r.n < len(r.v) {
		r.n++
	}
}

// sorted returns the kept durations in increasing order, in buf (the caller's, on its
// stack: learn sorts a channel's intervals at every new value).
func (r *ring) sorted(buf *[ringLen]time.Duration) []time.Duration {
	tmp := buf[:r.n]
	copy(tmp, r.v[:r.n])
	slices.Sort(tmp)
	return tmp
}

func (r *ring) quantile(q float64) time.Duration {
	if r.n == 0 {
		return 0
	}
	var buf [ringLen]time.Duration
	tmp := r.sorted(&buf)
	return tmp[int(q*float64(r.n-1)+0.5)]
}

func (r *ring) median() time.Duration { return r.quantile(0.5) }

func (r *ring) mean() time.Duration {
	if r.n == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range r.v[:r.n] {
		sum += d
	}
	return sum / time.Duration(r.n)
}

func (s *Sampler) String() string {
	return fmt.Sprintf("Sampler(%d channels, poll %s)", len(s.chans), s.opt)
}
