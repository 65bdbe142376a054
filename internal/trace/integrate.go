package trace

import (
	"sort"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// The functions in this file work on the samples of one channel, sorted by T (as
// Trace.Series returns them). Times are on the trace's axis.

// Integral is the energy of a power channel over a region, with what the data could cover.
type Integral struct {
	Energy units.Energy // trapezoid rule over the covered part of the region
	// Covered is the part of the region inside the data (from the first sample to the last);
	// nothing is extrapolated beyond it.
	Covered  time.Duration
	Coverage float64 // Covered / (to - from); 0 for an empty region
	Samples  int     // samples with from <= T <= to
	Mean     units.Power
	// Max and Min are over the values integrated: the samples inside the covered part and
	// the values interpolated at its ends.
	Max units.Power
	Min units.Power
	// MaxGap is the longest interval between consecutive points integrated: a gap much
	// longer than the channel's update period means missed updates.
	MaxGap time.Duration
}

// Integrate returns the energy of power samples s (in W) from from to to, by the trapezoid
// rule on the samples' own timestamps, with the power interpolated linearly at from and to
// where they fall inside the data. Where the region extends beyond the data nothing is
// extrapolated: Covered and Coverage tell how much of the region the data spans.
func Integrate(s []Sample, from, to time.Duration) Integral {
	return IntegrateReadings(columns(s), from, to)
}

// columns holds s's times and values as Readings (no driver stamps): the one
// implementation of each sum is on columns, and the []Sample forms copy into them.
func columns(s []Sample) Readings {
	r := Readings{T: make([]time.Duration, len(s)), V: make([]float64, len(s))}
	for i, x := range s {
		r.T[i], r.V[i] = x.T, x.Value
	}
	return r
}

// Counter is the energy read from a cumulative energy counter over a region.
type Counter struct {
	Energy units.Energy // the counter's increase, leaving out segments where it went backwards
	// Covered is the part of the region inside the data, less the Missing segments.
	Covered  time.Duration
	Coverage float64 // Covered / (to - from); 0 for an empty region
	// Resets counts the places where the counter went backwards (it wrapped or was reset,
	// for example by a driver reload); the segments leading to them are left out, and
	// Missing is their duration inside the region.
	Resets  int
	Missing time.Duration
	Inside  bool // the region lies inside the data: both ends could be interpolated
}

// CounterDelta returns the energy from a cumulative counter (samples in J) between from and
// to, interpolating the counter linearly at both ends. ok is false when the region is not
// inside the data, or when the counter went backwards inside it; the energy then leaves out
// what could not be read, and CounterEnergy tells how much.
func CounterDelta(s []Sample, from, to time.Duration) (units.Energy, bool) {
	c := CounterEnergy(s, from, to)
	return c.Energy, c.Inside && c.Resets == 0
}

// CounterEnergy is CounterDelta with the details: coverage and the counter's resets. A
// segment between two readings where the value decreases counts as missing. Readings with
// the same time are taken to change the counter at that instant: a change at from is left
// out, one at to is counted.
func CounterEnergy(s []Sample, from, to time.Duration) Counter {
	return CounterEnergyReadings(columns(s), from, to)
}

// Stats returns the smallest, largest and mean value of the n samples with from <= T <= to
// (all zero when n is 0). The mean is the plain mean of the readings; use Integrate for a
// time-weighted one.
func Stats(s []Sample, from, to time.Duration) (min, max, mean float64, n int) {
	i := sort.Search(len(s), func(i int) bool { return s[i].T >= from })
	var sum float64
	for ; i < len(s) && s[i].T <= to; i++ {
		v := s[i].Value
		if n == 0 || v < min {
			min = v
		}
		if n == 0 || v > max {
			max = v
		}
		sum += v
		n++
	}
	if n > 0 {
		mean = sum / float64(n)
	}
	return min, max, mean, n
}

// Dedupe drops stale repeats: readings equal in value to the previous kept reading and no
// more than within after it. A sensor that updates every T but is read more often repeats
// its last value; Dedupe with within a little under T keeps one reading per update, while
// a value that truly stays the same for longer is still kept once per within. s is not
// modified; where nothing is dropped, kept is s itself (not a copy).
func Dedupe(s []Sample, within time.Duration) (kept []Sample, dropped int) {
	for i := 1; i < len(s); i++ {
		if s[i].Value == s[i-1].Value && s[i].T-s[i-1].T <= within {
			// the first repeat: copy what came before it, then filter the rest
			kept = append(make([]Sample, 0, len(s)-1), s[:i]...)
			for _, x := range s[i:] {
				p := kept[len(kept)-1]
				if x.Value == p.Value && x.T-p.T <= within {
					dropped++
					continue
				}
				kept = append(kept, x)
			}
			return kept, dropped
		}
	}
	return s, 0
}
