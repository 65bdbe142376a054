package energy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/lsq"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// calTrace is a ring every 20 ms seeing gain g and offset o of a power that alternates
// between 150 and 550 W every 1.3 s, and an exact counter read every dt.
func calTrace(g, o float64, dt time.Duration, resetAt time.Duration) *trace.Trace {
	p := func(t time.Duration) float64 {
		if (t/(1300*time.Millisecond))%2 == 1 {
			return 550
		}
		return 150
	}
	var ss []trace.Sample
	e := 0.0
	for t := time.Duration(0); t <= 60*time.Second; t += time.Millisecond {
		e += p(t) * 1e-3
		if t%(20*time.Millisecond) == 0 {
			ss = append(ss, trace.Sample{T: t, Channel: "power.samples", Value: g*p(t) + o})
		}
		if t%dt == 0 {
			v := 1000 + e
			if resetAt > 0 && t >= resetAt {
				v -= 1000
			}
			ss = append(ss, trace.Sample{T: t, Channel: "energy.total", Value: v})
		}
	}
	return &trace.Trace{Meta: trace.Meta{GPUs: []trace.GPU{{}}, Channels: []trace.Channel{
		{Name: "power.samples", Quantity: trace.QPower, Buffered: true},
		{Name: "energy.total", Quantity: trace.QEnergy, Cumulative: true},
	}}, Samples: ss}
}

func TestFitCalibration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		g, o       float64
		dt, reset  time.Duration
		err        string
		minReading int
	}{
		{"gain and offset", 1.03, -4, 700 * time.Millisecond, 0, "", 80},
		{"ideal", 1, 0, 1100 * time.Millisecond, 0, "", 50},
		{"reset: the longer stretch", 0.98, 2, 700 * time.Millisecond, 15 * time.Second, "", 60},
		{"too few readings", 1, 0, 7 * time.Second, 0, "only 9 readings", 0},
		{"a factor off", 1.5, 0, 700 * time.Millisecond, 0, "factor", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FitCalibration(calTrace(tc.g, tc.o, tc.dt, tc.reset), 0, 0, 0)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// counter = P = (ring - o) / g: gain 1/g, offset -o/g (to within the trapezoids'
			// smearing of each step between 20 ms samples: a few J per reading).
			if math.Abs(c.Gain*tc.g-1) > 5e-3 || math.Abs(c.OffsetW+tc.o/tc.g) > 1.5 || c.Readings < tc.minReading || c.Channel != "power.samples" {
				t.Errorf("%+v, want gain %.4f offset %+.2f", c, 1/tc.g, -tc.o/tc.g)
			}
		})
	}
}

// withInstant adds a power.instant channel (the ring's readings every 100 ms) to calTrace's.
func withInstant(tr *trace.Trace) *trace.Trace {
	for _, s := range tr.Samples {
		if s.Channel == "power.samples" && s.T%(100*time.Millisecond) == 0 {
			tr.Samples = append(tr.Samples, trace.Sample{T: s.T, Channel: "power.instant", Value: s.Value})
		}
	}
	tr.Meta.Channels = append(tr.Meta.Channels, trace.Channel{Name: "power.instant", Quantity: trace.QPower})
	return tr
}

// TestWarningsOneLine: no warning of the estimator spans lines, and a reason the channels
// share (too few counter readings for either) is said once, as on an H200 that printed
// "(power.samples: only 9 readings ...\npower.instant: only 9 readings ...)".
func TestWarningsOneLine(t *testing.T) {
	t.Parallel()
	few := withInstant(calTrace(1, 0, 7*time.Second, 0))
	_, err := FitCalibration(few, 0, 0, 0)
	if want := "only 9 readings of energy.total in the recording (want 10)"; err == nil || err.Error() != want {
		t.Errorf("calibration: %v, want %q", err, want)
	}
	traces := map[string]*trace.Trace{
		"few counter readings, two channels": few,
		"few counter readings, one channel":  calTrace(1, 0, 7*time.Second, 0),
		"a factor off, two channels":         withInstant(calTrace(1.5, 0, 700*time.Millisecond, 0)),
		"calibrated":                         calTrace(1.03, -4, 700*time.Millisecond, 0),
		"no readings":                        {Meta: trace.Meta{GPUs: []trace.GPU{{}}}},
	}
	uncal := 0
	for name, tr := range traces {
		for _, r := range [][2]time.Duration{{3 * time.Second, 4 * time.Second}, {10 * time.Second, 50 * time.Second}, {5 * time.Second, 5 * time.Second}} {
			est := Region(tr, 0, r[0], r[1], Options{})
			for _, w := range est.Warnings {
				if strings.ContainsAny(w.Message, "\n\r") {
					t.Errorf("%s %v: a warning over several lines: %q", name, r, w.Message)
				}
				if w.Code == CodeUncalibrated {
					uncal++
					if strings.Count(w.Message, "only 9 readings") > 1 {
						t.Errorf("%s %v: the reason twice: %q", name, r, w.Message)
					}
				}
			}
		}
	}
	if uncal == 0 {
		t.Error("no case gave the uncalibrated warning: the test does not test it")
	}
}

