package call

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// recordedCall is one item of a recorded bench/gpu/call_gemm.sh run: gpuwatt's call.json and
// the recording.
type recordedCall struct {
	name string
	res  Result
	tr   *trace.Trace
}

func loadRecordedCalls(t *testing.T, dir string) []recordedCall {
	t.Helper()
	items, err := filepath.Glob(filepath.Join(dir, "*", "call.json"))
	if err != nil || len(items) == 0 {
		t.Fatalf("%s: no item with a call.json (%v)", dir, err)
	}
	var out []recordedCall
	for _, cj := range items {
		d := filepath.Dir(cj)
		rc := recordedCall{name: filepath.Base(d)}
		b, err := os.ReadFile(cj)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rc.res); err != nil {
			t.Fatalf("%s: %v", cj, err)
		}
		if rc.tr, err = trace.Load(d); err != nil {
			t.Fatal(err)
		}
		out = append(out, rc)
	}
	return out
}

// again analyses a recorded item again from its trace and its repetitions' spans, with the
// options the run had.
func (rc recordedCall) again(t *testing.T) *Result {
	t.Helper()
	sp, err := correct.ParseSpec(rc.res.Model)
	if err != nil {
		t.Fatalf("%s: model %q: %v", rc.name, rc.res.Model, err)
	}
	var spans []Span
	for _, c := range rc.res.PerCall {
		spans = append(spans, Span{Start: time.Duration(math.Round(c.StartS * 1e9)), End: time.Duration(math.Round(c.EndS * 1e9))})
	}
	post := rc.res.WindowPost()
	period := time.Duration(math.Round((rc.res.WaitS[1] - rc.res.WaitS[0]) * 1e9)) // the plan's waits: gap to gap + period
	return Analyse(rc.tr, spans, AnalyseOptions{Batch: rc.res.Batch, Channel: rc.res.Channel, Sensor: &sp, Target: rc.res.Target,
		Settle: post, Pre: rc.res.WindowPre(), Tail: post + period,
		IdleBefore: [2]time.Duration{sec(rc.res.IdleBeforeS[0]), sec(rc.res.IdleBeforeS[1])},
		IdleAfter:  [2]time.Duration{sec(rc.res.IdleAfterS[0]), sec(rc.res.IdleAfterS[1])}, IdleStale: sec(rc.res.IdleStaleS),
		IdleGaps: idleGapsOf(rc.res.IdleGapsS), RunToRunFloor: rc.res.RunToRunFloor})
}

// checkAt is Run's check at idle gap k (1-based) of a recorded run: the calls before it,
// the gap as the idle after them, the gaps before it, with floor and target.
func (rc recordedCall) checkAt(t *testing.T, gaps [][2]time.Duration, k int, floor, target float64) *Result {
	t.Helper()
	sp, err := correct.ParseSpec(rc.res.Model)
	if err != nil {
		t.Fatal(err)
	}
	var spans []Span
	for _, c := range rc.res.PerCall {
		if s := sec(c.StartS); s < gaps[k-1][0] {
			spans = append(spans, Span{Start: s, End: sec(c.EndS)})
		}
	}
	post := rc.res.WindowPost()
	period := time.Duration(math.Round((rc.res.WaitS[1] - rc.res.WaitS[0]) * 1e9))
	return Analyse(rc.tr, spans, AnalyseOptions{Batch: rc.res.Batch, Channel: rc.res.Channel, Sensor: &sp, Target: target,
		Settle: post, Pre: rc.res.WindowPre(), Tail: post + period,
		IdleBefore: [2]time.Duration{sec(rc.res.IdleBeforeS[0]), sec(rc.res.IdleBeforeS[1])},
		IdleAfter:  gaps[k-1], IdleGaps: gaps[:k-1], IdleStale: sec(rc.res.IdleStaleS), RunToRunFloor: floor})
}

