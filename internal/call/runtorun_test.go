package call

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// driftingCall is a twin call whose power wanders with time as a board's efficiency does
// with its temperature: watts × (1 + amp·sin(2π t/period + phase)), t on the twin's clock,
// each of its launches at the power of its start (the twin's truth has it exactly).
type driftingCall struct {
	d          time.Duration
	watts, amp float64
	period     time.Duration
	phase      float64
}

func (c driftingCall) power(t time.Duration) units.Power {
	return units.Power(c.watts * (1 + c.amp*math.Sin(2*math.Pi*t.Seconds()/c.period.Seconds()+c.phase)))
}

func (c driftingCall) fn(sm simtest.Sim) Func {
	return func(ctx context.Context, n int) (Span, error) {
		s := sm.Clock.Now()
		at := s
		for range n {
			sm.Dev.AddLoad(at, at+c.d, c.power(at))
			at += c.d
		}
		sm.Clock.AdvanceTo(at)
		return Span{Start: s, End: at}, nil
	}
}

// replayTruth runs the calls of res again on the twin after a pause, with the run's own
// waits between them (cycled) for about seconds, and gives the twin's true energy per call
// above its active idle over that replay: the reference a separate run measures.
func replayTruth(t *testing.T, sm simtest.Sim, fn Func, res *Result, pause, seconds time.Duration) float64 {
	t.Helper()
	sm.Clock.Advance(pause)
	var waits []time.Duration
	for i := 1; i < len(res.PerCall); i++ {
		w := sec(res.PerCall[i].StartS) - sec(res.PerCall[i-1].EndS)
		if w < 2*time.Second { // not across an idle gap
			waits = append(waits, w)
		}
	}
	rep := &Result{Batch: res.Batch, Scale: res.Scale, CounterScale: res.CounterScale}
	t0 := sm.Clock.Now()
	for i := 0; sm.Clock.Now()-t0 < seconds; i++ {
		sm.Clock.Advance(waits[i%len(waits)])
		sp, err := fn(context.Background(), res.Batch)
		if err != nil {
			t.Fatal(err)
		}
		rep.PerCall = append(rep.PerCall, CallFigure{StartS: sp.Start.Seconds(), EndS: sp.End.Seconds(), Method: "replay"})
	}
	sm.Clock.Advance(time.Second)
	active, _ := truthOf(t, sm, rep)
	return active
}

// TestRunToRun: on an h200 twin whose calls' power wanders by ±0.5-2 % over 40-200 s (a
// board warming and cooling), 5-50 ms calls in repetitions of ~45 ms, 80 each (as
// bench/gpu/call_gemm.sh runs them), measured as a user would: the reference, the same
// calls with the same waits run again 2 s after the run for 10 s (the twin's truth over
// that replay), lies inside the 95 % interval more often with the run-to-run part than
// without (23 against 12 of 30: not the 93 % the issue asks for). On the same twin with no
// wander the part stays small (it widens the median interval by at most 5 %) and the
// reference lies inside in at least 93 % of the cases.
func TestRunToRun(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	sp := fitted(t, "h200")
	for _, wander := range []bool{true, false} {
		var in, inNo, n int
		var share []float64
		for k := range 30 {
			rng := rand.New(rand.NewPCG(uint64(k), 3401))
			d := time.Duration(math.Exp(math.Log(0.005)+rng.Float64()*math.Log(10)) * float64(time.Second)).Round(time.Microsecond)
			c := driftingCall{d: d, watts: 300 + 400*rng.Float64(), period: time.Duration((40 + 160*rng.Float64()) * float64(time.Second)), phase: 2 * math.Pi * rng.Float64()}
			if wander {
				c.amp = 0.005 + 0.015*rng.Float64()
			}
			batch := max(1, int(math.Round(float64(45*time.Millisecond)/float64(d))))
			cfg := simtest.Preset(t, "h200")
			cfg.Seed += uint64(700 + k)
			sm := simtest.OpenConfig(t, cfg)
			sm.Dev.OpenContext(0)
			fn := c.fn(sm)
			res, err := Run(context.Background(), Env{Clock: sm.Clock, System: sm.Sys}, fn, Options{Calls: 80, Batch: batch, Sensor: &sp, Seed: uint64(k) + 1})
			if err != nil {
				t.Fatal(err)
			}
			ref := replayTruth(t, sm, fn, res, 2*time.Second, 10*time.Second)
			n++
			ok := res.ActiveJ.Low <= ref && ref <= res.ActiveJ.High
			if ok {
				in++
			}
			rr, hw := 0.0, res.ActiveJ.HalfWidth()
			if res.RunToRun != nil {
				rr = res.RunToRun.HalfWidthJ
			}
			if math.Abs(res.ActiveJ.Value-ref) <= math.Sqrt(max(0, hw*hw-rr*rr)) {
				inNo++
			}
			share = append(share, hw/math.Sqrt(max(1e-300, hw*hw-rr*rr))-1) // how much wider the part makes the interval
			note := ""
			if res.RunToRun != nil {
				note = res.RunToRun.Note
			}
			t.Logf("wander %v case %d: %v × %d, %.0f W ±%.2f %% over %.0f s: %.5g J ±%.2f %% (run to run ±%.3g J) on %s; reference %.5g J (%+.2f %%) inside %v; %s",
				wander, k, d, batch, c.watts, 100*c.amp, c.period.Seconds(), res.ActiveJ.Value, 100*res.RelHalfWidth, rr, res.Scale[:min(12, len(res.Scale))], ref, 100*(res.ActiveJ.Value/ref-1), ok, note)
		}
		slices.Sort(share)
		t.Logf("wander %v: the reference inside %d of %d intervals (%d without the run-to-run part); the part widens the interval by %.1f %% (median), %.1f %% (90th percentile)", wander, in, n, inNo, 100*share[n/2], 100*share[n*9/10])
		switch {
		case !wander && float64(in) < 0.93*float64(n):
			t.Errorf("no wander: the reference inside %d of %d intervals, want at least 93 %%", in, n)
		case !wander && share[n/2] > 0.05:
			t.Errorf("no wander: the run-to-run part widens the interval by %.1f %% (median), want at most 5 %%", 100*share[n/2])
		case wander && in < inNo+8:
			// Not the 93 % issue 34 asks for (23 of 30): a run cannot measure its
			// own drift much better than its own interval, and a wander that curves within
			// the run moves a run after it further than the trend says. docs/call.md, "Not
			// done yet".
			t.Errorf("wander: the reference inside %d of %d intervals, %d without the run-to-run part: the part should bring in at least 8 more", in, n, inNo)
		}
	}
}

