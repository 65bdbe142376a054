package trace

import (
	"io"
	"slices"
	"time"
)

// A compact trace (ReadCompact, LoadCompact) holds its readings by channel, as columns of
// times and values (and driver stamps where a channel has any), instead of Samples: 16
// bytes a reading (24 with driver stamps) against a Sample's 48, for `gpuwatt energy` on
// large traces. Its Samples is nil: read it through Series, Keys and FirstReading, which
// serve both kinds.

// column is the readings of one channel in a compact trace, in time order.
type column struct {
	key Key
	t   []time.Duration
	v   []float64
	drv []int64 // nil while every driver stamp is 0
}

func (c *column) add(s Sample) {
	if s.DriverUS != 0 && c.drv == nil {
		c.drv = make([]int64, len(c.t), cap(c.t))
	}
	c.t = append(c.t, s.T)
	c.v = append(c.v, s.Value)
	if c.drv != nil {
		c.drv = append(c.drv, s.DriverUS)
	}
}

// reserve makes room for n readings in all (no less than a quarter more than it holds).
func (c *column) reserve(n int) {
	n = max(n, len(c.t)+len(c.t)/4)
	if n <= cap(c.t) {
		return
	}
	c.t = slices.Grow(c.t, n-len(c.t))
	c.v = slices.Grow(c.v, n-len(c.v))
	if c.drv != nil {
		c.drv = slices.Grow(c.drv, n-len(c.drv))
	}
}

func (c *column) sample(i int) Sample {
	s := Sample{T: c.t[i], GPU: c.key.GPU, Channel: c.key.Name, Value: c.v[i]}
	if c.drv != nil {
		s.DriverUS = c.drv[i]
	}
	return s
}

func (c *column) samples() []Sample {
	out := make([]Sample, len(c.t))
	for i := range out {
		out[i] = c.sample(i)
	}
	return out
}

// sortByTime sorts the column by time, stably (rows out of order in the input: rare).
func (c *column) sortByTime() {
	s := c.samples()
	slices.SortStableFunc(s, cmpT)
	for i, x := range s {
		c.t[i], c.v[i] = x.T, x.Value
		if c.drv != nil {
			c.drv[i] = x.DriverUS
		}
	}
}

// ReadCompact is Read into a compact trace.
func ReadCompact(r io.Reader, name string) (*Trace, error) {
	tr, _, err := read(r, name, true)
	if err == nil {
		tr.crossCheck()
	}
	return tr, err
}

// LoadCompact is Load into a compact trace.
func LoadCompact(path string) (*Trace, error) { return load(path, true) }

// Compact reports whether tr holds its readings as columns (Samples is nil).
func (tr *Trace) Compact() bool { return tr.cols != nil }

// Keys returns the channels that have readings, in the order of their first reading.
func (tr *Trace) Keys() []Key {
	if tr.cols != nil {
		out := make([]Key, 0, len(tr.cols))
		for _, c := range tr.cols {
			if len(c.t) > 0 {
				out = append(out, c.key)
			}
		}
		return out
	}
	var out []Key
	for i := range tr.Samples {
		x := &tr.Samples[i]
		if n := len(out); n > 0 && out[n-1].GPU == x.GPU && out[n-1].Name == x.Channel {
			continue
		}
		k := Key{x.GPU, x.Channel}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// FirstReading returns the time of GPU gpu's earliest reading, or false when it has none.
func (tr *Trace) FirstReading(gpu int) (time.Duration, bool) {
	var first time.Duration
	ok := false
	if tr.cols != nil {
		for _, c := range tr.cols {
			if c.key.GPU == gpu && len(c.t) > 0 && (!ok || c.t[0] < first) {
				first, ok = c.t[0], true
			}
		}
		return first, ok
	}
	for i := range tr.Samples {
		if s := &tr.Samples[i]; s.GPU == gpu && (!ok || s.T < first) {
			first, ok = s.T, true
		}
	}
	return first, ok
}

// NumReadings is the number of readings in tr.
func (tr *Trace) NumReadings() int {
	if tr.cols == nil {
		return len(tr.Samples)
	}
	n := 0
	for _, c := range tr.cols {
		n += len(c.t)
	}
	return n
}

// sortByTime sorts tr's readings by time, stably.
func (tr *Trace) sortByTime() {
	slices.SortStableFunc(tr.Samples, cmpT)
	for _, c := range tr.cols {
		c.sortByTime()
	}
}

// span is the duration of Meta.Duration: from the trace's origin (or its first reading,
// when that comes earlier) to its last reading.
func (tr *Trace) span() float64 {
	if tr.cols == nil {
		return duration(tr.Samples)
	}
	var first, last time.Duration
	ok := false
	for _, c := range tr.cols {
		if n := len(c.t); n > 0 {
			if !ok {
				first, last, ok = c.t[0], c.t[n-1], true
			}
			first, last = min(first, c.t[0]), max(last, c.t[n-1])
		}
	}
	if !ok {
		return 0
	}
	return (last - min(first, 0)).Seconds()
}

// each calls f with every reading of channel k, in order, until f returns false.
func (tr *Trace) each(k Key, f func(Sample) bool) {
	if tr.cols == nil {
		for _, s := range tr.Samples {
			if s.GPU == k.GPU && s.Channel == k.Name && !f(s) {
				return
			}
		}
		return
	}
	for _, c := range tr.cols {
		if c.key == k {
			for i := range c.t {
				if !f(c.sample(i)) {
					return
				}
			}
		}
	}
}
