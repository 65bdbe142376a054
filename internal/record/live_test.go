package record

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestLiveFiguresHoldTruth: the live figure of a window (end's, its ring calibrated to the
// counter from the readings so far: few of them early in a recording) and its final one
// (close's, from all) hold the twin's truth in at least 93 % of short randomised recordings
// like the Python package's test (steps of 0.1 to 0.3 s from 0.2 s into the recording, on
// h100 and h200 twins). Run (GPUWATT_SLOW_TESTS, 600 windows, at 7a16b7a): live 95.3 %,
// final 96.7 % (before 7a16b7a's anchor bound: 96.8 % and 100 %, every live miss above the
// truth); mean error +0.15 and +0.13 half-widths; the two intervals apart in 1 window,
// |live - final| at most 1.07 times the sum of their half-widths,
// which bounds test_monitor.py's check of the two against each other.
func TestLiveFiguresHoldTruth(t *testing.T) {
	t.Parallel()
	n := 40
	if os.Getenv("GPUWATT_SLOW_TESTS") != "" {
		n = 200
	}
	var cases, liveIn, finalIn, apart, disjoint int
	var worst float64         // the largest |live - final| in the sum of their half-widths
	var liveZ, finalZ float64 // mean error in half-widths: a bias shows here
	for seed := int64(1); seed <= int64(n); seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := simtest.Open(t, []string{"h100", "h200"}[seed%2])
		type win struct{ from, to float64 }
		var wins []win
		at := 0.2 + 0.4*rng.Float64()
		for i := 0; i < 3; i++ {
			d := 0.1 + 0.2*rng.Float64()
			wins = append(wins, win{at, at + d})
			s.Dev.AddLoad(sec(at-0.05*rng.Float64()), sec(at+d+0.05*rng.Float64()), units.Power(200+450*rng.Float64()))
			at += d + 0.02 + 0.1*rng.Float64()
		}
		ss := serve(t, s, Options{})
		ss.read()
		var live []Window
		for _, w := range wins {
			ss.ask(fmt.Sprintf(`{"v":1,"op":"begin","name":"step","t":%.9f}`, w.from))
			e := ss.ask(fmt.Sprintf(`{"v":1,"op":"end","name":"step","t":%.9f}`, w.to))
			if !e.OK || e.Window == nil {
				t.Fatalf("end: %+v", e)
			}
			live = append(live, *e.Window)
		}
		c := ss.ask(`{"v":1,"op":"close"}`)
		if err := <-ss.done; err != nil || !c.OK || len(c.Windows) != len(wins) {
			t.Fatalf("close: %+v %v", c, err)
		}
		for i, w := range wins {
			truth := s.Dev.TrueEnergy(sec(w.from), sec(w.to)).Joules()
			lv, fn := live[i].GPUs[0], c.Windows[i].GPUs[0]
			lt, ft := onScale(s, lv, truth, sec(w.to-w.from)), onScale(s, fn, truth, sec(w.to-w.from))
			cases++
			if lv.LowJ <= lt && lt <= lv.HighJ {
				liveIn++
			} else {
				t.Logf("seed %d step #%d: live %.3f J [%.3f, %.3f] (%s) misses %.3f J; final %.3f J [%.3f, %.3f] (%s)", seed, i+1, lv.EnergyJ, lv.LowJ, lv.HighJ, lv.Method, lt, fn.EnergyJ, fn.LowJ, fn.HighJ, fn.Method)
			}
			if fn.LowJ <= ft && ft <= fn.HighJ {
				finalIn++
			} else {
				t.Logf("seed %d step #%d: final %.3f J [%.3f, %.3f] (%s) misses %.3f J", seed, i+1, fn.EnergyJ, fn.LowJ, fn.HighJ, fn.Method, ft)
			}
			liveZ += (lv.EnergyJ - lt) / (lv.HighJ - lv.EnergyJ)
			finalZ += (fn.EnergyJ - ft) / (fn.HighJ - fn.EnergyJ)
			worst = max(worst, math.Abs(lv.EnergyJ-fn.EnergyJ)/(lv.HighJ-lv.EnergyJ+fn.HighJ-fn.EnergyJ))
			if lv.HighJ < fn.LowJ || fn.HighJ < lv.LowJ {
				disjoint++
			}
			if !(lv.LowJ <= fn.EnergyJ && fn.EnergyJ <= lv.HighJ) && !(fn.LowJ <= lv.EnergyJ && lv.EnergyJ <= fn.HighJ) {
				apart++
			}
		}
	}
	t.Logf("%d windows: the live interval holds the truth in %d (%.1f %%), the final one in %d (%.1f %%); neither figure within the other's interval in %d, the intervals apart in %d; mean error in half-widths: live %+.2f, final %+.2f; |live - final| at most %.2f x the sum of their half-widths",
		cases, liveIn, 100*float64(liveIn)/float64(cases), finalIn, 100*float64(finalIn)/float64(cases), apart, disjoint, liveZ/float64(cases), finalZ/float64(cases), worst)
	for _, f := range []struct {
		what string
		in   int
	}{{"live", liveIn}, {"final", finalIn}} {
		if float64(f.in) < 0.93*float64(cases) {
			t.Errorf("the %s intervals hold the truth in %d of %d windows: want at least 93 %%", f.what, f.in, cases)
		}
	}
}