// TestH200CallRun2: bench/gpu/call_gemm.sh on an H200 (results/nvidia-h200/2026-11-28-call-2,
// GPU-b6cd4b9a, five bf16 GEMMs of 0.18-51 ms per call in repetitions of ~45 ms, 123-128
// repetitions each in 30 s): Analyse on the recorded trace and spans gives call.json's figures
// again, the calls left out for a missing ring reading included, and the intervals are the
// ±1.6-2.8 % that docs/call.md states. (Against the references: bench/gpu/test_call_table.py.)
func TestH200CallRun2(t *testing.T) {
	t.Parallel()
	runs := loadRecordedCalls(t, filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-2"))
	if len(runs) != 5 {
		t.Fatalf("%d items, want 5", len(runs))
	}
	for _, rc := range runs {
		a := rc.again(t)
		near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }
		if !near(a.ActiveJ.Value, rc.res.ActiveJ.Value) || !near(a.ActiveJ.Low, rc.res.ActiveJ.Low) || !near(a.ActiveJ.High, rc.res.ActiveJ.High) ||
			!near(a.EnergyJ.Value, rc.res.EnergyJ.Value) || a.LeftOut != rc.res.LeftOut || a.Strata != rc.res.Strata {
			t.Errorf("%s: again %+v (left out %d, strata %d), call.json %+v (left out %d, strata %d)", rc.name, a.ActiveJ, a.LeftOut, a.Strata, rc.res.ActiveJ, rc.res.LeftOut, rc.res.Strata)
		}
		if rel := a.ActiveJ.Rel(); rel < 0.015 || rel > 0.028 || a.Calls < 120 || a.LeftOut < 50 {
			t.Errorf("%s: ±%.2f %% over %d repetitions (%d left out): docs/call.md says ±1.6-2.8 %%, 123-128, 51-69", rc.name, 100*rel, a.Calls, a.LeftOut)
		}
		t.Logf("%s: %.5g J ±%.2f %% per call above active idle, %d repetitions of %d, %d left out", rc.name, a.ActiveJ.Value, 100*a.ActiveJ.Rel(), a.Calls, a.Batch, a.LeftOut)
	}
}

