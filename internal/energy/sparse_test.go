package energy

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// sparseGapReadings: readings every 15 ms for 1.5 s (a ramp from 27 to 90 W), then one
// more gap seconds later: FuzzPipeline's input (the last reading 56 days on) in short.
func sparseGapReadings(gap float64) trace.Readings {
	var r trace.Readings
	add := func(t, v float64) {
		r.T = append(r.T, time.Duration(math.Round(t*1e9)))
		r.V = append(r.V, v)
	}
	for i := 0; i <= 100; i++ {
		add(0.015*float64(i), 27+0.63*float64(i)+0.4*math.Sin(float64(i)))
	}
	add(1.5+gap, 27.6)
	return r
}

// TestSparseWorkBoundedByReadings: the sparse component of a region that holds one reading
// at the end of a long gap costs work in proportion to the readings, not to the gap over the
// update period (FuzzPipeline: a reading 56 days after the rest, 3·10⁸ periods, 324 s for one
// region and the fuzzing worker killed as hung, issue 29); where the gap is short enough to
// step period by period, the component is the one that stepping gives.
func TestSparseWorkBoundedByReadings(t *testing.T) {
	t.Parallel()
	for _, m := range []sensormodel.Model{
		{},
		{Window: 15 * time.Millisecond},
		{Tau: 30 * time.Millisecond},
	} {
		for _, gap := range []float64{30, 4866640} {
			r := sparseGapReadings(gap)
			ser := correct.PrepareReadings(r, m, correct.Options{})
			lo, hi := ser.Span()
			from, to := lo+(hi-lo)/3, hi
			res := ser.Energy(from, to)
			T := max(res.Period, time.Millisecond)
			ws := sparseWindows(ser, from-2*T, to+2*T, T)
			if len(ws) > 5*r.Len()+16 {
				t.Errorf("%v, gap %g s: %d periods looked at for %d readings", m, gap, len(ws), r.Len())
			}
			got, ok := sparseComponent(ser, res, from, to, 1)
			if !ok {
				t.Fatalf("%v, gap %g s: %d readings inside and no sparse component", m, gap, res.Samples)
			}
			if gap > 1e3 {
				continue // stepping 3·10⁸ periods is what the test forbids
			}
			want := math.Inf(-1)
			plo, phi := math.Inf(1), math.Inf(-1)
			for a := from - 2*T; a < to+2*T; a += T {
				if x := ser.Energy(a, a+T); x.DataCoverage > 0.5 {
					plo, phi = min(plo, float64(x.MeanPower)), max(phi, float64(x.MeanPower))
				}
			}
			d := (to - from).Seconds()
			want = max(math.Abs(res.Energy.Joules()-plo*d), math.Abs(phi*d-res.Energy.Joules()))
			if math.Abs(got.HalfWidthJ-want) > 1e-9*want {
				t.Errorf("%v, gap %g s: half-width %.9g J, period by period %.9g J", m, gap, got.HalfWidthJ, want)
			}
		}
	}
}

// TestSparseWindowsAtTheEndsOfTime: a period learned from two readings 63 years apart
// (FuzzPipeline: "2000000000,0" and "0,0") puts the grid past a Duration's range; the
// windows stay inside [start, end), in order, without overflow or a panic.
func TestSparseWindowsAtTheEndsOfTime(t *testing.T) {
	t.Parallel()
	r := trace.Readings{T: []time.Duration{0, 2e18}, V: []float64{0, 0}}
	ser := correct.PrepareReadings(r, sensormodel.Model{}, correct.Options{})
	T := time.Duration(2e18)
	for _, c := range [][2]time.Duration{
		{addSat(0, -2*T), addSat(2e18, 2*T)},
		{math.MinInt64, math.MaxInt64},
		{math.MaxInt64 - 3*T, math.MaxInt64},
	} {
		ws := sparseWindows(ser, c[0], c[1], T)
		if len(ws) == 0 || len(ws) > 16 {
			t.Errorf("[%d, %d): %d windows", c[0], c[1], len(ws))
		}
		for i, a := range ws {
			if a < c[0] || a >= c[1] || i > 0 && a <= ws[i-1] {
				t.Errorf("[%d, %d): window %d starts at %d", c[0], c[1], i, a)
			}
		}
	}
	if addSat(math.MaxInt64-1, 5) != math.MaxInt64 || addSat(math.MinInt64+1, -5) != math.MinInt64 || addSat(3, -5) != -2 {
		t.Error("addSat does not saturate")
	}
}