// TestSpreadByCounts: the intervals' spread from their counts is the one from the
// intervals sorted, bit for bit, on regular, jittered and two-valued stamps, odd and even.
func TestSpreadByCounts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{3, 4, 5, 100, 101, 5000} {
		for kind := 0; kind < 4; kind++ {
			ts := make([]time.Duration, n)
			for i := 1; i < n; i++ {
				d := 100 * time.Millisecond
				switch kind {
				case 1:
					d += time.Duration(r.IntN(50)) * time.Microsecond
				case 2:
					if r.IntN(4) == 0 {
						d = 30 * time.Millisecond
					}
				case 3:
					d += time.Duration(r.IntN(3)) * time.Millisecond
				}
				ts[i] = ts[i-1] + d
			}
			iv := make([]float64, n-1)
			for i := 1; i < n; i++ {
				iv[i-1] = (ts[i] - ts[i-1]).Seconds()
			}
			med := median(iv)
			for i := range iv {
				iv[i] = math.Abs(iv[i] - med)
			}
			want := median(iv)
			got, ok := spreadByCounts(ts)
			if !ok || got != want {
				t.Errorf("n %d, kind %d: %v (%v), want %v", n, kind, got, ok, want)
			}
		}
	}
}

// misreadTrace is a ring every 20 ms at 100 W idle with bursts of 500 W (5–7 s, 10–11 s,
// 30–32 s, 40–41 s, 46–49 s) that it reads right, and one at 20–23 s that it reads 20 % high
// (a load locked to its sampling), with an exact counter read every 4 s.
func misreadTrace() *trace.Trace {
	bursts := [][2]time.Duration{{5, 7}, {10, 11}, {20, 23}, {30, 32}, {40, 41}, {46, 49}}
	p := func(t time.Duration) (truth, ring float64) {
		for _, b := range bursts {
			if t >= b[0]*time.Second && t < b[1]*time.Second {
				if b[0] == 20 {
					return 500, 600
				}
				return 500, 500
			}
		}
		return 100, 100
	}
	var ss []trace.Sample
	e := 0.0
	for t := time.Duration(0); t <= 52*time.Second; t += time.Millisecond {
		tp, rp := p(t)
		e += tp * 1e-3
		if t%(20*time.Millisecond) == 0 {
			ss = append(ss, trace.Sample{T: t, Channel: "power.samples", Value: rp})
		}
		if t%(4*time.Second) == 0 {
			ss = append(ss, trace.Sample{T: t, Channel: "energy.total", Value: 1000 + e})
		}
	}
	return &trace.Trace{Meta: trace.Meta{GPUs: []trace.GPU{{}}, Channels: []trace.Channel{
		{Name: "power.samples", Quantity: trace.QPower, Buffered: true},
		{Name: "energy.total", Quantity: trace.QEnergy, Cumulative: true},
	}}, Samples: ss}
}

// TestCalibrationRobustToMisread: one burst the ring reads 20 % high does not set the
// ring's scale (a least-squares fit over every reading let such loads pull an H200's to
// × 0.964 + 6.7 W, steady loads -2.4 %): the fit weighs its increment out and finds the
// ring's true scale (1, 0 W), where the fit of the levels (solveLevels, as before) is off.
func TestCalibrationRobustToMisread(t *testing.T) {
	t.Parallel()
	tr := misreadTrace()
	c, err := FitCalibration(tr, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Power(500)/500-1) > 2e-3 || math.Abs(c.Power(100)/100-1) > 5e-3 || c.MisreadIncrements < 1 {
		t.Errorf("%s (misread %d): want the ring's own scale, × 1 + 0 W, and the misread burst weighed out", c.String(), c.MisreadIncrements)
	}
	ring, ctr := tr.Readings(0, "power.samples"), tr.Readings(0, "energy.total")
	hint := 0
	lv, err := solveLevels(ctr, func(a, b time.Duration) float64 {
		var e units.Energy
		e, hint = trace.IntegrateEnergy(ring, a, b, hint)
		return e.Joules()
	})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lv.Power(500)/500-1) < 5e-3 {
		t.Errorf("the levels' fit %s is as good: the trace does not test the robust fit", lv.String())
	}
}

