package loadlevel

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

const maxDelays = 5000

// overlap is the length of [a,b) ∩ [c,d) in seconds.
func overlap(a, b, c, d time.Duration) float64 {
	lo, hi := max(a, c), min(b, d)
	if hi <= lo {
		return 0
	}
	return (hi - lo).Seconds()
}

// interval runs one interval: users start transactions from its start to its end
// (pre + rec + post); transactions that complete inside the recording window count.
func (e *engine) interval(ctx context.Context, it interval) (intervalStats, error) {
	e.progress(it)
	if it.rate < 0 {
		return e.idle(ctx, it)
	}
	if e.virtual {
		return e.virtualInterval(ctx, it)
	}
	return e.realInterval(ctx, it)
}

// idle is active idle: ready, no transactions.
func (e *engine) idle(ctx context.Context, it interval) (intervalStats, error) {
	var st intervalStats
	if err := e.sleep(ctx, it.pre); err != nil {
		return st, err
	}
	e.beginMeters(it.label, &st)
	if err := e.sleep(ctx, it.rec); err != nil {
		return st, err
	}
	e.endMeters(it.label, Window{Length: it.rec, Users: len(e.users)}, &st)
	return st, e.sleep(ctx, it.post)
}

// userSched is one user's schedule within an interval.
type userSched struct {
	u        *User
	next     time.Duration // scheduled start of the next transaction
	free     time.Duration // when the user's current transaction ends
	in       any
	finished bool
}

// schedule draws the user's next scheduled start from the previous scheduled one (not from
// its completion): a late user starts at once and catches up; nothing is skipped.
func (e *engine) schedule(s *userSched, mean float64, st *intervalStats, mu *sync.Mutex) {
	if mean == 0 {
		s.next = s.free // back-to-back
		return
	}
	d := exp(s.u.Rand, mean)
	s.next += d
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	if len(st.delays) < maxDelays {
		st.delays = append(st.delays, d.Seconds())
	}
}

func (e *engine) meanDelay(rate float64) float64 {
	if rate == 0 {
		return 0
	}
	return float64(len(e.users)) / rate
}

