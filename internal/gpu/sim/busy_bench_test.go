package sim

import (
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

// BenchmarkAddBusyBins: 100 000 milliseconds of busy spans on an h100 twin, each given
// twice (its first part, then refined whole), as loadlevel's SimLoad gives them; its
// allocations per op say the truths are rebuilt in the device's scratch space.
func BenchmarkAddBusyBins(b *testing.B) {
	cfg, err := Preset("h100")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sys, err := Open(clock.NewVirtual(time.Time{}), cfg)
		if err != nil {
			b.Fatal(err)
		}
		d := sys.Device(0)
		for i := range 100000 {
			t0 := time.Duration(i) * time.Millisecond
			d.AddBusyAt(t0, t0+time.Millisecond/2, 0.5, 500)
			d.AddBusyAt(t0, t0+time.Millisecond, 0.6, 500)
		}
	}
}
