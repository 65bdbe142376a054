package profile

import (
	"context"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
)

// update is one new value of the channel, stamped with the middle of the interval
// between the last poll that still saw the old value and the first that saw the new one.
type update struct {
	T     time.Duration // stamp: middle of (Lo, Hi]
	Lo    time.Duration // last poll with the old value
	Value float64
}

// watcher polls one sensor every step for as long as it runs and keeps every change:
// on a Virtual clock as a participant (so it polls while a sim kernel runs), on a real
// clock from a goroutine of its own (so it polls while a GPU kernel runs).
type watcher struct {
	clk  clock.Clock
	s    sensor.Sensor
	step time.Duration

	mu      sync.Mutex
	due     time.Duration
	have    bool
	last    float64
	lastDrv int64
	prev    time.Duration // time of the previous poll
	ups     []update
	errs    int
	rbuf    []sensor.Reading
	gridL   correct.Lattice
	gridOK  bool
	gridAt  int
	stop    context.CancelFunc
	done    chan struct{}
}

func newWatcher(clk clock.Clock, s sensor.Sensor, step time.Duration) *watcher {
	return &watcher{clk: clk, s: s, step: step}
}

func (w *watcher) start(ctx context.Context) {
	w.poll(w.clk.Now())
	if v, ok := w.clk.(*clock.Virtual); ok {
		v.Add(w)
		return
	}
	ctx, w.stop = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			time.Sleep(w.step)
			w.poll(w.clk.Now())
		}
	}()
}

func (w *watcher) end() {
	if v, ok := w.clk.(*clock.Virtual); ok {
		v.Remove(w)
		return
	}
	if w.stop != nil {
		w.stop()
		<-w.done
	}
}

// Next implements clock.Participant.
func (w *watcher) Next() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.due
}

// Fire implements clock.Participant.
func (w *watcher) Fire(now time.Duration) { w.poll(now) }

func (w *watcher) poll(now time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rs, err := w.s.Read(w.rbuf[:0])
	w.rbuf = rs
	after := w.clk.Now()
	w.due = now + w.step
	if err != nil || len(rs) == 0 {
		w.errs++
		return
	}
	if rs[0].Timed {
		// A buffered channel: every sample new since the last read, timed by the driver.
		for _, r := range rs {
			if w.have && r.DriverUS != 0 && r.DriverUS == w.lastDrv {
				continue
			}
			w.ups = append(w.ups, update{T: r.T, Lo: r.T, Value: r.Value})
			w.have, w.last, w.lastDrv = true, r.Value, r.DriverUS
		}
		return
	}
	r := rs[len(rs)-1]
	stamp := now + (after-now)/2
	if w.have && (r.Value != w.last || (r.DriverUS != 0 && r.DriverUS != w.lastDrv)) {
		w.ups = append(w.ups, update{T: w.prev + (stamp-w.prev)/2, Lo: w.prev, Value: r.Value})
	}
	w.have, w.last, w.lastDrv, w.prev = true, r.Value, r.DriverUS, stamp
}

// pollNow reads the channel once more now (a buffered channel's last samples).
func (w *watcher) pollNow() { w.poll(w.clk.Now()) }

// grid returns the grid of a buffered channel's sample stamps, learned from the last 300
// samples and refitted every 25 new ones.
func (w *watcher) grid(guess time.Duration) (correct.Lattice, bool) {
	w.mu.Lock()
	n := len(w.ups)
	if w.gridOK && n-w.gridAt < 25 {
		g := w.gridL
		w.mu.Unlock()
		return g, true
	}
	from := max(0, n-300)
	ts := make([]time.Duration, 0, n-from)
	for _, u := range w.ups[from:] {
		ts = append(ts, u.T)
	}
	w.mu.Unlock()
	g, ok := correct.FitLattice(ts, guess)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.gridL, w.gridOK, w.gridAt = g, true, n
	}
	return w.gridL, w.gridOK
}

// updates returns every update caught so far.
func (w *watcher) updates() []update {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]update(nil), w.ups...)
}

// lastUpdate returns the newest update and whether there is one.
func (w *watcher) lastUpdate() (update, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ups) == 0 {
		return update{}, false
	}
	return w.ups[len(w.ups)-1], true
}
