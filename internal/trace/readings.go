package trace

import (
	"math"
	"slices"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Readings is one channel's readings as columns, in time order: times, values and, where
// any reading has one, driver stamps. A compact trace hands its own columns out (no copy:
// do not modify them), so that `gpuwatt energy` holds a large trace's readings once, at 16
// bytes a reading (24 with driver stamps) where Samples take 48.
type Readings struct {
	T   []time.Duration
	V   []float64
	Drv []int64 // nil: no reading has a driver stamp
}

// Len is the number of readings.
func (r Readings) Len() int { return len(r.T) }

// Slice is readings i to j−1, sharing r's columns.
func (r Readings) Slice(i, j int) Readings {
	out := Readings{T: r.T[i:j], V: r.V[i:j]}
	if r.Drv != nil {
		out.Drv = r.Drv[i:j]
	}
	return out
}

// Stamped reports whether every reading has a driver stamp.
func (r Readings) Stamped() bool {
	if r.Drv == nil || len(r.Drv) != len(r.T) {
		return false
	}
	for _, d := range r.Drv {
		if d == 0 {
			return false
		}
	}
	return true
}

// Sample is reading i as a Sample of GPU gpu's channel name.
func (r Readings) Sample(i, gpu int, name string) Sample {
	s := Sample{T: r.T[i], GPU: gpu, Channel: name, Value: r.V[i]}
	if r.Drv != nil {
		s.DriverUS = r.Drv[i]
	}
	return s
}

// ReadingsOf is s (one channel's samples) as columns, copied.
func ReadingsOf(s []Sample) Readings {
	r := Readings{T: make([]time.Duration, len(s)), V: make([]float64, len(s))}
	for i, x := range s {
		r.T[i], r.V[i] = x.T, x.Value
		if x.DriverUS != 0 && r.Drv == nil {
			r.Drv = make([]int64, len(s))
		}
		if r.Drv != nil {
			r.Drv[i] = x.DriverUS
		}
	}
	return r
}

// Readings returns the readings of one channel in time order as columns: a compact trace's
// own (shared: do not modify them), else copied from Samples.
func (tr *Trace) Readings(gpu int, name string) Readings {
	if tr.cols != nil {
		for _, c := range tr.cols {
			if c.key == (Key{gpu, name}) {
				return Readings{T: c.t, V: c.v, Drv: c.drv}
			}
		}
		return Readings{}
	}
	n := 0
	for i := range tr.Samples {
		if x := &tr.Samples[i]; x.GPU == gpu && x.Channel == name {
			n++
		}
	}
	r := Readings{T: make([]time.Duration, 0, n), V: make([]float64, 0, n)}
	for i := range tr.Samples {
		x := &tr.Samples[i]
		if x.GPU != gpu || x.Channel != name {
			continue
		}
		if x.DriverUS != 0 && r.Drv == nil {
			r.Drv = make([]int64, len(r.T), n)
		}
		r.T, r.V = append(r.T, x.T), append(r.V, x.Value)
		if r.Drv != nil {
			r.Drv = append(r.Drv, x.DriverUS)
		}
	}
	return r
}

// Search is the first index i with T[i] >= t (len if none).
func (r Readings) Search(t time.Duration) int {
	lo, hi := 0, len(r.T)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.T[m] < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// After is the first index i with T[i] > t (len if none).
func (r Readings) After(t time.Duration) int {
	lo, hi := 0, len(r.T)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.T[m] <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// IntegrateReadings is Integrate on columns: the same sums in the same order.
func IntegrateReadings(s Readings, from, to time.Duration) Integral {
	var r Integral
	n := len(s.T)
	if to <= from || n == 0 {
		return r
	}
	i0 := s.Search(from)
	i1 := s.After(to)
	r.Samples = max(i1-i0, 0)

	lo, hi := max(from, s.T[0]), min(to, s.T[n-1])
	if lo > hi {
		return r
	}
	if lo == hi {
		v := units.Power(s.valueAt(lo))
		r.Max, r.Min = v, v
		return r
	}
	j := s.After(lo)
	j = min(j, n-1)
	pt, pv := lo, s.interpolate(j-1, j, lo)
	mn, mx := pv, pv
	var e float64 // W·ns
	var gap time.Duration
	T, V := s.T, s.V
	for ; T[j] < hi; j++ {
		v := V[j]
		e += float64(T[j]-pt) * (pv + v) / 2
		gap = max(gap, T[j]-pt)
		pt, pv = T[j], v
		mn, mx = math.Min(mn, v), math.Max(mx, v)
	}
	hv := V[j]
	if T[j] > hi {
		hv = s.interpolate(j-1, j, hi)
	}
	e += float64(hi-pt) * (pv + hv) / 2
	gap = max(gap, hi-pt)
	mn, mx = math.Min(mn, hv), math.Max(mx, hv)

	r.Energy = units.Energy(e / 1e9)
	r.Covered = hi - lo
	r.Coverage = float64(r.Covered) / float64(to-from)
	r.Mean = units.PowerOf(r.Energy, r.Covered)
	r.Max, r.Min = units.Power(mx), units.Power(mn)
	r.MaxGap = gap
	return r
}

// IntegrateEnergy is IntegrateReadings(s, from, to).Energy, bit for bit, for many regions in
// time order: hint is where the last call's search ended (0 at first), and the search for
// from's reading goes forward from there instead of over all of s; it returns the next hint.
func IntegrateEnergy(s Readings, from, to time.Duration, hint int) (units.Energy, int) {
	n := len(s.T)
	if to <= from || n == 0 {
		return 0, hint
	}
	T, V := s.T, s.V
	lo, hi := max(from, T[0]), min(to, T[n-1])
	if lo >= hi {
		return 0, hint
	}
	// j: the first reading after lo (After(lo)), searched forward from hint where the
	// reading before hint is not after lo.
	j := hint
	if j < 0 || j > n || (j > 0 && T[j-1] > lo) {
		j = s.After(lo)
	} else {
		for j < n && T[j] <= lo {
			j++
		}
	}
	next := j
	j = min(j, n-1)
	pt, pv := lo, s.interpolate(j-1, j, lo)
	var e float64 // W·ns
	for ; T[j] < hi; j++ {
		v := V[j]
		e += float64(T[j]-pt) * (pv + v) / 2
		pt, pv = T[j], v
	}
	hv := V[j]
	if T[j] > hi {
		hv = s.interpolate(j-1, j, hi)
	}
	e += float64(hi-pt) * (pv + hv) / 2
	return units.Energy(e / 1e9), next
}

func (s Readings) interpolate(a, b int, t time.Duration) float64 {
	if t == s.T[a] {
		return s.V[a]
	}
	if t == s.T[b] {
		return s.V[b]
	}
	return s.V[a] + (s.V[b]-s.V[a])*(float64(t-s.T[a])/float64(s.T[b]-s.T[a]))
}

func (s Readings) valueAt(t time.Duration) float64 {
	j := s.After(t)
	if j == len(s.T) {
		return s.V[len(s.V)-1]
	}
	if j == 0 {
		return s.V[0]
	}
	return s.interpolate(j-1, j, t)
}

// CounterEnergyReadings is CounterEnergy on columns.
func CounterEnergyReadings(s Readings, from, to time.Duration) Counter {
	var r Counter
	n := len(s.T)
	if n == 0 || to < from {
		return r
	}
	T, V := s.T, s.V
	r.Inside = T[0] <= from && to <= T[n-1]
	lo, hi := max(from, T[0]), min(to, T[n-1])
	if lo > hi {
		return r
	}
	var e float64
	k := max(s.Search(lo)-1, 0)
	for ; k+1 < n && T[k] <= hi; k++ {
		at, av, bt, bv := T[k], V[k], T[k+1], V[k+1]
		if at == bt {
			if at > from && at <= to {
				if bv < av {
					r.Resets++
				} else {
					e += bv - av
				}
			}
			continue
		}
		cl, ch := max(at, lo), min(bt, hi)
		if ch <= cl {
			continue
		}
		if bv < av {
			r.Resets++
			r.Missing += ch - cl
			continue
		}
		e += (bv - av) * (float64(ch-cl) / float64(bt-at))
		r.Covered += ch - cl
	}
	r.Energy = units.Energy(e)
	if to > from {
		r.Coverage = float64(r.Covered) / float64(to-from)
	}
	return r
}

// CounterDeltaReadings is CounterDelta on columns.
func CounterDeltaReadings(s Readings, from, to time.Duration) (units.Energy, bool) {
	c := CounterEnergyReadings(s, from, to)
	return c.Energy, c.Inside && c.Resets == 0
}

// DedupeReadings is Dedupe on columns: s itself where nothing is dropped, else new columns.
func DedupeReadings(s Readings, within time.Duration) (kept Readings, dropped int) {
	T, V := s.T, s.V
	for i := 1; i < len(T); i++ {
		if V[i] == V[i-1] && T[i]-T[i-1] <= within {
			n := len(T) - 1
			kept = Readings{T: append(make([]time.Duration, 0, n), T[:i]...), V: append(make([]float64, 0, n), V[:i]...)}
			if s.Drv != nil {
				kept.Drv = append(make([]int64, 0, n), s.Drv[:i]...)
			}
			for k := i; k < len(T); k++ {
				last := len(kept.T) - 1
				if V[k] == kept.V[last] && T[k]-kept.T[last] <= within {
					dropped++
					continue
				}
				kept.T, kept.V = append(kept.T, T[k]), append(kept.V, V[k])
				if s.Drv != nil {
					kept.Drv = append(kept.Drv, s.Drv[k])
				}
			}
			return kept, dropped
		}
	}
	return s, 0
}

// GapsReadings is Gaps on columns.
func GapsReadings(s Readings) (gaps []Gap, usual time.Duration) {
	T := s.T
	if len(T) < 3 {
		return nil, 0
	}
	const most = 4096
	step := max(1, (len(T)-1)/most)
	iv := make([]time.Duration, 0, min(len(T)-1, most+1))
	for i := step; i < len(T); i += step {
		iv = append(iv, T[i]-T[i-1])
	}
	slices.Sort(iv)
	usual = iv[len(iv)/2]
	limit := max(GapFactor*usual, usual+GapMin)
	for i := 1; i < len(T); i++ {
		if d := T[i] - T[i-1]; d > limit {
			gaps = append(gaps, Gap{From: T[i-1], To: T[i], FromS: T[i-1].Seconds(), ToS: T[i].Seconds()})
		}
	}
	return gaps, usual
}
