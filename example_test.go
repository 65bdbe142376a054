package gpuwatt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/sim"
)

// The energy of a region of a program's GPU work, here on the simulated H200 of package
// sim, whose true energy is known: a step that keeps the GPU at 500 W for 2 s. The figure
// and its interval are printed rounded; the check against the truth is exact.
func Example() {
	s, err := sim.New(sim.Options{Preset: "h200"})
	if err != nil {
		panic(err)
	}
	rec, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	if err != nil {
		panic(err)
	}
	step := rec.Begin("step")
	s.Launch(2*time.Second, 500) // queue the GPU work ...
	s.Synchronize()              // ... and wait for it, as cudaDeviceSynchronize does
	step.End()
	res, err := rec.Stop()
	if err != nil {
		panic(err)
	}
	r := res.Regions[0]
	e := r.GPUs[0]
	truth := s.GPU(0).TrueEnergy(r.Start, r.End)
	fmt.Printf("%s: %.2f kJ, 95 %% interval ±%.0f %%, from the %s\n", r.Name, e.Joules/1000, 100*(e.High-e.Joules)/e.Joules+0.5, e.Method)
	fmt.Printf("true energy %.0f J, inside the interval with the board's gain error: %v\n", truth, e.AbsLow <= truth && truth <= e.AbsHigh)
	// Output:
	// step: 0.97 kJ, 95 % interval ±3 %, from the counter
	// true energy 1000 J, inside the interval with the board's gain error: true
}

// Regions nest, and names repeat: each Begin is a region of its own.
func ExampleRecorder_Begin() {
	s, _ := sim.New(sim.Options{Preset: "h200"})
	rec, _ := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	train := rec.Begin("train")
	for _, w := range []float64{300, 600, 300} {
		step := rec.Begin("step")
		s.Launch(500*time.Millisecond, w)
		s.Synchronize()
		step.End()
	}
	train.End()
	res, _ := rec.Stop()
	for _, r := range res.Regions {
		e := r.GPUs[0]
		truth := s.GPU(0).TrueEnergy(r.Start, r.End)
		fmt.Printf("%*s%s #%d: %v, true %.0f J, inside: %v\n", 2*r.Depth, "", r.Name, r.Instance, r.Duration(), truth, e.AbsLow <= truth && truth <= e.AbsHigh)
	}
	// Output:
	// train #1: 1.5s, true 600 J, inside: true
	//   step #1: 500ms, true 150 J, inside: true
	//   step #2: 500ms, true 300 J, inside: true
	//   step #3: 500ms, true 150 J, inside: true
}

// A region ended before its GPU work finished (no Synchronize before End) ends when the
// work was queued: its energy is too low, and the result says so.
func ExampleResult_unsynchronised() {
	s, _ := sim.New(sim.Options{Preset: "h200"})
	rec, _ := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	step := rec.Begin("step")
	s.Launch(2*time.Second, 600)
	s.Sleep(10 * time.Millisecond) // the host goes on while the GPU works
	step.End()
	s.Synchronize()
	res, _ := rec.Stop()
	for _, w := range res.Regions[0].GPUs[0].Warnings {
		if w.Code == "unsynchronised_marker" {
			fmt.Println(w.Code)
		}
	}
	// Output:
	// unsynchronised_marker
}

// A recording saved and read back gives the same regions: the trace keeps their marks.
func ExampleLoadTrace() {
	s, _ := sim.New(sim.Options{Preset: "h200"})
	rec, _ := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	r := rec.Begin("copy")
	s.Launch(time.Second, 400)
	s.Synchronize()
	r.End()
	res, _ := rec.Stop()

	dir, _ := os.MkdirTemp("", "gpuwatt-example-")
	defer os.RemoveAll(dir)
	if err := res.Trace.Save(filepath.Join(dir, "run")); err != nil {
		panic(err)
	}
	tr, err := gpuwatt.LoadTrace(filepath.Join(dir, "run"))
	if err != nil {
		panic(err)
	}
	regions, _ := tr.Regions()
	again := regions[0].GPUs[0]
	fmt.Println(tr.Device(), len(tr.Readings(0, "energy.total")) > 0)
	fmt.Printf("%s: %.0f J when recorded, %.0f J read back\n", regions[0].Name, res.Regions[0].GPUs[0].Joules, again.Joules)
	// Output:
	// sim:h200 true
	// copy: 381 J when recorded, 381 J read back
}
