package loadlevel

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// The GEMM on the sim H200 against the sim's own truth: with 4 users the device is the
// bottleneck, so the calibrated rate is one transaction per its kernels' time (8 layers'
// launches, from the execution model), and the 100 % level's power, read through the
// sensors, is the kernels' true power within the board's gain and offset errors.
func TestSimGemmAgainstTruth(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	o := DefaultOptions()
	o.Levels, o.Contexts = []float64{1}, []int{4}
	o.Intervals = Intervals{Warmup: time.Second, Calibrations: 2, Pre: time.Second, Record: 3 * time.Second, Post: time.Second, Idle: 2 * time.Second}
	rep, err := o.Run(context.Background(), device.Env{System: sm.Sys, Clock: sm.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Workload != WorkloadGEMM || rep.Configs[0].Runs[0].Workload != "gemm-4096x256x8/tf32" || rep.Variant != VariantCuBLAS || !rep.Simulated {
		t.Fatalf("workload %q, variant %q, simulated %v", rep.Workload, rep.Variant, rep.Simulated)
	}
	ks, _, _, err := SimKernels(Work{Workload: WorkloadGEMM, Size: ServeWidth, Batch: ServeBatch, Layers: ServeLayers}, "9.0")
	if err != nil {
		t.Fatal(err)
	}
	dur, energy, _, _ := sm.Sys.Device(0).TrueLaunch(ks[0])
	txTime := time.Duration(len(ks)) * dur
	truePower := float64(energy) / dur.Seconds()
	run := rep.Configs[0].Runs[0]
	l := run.Levels[0]
	t.Logf("calibrated %.1f tx/s (device-bound %.1f), 100 %% level %.1f W (kernels' truth %.1f W), active idle %.1f W",
		run.CalibratedRate, 1/txTime.Seconds(), l.PowerW, truePower, run.Levels[1].PowerW)
	if math.Abs(run.CalibratedRate*txTime.Seconds()-1) > 0.01 {
		t.Errorf("calibrated %.1f tx/s, want the device-bound %.1f", run.CalibratedRate, 1/txTime.Seconds())
	}
	if math.Abs(l.PowerW/truePower-1) > 0.03 {
		t.Errorf("100 %% level %.1f W, want the kernels' true %.1f W within 3 %%", l.PowerW, truePower)
	}
	if !(l.PowerLowW < l.PowerW && l.PowerW < l.PowerHighW) || l.TemperatureC == nil {
		t.Errorf("level %+v: want an interval around the power and a temperature", l)
	}
}

// One-CTA FFTs fill a sliver of the device, so the users' kernels run side by side (one
// slot each) and the host's round trip bounds the rate: users / (round trip + copies +
// kernel).
func TestSimFFTSlots(t *testing.T) {
	t.Parallel()
	sm := simtest.Open(t, "h200")
	ks, in, out, err := SimKernels(Work{Workload: WorkloadFFT, Variant: VariantGPU, Size: 64, Batch: 1}, "9.0")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := NewSimTx("fft-64", sm.Sys.Device(0), sm.Clock, ks, in, out, 4, &SimLoad{Dev: sm.Sys.Device(0)})
	if err != nil {
		t.Fatal(err)
	}
	if tx.Slots() != 4 {
		t.Errorf("%d slots, want one per user (4)", tx.Slots())
	}
	d := tx.ModelTime(nil)
	want := SimRoundTrip + tx.GPUTime() + time.Duration(float64(in+out)/SimPCIe*1e9)
	if math.Abs(float64(d-want)) > 2 {
		t.Errorf("one transaction takes %v, want %v", d, want)
	}
}
