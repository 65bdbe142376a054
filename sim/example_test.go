package sim_test

import (
	"fmt"
	"time"

	"github.com/gpuwatt/gpuwatt/sim"
)

// Work is queued on a GPU's stream and runs one launch after another; the virtual clock
// moves only when the program waits.
func ExampleSystem_Launch() {
	s, err := sim.New(sim.Options{Preset: "h200"})
	if err != nil {
		panic(err)
	}
	s.Launch(time.Second, 400)
	s.Launch(500*time.Millisecond, 600)
	fmt.Println("queued at", s.Now())
	s.Synchronize()
	fmt.Println("done at", s.Now())
	fmt.Printf("true energy %.0f J\n", s.GPU(0).TrueEnergy(0, s.Now()))
	fmt.Printf("then %.0f W: active idle, a context open\n", s.GPU(0).TruePower(s.Now()+time.Second))
	// Output:
	// queued at 0s
	// done at 1.5s
	// true energy 700 J
	// then 121 W: active idle, a context open
}
