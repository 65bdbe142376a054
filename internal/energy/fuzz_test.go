package energy_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// FuzzPipeline runs the energy pipeline end to end on any input: parse (trace.Read),
// pick the channel, dedupe, invert the sensor model and integrate (energy.Region, with
// the inversion), and the report `gpuwatt energy --json` prints. It asserts a clear error
// (a trace.ParseError naming a line) or finite figures that encode as JSON.
func FuzzPipeline(f *testing.F) {
	for _, p := range []string{"energy_plain.csv", "energy_h100/trace.csv", "energy_k20/trace.csv"} {
		b, err := os.ReadFile(filepath.Join("..", "cli", "testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:4096] // a shorter seed fuzzes faster; the cut line is one more case
		}
		f.Add(b)
	}
	for _, s := range []string{
		"t_s,power_w\n0,100\n0.1,100\n1000,100\n1000.1,300\n",
		"t_s,power_w\n0,100\n0.2,200\n0.1,150\n0.3,4999\n",
		"t_s,power_w\n0,1e308\n",
		"t_s,power_w\n0,-50\n",
		"t_s,power_w\n0,100\n0,100\n0,100\n",
		"t_s,power_w\n9223372036.854775,100\n-9223372036.854775,5000\n",
		"t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,energy.total,,1000,J,\n0.1,0,energy.total,,1030,J,\n0.1,0,power.instant,300,300,W,\n0.2,0,energy.total,,1060,J,\n0.2,0,power.instant,300,300,W,\n",
		"timestamp, index, power.draw [W]\n2024/11/03 01:59:59.900, 0, 100 W\n2024/11/03 01:59:59.900, 1, 250 W\n",
		"t_s,power_w\n0,1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := trace.Read(strings.NewReader(string(in)), "in.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.csv") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		for _, g := range tr.Meta.GPUs {
			name, err := correct.PickChannel(tr, g.Index)
			if err != nil {
				continue
			}
			samples := correct.Channel(tr, g.Index, name)
			if len(samples) == 0 {
				continue
			}
			lo, hi := samples[0].T, samples[len(samples)-1].T
			for _, region := range [][2]int64{{int64(lo), int64(hi)}, {int64(lo), int64(lo + (hi-lo)/2)}, {int64(lo + (hi-lo)/3), int64(hi)}} {
				from, to := region[0], region[1]
				if to <= from {
					continue
				}
				est := energy.Region(tr, g.Index, durationOf(from), durationOf(to), energy.Options{Channel: name, Invert: true})
				finite(t, "estimate", reflect.ValueOf(est))
				if est.Inversion == nil || est.Choice == nil || est.Inversion.Covered == 0 {
					continue
				}
				finite(t, "inversion", reflect.ValueOf(*est.Inversion))
				rep := energy.NewReport("in.csv", tr, g.Index, name, *est.Choice, *est.Inversion, est)
				if _, err := json.Marshal(rep); err != nil {
					t.Fatalf("the report does not encode: %v", err)
				}
			}
		}
	})
}

// finite fails on any NaN or infinite float64 reachable from v.
func finite(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%s = %v", path, f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				finite(t, path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			finite(t, path+"[]", v.Index(i))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			finite(t, path, v.Elem())
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			finite(t, path+"[k]", v.MapIndex(k))
		}
	}
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
