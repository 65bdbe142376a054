package correct_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// boxcar1s is the readings of a 1 s moving average every 100 ms of s, from t0 to t1, with
// a deterministic noise of amplitude noise (W), each published value repeated every
// `repeat` seconds until the next update (0: no repeats), as a poller faster than the
// sensor records it in a foreign CSV.
func boxcar1s(s steps, t0, t1, noise, repeat float64) []trace.Sample {
	var out []trace.Sample
	for i := 0; ; i++ {
		x := t0 + float64(i)*0.1
		if x > t1 {
			return out
		}
		v := s.energy(x-1, x) + noise*math.Sin(float64(i)*2.7)
		v = math.Round(v*1e3) / 1e3
		out = append(out, trace.Sample{T: sec(x), Channel: "power.usage", Value: v})
		for r := repeat; repeat > 0 && r < 0.1-1e-9; r += repeat {
			out = append(out, trace.Sample{T: sec(math.Round((x+r)*1e6) / 1e6), Channel: "power.usage", Value: v})
		}
	}
}

var model1s = sensormodel.Model{Window: time.Second, Period: 100 * time.Millisecond}

// TestDenseNoFalseUnsteadyStart: a trace that starts at idle, steady before its first
// reading, with a load 0.15 s later, gives no "the power was changing" warning where the
// deconvolution reaches its start; nor does one whose readings are stale repeats (their
// zero differences once made the noise estimate 0, so the idle's noise looked like a
// change). A trace that starts while the readings ramp (a load ended just before) does.
func TestDenseNoFalseUnsteadyStart(t *testing.T) {
	const note = "where the power was changing"
	load := steps{p0: 120, t: []float64{0.15, 1.05}, p: []float64{400, 120}}
	for _, tc := range []struct {
		name   string
		s      []trace.Sample
		dedupe time.Duration
		a, b   float64
		warn   bool
	}{
		{"starts at idle, load soon after", boxcar1s(load, 0, 6, 0, 0), 0, 1.05, 1.95, false},
		{"starts at idle with stale repeats", boxcar1s(load, 0, 6, 0.4, 0.001), 0, 1.05, 1.95, false},
		{"starts while a load's average ramps down", boxcar1s(steps{p0: 400, t: []float64{-0.5, 0.15, 1.05}, p: []float64{120, 400, 120}}, 0, 6, 0, 0), 0, 1.05, 1.95, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := correct.Energy(tc.s, sec(tc.a), sec(tc.b), model1s, correct.Options{Dedupe: tc.dedupe})
			if got := hasWarning(r, note); got != tc.warn {
				t.Errorf("warned %v, want %v: %v", got, tc.warn, r.Warnings)
			}
		})
	}
}
