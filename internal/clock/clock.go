// Package clock is the time source of gpuwatt's measurements. A Real clock reads the
// monotonic clock of the host; a Virtual clock is instant and deterministic: time moves only
// when somebody sleeps on it, and the participants registered with it (the Sampler, the sim
// device) run at their due times in order, on the sleeper's goroutine.
//
// Times are durations since the clock's origin; Epoch gives the wall-clock time of the origin
// so that driver timestamps (microseconds since 1970) can be mapped onto the same axis.
package clock

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Clock is a monotonic time source.
type Clock interface {
	// Now is the time since the clock's origin.
	Now() time.Duration
	// Epoch is the wall-clock time of the origin.
	Epoch() time.Time
	// Sleep waits for d, or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// Never is the Next of a participant that has nothing scheduled.
const Never = time.Duration(math.MaxInt64)

// Participant is driven by a Virtual clock: Fire runs at the participant's Next time.
type Participant interface {
	Next() time.Duration
	Fire(now time.Duration)
}

// Real reads the host's monotonic clock.
type Real struct{ origin time.Time }

// NewReal returns a Real clock whose origin is now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// NewRealAt returns a real clock whose origin is the wall-clock time origin: processes that
// share one origin (a job's begin, recorder and end) share one time axis. An origin without
// a monotonic reading (one read back from a file) follows the wall clock.
func NewRealAt(origin time.Time) *Real { return &Real{origin: origin} }

// Now implements Clock.
func (r *Real) Now() time.Duration { return time.Since(r.origin) }

// Epoch implements Clock.
func (r *Real) Epoch() time.Time { return r.origin }

// Sleep implements Clock.
func (r *Real) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Virtual is a clock whose time advances only through Sleep or Advance.
type Virtual struct {
	mu           sync.Mutex
	now          time.Duration
	epoch        time.Time
	participants []Participant // never changed in place: Remove copies (see due)
}

// DefaultEpoch is the wall-clock origin of virtual clocks made by NewVirtual with a zero epoch:
// fixed, so that runs on the sim device are reproducible to the byte.
var DefaultEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewVirtual returns a Virtual clock at time zero; a zero epoch means DefaultEpoch.
func NewVirtual(epoch time.Time) *Virtual {
	if epoch.IsZero() {
		epoch = DefaultEpoch
	}
	return &Virtual{epoch: epoch}
}

// Now implements Clock.
func (v *Virtual) Now() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// Epoch implements Clock.
func (v *Virtual) Epoch() time.Time { return v.epoch }

// Add registers a participant. It is fired at its Next times from now on.
func (v *Virtual) Add(p Participant) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.participants = append(v.participants, p)
}

// Remove unregisters a participant.
func (v *Virtual) Remove(p Participant) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, q := range v.participants {
		if q == p {
			// A copy, not in place: AdvanceTo may be reading the slice it held.
			v.participants = slices.Delete(slices.Clone(v.participants), i, i+1)
			return
		}
	}
}

// NextEvent is the earliest Next of the participants (Never when there are none): until
// the clock reaches it, advancing fires nothing.
func (v *Virtual) NextEvent() time.Duration {
	v.mu.Lock()
	ps := v.participants
	v.mu.Unlock()
	next := Never
	for _, p := range ps {
		next = min(next, p.Next())
	}
	return next
}

// Sleep advances the clock by d, firing participants on the way. It never blocks.
func (v *Virtual) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v.Advance(d)
	return ctx.Err()
}

// Advance moves the clock forward by d. Participants due on the way fire in time order
// (ties in registration order), each seeing Now equal to its due time.
func (v *Virtual) Advance(d time.Duration) {
	v.mu.Lock()
	target := v.now + max(d, 0)
	v.mu.Unlock()
	v.AdvanceTo(target)
}

// AdvanceTo moves the clock forward to t (no-op if t is not after Now).
func (v *Virtual) AdvanceTo(t time.Duration) {
	for {
		due, when := v.due()
		v.mu.Lock()
		if due == nil || when > t {
			if t > v.now {
				v.now = t
			}
			v.mu.Unlock()
			return
		}
		if when > v.now {
			v.now = when
		}
		now := v.now
		v.mu.Unlock()
		due.Fire(now)
	}
}

// due is the participant due first and when (nil: none), the first registered on a tie.
// Next is called without the lock so participants may read Now, on the slice as it was
// (Add appends past its end, Remove copies): no copy, no sort, per event, where the
// virtual recordings of the tests fire hundreds of thousands of them.
func (v *Virtual) due() (Participant, time.Duration) {
	v.mu.Lock()
	ps := v.participants
	v.mu.Unlock()
	var due Participant
	when := Never
	for _, p := range ps {
		if n := p.Next(); due == nil || n < when {
			due, when = p, n
		}
	}
	return due, when
}

// IsVirtual reports whether c is a Virtual clock.
func IsVirtual(c Clock) bool {
	_, ok := c.(*Virtual)
	return ok
}
