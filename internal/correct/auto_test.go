package correct_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// shapeParams are a model's parameters that a characterisation fits, with their values
// and the intervals that Auto gives them.
func shapeParams(m sensormodel.Model) []struct {
	key string
	v   float64
	iv  sensormodel.Interval
} {
	return []struct {
		key string
		v   float64
		iv  sensormodel.Interval
	}{
		{"period_s", m.Period.Seconds(), m.CI.Period}, {"window_s", m.Window.Seconds(), m.CI.Window},
		{"tau_s", m.Tau.Seconds(), m.CI.Tau}, {"delay_s", m.Delay.Seconds(), m.CI.Delay},
	}
}

// TestAutoIntervals: every model Auto guesses carries an interval for each of its shape's
// parameters that holds the nominal value, so that an energy through it can state the
// model's part of its uncertainty.
func TestAutoIntervals(t *testing.T) {
	boards := []string{"Tesla K20c", "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 3090", "NVIDIA GH200 480GB", "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ""}
	channels := []string{"power.usage", "power.average", "power.instant", "power.samples", "power.memory.average", "power.module.instant"}
	for _, b := range boards {
		for _, ch := range channels {
			m, _ := correct.Auto(ch, b)
			if m.Kind() == sensormodel.None {
				continue
			}
			for _, p := range shapeParams(m) {
				if p.v == 0 && p.key != "delay_s" {
					continue
				}
				if !p.iv.Known() && !(p.key == "period_s" && p.v == 0) {
					t.Errorf("%s on %q (%s): no interval for %s", ch, b, m, p.key)
					continue
				}
				if p.iv.Known() && (p.v < p.iv.Low || p.v > p.iv.High) {
					t.Errorf("%s on %q (%s): %s %g outside its interval [%g, %g]", ch, b, m, p.key, p.v, p.iv.Low, p.iv.High)
				}
			}
		}
	}
}

// TestAutoHoldsMeasured: every parameter of every channel that gpuwatt sensor measured on a
// real board (each sensor.json under results/) lies inside the interval of the built-in
// model that Auto guesses for that board and channel; a parameter the built-in model
// lacks (a window where it is a lag) must be absent from the measurement too, unless its
// interval allows 0.
func TestAutoHoldsMeasured(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../results", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "sensor.json" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("%d sensor.json files under results/: want the H200's runs", len(files))
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prof, err := correct.ParseProfile(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, cm := range prof.Channels {
			if !strings.HasPrefix(name, "power.") {
				continue
			}
			built, _ := correct.Auto(name, prof.Device)
			got := shapeParams(cm.Model)
			for i, p := range shapeParams(built) {
				v := got[i].v
				switch {
				case p.iv.Known() && (v < p.iv.Low || v > p.iv.High):
					t.Errorf("%s: %s %s = %g, outside the built-in %s's interval [%g, %g]", f, name, p.key, v, built, p.iv.Low, p.iv.High)
				case !p.iv.Known() && v != 0:
					t.Errorf("%s: %s has %s = %g; the built-in %s has none", f, name, p.key, v, built)
				}
				checked++
			}
		}
	}
	t.Logf("%d parameters of %d sensor.json files checked", checked, len(files))
}
