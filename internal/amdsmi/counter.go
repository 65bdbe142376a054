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
// counts are 65.7 kJ: 88 s at 750 W); a decrease from above 2^32 as a wrap of the full 64
// bits. Wraps are counted (Wraps). Safe for concurrent use.
type EnergyCounter struct {
	mu    sync.Mutex
	seen  bool
	last  uint64
	base  float64 // counts added by earlier wraps
	wraps int
}

// Update takes a reading and returns the energy counted since the accumulator's zero, the
// wraps seen so far added in.
func (c *EnergyCounter) Update(e EnergyCount) (units.Energy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen && e.Raw < c.last {
		switch {
		case c.last < 1<<32:
			c.base += 1 << 32
		default:
			c.base += 1 << 64
		}
		c.wraps++
	}
	if !(e.ResolutionUJ > 0) {
		return 0, fmt.Errorf("energy counter resolution %g µJ: %w", e.ResolutionUJ, ErrNoData)
	}
	c.seen, c.last = true, e.Raw
	return units.Energy((c.base + float64(e.Raw)) * float64(e.ResolutionUJ) * 1e-6), nil
}

// Wraps returns how many wraps Update has undone.
func (c *EnergyCounter) Wraps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wraps
}
