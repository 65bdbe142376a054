package trace_test

import (
	"fmt"
	"log"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func ExampleLoad() {
	// A directory written by trace.Save (a .csv file or an nvidia-smi log loads the same way).
	tr, err := trace.Load("testdata/example")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Meta.Device, tr.Meta.GPUs[0].Name, len(tr.Samples), "samples")

	start, _ := tr.Mark("kernel.start")
	end, _ := tr.Mark("kernel.end")

	in := trace.Integrate(tr.Series(0, "power.instant"), start, end)
	fmt.Printf("power.instant: %v over %v (coverage %.0f%%), mean %v, %d samples\n",
		in.Energy, in.Covered, 100*in.Coverage, in.Mean, in.Samples)

	e, ok := trace.CounterDelta(tr.Series(0, "energy.total"), start, end)
	fmt.Printf("energy.total: %v (ok %v)\n", e, ok)

	lo, hi, _, _ := trace.Stats(tr.Series(0, "clock.sm"), 0, end)
	fmt.Printf("clock.sm: %.0f to %.0f MHz\n", lo/1e6, hi/1e6)
	// Output:
	// sim:h100-instant NVIDIA H100 80GB HBM3 (sim) 28 samples
	// power.instant: 210 J over 1s (coverage 100%), mean 210 W, 11 samples
	// energy.total: 200 J (ok true)
	// clock.sm: 1410 to 1980 MHz
}
