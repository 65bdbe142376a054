package trace

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestReadingsAreSamples: the column functions give the Sample functions' figures on the
// same readings.
func TestReadingsAreSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 50, 2000} {
		s := make([]Sample, n)
		tt := time.Duration(0)
		for i := range s {
			tt += time.Duration(r.IntN(30)) * time.Millisecond
			if r.IntN(200) == 0 {
				tt += 5 * time.Second // a gap
			}
			v := float64(r.IntN(5)) // stale repeats
			s[i] = Sample{T: tt, Value: v, DriverUS: int64(i)}
		}
		c := ReadingsOf(s)
		for range 50 {
			a := time.Duration(r.IntN(int(tt/time.Millisecond)+100)-50) * time.Millisecond
			b := a + time.Duration(r.IntN(3000))*time.Millisecond
			if got, want := IntegrateReadings(c, a, b), Integrate(s, a, b); got != want {
				t.Fatalf("Integrate: %+v, want %+v", got, want)
			}
			if got, want := CounterEnergyReadings(c, a, b), CounterEnergy(s, a, b); got != want {
				t.Fatalf("CounterEnergy: %+v, want %+v", got, want)
			}
		}
		kept, dropped := DedupeReadings(c, 4*time.Millisecond)
		ks, ds := Dedupe(s, 4*time.Millisecond)
		if dropped != ds || !reflect.DeepEqual(kept, ReadingsOf(ks)) {
			t.Fatalf("Dedupe: %d dropped, want %d", dropped, ds)
		}
		g, u := GapsReadings(c)
		gs, us := Gaps(s)
		if u != us || !reflect.DeepEqual(g, gs) {
			t.Fatalf("Gaps: %v %v, want %v %v", g, u, gs, us)
		}
	}
}
