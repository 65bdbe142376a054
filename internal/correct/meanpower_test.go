package correct_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestMeanPowerIsEnergys: Series.MeanPower gives, bit for bit, Energy's mean power and data
// coverage, over random regions (inside the readings, across their ends, beyond them,
// across a gap) for a window, a lag and no model.
func TestMeanPowerIsEnergys(t *testing.T) {
	sm := simtest.Open(t, "h100")
	for s := time.Second; s < 5*time.Second; s += 900 * time.Millisecond {
		sm.Dev.AddLoad(s, s+400*time.Millisecond, units.Power(400+25*float64(s/time.Second)))
	}
	tr := sm.Record(t, []string{"power.usage"}, sensor.Options{}, 6*time.Second)
	samples := correct.Channel(tr, 0, "power.usage")
	var gapped []trace.Sample // a 0.8 s gap in the readings
	for _, x := range samples {
		if x.T < 2500*time.Millisecond || x.T > 3300*time.Millisecond {
			gapped = append(gapped, x)
		}
	}
	rng := rand.New(rand.NewPCG(30, 5))
	for _, spec := range []string{"boxcar:window=1s,period=100ms", "boxcar:window=25ms,period=100ms", "rc:tau=300ms", "none"} {
		m, err := sensormodel.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]trace.Sample{samples, gapped} {
			ser := correct.Prepare(in, m, correct.Options{})
			for range 300 {
				from := time.Duration(rng.Float64()*float64(8*time.Second)) - time.Second
				to := from + time.Duration(rng.Float64()*float64(3*time.Second)) - 100*time.Millisecond
				r := ser.Energy(from, to)
				mp, cov := ser.MeanPower(from, to)
				if math.Float64bits(float64(mp)) != math.Float64bits(float64(r.MeanPower)) || math.Float64bits(cov) != math.Float64bits(r.DataCoverage) {
					t.Fatalf("%s [%v, %v]: MeanPower %v W, coverage %v; Energy %v W, %v", spec, from, to, mp, cov, r.MeanPower, r.DataCoverage)
				}
			}
		}
	}
}
