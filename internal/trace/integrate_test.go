package trace_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func series(pts ...float64) []trace.Sample {
	var s []trace.Sample
	for i := 0; i < len(pts); i += 2 {
		s = append(s, trace.Sample{T: time.Duration(math.Round(pts[i] * 1e9)), Channel: "p", Value: pts[i+1]})
	}
	return s
}

func sec(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestIntegrate(t *testing.T) {
	// Irregular intervals: 0.1, 0.25, 0.05, 0.6 s.
	irregular := series(0, 100, 0.1, 200, 0.35, 200, 0.4, 50, 1.0, 150)
	dup := series(0, 0, 1, 100, 1, 300, 2, 300)
	for _, tc := range []struct {
		name     string
		s        []trace.Sample
		from, to float64
		want     trace.Integral // Energy, Covered, Coverage, Samples, Max, Min, MaxGap checked
	}{
		{"whole", irregular, 0, 1, trace.Integral{Energy: 15 + 50 + 6.25 + 60, Covered: sec(1), Coverage: 1, Samples: 5, Max: 200, Min: 50, MaxGap: sec(0.6)}},
		{"interpolated ends", irregular, 0.05, 0.5, trace.Integral{
			Energy:  0.05*175 + 0.25*200 + 0.05*125 + 0.1*(50+(50+100.0/6))/2,
			Covered: sec(0.45), Coverage: 1, Samples: 3, Max: 200, Min: 50, MaxGap: sec(0.25)}},
		{"before the data", irregular, -1, 0.5, trace.Integral{
			Energy:  15 + 50 + 6.25 + 0.1*(50+(50+100.0/6))/2,
			Covered: sec(0.5), Coverage: 0.5 / 1.5, Samples: 4, Max: 200, Min: 50, MaxGap: sec(0.25)}},
		{"after the data", irregular, 0.9, 3, trace.Integral{
			Energy:  0.1 * (50 + 100*0.5/0.6 + 150) / 2,
			Covered: sec(0.1), Coverage: 0.1 / 2.1, Samples: 1, Max: 150, Min: 50 + 100*0.5/0.6, MaxGap: sec(0.1)}},
		{"between two samples", irregular, 0.5, 0.6, trace.Integral{
			Energy:  0.1 * ((50 + 100*0.1/0.6) + (50 + 100*0.2/0.6)) / 2,
			Covered: sec(0.1), Coverage: 1, Samples: 0, Max: units.Power(50 + 100*0.2/0.6), Min: units.Power(50 + 100*0.1/0.6), MaxGap: sec(0.1)}},
		{"outside", irregular, 2, 3, trace.Integral{}},
		{"touching the last sample", irregular, 1, 2, trace.Integral{Samples: 1, Max: 150, Min: 150}},
		{"empty region", irregular, 0.5, 0.5, trace.Integral{}},
		{"no samples", nil, 0, 1, trace.Integral{}},
		{"equal times: left", dup, 0, 1, trace.Integral{Energy: 50, Covered: sec(1), Coverage: 1, Samples: 3, Max: 100, Min: 0, MaxGap: sec(1)}},
		{"equal times: right", dup, 1, 2, trace.Integral{Energy: 300, Covered: sec(1), Coverage: 1, Samples: 3, Max: 300, Min: 300, MaxGap: sec(1)}},
		{"equal times: across", dup, 0, 2, trace.Integral{Energy: 350, Covered: sec(2), Coverage: 1, Samples: 4, Max: 300, Min: 0, MaxGap: sec(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := trace.Integrate(tc.s, sec(tc.from), sec(tc.to))
			w := tc.want
			if !near(float64(got.Energy), float64(w.Energy)) || got.Covered != w.Covered || !near(got.Coverage, w.Coverage) ||
				got.Samples != w.Samples || !near(float64(got.Max), float64(w.Max)) || !near(float64(got.Min), float64(w.Min)) || got.MaxGap != w.MaxGap {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
			if wantMean := units.PowerOf(w.Energy, w.Covered); !near(float64(got.Mean), float64(wantMean)) {
				t.Errorf("mean %v, want %v", got.Mean, wantMean)
			}
		})
	}
}

// A constant power integrates exactly, whatever the spacing of the samples.
func TestIntegrateConstant(t *testing.T) {
	var s []trace.Sample
	for i, t := 0, time.Duration(0); i < 1000; i++ {
		s = append(s, trace.Sample{T: t, Value: 300})
		t += time.Duration(1+i%7) * time.Millisecond
	}
	got := trace.Integrate(s, sec(0.0123), sec(2.5))
	if want := 300 * (2.5 - 0.0123); !near(float64(got.Energy), want) {
		t.Errorf("energy %v, want %v J", got.Energy, want)
	}
}

func TestCounter(t *testing.T) {
	rising := series(0, 1000, 1, 1100, 3, 1500, 4, 1600)
	reset := series(0, 1000, 1, 1100, 2, 5, 3, 105)
	jump := series(0, 0, 1, 10, 1, 20, 2, 30)
	for _, tc := range []struct {
		name     string
		s        []trace.Sample
		from, to float64
		energy   float64
		ok       bool
		want     trace.Counter // Covered, Resets, Missing, Inside checked
	}{
		{"inside, interpolated", rising, 0.5, 3.5, 500, true, trace.Counter{Covered: sec(3), Inside: true}},
		{"whole", rising, 0, 4, 600, true, trace.Counter{Covered: sec(4), Inside: true}},
		{"inside one segment", rising, 1.5, 2.5, 200, true, trace.Counter{Covered: sec(1), Inside: true}},
		{"empty region", rising, 2, 2, 0, true, trace.Counter{Inside: true}},
		{"beyond the data", rising, 0.5, 5, 550, false, trace.Counter{Covered: sec(3.5)}},
		{"before the data", rising, -1, 1, 100, false, trace.Counter{Covered: sec(1)}},
		{"outside", rising, 5, 6, 0, false, trace.Counter{}},
		{"reset", reset, 0.5, 2.5, 100, false, trace.Counter{Covered: sec(1), Resets: 1, Missing: sec(1), Inside: true}},
		{"after the reset", reset, 2, 3, 100, true, trace.Counter{Covered: sec(1), Inside: true}},
		{"jump at the end", jump, 0, 1, 20, true, trace.Counter{Covered: sec(1), Inside: true}},
		{"jump at the start", jump, 1, 2, 10, true, trace.Counter{Covered: sec(1), Inside: true}},
		{"no samples", nil, 0, 1, 0, false, trace.Counter{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := trace.CounterDelta(tc.s, sec(tc.from), sec(tc.to))
			if !near(float64(e), tc.energy) || ok != tc.ok {
				t.Errorf("CounterDelta = %v, %v; want %v J, %v", e, ok, tc.energy, tc.ok)
			}
			c := trace.CounterEnergy(tc.s, sec(tc.from), sec(tc.to))
			if c.Covered != tc.want.Covered || c.Resets != tc.want.Resets || c.Missing != tc.want.Missing || c.Inside != tc.want.Inside {
				t.Errorf("CounterEnergy = %+v, want %+v", c, tc.want)
			}
			if tc.to > tc.from && !near(c.Coverage, float64(c.Covered)/float64(sec(tc.to)-sec(tc.from))) {
				t.Errorf("coverage %v", c.Coverage)
			}
		})
	}
}

func TestStats(t *testing.T) {
	s := series(0, 1410e6, 0.1, 1980e6, 0.2, 1755e6, 0.3, 1980e6)
	for _, tc := range []struct {
		name          string
		from, to      float64
		min, max, avg float64
		n             int
	}{
		{"all", -1, 1, 1410e6, 1980e6, (1410e6 + 1980e6 + 1755e6 + 1980e6) / 4, 4},
		{"inclusive ends", 0.1, 0.2, 1755e6, 1980e6, (1980e6 + 1755e6) / 2, 2},
		{"none", 0.15, 0.19, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mn, mx, avg, n := trace.Stats(s, sec(tc.from), sec(tc.to))
			if mn != tc.min || mx != tc.max || !near(avg, tc.avg) || n != tc.n {
				t.Errorf("got %v %v %v %d, want %v %v %v %d", mn, mx, avg, n, tc.min, tc.max, tc.avg, tc.n)
			}
		})
	}
}

func TestDedupe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []trace.Sample
		within  time.Duration
		want    []float64 // times in ms of the kept samples
		dropped int
	}{
		{"stale repeats", series(0, 5, 0.01, 5, 0.02, 5, 0.03, 6, 0.04, 6, 0.05, 5, 0.06, 5), ms(25), []float64{0, 30, 50}, 4},
		{"a value held longer is kept once per window", series(0, 5, 0.01, 5, 0.02, 5, 0.03, 5, 0.04, 5), ms(25), []float64{0, 30}, 3},
		{"window edge is inclusive", series(0, 5, 0.025, 5), ms(25), []float64{0}, 1},
		{"within 0 keeps all", series(0, 5, 0.01, 5), 0, []float64{0, 10}, 0},
		{"empty", nil, ms(25), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]trace.Sample(nil), tc.in...)
			kept, dropped := trace.Dedupe(tc.in, tc.within)
			var got []float64
			for _, s := range kept {
				got = append(got, float64(s.T)/1e6)
			}
			if !reflect.DeepEqual(got, tc.want) || dropped != tc.dropped {
				t.Errorf("kept %v dropped %d, want %v and %d", got, dropped, tc.want, tc.dropped)
			}
			if !reflect.DeepEqual(before, tc.in) {
				t.Error("input modified")
			}
		})
	}
}
