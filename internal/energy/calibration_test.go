package energy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
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
