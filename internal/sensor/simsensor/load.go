package simsensor

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Truth is a true signal (usually power) as a function of time on the clock axis.
type Truth interface {
	// Power is the true value at t.
	Power(t time.Duration) units.Power
	// Energy is the exact integral of the true value over [t0, t1] (negative if t1 < t0).
	Energy(t0, t1 time.Duration) units.Energy
}

// Step is one breakpoint of a piecewise-constant Load: from T on, the value is P.
type Step struct {
	T time.Duration
	P units.Power
}

// Load is a piecewise-constant true signal: an initial value that holds from -∞ until the
// first step, then the value of the latest step at or before t (steps are right-continuous:
// at a step's own instant the new value holds). It is safe for concurrent use: sensors read
// it from a Sampler's goroutines while the owner sets its future.
//
// Power and Energy cost O(log n) in the number of steps; so do the lagged values and
// integrals that sensors with an RC lag need, after an O(1) amortised extension of a cache.
type Load struct {
	gen atomic.Uint64 // bumped on every change; sensors compare it with their cache

	mu   sync.Mutex
	p0   float64
	ts   []time.Duration
	ps   []float64
	cum  []float64 // cum[i]: integral from ts[0] to ts[i]
	lags []*lagCache
}

// lagCache holds the state of a first-order lag y' = (P - y)/tau at every step of the load,
// and its integral from ts[0]; entries are valid for indices below len(y).
type lagCache struct {
	tau float64 // seconds
	y   []float64
	cum []float64
}

var _ Truth = (*Load)(nil)

// NewLoad returns a Load whose value is p0 at all times until steps are set.
func NewLoad(p0 units.Power) *Load {
	return &Load{p0: float64(p0)}
}

// Generation counts the changes made to l; a cache computed at one generation is valid
// while it lasts.
func (l *Load) Generation() uint64 { return l.gen.Load() }

// Initial returns the value that holds before the first step.
func (l *Load) Initial() units.Power {
	l.mu.Lock()
	defer l.mu.Unlock()
	return units.Power(l.p0)
}

// Steps returns a copy of the breakpoints in time order.
func (l *Load) Steps() []Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Step, len(l.ts))
	for i := range l.ts {
		out[i] = Step{l.ts[i], units.Power(l.ps[i])}
	}
	return out
}

// Len returns the number of steps.
func (l *Load) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ts)
}

// Set makes the value p from t on, forgetting any step at or after t.
func (l *Load) Set(t time.Duration, p units.Power) {
	l.SetSteps(t, []Step{{t, p}})
}

// SetSteps forgets every step at or after from and appends steps, which must be in time
// order and not before from (steps that are, are dropped). Values before from are kept;
// between from and the first new step the value that held just before from continues.
// Consecutive equal values are merged.
func (l *Load) SetSteps(from time.Duration, steps []Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.ts), func(i int) bool { return l.ts[i] >= from })
	l.truncate(i)
	for _, s := range steps {
		if s.T < from || (len(l.ts) > 0 && s.T < l.ts[len(l.ts)-1]) {
			continue
		}
		l.appendLocked(s.T, float64(s.P))
	}
	l.gen.Add(1)
}

func (l *Load) truncate(i int) {
	if i >= len(l.ts) {
		return
	}
	l.ts, l.ps, l.cum = l.ts[:i], l.ps[:i], l.cum[:i]
	for _, c := range l.lags {
		if len(c.y) > i {
			c.y, c.cum = c.y[:i], c.cum[:i]
		}
	}
}

func (l *Load) appendLocked(t time.Duration, p float64) {
	n := len(l.ts)
	if n > 0 && l.ts[n-1] == t {
		// Replacing the value of the last step leaves cum[n-1] and the lag state at ts[n-1]
		// valid: they depend only on what came before.
		l.ps[n-1] = p
		return
	}
	last := l.p0
	if n > 0 {
		last = l.ps[n-1]
	}
	if p == last {
		return
	}
	c := 0.0
	if n > 0 {
		c = l.cum[n-1] + l.ps[n-1]*(t-l.ts[n-1]).Seconds()
	}
	l.ts = append(l.ts, t)
	l.ps = append(l.ps, p)
	l.cum = append(l.cum, c)
}

