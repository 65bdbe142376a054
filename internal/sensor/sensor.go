package sensor

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Reading is one value read from a channel.
type Reading struct {
	// Timed is true when the sensor set T itself (buffered channels know when each of
	// their samples was taken); otherwise the Sampler stamps the reading with the time of
	// the call.
	Timed bool
	T     time.Duration
	Value float64 // in the channel's unit (W, J, Hz, degC, %, pstate, mask)
	// DriverUS is the driver's own timestamp of the value in µs since 1970, 0 if none.
	// A reading with the same value and the same DriverUS as the previous one is a repeat.
	DriverUS int64
}

// Sensor is one channel of one GPU.
type Sensor interface {
	// Channel describes what the sensor reads.
	Channel() trace.Channel
	// Read appends the channel's current reading to dst. A buffered channel appends every
	// sample newer than the newest one it returned before (possibly none).
	Read(dst []Reading) ([]Reading, error)
}

// PeriodHinter is implemented by sensors that know roughly how often they update; the
// Sampler uses the hint until it has learned the period itself.
type PeriodHinter interface {
	PeriodHint() time.Duration
}

// Paced is implemented by sensors that ask to be polled at a fixed interval whatever the
// Sampler's mode: a counter whose every reading is new (RAPL, updated every millisecond)
// would otherwise teach the Sampler its own poll interval as its update period, and be
// polled ever faster.
type Paced interface {
	PollInterval() time.Duration
}

// Pace wraps s so that the Sampler polls it every d (Paced): serve reads the host's RAPL
// counters at its own slow poll, where a per-region figure needs them every 10 ms.
func Pace(s Sensor, d time.Duration) Sensor { return paced{s, d} }

type paced struct {
	Sensor
	d time.Duration
}

func (p paced) PollInterval() time.Duration { return p.d }

// PeriodHint passes the sensor's own hint on: a counter polled slower than it updates is
// stamped by it (half an update period back), not half-way back to the previous poll.
func (p paced) PeriodHint() time.Duration {
	if h, ok := p.Sensor.(PeriodHinter); ok {
		return h.PeriodHint()
	}
	return 0
}

// ProcessCPU is the user + system CPU time of this process so far (0 where the platform
// does not say).
func ProcessCPU() time.Duration { return processCPU() }
