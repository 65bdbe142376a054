package amdsmi

import (
	"fmt"
	"sync"

	"github.com/gpuwatt/gpuwatt/internal/units"
)

// EnergyCounter turns the raw readings of an energy accumulator into a monotonic energy,
// undoing wraps. The accumulator is 64 bits wide in amdsmi's API, but the firmware's
// counter behind it may be narrower: a raw value below the previous one, where the previous
// one was below 2^32, is taken as a wrap of a 32-bit counter (at 15.3 µJ a count, 2^32
// counts are 65.7 kJ: 88 s at 750 W). A decrease from 2^32 or more cannot be a wrap (2^64
// counts are 282 TJ): it is a reset of the counter (the driver reloaded, the GPU reset),
// taken as a restart from 0, so the energy goes on from where it was. Wraps and resets are
// counted (Wraps, Resets). Safe for concurrent use.
type EnergyCounter struct {
	mu     sync.Mutex
	seen   bool
	last   uint64
	base   float64 // counts added by earlier wraps and resets
	wraps  int
	resets int
}

// Update takes a reading and returns the energy counted since the accumulator's zero, the
// wraps seen so far added in.
func (c *EnergyCounter) Update(e EnergyCount) (units.Energy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen && e.Raw < c.last {
		if c.last < 1<<32 {
			c.base += 1 << 32
			c.wraps++
		} else {
			c.base += float64(c.last)
			c.resets++
		}
	}
	if !(e.ResolutionUJ > 0) {
		return 0, fmt.Errorf("energy counter resolution %g µJ: %w", e.ResolutionUJ, ErrNoData)
	}
	c.seen, c.last = true, e.Raw
	return units.Energy((c.base + float64(e.Raw)) * float64(e.ResolutionUJ) * 1e-6), nil
}

// Resets returns how many resets Update has seen.
func (c *EnergyCounter) Resets() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resets
}

// Wraps returns how many wraps Update has undone.
func (c *EnergyCounter) Wraps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wraps
}