// sleep waits d on the run's clock; on a virtual clock through advance.
func (e *engine) sleep(ctx context.Context, d time.Duration) error {
	if !e.virtual {
		return e.cfg.Clock.Sleep(ctx, d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.advance(e.vclk.Now() + max(d, 0))
	return ctx.Err()
}

// advance moves the virtual clock to t, after telling cfg.Busy that everything before t
// is known when anything (a Sampler reading the device) is due on the way.
func (e *engine) advance(t time.Duration) {
	if e.cfg.Busy != nil && e.vclk.NextEvent() <= t {
		e.cfg.Busy.Flush(t)
	}
	e.vclk.AdvanceTo(t)
}

// virtualInterval is a discrete-event simulation on the virtual clock: the user whose next
// transaction starts first runs it (really, so it can be verified); it takes its modelled
// time.
func (e *engine) virtualInterval(ctx context.Context, it interval) (intervalStats, error) {
	var st intervalStats
	clk := e.vclk
	t0 := clk.Now()
	rs, re, end := t0+it.pre, t0+it.pre+it.rec, t0+it.pre+it.rec+it.post
	mean := e.meanDelay(it.rate)
	us := make([]*userSched, len(e.users))
	for i, u := range e.users {
		us[i] = &userSched{u: u, next: t0, free: t0}
		e.schedule(us[i], mean, &st, nil)
	}
	began, ended := it.rec <= 0, it.rec <= 0
	lastEnd := end
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var s *userSched
		var at time.Duration
		for _, c := range us {
			if c.finished {
				continue
			}
			t := max(c.next, c.free)
			if t >= end {
				c.finished = true
				continue
			}
			if s == nil || t < at {
				s, at = c, t
			}
		}
		if s == nil {
			break
		}
		if !began && at >= rs {
			e.advance(rs)
			e.beginMeters(it.label, &st)
			began = true
		}
		if !ended && at >= re {
			e.advance(re)
			e.endMeters(it.label, Window{Length: it.rec, BusySeconds: st.busy, Users: len(e.users)}, &st)
			ended = true
		}
		e.advance(at)
		u := s.u
		u.Seq++
		in := e.cfg.Tx.Generate(u)
		d := e.cfg.ServiceTime
		if m, ok := e.cfg.Tx.(Modeller); ok {
			d = m.ModelTime(in)
		}
		if d <= 0 {
			d = time.Millisecond
		}
		out, err := e.cfg.Tx.Process(u, in)
		fin := at + d
		if err == nil {
			if fin >= rs && fin < re {
				st.completed++
			}
			if e.pickForCheck(u) {
				e.submit(u, in, out)
			}
		} else {
			e.txError(u, err)
		}
		st.busy += overlap(at, fin, rs, re)
		if e.cfg.Busy != nil {
			e.cfg.Busy.Busy(at, fin)
		}
		s.free = fin
		lastEnd = max(lastEnd, fin)
		e.schedule(s, mean, &st, nil)
	}
	if !began {
		e.advance(rs)
		e.beginMeters(it.label, &st)
	}
	if !ended {
		e.advance(re)
		e.endMeters(it.label, Window{Length: it.rec, BusySeconds: st.busy, Users: len(e.users)}, &st)
	}
	e.advance(lastEnd)
	return st, nil
}

// realInterval runs one goroutine per user on the real clock.
func (e *engine) realInterval(ctx context.Context, it interval) (intervalStats, error) {
	var st intervalStats
	var mu sync.Mutex
	clk := e.cfg.Clock
	t0 := clk.Now()
	rs, re, end := t0+it.pre, t0+it.pre+it.rec, t0+it.pre+it.rec+it.post
	mean := e.meanDelay(it.rate)
	var wg sync.WaitGroup
	for _, u := range e.users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &userSched{u: u, next: t0, free: t0}
			var completed int64
			var busy float64
			for {
				e.schedule(s, mean, &st, &mu)
				if mean == 0 {
					s.next = clk.Now()
				}
				if s.next >= end || ctx.Err() != nil {
					break
				}
				u.Seq++
				in := e.cfg.Tx.Generate(u)
				if sleepUntil(ctx, clk, s.next) != nil {
					break
				}
				start := clk.Now()
				out, err := e.cfg.Tx.Process(u, in)
				fin := clk.Now()
				s.free = fin
				if err == nil {
					if fin >= rs && fin < re {
						completed++
					}
					if e.pickForCheck(u) {
						e.submit(u, in, out)
					}
				} else {
					e.txError(u, err)
				}
				busy += overlap(start, fin, rs, re)
			}
			mu.Lock()
			st.completed += completed
			st.busy += busy
			mu.Unlock()
		}()
	}
	var err error
	if it.rec > 0 {
		if err = clk.Sleep(ctx, rs-clk.Now()); err == nil {
			e.beginMeters(it.label, &st)
			err = clk.Sleep(ctx, re-clk.Now())
			// BusySeconds is not final yet on a real clock; real meters do not use it.
			e.endMeters(it.label, Window{Length: it.rec, Users: len(e.users)}, &st)
		}
	}
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return st, err
}

// spinMargin is how much of a wait sleepUntil spends spinning rather than in a timer: Go's
// timers wake tens of microseconds late, and at the 100 % level, where users have no slack
// to catch up, every late wake-up is capacity lost (the first H200 run's 100 % levels ran at
// 96.5-98.3 % of the calibrated rate with 20 µs mean delays).
const spinMargin = 200 * time.Microsecond

// sleepUntil waits until t on a real clock: a timer for all but the last spinMargin, then a
// spin that yields the processor between reads of the clock.
func sleepUntil(ctx context.Context, clk clock.Clock, t time.Duration) error {
	d := t - clk.Now()
	if d > spinMargin {
		if err := clk.Sleep(ctx, d-spinMargin); err != nil {
			return err
		}
	}
	for clk.Now() < t {
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}