// TestAnchorPlacesMisread: the burst the ring reads 20 % high, in a span of the counter's
// readings that is idle around it, takes the counter's figure (anchored), within 1 % of the
// truth and inside its interval, with the channel_off_counter warning; a burst it reads
// right keeps its figure.
func TestAnchorPlacesMisread(t *testing.T) {
	t.Parallel()
	tr := misreadTrace()
	for _, tc := range []struct {
		from, to time.Duration
		truth    float64
		warned   bool
	}{
		{19850 * time.Millisecond, 23150 * time.Millisecond, 3*500 + 0.3*100, true},
		{29850 * time.Millisecond, 32150 * time.Millisecond, 2*500 + 0.3*100, false},
	} {
		est := Region(tr, 0, tc.from, tc.to, Options{})
		if est.Method != CalibratedRing || math.Abs(est.EnergyJ/tc.truth-1) > 0.01 || !(est.LowJ <= tc.truth && tc.truth <= est.HighJ) {
			t.Errorf("[%v, %v]: %s %.1f J [%.1f, %.1f] against the truth %.1f J (%+.2f %%): %s", tc.from, tc.to, est.Method, est.EnergyJ, est.LowJ, est.HighJ, tc.truth, 100*(est.EnergyJ/tc.truth-1), est.Note)
		}
		warned := false
		for _, w := range est.Warnings {
			warned = warned || w.Code == CodeOffCounter
		}
		if warned != tc.warned {
			t.Errorf("[%v, %v]: channel_off_counter warned %v, want %v: %v", tc.from, tc.to, warned, tc.warned, est.Warnings)
		}
	}
}

// solveLevels fits the counter's readings in (one run without a reset) against a channel's
// energy between them (energyOf, called in time order) by least squares over every
// reading's level: the fit a named channel's scale had before FitScale took the robust
// one (on the H200's shapes its standard errors, ±0.16 in gain and ±52 W, carried every
// misread load of the recording into every region's interval: ±9.4 % median). Kept here
// to show that the tests' traces tell the two fits apart.
func solveLevels(in trace.Readings, energyOf func(a, b time.Duration) float64) (Calibration, error) {
	n := in.Len()
	xe, xt, y := make([]float64, n), make([]float64, n), make([]float64, n)
	t0 := in.T[0]
	for i := 1; i < n; i++ {
		xe[i] = xe[i-1] + energyOf(in.T[i-1], in.T[i])
		xt[i] = (in.T[i] - t0).Seconds()
		y[i] = in.V[i] - in.V[0]
	}
	c := Calibration{Readings: n, SpanS: xt[n-1]}
	if xe[n-1] <= 0 || c.SpanS <= 0 {
		return Calibration{}, errors.New("integrates to nothing")
	}
	c.RatioCounterToSamples = y[n-1] / xe[n-1]
	// Least squares y = g xe + o xt + k (internal/lsq). A well-posed fit needs the power to
	// vary: xe must not be (nearly) a line in xt, 1 − r² of the two regressors > 1e-6.
	// (The regressors as columns: lsq.SolveColumns, the figures of Solve on the rows.)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	if col, err := lsq.SolveColumns([][]float64{xt, ones}, xe); err == nil && 1-col.R2 > 1e-6 {
		if f, err := lsq.SolveColumns([][]float64{xe, xt, ones}, y); err == nil {
			g, o := f.Coef[0], f.Coef[1]
			if g > 0.8 && g < 1.25 && math.Abs(o) < 50 {
				c.Gain, c.OffsetW = g, o
				c.Method = "least squares: counter = gain × integral + offset × time (+ constant)"
				c.RMSJ = math.Sqrt(f.RSS / float64(n))
				if f.Cov != nil {
					// The readings' errors carry over from one to the next (each is the
					// counter's value up to a late update), so the fit's standard errors,
					// which assume independent residuals, are widened by the AR(1) factor.
					k := f.SerialInflation()
					c.GainSE, c.OffsetSEW, c.CovGainOffset = k*f.SE[0], k*f.SE[1], k*k*f.Cov[0][1]
					c.SerialInflation = k
				}
				return c, nil
			}
		}
	}
	// A fit that makes no sense (too little variation of power): the plain ratio.
	c.Gain, c.Method = c.RatioCounterToSamples, "ratio of the counter's increase to the integral"
	if !(c.Gain > 0.8 && c.Gain < 1.25) {
		return Calibration{}, fmt.Errorf("differs from %s by a factor %.3g", counterChannel, c.Gain)
	}
	var ss float64
	for i := range y {
		r := y[i] - c.Gain*xe[i]
		ss += r * r
	}
	c.RMSJ = math.Sqrt(ss / float64(n))
	var sxx float64
	for _, x := range xe {
		sxx += x * x
	}
	if n > 1 && sxx > 0 {
		c.GainSE = math.Sqrt(ss / float64(n-1) / sxx)
	}
	return c, nil
}
