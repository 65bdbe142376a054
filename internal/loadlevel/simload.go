package loadlevel

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// BusyDevice is a device that draws power for work it does not run itself: the sim device
// (*sim.Device). Over [start, end) it is busy a share (0 to 1) of the time; a span that
// starts where the previous one started replaces it.
type BusyDevice interface {
	AddBusy(start, end time.Duration, share float64)
}

// FullBusyDevice is a BusyDevice that takes the power of a fully busy device with each
// span (*sim.Device).
type FullBusyDevice interface {
	AddBusyAt(start, end time.Duration, share float64, full units.Power)
}

// SimBin is the time resolution of SimLoad: the sim device's power follows the busy share
// of each millisecond (the sensors average over 10 ms or more).
const SimBin = time.Millisecond

// SimLoad turns the transactions of the CPU variant on a virtual clock into load on the
// sim device, so that its power comes from the device (its configured active idle and
// command load, seen through its sensors) rather than from a separate model: over each
// SimBin the device is busy the share of the bin its users were busy (user-seconds over
// users × the bin). The bin being filled is given to the device, as far as it is known,
// before the clock moves on, so the sensors never read a truth that is still missing.
type SimLoad struct {
	Dev   BusyDevice
	Users int
	// Full, when positive, is the device's power while fully busy (the transactions'
	// kernels' power from the sim's execution model), given to a FullBusyDevice with each
	// bin's share, which may then exceed 1 (several low-occupancy kernels at once); 0: the
	// device's own command load (AddBusy).
	Full float64

	started bool
	bin     time.Duration      // start of the bin being filled
	open    [][2]time.Duration // spans that reach into the bin or later
	given   time.Duration      // the bin was given to the device up to here
	// unsorted: a span in open starts before one told earlier. Spans come in the order
	// they start (the engine's virtual clock), so share and prune stop at the first span
	// that starts after the bin: hundreds of transactions already scheduled ahead lay in
	// open, and both scanned them all for every millisecond.
	unsorted bool
}

var _ BusyObserver = (*SimLoad)(nil)

// Busy implements BusyObserver.
func (s *SimLoad) Busy(start, end time.Duration) {
	if end <= start {
		return
	}
	if !s.started {
		s.started, s.bin = true, start-start%SimBin
	}
	if n := len(s.open); n == 0 {
		s.unsorted = false
	} else if start < s.open[n-1][0] {
		s.unsorted = true
	}
	s.open = append(s.open, [2]time.Duration{start, end})
}

// share is the busy share of [a, b).
func (s *SimLoad) share(a, b time.Duration) float64 {
	var sum float64
	for _, o := range s.open {
		if o[0] >= b && !s.unsorted {
			break // the rest start at b or later: nothing (+0) to add
		}
		sum += overlap(o[0], o[1], a, b)
	}
	return sum / (float64(max(s.Users, 1)) * (b - a).Seconds())
}

// Flush implements BusyObserver: the bins before t are final; the one holding t is given
// up to t.
func (s *SimLoad) Flush(t time.Duration) {
	if !s.started {
		return
	}
	for s.bin+SimBin <= t {
		end := s.bin + SimBin
		if sh := s.share(s.bin, end); sh > 0 || s.given > s.bin {
			s.add(s.bin, end, sh)
		}
		s.bin, s.given = end, end
		s.prune()
		if len(s.open) == 0 {
			// Nothing reaches further: skip to the bin holding t.
			s.bin = max(s.bin, t-t%SimBin)
			s.given = s.bin
			return
		}
	}
	if t > s.given && t > s.bin {
		if sh := s.share(s.bin, t); sh > 0 || s.given > s.bin {
			s.add(s.bin, t, sh)
			s.given = t
		}
	}
}

// add gives the device a span's share.
func (s *SimLoad) add(a, b time.Duration, share float64) {
	if f, ok := s.Dev.(FullBusyDevice); ok && s.Full > 0 {
		f.AddBusyAt(a, b, share, units.Power(s.Full))
		return
	}
	s.Dev.AddBusy(a, b, share)
}

// prune drops the spans that end before the bin.
func (s *SimLoad) prune() {
	k := 0
	for i, o := range s.open {
		if o[0] >= s.bin && !s.unsorted {
			// the rest start at the bin or later, so end after it: all kept
			k += copy(s.open[k:], s.open[i:])
			break
		}
		if o[1] > s.bin {
			s.open[k] = o
			k++
		}
	}
	s.open = s.open[:k]
}
