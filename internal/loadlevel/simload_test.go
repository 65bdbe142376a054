package loadlevel

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

type busySpan struct {
	start, end time.Duration
	share      float64
}

type fakeBusy struct{ spans []busySpan }

func (f *fakeBusy) AddBusy(start, end time.Duration, share float64) {
	if n := len(f.spans); n > 0 && f.spans[n-1].start == start {
		f.spans[n-1] = busySpan{start, end, share} // refined, as the sim does
		return
	}
	f.spans = append(f.spans, busySpan{start, end, share})
}

// SimLoad gives each millisecond the share of its users' busy time, and gives the bin being
// filled up to the time the clock moves to.
func TestSimLoadShares(t *testing.T) {
	t.Parallel()
	us := time.Microsecond
	ms := time.Millisecond
	f := &fakeBusy{}
	s := &SimLoad{Dev: f, Users: 2}
	s.Busy(0, 500*us)       // user 1: half of bin 0
	s.Busy(250*us, 1500*us) // user 2: 3/4 of bin 0, half of bin 1
	s.Flush(750 * us)       // bin 0 given up to 750 µs: (500 + 500) / (2 × 750)
	if len(f.spans) != 1 || f.spans[0] != (busySpan{0, 750 * us, 1000.0 / 1500}) {
		t.Fatalf("after the first flush: %+v", f.spans)
	}
	s.Flush(3 * ms) // bin 0 final: (500 + 750) / 2000; bin 1: 500 / 2000; then nothing
	want := []busySpan{{0, ms, 0.625}, {ms, 2 * ms, 0.25}}
	if len(f.spans) != len(want) {
		t.Fatalf("spans %+v, want %+v", f.spans, want)
	}
	for i := range want {
		if f.spans[i].start != want[i].start || f.spans[i].end != want[i].end || math.Abs(f.spans[i].share-want[i].share) > 1e-12 {
			t.Errorf("span %d: %+v, want %+v", i, f.spans[i], want[i])
		}
	}
	// Idle milliseconds are skipped: the device's own idle behaviour covers them.
	s.Busy(10*ms, 10*ms+100*us)
	s.Flush(12 * ms)
	if last := f.spans[len(f.spans)-1]; len(f.spans) != 3 || last.start != 10*ms || math.Abs(last.share-0.05) > 1e-12 {
		t.Errorf("after a gap: %+v", f.spans)
	}
}

// On the sim device, the cpu variant's power comes from the device: at 100 % the users keep
// it busy and its sensors read about its command load; at active idle, between its idle
// and its active idle.
func TestRunOnSim(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	o := DefaultOptions()
	o.Levels, o.Contexts, o.NsPerOp = []float64{1, 0.5}, []int{2}, 2000
	o.Variant = VariantCPU
	o.Intervals = Intervals{Warmup: time.Second, Calibrations: 2, Pre: time.Second, Record: 5 * time.Second, Post: time.Second, Idle: 3 * time.Second}
	rep, err := o.Run(context.Background(), device.Env{System: sys, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Simulated || rep.Variant != VariantCPU || len(rep.Levels) != 3 {
		t.Fatalf("simulated %v, variant %q, %d levels", rep.Simulated, rep.Variant, len(rep.Levels))
	}
	full, half, idle := rep.Levels[0].PowerW, rep.Levels[1].PowerW, rep.Levels[2].PowerW
	cl, ai, id := float64(cfg.CommandLoad), float64(cfg.ActiveIdle), float64(cfg.Idle)
	// The board's gain error is within its spread (3 %); allow 5 %.
	if math.Abs(full/cl-1) > 0.05 {
		t.Errorf("100 %%: %.1f W, want about the command load %.0f W", full, cl)
	}
	// At 50 % two users are each busy half the time: the busy share of a millisecond is
	// 0.5 on average.
	if wantHalf := ai + 0.5*(cl-ai); math.Abs(half/wantHalf-1) > 0.05 {
		t.Errorf("50 %%: %.1f W, want about %.0f W", half, wantHalf)
	}
	if idle < id*0.95 || idle > ai*1.05 {
		t.Errorf("active idle: %.1f W, want between idle %.0f W and active idle %.0f W", idle, id, ai)
	}
	// The gemm workload has no cpu variant: bad input.
	o.Workload = WorkloadGEMM
	if _, err := o.Run(context.Background(), device.Env{System: sys, Clock: clk}); err == nil || !errors.Is(err, status.ErrInput) {
		t.Errorf("gemm with the cpu variant: %v, want a usage error", err)
	}

}
