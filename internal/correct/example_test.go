package correct_test

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// A K20's sensor lags like an RC circuit (tau = 0.84 s): a kernel drawing 150 W for
// 300 ms after 50 W of idle shows up as a slow rise. Inverting the lag gives the energy
// back; integrating the readings as they are misses most of it.
func ExampleEnergy() {
	tau := 0.84
	var s []trace.Sample
	for i := 0; i <= 200; i++ { // a reading every 15 ms for 3 s
		t := float64(i) * 0.015
		y := 50.0
		switch {
		case t >= 1 && t < 1.3:
			y = 150 - 100*math.Exp(-(t-1)/tau)
		case t >= 1.3:
			top := 150 - 100*math.Exp(-0.3/tau)
			y = 50 + (top-50)*math.Exp(-(t-1.3)/tau)
		}
		s = append(s, trace.Sample{T: time.Duration(t * 1e9), Value: y})
	}
	m, _ := sensormodel.Parse("rc:tau=0.84s")
	r := correct.Energy(s, time.Second, 1300*time.Millisecond, m, correct.Options{Idle: 50, IdleSet: true})
	fmt.Printf("true 45.0 J, corrected %.1f J, naive %.1f J, above idle %.1f J\n", r.Energy.Joules(), r.EnergyRaw.Joules(), r.EnergyActive.Joules())
	// Output: true 45.0 J, corrected 45.0 J, naive 19.8 J, above idle 30.0 J
}

func ExampleMethod() {
	for _, spec := range []string{"rc:tau=0.84s", "boxcar:window=25ms,period=100ms", "boxcar:window=1s", "rc:tau=0.84"} {
		m, err := sensormodel.Parse(spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		// A model without a period gets the one Energy learns from the readings.
		fmt.Printf("%s: %s\n", m, correct.Method(m, 100*time.Millisecond))
	}
	// Output:
	// rc:tau=840ms: RC lag tau=840 ms inverted: ∫P = ∫reading + tau·(reading(b) − reading(a)), the ends fitted to the lag's step response
	// boxcar:window=25ms,period=100ms: boxcar W=25 ms every T=100 ms: each reading held over its own period, centred on its window (coverage 25 %)
	// boxcar:window=1s: boxcar W=1 s deconvolved: E[a,b] = W·(r(b) − r(a)) + E[a−W, b−W], until the readings are steady
	// sensor model "rc:tau=0.84": tau=0.84: want a duration with a unit (0.84s or 0.84ms), got a bare number
}