// replayReference is the reference of a recorded item (bench/gpu/call_reference.py's
// replay_reference in reference.json: the calls again with gpuwatt's waits, the counter
// alone, E/N over >= 10 s above the idle before and after): per call above active idle,
// its 95 % half-width.
func replayReference(t *testing.T, dir string) (float64, float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Replay struct {
			Active float64 `json:"active_per_call_j"`
			HW     float64 `json:"active_half_width_j"`
		} `json:"replay_reference"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Replay.Active <= 0 {
		t.Fatalf("%s: no replay reference", dir)
	}
	return r.Replay.Active, r.Replay.HW
}

// TestH200CallRun3: bench/gpu/call_gemm.sh on an H200 at 11:41 (results/nvidia-h200/
// 2026-11-28-call-3, GPU-fb7e762d, five bf16 GEMMs of 0.17-49 ms per call and one attention
// op, 75-131 repetitions of ~45 ms in 18-30 s, binary 77380c6: the gaps between the calls as
// the idle, the ring's own scale). Analysed again as gpuwatt now does: the idle from the 2 s
// before the calls and the 1.6 s after them (0.4 s after the last: past the dip), each
// call's window running to the next's; that binary read the counter every ~0.27 s there
// (not every 20 ms), so each reading there may be a whole 100 ms update late, which leaves
// the counter's figure over the run at ±2.2-3.1 %, wider than the ±2 % taken: the figures
// stay on the ring's scale. Against the replay reference (the counter alone, the same calls
// with the same waits): the new idle takes 0.5-3.4 points off the old figures'
// +0.3..+6.7 %; what is left (+0.6..+3.6 %) is the ring reading the calls above the counter.
func TestH200CallRun3(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-3")
	runs := loadRecordedCalls(t, dir)
	if len(runs) != 6 {
		t.Fatalf("%d items, want 6", len(runs))
	}
	for _, rc := range runs {
		// as run: call.json again from the trace (the gaps' idle: no stretches recorded)
		a := rc.again(t)
		if math.Abs(a.ActiveJ.Value/rc.res.ActiveJ.Value-1) > 1e-9 || a.LeftOut != rc.res.LeftOut {
			t.Errorf("%s: again %.6g J (left out %d), call.json %.6g J (left out %d)", rc.name, a.ActiveJ.Value, a.LeftOut, rc.res.ActiveJ.Value, rc.res.LeftOut)
		}
		// now: the idle stretches of that run (the 2 s lead, the tail 0.4 s on)
		pc := rc.res.PerCall
		ctr := rc.tr.Readings(0, trace.ChEnergyTotal)
		first, last := sec(pc[0].StartS), sec(pc[len(pc)-1].EndS)
		rc.res.IdleBeforeS = [2]float64{ctr.T[0].Seconds() + 0.2, (first - 250*time.Millisecond).Seconds()}
		rc.res.IdleAfterS = [2]float64{(last + IdleAfterCall).Seconds(), rc.tr.Meta.Duration - 0.02}
		rc.res.IdleStaleS = 0.1
		n := rc.again(t)
		ref, refHW := replayReference(t, filepath.Join(dir, rc.name))
		// what docs/call.md says of this run
		if d := n.ActiveJ.Value/ref - 1; d < 0.005 || d > 0.075 || n.CounterScale != nil {
			t.Errorf("%s: now %+.2f %% from the replay on %s: docs/call.md says +0.7..+6.9 %% on the ring's scale", rc.name, 100*d, n.Scale)
		}
		if c := n.CounterDeclined; c == nil || c.HalfWidthJ/c.CounterJ < 0.02 || c.HalfWidthJ/c.CounterJ > 0.06 || math.Abs(c.ActiveJ/ref-1) > 0.025 {
			t.Errorf("%s: the counter's figure %v: docs/call.md says ±2.1-5.9 %%, within 2.1 %% of the replay", rc.name, c)
		} else {
			t.Logf("%s: the counter over the run %.5g J ±%.2f %% (%+.2f %% from the replay), declined", rc.name, c.ActiveJ, 100*c.HalfWidthJ/c.CounterJ, 100*(c.ActiveJ/ref-1))
		}
		t.Logf("%s: as run %.5g J ±%.2f %% (%+.2f %% from the replay reference %.5g J ±%.2f %%); now %.5g J ±%.2f %% (%+.2f %%) on %s, idle %.2f W (as run %.2f W); %d left out; %s",
			rc.name, rc.res.ActiveJ.Value, 100*rc.res.RelHalfWidth, 100*(rc.res.ActiveJ.Value/ref-1), ref, 100*refHW/ref,
			n.ActiveJ.Value, 100*n.RelHalfWidth, 100*(n.ActiveJ.Value/ref-1), n.Scale, n.ActiveIdleW.Value, rc.res.ActiveIdleW.Value, n.LeftOut, n.Warnings)
	}
}

// TestH200CallRun4: bench/gpu/call_gemm.sh on an H200 at 12:34 (results/nvidia-h200/
// 2026-11-28-call-4, GPU-80fba2ec, binary 7a16b7a: the idle from the lead and the tail, read
// every 20 ms there, and the counter's scale over the run): call.json again from the
// trace, and what docs/call.md says of it: every item on the counter's scale, ±0.49-1.04 %,
// within 1.8 % of the replay reference (inside 3 of 6), the ring reading the calls 1.7-5.0 %
// above the counter.
func TestH200CallRun4(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-4")
	runs := loadRecordedCalls(t, dir)
	if len(runs) != 6 {
		t.Fatalf("%d items, want 6", len(runs))
	}
	inside := 0
	for _, rc := range runs {
		a := rc.again(t)
		near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }
		if !near(a.ActiveJ.Value, rc.res.ActiveJ.Value) || !near(a.ActiveJ.High, rc.res.ActiveJ.High) || !near(a.EnergyJ.Value, rc.res.EnergyJ.Value) || a.LeftOut != rc.res.LeftOut || a.CounterScale == nil {
			t.Errorf("%s: again %+v (left out %d, scale %s), call.json %+v (left out %d)", rc.name, a.ActiveJ, a.LeftOut, a.Scale, rc.res.ActiveJ, rc.res.LeftOut)
			continue
		}
		ref, refHW := replayReference(t, filepath.Join(dir, rc.name))
		d := a.ActiveJ.Value/ref - 1
		if a.ActiveJ.Low <= ref && ref <= a.ActiveJ.High {
			inside++
		}
		g := a.CounterScale.Gain
		if rel := a.RelHalfWidth; rel < 0.0045 || rel > 0.011 || math.Abs(d) > 0.018 || g < 0.95 || g > 0.985 {
			t.Errorf("%s: ±%.2f %%, %+.2f %% from the replay, the counter's scale × %.4f: docs/call.md says ±0.49-1.04 %%, within 1.8 %%, × 0.953-0.983", rc.name, 100*rel, 100*d, g)
		}
		t.Logf("%s: %.5g J ±%.2f %% on %s (ring's own %.5g J, × %.4f), replay %.5g J ±%.2f %% (%+.2f %%)", rc.name, a.ActiveJ.Value, 100*a.RelHalfWidth, a.Scale,
			a.CounterScale.ChannelActiveJ.Value, g, ref, 100*refHW/ref, 100*d)
	}
	if inside != 3 {
		t.Errorf("the replay inside %d of 6 intervals: docs/call.md says 3", inside)
	}
}

// TestH200CallRepeats: bench/gpu/call_gemm.sh twice on each of two H200s at 13:41-13:49
// (results/nvidia-h200/2026-11-28-call-5-repeats, GPU-1d8090a9 and GPU-1be814f6 at once,
// binary 3441acb: no idle gaps yet), five bf16 GEMMs of 0.18-52 ms per call, each run with
// a replay of its calls by the counter alone right after it. call.json again from each
// trace; then what docs/call.md says of the runs: their own replays inside 7 of 20 intervals
// as run; the same call's two runs (3.5 min apart), and its two replays, differ by more
// than their intervals allow: 1.10 % per run (sd) beyond them over the 20 pairs, the
// H200's documented floor (RunToRunFloorOf: 1.96 × that); with it, every replay inside.
func TestH200CallRepeats(t *testing.T) {
	t.Parallel()
	base := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-5-repeats")
	floor, _ := RunToRunFloorOf("NVIDIA H200")
	var asRun, withFloor, n int
	var excess []float64 // per pair, the relative difference's square beyond the two intervals
	for _, card := range []string{"gpu0", "gpu1"} {
		figs := map[string][2][3]float64{} // item: per round (gpuwatt, its half-width, replay)
		reps := map[string][2][2]float64{} // item: per round (replay, its half-width)
		for r, round := range []string{"r1", "r2"} {
			dir := filepath.Join(base, card, round)
			runs := loadRecordedCalls(t, dir)
			if len(runs) != 5 {
				t.Fatalf("%s: %d items, want 5", dir, len(runs))
			}
			for _, rc := range runs {
				a := rc.again(t)
				if math.Abs(a.ActiveJ.Value/rc.res.ActiveJ.Value-1) > 1e-9 || math.Abs(a.ActiveJ.High/rc.res.ActiveJ.High-1) > 1e-9 || a.CounterScale == nil {
					t.Errorf("%s/%s: again %+v on %s, call.json %+v", dir, rc.name, a.ActiveJ, a.Scale, rc.res.ActiveJ)
					continue
				}
				ref, refHW := replayReference(t, filepath.Join(dir, rc.name))
				n++
				if a.ActiveJ.Low <= ref && ref <= a.ActiveJ.High {
					asRun++
				}
				// With the floor: a second analysis of each trace, half the test's CPU; only
				// where the slow tests run (CI), issue 30. By default the floor is still applied
				// to recorded runs and must hold their replays: on a third card
				// (TestH200CallRun4Floor, 6 of 6) and a fourth (TestH200CallRun5, 10 of 10);
				// and this test still checks, on these 20 runs as they ran, that the floor is
				// 1.96 × the pairs' sd and the replays inside 7 of 20 without it.
				withFloorRel := math.NaN()
				if testkit.SlowOn() {
					rc.res.RunToRunFloor = floor
					f := rc.again(t)
					if f.ActiveJ.Low <= ref && ref <= f.ActiveJ.High {
						withFloor++
					}
					withFloorRel = f.ActiveJ.Rel()
				}
				x := figs[rc.name]
				x[r] = [3]float64{a.ActiveJ.Value, a.ActiveJ.HalfWidth(), ref}
				figs[rc.name] = x
				y := reps[rc.name]
				y[r] = [2]float64{ref, refHW}
				reps[rc.name] = y
				t.Logf("%s %s %s: %.5g J ±%.2f %%, replay %.5g J ±%.2f %% (%+.2f %%); with the floor ±%.2f %%", card, round, rc.name,
					a.ActiveJ.Value, 100*a.ActiveJ.Rel(), ref, 100*refHW/ref, 100*(a.ActiveJ.Value/ref-1), 100*withFloorRel)
			}
		}
		for item, x := range figs {
			d := x[1][0] - x[0][0]
			m := (x[1][0] + x[0][0]) / 2
			excess = append(excess, (d*d-(x[0][1]*x[0][1]+x[1][1]*x[1][1])/(1.96*1.96))/(m*m))
			y := reps[item]
			d, m = y[1][0]-y[0][0], (y[1][0]+y[0][0])/2
			excess = append(excess, (d*d-(y[0][1]*y[0][1]+y[1][1]*y[1][1])/(1.96*1.96))/(m*m))
		}
	}
	var s float64
	for _, e := range excess {
		s += e
	}
	sd := math.Sqrt(max(0, s/float64(len(excess))/2))
	withFloorSaid := fmt.Sprintf("%d", withFloor)
	if !testkit.SlowOn() {
		withFloorSaid = "(not analysed: " + testkit.SlowEnv + " unset)"
	}
	t.Logf("the replays inside %d of %d intervals as run, %s with the floor ±%.2f %%; %d pairs: %.2f %% per run (sd) beyond their intervals", asRun, n, withFloorSaid, 100*floor, len(excess), 100*sd)
	if n != 20 || asRun != 7 || (testkit.SlowOn() && withFloor < 19) || len(excess) != 20 || math.Abs(1.96*sd-floor) > 0.001 {
		t.Errorf("%d items, the replay inside %d as run and %d with the floor, %d pairs, 1.96 × %.3f %% against the floor %.2f %%: docs/call.md says 20, 7, 20, 20 and the floor is 1.96 × the pairs' sd",
			n, asRun, withFloor, len(excess), 100*sd, 100*floor)
	}
}

// TestH200CallRun4Floor: the H200's run-to-run floor, from the repeats on two other cards
// (TestH200CallRepeats), applied to 2026-11-28-call-4 (a third card, an hour earlier): the
// replay reference inside every one of the six intervals (3 of 6 without it), ±2.2-2.4 %.
func TestH200CallRun4Floor(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-4")
	floor, _ := RunToRunFloorOf(rc4Name(t, dir))
	inside := 0
	for _, rc := range loadRecordedCalls(t, dir) {
		rc.res.RunToRunFloor = floor
		a := rc.again(t)
		ref, _ := replayReference(t, filepath.Join(dir, rc.name))
		ok := a.ActiveJ.Low <= ref && ref <= a.ActiveJ.High
		if ok {
			inside++
		}
		t.Logf("%s: %.5g J ±%.2f %% with the floor, replay %.5g J (%+.2f %%) inside %v", rc.name, a.ActiveJ.Value, 100*a.ActiveJ.Rel(), ref, 100*(a.ActiveJ.Value/ref-1), ok)
		if rel := a.ActiveJ.Rel(); rel < 0.021 || rel > 0.024 {
			t.Errorf("%s: ±%.2f %% with the floor, docs/call.md says ±2.2-2.4 %%", rc.name, 100*rel)
		}
	}
	if inside != 6 {
		t.Errorf("the replay inside %d of 6 intervals with the floor, docs/call.md says 6", inside)
	}
}

// rc4Name is the board's name in a recorded run's first call.json.
func rc4Name(t *testing.T, dir string) string {
	t.Helper()
	runs := loadRecordedCalls(t, dir)
	return runs[0].res.GPUName
}

// TestH200CallRun5: bench/gpu/call_repeat.sh on an H200 at 14:11 (results/nvidia-h200/
// 2026-11-28-call-5, GPU-aac14555: a fourth card, binary 2d06268: idle gaps at 20, 25, 32 and
// 40 repetitions, the run-to-run part from the run's own blocks, no floor yet), five bf16
// GEMMs of 0.22-52 ms per call, each run twice ~2 min apart in one process, the replay
// after the second run the reference. call.json again from each trace; then what
// docs/call.md says: as run, the replay inside 10 of 10 intervals but only through the
// blocks' part of ±1.15-5.31 % (5 of 10 without it); with the H200's floor (2.15 %, derived
// at 14:18 from two other cards, so out of sample here) in its place, inside 10 of 10 at
// ±2.2-2.3 %; and at each run's third check (32 repetitions) the figure with the floor is
// within 0.9 × ±3 % (a run with --target 3% stops there) and holds the replay, 10 of 10.
func TestH200CallRun5(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "results", "nvidia-h200", "2026-11-28-call-5")
	runs := loadRecordedCalls(t, dir)
	if len(runs) != 10 {
		t.Fatalf("%d runs, want 10", len(runs))
	}
	refs := map[string]float64{}
	for _, rc := range runs {
		if item, ok := strings.CutSuffix(rc.name, "-run2"); ok {
			refs[item], _ = replayReference(t, filepath.Join(dir, rc.name))
		}
	}
	floor, _ := RunToRunFloorOf(runs[0].res.GPUName)
	var inAsRun, inOwn, inFloor int
	var rrLo, rrHi, fLo, fHi = math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, rc := range runs {
		a := rc.again(t)
		near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }
		if !near(a.ActiveJ.Value, rc.res.ActiveJ.Value) || !near(a.ActiveJ.High, rc.res.ActiveJ.High) || a.RunToRun == nil || len(a.RunToRun.Blocks) != 4 || !a.RunToRun.Measured {
			t.Errorf("%s: again %+v, run to run %+v; call.json %+v", rc.name, a.ActiveJ, a.RunToRun, rc.res.ActiveJ)
			continue
		}
		item := rc.name[:strings.LastIndex(rc.name, "-run")]
		ref := refs[item]
		hw, rr := a.ActiveJ.HalfWidth(), a.RunToRun.HalfWidthJ
		own := math.Sqrt(hw*hw - rr*rr)
		d := math.Abs(a.ActiveJ.Value - ref)
		if d <= hw {
			inAsRun++
		}
		if d <= own {
			inOwn++
		}
		rrLo, rrHi = min(rrLo, rr/a.ActiveJ.Value), max(rrHi, rr/a.ActiveJ.Value)
		rc.res.RunToRunFloor = floor
		f := rc.again(t)
		if f.ActiveJ.Low <= ref && ref <= f.ActiveJ.High {
			inFloor++
		}
		fLo, fHi = min(fLo, f.ActiveJ.Rel()), max(fHi, f.ActiveJ.Rel())
		t.Logf("%s: %.5g J ±%.2f %% as run (blocks' part ±%.2f %%, Q %.1f; own ±%.2f %%), with the floor ±%.2f %%; replay %.5g J (%+.2f %%)",
			rc.name, a.ActiveJ.Value, 100*a.ActiveJ.Rel(), 100*rr/a.ActiveJ.Value, a.RunToRun.Q, 100*own/a.ActiveJ.Value, 100*f.ActiveJ.Rel(), ref, 100*(a.ActiveJ.Value/ref-1))
	}
	t.Logf("the replay inside %d of 10 as run (blocks' part ±%.2f-%.2f %%), %d without it, %d with the floor (±%.2f-%.2f %%)", inAsRun, 100*rrLo, 100*rrHi, inOwn, inFloor, 100*fLo, 100*fHi)
	// The checks as the binary now makes them (with the floor), on these traces: at the
	// third gap each run's figure is within 0.9 × ±3 %, so a run with --target 3% would
	// have stopped there (32 repetitions, ~11 s of calls with the gaps), and that figure
	// holds the replay too.
	stopIn := 0
	for _, rc := range runs {
		gaps := idleGapsOf(rc.res.IdleGapsS)
		if len(gaps) != 3 {
			t.Errorf("%s: %d idle gaps, want 3", rc.name, len(gaps))
			continue
		}
		c := rc.checkAt(t, gaps, 3, floor, 0.03)
		ref := refs[rc.name[:strings.LastIndex(rc.name, "-run")]]
		ok := c.ActiveJ.Low <= ref && ref <= c.ActiveJ.High
		if ok {
			stopIn++
		}
		t.Logf("%s: at the third check %d repetitions, %.5g J ±%.2f %% (replay %+.2f %%, inside %v)", rc.name, c.Calls, c.ActiveJ.Value, 100*c.RelHalfWidth, 100*(c.ActiveJ.Value/ref-1), ok)
		if !c.Reached || c.RelHalfWidth > checkMargin*0.03 || !runToRunKnown(c, 3, true) || c.Calls != 32 {
			t.Errorf("%s: the third check %d repetitions, ±%.2f %%: would not stop at ±3 %%", rc.name, c.Calls, 100*c.RelHalfWidth)
		}
	}
	if stopIn != 10 {
		t.Errorf("the replay inside %d of 10 figures at the third check, docs/call.md says 10", stopIn)
	}
	if inAsRun != 10 || inOwn != 5 || inFloor != 10 || rrLo < 0.011 || rrHi > 0.054 || fLo < 0.021 || fHi > 0.024 {
		t.Errorf("docs/call.md says: 10 of 10 as run with the blocks' ±1.15-5.31 %%, 5 without, 10 with the floor at ±2.2-2.3 %%")
	}
}
