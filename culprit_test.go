package gpuwatt_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/sim"
)

// TestUnsyncedCulpritBlamed: region a synchronises its work, region b launches and ends
// without a synchronise (its work runs after its end), right after a or a gap later. The
// check blamed a for b's work and let b go; b is flagged, a is not (issue 29).
func TestUnsyncedCulpritBlamed(t *testing.T) {
	for _, gap := range []time.Duration{0, 50 * time.Millisecond, 500 * time.Millisecond} {
		s, err := sim.New(sim.Options{Preset: "h200", Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
		if err != nil {
			t.Fatal(err)
		}
		s.Sleep(time.Second)
		a := rec.Begin("a")
		s.Launch(2*time.Second, 600)
		s.Synchronize()
		a.End()
		s.Sleep(gap)
		b := rec.Begin("b")
		s.Launch(2*time.Second, 600)
		b.End() // not synchronised: the culprit
		s.Synchronize()
		s.Sleep(2 * time.Second)
		res, err := rec.Stop()
		if err != nil {
			t.Fatal(err)
		}
		flagged := map[string]bool{}
		for _, r := range res.Regions {
			for _, w := range r.GPUs[0].Warnings {
				if w.Code == "unsynchronised_marker" {
					flagged[r.Name] = true
				}
			}
		}
		if flagged["a"] || !flagged["b"] {
			t.Errorf("gap %s: flagged %v, want b alone", gap, flagged)
		}
	}
}
