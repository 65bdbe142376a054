package record

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestCloseIsTheSavedFigure: close's final figure of each window is, to the last digit,
// what `gpuwatt energy --region NAME#K` gives on the saved recording (issue 27: one figure),
// for readings and window edges on odd nanoseconds (as a sampler and a program on a real
// clock take them), in an outer window, over 30 recordings. Without trace.RoundToStored in
// finish (close's figures on the sampler's nanoseconds) 160 of the 180 windows differ, in
// the 7th digit (TestPythonPackage's 1e-6 failure: energy_low_j 67.90147729 vs 67.90165468 J).
// The reader's checks (crossCheck) find nothing to drop or name in the saved recording.
//
// Five recordings by default, all 30 where the slow tests run (CI), issue 30 (2.8 -> 0.5 s of
// CPU): the defect it was written for showed on 160 of 180 windows, so the 30 windows of five
// recordings would each have a like chance to show it, and must all agree to the last digit.
func TestCloseIsTheSavedFigure(t *testing.T) {
	t.Parallel()
	seeds := int64(5)
	if testkit.SlowOn() {
		seeds = 30
	}
	for seed := int64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := simtest.Open(t, "h100")
		type win struct {
			name     string
			from, to float64
		}
		var wins []win
		at := 0.5 + rng.Float64()
		for i := 0; i < 5; i++ {
			d := 0.1 + 0.3*rng.Float64()
			from := at + float64(rng.Int63n(1e9))*1e-9
			wins = append(wins, win{"step", from, from + d})
			s.Dev.AddLoad(sec(from), sec(from+d), units.Power(300+300*rng.Float64()))
			at = from + d + 0.05 + 0.2*rng.Float64()
		}
		dir := t.TempDir()
		// Fixed polls 3 ms and an odd number of ns apart: readings on odd nanoseconds, as a
		// sampler on a real clock takes them (the twin's adaptive polls fall on round times).
		ss := serve(t, s, Options{Out: dir, Poll: sensor.Options{Mode: sensor.Fixed, Interval: 3*time.Millisecond + time.Duration(1+2*rng.Intn(499))}})
		ss.read()
		// An outer window over the steps, as a training loop's.
		ss.ask(fmt.Sprintf(`{"v":1,"op":"begin","name":"train","t":%.9f}`, wins[0].from-0.01-0.01*rng.Float64()))
		for _, w := range wins {
			ss.ask(fmt.Sprintf(`{"v":1,"op":"begin","name":%q,"t":%.9f}`, w.name, w.from))
			ss.ask(fmt.Sprintf(`{"v":1,"op":"end","name":%q,"t":%.9f}`, w.name, w.to))
		}
		ss.ask(fmt.Sprintf(`{"v":1,"op":"end","name":"train","t":%.9f}`, at-0.04*rng.Float64()))
		c := ss.ask(`{"v":1,"op":"close"}`)
		if err := <-ss.done; err != nil || !c.OK || len(c.Windows) != len(wins)+1 {
			t.Fatalf("close: %+v %v", c, err)
		}
		if tr, err := trace.LoadCompact(dir); err != nil || len(tr.Warnings) != 0 || tr.Readings(0, trace.ChEnergyTotal).Len() == 0 {
			t.Fatalf("seed %d: the saved recording reads back with %v (warnings, or its counter dropped)", seed, err)
		}
		for _, w := range c.Windows {
			rep, err := energy.Query{Trace: dir, GPU: energy.AnyGPU, Region: fmt.Sprintf("%s#%d", w.Name, w.Instance)}.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			g := w.GPUs[0]
			if rep.EnergyJ != g.EnergyJ || rep.LowJ != g.LowJ || rep.HighJ != g.HighJ || rep.AbsoluteLowJ != g.AbsoluteLowJ || rep.AbsoluteHighJ != g.AbsoluteHighJ {
				t.Errorf("seed %d %s #%d: close gave %.12g J [%.12g, %.12g] abs [%.12g, %.12g] (%s), energy --region on the saved trace %.12g J [%.12g, %.12g] abs [%.12g, %.12g] (%s)",
					seed, w.Name, w.Instance, g.EnergyJ, g.LowJ, g.HighJ, g.AbsoluteLowJ, g.AbsoluteHighJ, g.Method,
					rep.EnergyJ, rep.LowJ, rep.HighJ, rep.AbsoluteLowJ, rep.AbsoluteHighJ, rep.EnergyMethod)
			}
		}
	}
}
