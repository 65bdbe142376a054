package gpuwatt_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/sim"
)

// The energy of one call of a program's own GPU work, here a 5 ms step at 600 W on the
// simulated H200 of package sim, far shorter than the 20 ms between the board's power
// readings: MeasureCall repeats it at phases spread over the sensor's cycle until the
// energy per call is known to ±5 %. The check against the twin's truth is exact.
func ExampleMeasureCall() {
	s, err := sim.New(sim.Options{Preset: "h200"})
	if err != nil {
		panic(err)
	}
	step := func(ctx context.Context) error {
		s.Launch(5*time.Millisecond, 600) // queue the GPU work ...
		s.Synchronize()                   // ... and wait for it, as cudaDeviceSynchronize does
		return nil
	}
	res, err := gpuwatt.MeasureCall(context.Background(), step, gpuwatt.CallOptions{Sim: s, Target: 0.05})
	if err != nil {
		panic(err)
	}
	var truth float64
	for i := range res.Starts {
		truth += s.GPU(0).TrueEnergy(res.Starts[i], res.Ends[i]) - s.GPU(0).ActiveIdle()*(res.Ends[i]-res.Starts[i]).Seconds()
	}
	truth /= float64(len(res.Starts))
	a := res.ActiveJoules
	fmt.Printf("%.1f ms per call, %.2f J above active idle (95 %%: ±%.0f %%, %v), %s\n",
		res.Seconds.Value*1000, a.Value, 100*res.RelHalfWidth+0.5, res.Reached, res.Channel)
	fmt.Printf("true %.2f J, inside the interval with the board's gain error: %v\n", truth, a.AbsLow <= truth && truth <= a.AbsHigh)
	// Output:
	// 5.0 ms per call, 2.40 J above active idle (95 %: ±3 %, true), power.samples
	// true 2.39 J, inside the interval with the board's gain error: true
}
