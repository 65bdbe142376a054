package trace_test

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// FuzzReadCompact: a compact read (the columns `gpuwatt energy` reads into) holds what Read
// gives, whatever the input: the same error, or the same metadata, warnings, channels,
// readings of each channel in the same order (rows out of order, driver stamps, units given
// late, nvidia-smi logs), first readings and counts. The seeds (every CSV and nvidia-smi
// input of the package's tests, its errors included) run as a normal test.
func FuzzReadCompact(f *testing.F) {
	for _, s := range csvSeeds(f) {
		f.Add(s)
	}
	f.Add(smiWithUnits)
	f.Add(smiNoUnits)
	f.Add("t_s,gpu,channel,value,driver_us\n0.3,0,ring,5,0\n0.1,0,ring,6,17\n0.2,1,ring,7,0\n0.05,0,p,1,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		full, errF := trace.Read(strings.NewReader(in), "in")
		comp, errC := trace.ReadCompact(strings.NewReader(in), "in")
		if (errF == nil) != (errC == nil) || errF != nil && errF.Error() != errC.Error() {
			t.Fatalf("Read: %v; ReadCompact: %v", errF, errC)
		}
		if errF != nil {
			return
		}
		if full.Compact() || !comp.Compact() || comp.Samples != nil {
			t.Fatalf("Compact(): %v and %v, compact Samples %d", full.Compact(), comp.Compact(), len(comp.Samples))
		}
		if !reflect.DeepEqual(full.Meta, comp.Meta) || !reflect.DeepEqual(full.Warnings, comp.Warnings) {
			t.Fatalf("meta or warnings differ:\n%+v %+v\n%+v %+v", full.Meta, full.Warnings, comp.Meta, comp.Warnings)
		}
		if full.NumReadings() != comp.NumReadings() || full.NumReadings() != len(full.Samples) {
			t.Fatalf("%d and %d readings (%d samples)", full.NumReadings(), comp.NumReadings(), len(full.Samples))
		}
		byKey := func(a, b trace.Key) int { return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Name, b.Name)) }
		kf, kc := full.Keys(), comp.Keys()
		slices.SortFunc(kf, byKey)
		slices.SortFunc(kc, byKey)
		if !slices.Equal(kf, kc) {
			t.Fatalf("channels %v and %v", kf, kc)
		}
		for _, k := range kf {
			if a, b := full.Series(k.GPU, k.Name), comp.Series(k.GPU, k.Name); !slices.Equal(a, b) {
				t.Fatalf("%v: %v and %v", k, a, b)
			}
			a, okA := full.FirstReading(k.GPU)
			b, okB := comp.FirstReading(k.GPU)
			if a != b || okA != okB || !okA {
				t.Fatalf("GPU %d's first reading %v %v and %v %v", k.GPU, a, okA, b, okB)
			}
		}
	})
}
