package sim_test

import (
	"fmt"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/gpu/sim"
)

// A K20 measured as `gpuwatt measure` would: a command runs from 1 s to 3 s on a virtual
// clock; the true power steps at once, the sensor follows with its 0.84 s RC lag.
func ExampleOpen() {
	cfg, err := sim.Preset("k20")
	if err != nil {
		panic(err)
	}
	clk := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		panic(err)
	}
	dev := sys.Device(0)
	dev.CommandStarted(1 * time.Second)
	dev.CommandEnded(3 * time.Second)

	usage, _ := dev.Scheduled("power.usage")
	for _, at := range []time.Duration{500 * time.Millisecond, 1100 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5 * time.Second} {
		clk.AdvanceTo(at)
		r, _ := usage.Read(nil)
		fmt.Printf("t=%-5v true %-7v reads %.1f W\n", at, dev.TruePower(at), r[0].Value)
	}
	fmt.Printf("true energy of the command: %v\n", dev.TrueEnergy(time.Second, 3*time.Second))
	// Output:
	// t=500ms true 25 W    reads 28.0 W
	// t=1.1s  true 158 W   reads 42.0 W
	// t=2s    true 158 W   reads 121.3 W
	// t=3s    true 52.5 W  reads 149.3 W
	// t=5s    true 52.5 W  reads 64.3 W
	// true energy of the command: 316 J
}
