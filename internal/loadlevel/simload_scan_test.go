package loadlevel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simLoadScanAll is SimLoad as it was, scanning every open span in share and prune: the
// reference TestSimLoadStopsAtLaterSpans holds SimLoad to.
type simLoadScanAll struct {
	dev     BusyDevice
	users   int
	started bool
	bin     time.Duration
	open    [][2]time.Duration
	given   time.Duration
}

func (s *simLoadScanAll) Busy(start, end time.Duration) {
	if end <= start {
		return
	}
	if !s.started {
		s.started, s.bin = true, start-start%SimBin
	}
	s.open = append(s.open, [2]time.Duration{start, end})
}

func (s *simLoadScanAll) share(a, b time.Duration) float64 {
	var sum float64
	for _, o := range s.open {
		sum += overlap(o[0], o[1], a, b)
	}
	return sum / (float64(max(s.users, 1)) * (b - a).Seconds())
}

func (s *simLoadScanAll) Flush(t time.Duration) {
	if !s.started {
		return
	}
	for s.bin+SimBin <= t {
		end := s.bin + SimBin
		if sh := s.share(s.bin, end); sh > 0 || s.given > s.bin {
			s.dev.AddBusy(s.bin, end, sh)
		}
		s.bin, s.given = end, end
		k := 0
		for _, o := range s.open {
			if o[1] > s.bin {
				s.open[k] = o
				k++
			}
		}
		s.open = s.open[:k]
		if len(s.open) == 0 {
			s.bin = max(s.bin, t-t%SimBin)
			s.given = s.bin
			return
		}
	}
	if t > s.given && t > s.bin {
		if sh := s.share(s.bin, t); sh > 0 || s.given > s.bin {
			s.dev.AddBusy(s.bin, t, sh)
			s.given = t
		}
	}
}

// busyCalls records what a BusyDevice is told.
type busyCalls struct{ calls [][3]float64 }

func (d *busyCalls) AddBusy(start, end time.Duration, share float64) {
	d.calls = append(d.calls, [3]float64{float64(start), float64(end), share})
}

// TestSimLoadStopsAtLaterSpans: SimLoad tells the device, bit for bit, what scanning every
// open span told it, on random users' spans told in the order they start (share and prune
// stop at the first span after the bin) and in any order (they scan them all), with
// transactions scheduled up to 50 ms ahead and flushes at random times.
func TestSimLoadStopsAtLaterSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 11))
	for trial := range 60 {
		users := 1 + rng.IntN(64)
		inOrder := trial%3 != 0
		got, want := &busyCalls{}, &busyCalls{}
		s := &SimLoad{Dev: got, Users: users}
		ref := &simLoadScanAll{dev: want, users: users}
		now := time.Duration(rng.IntN(int(time.Millisecond)))
		var next time.Duration
		for range 400 {
			// a few transactions starting from next on (or anywhere ahead), up to 50 ms long
			for range rng.IntN(4) {
				start := next + time.Duration(rng.IntN(int(2*time.Millisecond)))
				if !inOrder {
					start = now + time.Duration(rng.IntN(int(20*time.Millisecond)))
				}
				end := start + time.Duration(rng.IntN(int(50*time.Millisecond)))
				s.Busy(start, end)
				ref.Busy(start, end)
				next = max(next, start)
			}
			now += time.Duration(rng.IntN(int(3 * time.Millisecond)))
			s.Flush(now)
			ref.Flush(now)
		}
		if len(got.calls) != len(want.calls) {
			t.Fatalf("trial %d (in order %v): %d calls, scanning all %d", trial, inOrder, len(got.calls), len(want.calls))
		}
		for i := range got.calls {
			g, w := got.calls[i], want.calls[i]
			if g[0] != w[0] || g[1] != w[1] || math.Float64bits(g[2]) != math.Float64bits(w[2]) {
				t.Fatalf("trial %d (in order %v): call %d %v, scanning all %v", trial, inOrder, i, g, w)
			}
		}
	}
}
