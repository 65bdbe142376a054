package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// unitSuffixes are the JSON key suffixes that promise a unit (DESIGN.md, convention 11).
var unitSuffixes = []string{"_s", "_w", "_j", "_pj"}

// No field of any verb's result reaches JSON as a time.Duration (nanoseconds) or a typed
// unit under a key whose suffix promises another unit, unless its type writes its own
// JSON (then TestIntervalsSeconds and its kind check what it writes).
func TestResultKeysHoldTheirUnit(t *testing.T) {
	t.Parallel()
	roots := []any{
		characterize.Result{}, loadlevel.Result{}, micro.Result{}, archline.Result{},
		profile.Result{}, sensorchar.Result{}, energy.Report{}, measure.Summary{},
	}
	marshaler := reflect.TypeFor[json.Marshaler]()
	duration := reflect.TypeFor[time.Duration]()
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string)
	check := func(ft reflect.Type, key, path string) {
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		for _, suf := range unitSuffixes {
			if !strings.HasSuffix(key, suf) || strings.HasSuffix(key, "_per"+suf) {
				continue
			}
			if ft == duration {
				t.Errorf("%s (%q) is a time.Duration: JSON writes nanoseconds under a key in %s", path, key, suf)
			}
			if ft.PkgPath() == reflect.TypeFor[units.Power]().PkgPath() {
				want := map[string]string{"_s": "", "_w": "Power", "_j": "Energy", "_pj": ""}[suf]
				if ft.Name() != want {
					t.Errorf("%s (%q) is a units.%s, not the key's unit", path, key, ft.Name())
				}
			}
		}
	}
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		if typ.Implements(marshaler) || reflect.PointerTo(typ).Implements(marshaler) {
			return
		}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			key, _, _ := strings.Cut(tag, ",")
			if key == "" {
				key = f.Name
			}
			if f.Anonymous && tag == "" {
				walk(f.Type, path+"."+f.Name)
				continue
			}
			check(f.Type, key, typ.Name()+"."+f.Name)
			walk(f.Type, path+"."+f.Name)
		}
	}
	for _, r := range roots {
		walk(reflect.TypeOf(r), reflect.TypeOf(r).String())
	}
	if len(seen) < 20 {
		t.Errorf("walked only %d struct types: the walk is broken", len(seen))
	}
}

// loadlevel's intervals are written in seconds (they were nanoseconds under _s keys):
// every _s value of a report with the quick intervals is a plausible number of seconds.
func TestIntervalsSeconds(t *testing.T) {
	t.Parallel()
	rep := loadlevel.Result{Schema: loadlevel.ReportSchema, Intervals: loadlevel.QuickIntervals()}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				walk(y, k)
			}
		case []any:
			for _, y := range x {
				walk(y, key)
			}
		case float64:
			if strings.HasSuffix(key, "_s") && !strings.HasSuffix(key, "_per_s") {
				n++
				if x >= 1e6 || x < 0 {
					t.Errorf("%s = %g: not a plausible number of seconds", key, x)
				}
			}
		}
	}
	walk(m, "")
	if n != 5 {
		t.Errorf("%d _s keys, want the 5 intervals: %s", n, b)
	}
	if got := m["intervals"].(map[string]any)["record_s"]; got != 6.0 {
		t.Errorf("record_s = %v, want 6", got)
	}
}

// Results saved before the intervals were in seconds still load, with their intervals right.
func TestOldResultsLoad(t *testing.T) {
	t.Parallel()
	r, err := loadResults("../../results/nvidia-h200/2026-11-21-characterize-quick/quick")
	if err != nil {
		t.Fatal(err)
	}
	if r.Loadlevel == nil {
		t.Fatal("no loadlevel stage in the old results")
	}
	if got := r.Loadlevel.Intervals.Record; got != 3*time.Second {
		t.Errorf("record interval %v, want 3s", got)
	}
}