// TestRunToRunFloor: the floor as the H200's was made, on the wandering twin of TestRunToRun:
// 15 other boards (other seeds and wanders), each measured and then replayed (the twin's
// truth over the replay: a separate run's reference), give the spread of the figure against
// a separate run beyond the figure's own interval, and the floor 1.96 × that; with it
// (RunToRunFloor), the 30 runs of TestRunToRun hold their separate reference in at least
// 93 % of the cases.
func TestRunToRunFloor(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	sp := fitted(t, "h200")
	measure := func(k int, seed uint64, floor float64) (*Result, float64) {
		rng := rand.New(rand.NewPCG(seed, 3401))
		d := time.Duration(math.Exp(math.Log(0.005)+rng.Float64()*math.Log(10)) * float64(time.Second)).Round(time.Microsecond)
		c := driftingCall{d: d, watts: 300 + 400*rng.Float64(), period: time.Duration((40 + 160*rng.Float64()) * float64(time.Second)), phase: 2 * math.Pi * rng.Float64()}
		c.amp = 0.005 + 0.015*rng.Float64()
		batch := max(1, int(math.Round(float64(45*time.Millisecond)/float64(d))))
		cfg := simtest.Preset(t, "h200")
		cfg.Seed += uint64(700 + k)
		sm := simtest.OpenConfig(t, cfg)
		sm.Dev.OpenContext(0)
		fn := c.fn(sm)
		o := Options{Calls: 80, Batch: batch, Sensor: &sp, Seed: uint64(k) + 1, RunToRunFloor: floor}
		if floor == 0 {
			o.RunToRunFloor = -1
		}
		res, err := Run(context.Background(), Env{Clock: sm.Clock, System: sm.Sys}, fn, o)
		if err != nil {
			t.Fatal(err)
		}
		return res, replayTruth(t, sm, fn, res, 2*time.Second, 10*time.Second)
	}
	// own is a result's half-width without its run-to-run part
	own := func(r *Result) float64 {
		hw, rr := r.ActiveJ.HalfWidth(), 0.0
		if r.RunToRun != nil {
			rr = r.RunToRun.HalfWidthJ
		}
		return math.Sqrt(max(0, hw*hw-rr*rr))
	}
	var ex float64
	const pairs = 15
	for k := range pairs {
		a, ref := measure(100+k, uint64(100+k), 0)
		x := a.ActiveJ.Value
		ex += ((x-ref)*(x-ref) - own(a)*own(a)/(1.96*1.96)) / (ref * ref)
	}
	floor := 1.96 * math.Sqrt(max(0, ex/pairs))
	in := 0
	for k := range 30 {
		res, ref := measure(k, uint64(k), floor)
		ok := res.ActiveJ.Low <= ref && ref <= res.ActiveJ.High
		if ok {
			in++
		}
		t.Logf("case %d: %.5g J ±%.2f %%, reference %.5g J (%+.2f %%) inside %v", k, res.ActiveJ.Value, 100*res.RelHalfWidth, ref, 100*(res.ActiveJ.Value/ref-1), ok)
	}
	t.Logf("the floor from %d boards' runs against their replays: ±%.2f %%; with it the reference inside %d of 30", pairs, 100*floor, in)
	if float64(in) < 0.93*30 {
		t.Errorf("with the floor ±%.2f %% the reference inside %d of 30, want at least 93 %%", 100*floor, in)
	}
}