// seg returns the index of the last step at or before t, or -1.
func (l *Load) seg(t time.Duration) int {
	n := len(l.ts)
	// Fast path: most queries are near the end.
	if n > 0 && t >= l.ts[n-1] {
		return n - 1
	}
	return sort.Search(n, func(i int) bool { return l.ts[i] > t }) - 1
}

// origin is the reference instant of the integrals: the first step, or 0.
func (l *Load) origin() time.Duration {
	if len(l.ts) > 0 {
		return l.ts[0]
	}
	return 0
}

// Power implements Truth.
func (l *Load) Power(t time.Duration) units.Power {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := l.seg(t); i >= 0 {
		return units.Power(l.ps[i])
	}
	return units.Power(l.p0)
}

// Energy implements Truth.
func (l *Load) Energy(t0, t1 time.Duration) units.Energy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return units.Energy(l.integral(t1) - l.integral(t0))
}

// integral is the integral of the value from origin() to t (negative before it).
func (l *Load) integral(t time.Duration) float64 {
	i := l.seg(t)
	if i < 0 {
		return l.p0 * (t - l.origin()).Seconds()
	}
	return l.cum[i] + l.ps[i]*(t-l.ts[i]).Seconds()
}

// lag returns the cache of the lag with time constant tau, creating it.
func (l *Load) lag(tau time.Duration) *lagCache {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.lags {
		if c.tau == tau.Seconds() {
			return c
		}
	}
	c := &lagCache{tau: tau.Seconds()}
	l.lags = append(l.lags, c)
	return c
}

// extend fills c up to the last step. The lag starts in equilibrium with the initial value.
func (l *Load) extend(c *lagCache) {
	for j := len(c.y); j < len(l.ts); j++ {
		if j == 0 {
			c.y = append(c.y, l.p0)
			c.cum = append(c.cum, 0)
			continue
		}
		y, integral := sensormodel.Lag(c.y[j-1], l.ps[j-1], (l.ts[j] - l.ts[j-1]).Seconds(), c.tau)
		c.y = append(c.y, y)
		c.cum = append(c.cum, c.cum[j-1]+integral)
	}
}

// lagAt is the lagged value at t.
func (l *Load) lagAt(c *lagCache, t time.Duration) float64 {
	l.extend(c)
	i := l.seg(t)
	if i < 0 {
		return l.p0
	}
	y, _ := sensormodel.Lag(c.y[i], l.ps[i], (t - l.ts[i]).Seconds(), c.tau)
	return y
}

// lagIntegral is the integral of the lagged value from origin() to t.
func (l *Load) lagIntegral(c *lagCache, t time.Duration) float64 {
	l.extend(c)
	i := l.seg(t)
	if i < 0 {
		return l.p0 * (t - l.origin()).Seconds()
	}
	_, integral := sensormodel.Lag(c.y[i], l.ps[i], (t - l.ts[i]).Seconds(), c.tau)
	return c.cum[i] + integral
}

// sample returns the value seen through an optional lag c (nil: none): the mean over
// [t-w, t], or the value at t when w is 0.
func (l *Load) sample(c *lagCache, t, w time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w <= 0 {
		if c == nil {
			if i := l.seg(t); i >= 0 {
				return l.ps[i]
			}
			return l.p0
		}
		return l.lagAt(c, t)
	}
	if c == nil {
		// Within one segment the mean is the segment's value, exactly.
		if i := l.seg(t); i == l.seg(t-w) {
			if i < 0 {
				return l.p0
			}
			return l.ps[i]
		}
		return (l.integral(t) - l.integral(t-w)) / w.Seconds()
	}
	return (l.lagIntegral(c, t) - l.lagIntegral(c, t-w)) / w.Seconds()
}

// Lagged returns the value at t of the load passed through a first-order lag with time
// constant tau (the load itself when tau is 0). Tests use it as the analytic reference.
func (l *Load) Lagged(t, tau time.Duration) units.Power {
	var c *lagCache
	if tau > 0 {
		c = l.lag(tau)
	}
	return units.Power(l.sample(c, t, 0))
}

// Mean returns the mean over [t0, t1] of the load passed through a first-order lag with
// time constant tau (the load itself when tau is 0); the value at t1 when t1 <= t0.
func (l *Load) Mean(t0, t1, tau time.Duration) units.Power {
	var c *lagCache
	if tau > 0 {
		c = l.lag(tau)
	}
	return units.Power(l.sample(c, t1, t1-t0))
}
