package simsensor

import (
	"hash/fnv"
	"math"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// Salts separating the random streams of one channel.
const (
	saltJitter uint64 = 0x6a09e667f3bcc908
	saltNoiseA uint64 = 0xbb67ae8584caa73b
	saltNoiseB uint64 = 0x3c6ef372fe94f82b
	saltStamp  uint64 = 0xa54ff53a5f1d36f1
	saltStampV uint64 = 0x510e527fade682d1
	saltStampE uint64 = 0x9b05688c2b3e6c1f
	saltPair   uint64 = 0x1f83d9abfb41bd6b
	saltPairL  uint64 = 0x5be0cd19137e2179
	saltPairF  uint64 = 0xcbbb9d5dc1059ed8
)

// mix is splitmix64's finaliser: a bijective hash of 64 bits.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// uniform returns a number in [0, 1) fixed by (seed, stream, k, salt).
func uniform(seed, stream uint64, k int, salt uint64) float64 {
	h := mix(seed ^ mix(stream^mix(uint64(int64(k))^mix(salt))))
	return float64(h>>11) / (1 << 53)
}

// gauss returns a standard normal number fixed by (seed, stream, k) (Box-Muller).
func gauss(seed, stream uint64, k int) float64 {
	u1 := 1 - uniform(seed, stream, k, saltNoiseA) // (0, 1]
	u2 := uniform(seed, stream, k, saltNoiseB)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// Stream returns the random stream of a channel: a hash of its GPU index and name, so that
// channels of one seed draw independent noise and jitter.
func Stream(gpu int, name string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(gpu) >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(name))
	return h.Sum64()
}

// schedule generates update instants t_k = phase + k*period + jitter_k, lazily: any t_k is
// computed in O(1), and so is the index of the last update at or before t, because
// |jitter_k| < period/2 keeps the instants in order and within half a period of the grid.
type schedule struct {
	period time.Duration
	phase  time.Duration
	jitter float64
	seed   uint64
	stream uint64
}

func newSchedule(m sensormodel.Model, seed, stream uint64) schedule {
	return schedule{period: m.Period, phase: m.Phase, jitter: m.Jitter, seed: seed, stream: stream}
}

// at returns t_k.
func (s *schedule) at(k int) time.Duration {
	t := s.phase + time.Duration(k)*s.period
	if s.jitter > 0 {
		u := 2*uniform(s.seed, s.stream, k, saltJitter) - 1
		t += time.Duration(math.Round(u * s.jitter * float64(s.period)))
	}
	return t
}

// index returns the k of the last update at or before t.
func (s *schedule) index(t time.Duration) int {
	k := floorDiv(t-s.phase, s.period)
	if s.jitter == 0 {
		return k
	}
	// t_{k+2} > t and t_{k-1} <= t because the jitter is less than half a period.
	switch {
	case s.at(k+1) <= t:
		return k + 1
	case s.at(k) <= t:
		return k
	}
	return k - 1
}

// times returns the update instants in (t0, t1].
func (s *schedule) times(t0, t1 time.Duration) []time.Duration {
	if t1 <= t0 {
		return nil
	}
	k0, k1 := s.index(t0)+1, s.index(t1)
	out := make([]time.Duration, 0, max(k1-k0+1, 0))
	for k := k0; k <= k1; k++ {
		out = append(out, s.at(k))
	}
	return out
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b time.Duration) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return int(q)
}
