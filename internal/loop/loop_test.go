package loop

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// stepKernel is a kernel of known duration and power on the sim device, independent of
// the sim's own kernel model: it only adds load to the device's truth and moves the clock.
type stepKernel struct {
	dev   *sim.Device
	clk   *clock.Virtual
	per   time.Duration
	power units.Power
	runs  int
}

func (k *stepKernel) Run(n int) (time.Duration, time.Duration, error) {
	t0 := k.clk.Now()
	t1 := t0 + time.Duration(n)*k.per
	k.dev.AddLoad(t0, t1, k.power)
	k.clk.AdvanceTo(t1)
	k.runs += n
	return t0, t1, nil
}
func (k *stepKernel) Close() error { return nil }

var _ gpu.Kernel = (*stepKernel)(nil)

// startOn opens cfg on the sim and starts a Meter on all its GPUs.
func startOn(t *testing.T, cfg sim.Config) (simtest.Sim, *Meter) {
	t.Helper()
	sm := simtest.OpenConfig(t, cfg)
	m, err := Start(context.Background(), sm.Clock, sm.Sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sm, m
}

func TestMeasureAgainstSimTruth(t *testing.T) {
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	sm, m := startOn(t, cfg)
	clk, dev := sm.Clock, sm.Dev
	ctx := context.Background()
	if err := m.Idle(ctx, 0, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	k := &stepKernel{dev: dev, clk: clk, per: 3 * time.Millisecond, power: 520}
	me, err := m.Measure(ctx, 0, k, "step", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 50 updates of the 100 ms channels: at least 5 s, in 3 ms launches.
	if me.Launches < 1666 || me.End-me.Start < 5*time.Second {
		t.Errorf("%d launches over %v, want >= 5 s", me.Launches, me.End-me.Start)
	}
	if me.WarmupLaunches == 0 || k.runs != me.WarmupLaunches+me.Launches {
		t.Errorf("warm-up %d launches, kernel ran %d, measured %d", me.WarmupLaunches, k.runs, me.Launches)
	}
	if _, err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	r := me.Region
	truth := dev.TrueEnergy(me.Start, me.End).Joules()
	// The sim's board carries a gain error (h200: 0.985) that the counter reports too.
	if rel := r.EnergyJ/truth - 1; math.Abs(rel) > 0.03 {
		t.Errorf("energy %.1f J from %s, truth %.1f J (%+.1f %%)", r.EnergyJ, r.EnergySource, truth, 100*rel)
	}
	idleTruth := dev.TruePower(time.Second).Watts()
	if rel := r.IdlePowerW/idleTruth - 1; math.Abs(rel) > 0.05 {
		t.Errorf("idle %.1f W, truth %.1f W", r.IdlePowerW, idleTruth)
	}
	if r.MeanPowerW < 500 || r.MeanPowerW > 540 {
		t.Errorf("mean power %.1f W, want about 520 W", r.MeanPowerW)
	}
}

// TestLaunchesFromPowerChannels: a counter that updates (or is read) every 2 s must not set
// the measurement's length; the 100 ms power channels do (50 updates: 5 s). On an H200 the
// sparsely read counter made every measurement run into the 30 s cap.
func TestLaunchesFromPowerChannels(t *testing.T) {
	cfg, err := sim.LoadConfig(strings.NewReader(`{"preset":"h200","sensors":{"energy.total":{"period_s":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sm, m := startOn(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	k := &stepKernel{dev: sys.Device(0), clk: clk, per: 2 * time.Millisecond, power: 400}
	me, err := m.Measure(context.Background(), 0, k, "step", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := me.End - me.Start; d < 5*time.Second || d > 6*time.Second {
		t.Errorf("measurement lasted %v (update period %v s), want about 5 s", d, me.UpdatePeriodS)
	}
	m.Stop()
}

// TestTwoGPUsAtOnce measures a kernel on each of two sim GPUs from two goroutines on a real
// clock (the Sampler polling from its own goroutines meanwhile): both measurements come back
// with their own energy, and the device that worked harder used more.
func TestTwoGPUsAtOnce(t *testing.T) {
	clk := clock.NewReal()
	cfg, err := sim.LoadConfig(strings.NewReader(`{"preset":"h100","gpus":2}`))
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Start(context.Background(), clk, sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	res := make([]*Measurement, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := kernels.Descriptor{Name: "fma", Blocks: 1056, Threads: 256,
				Ops: map[kernels.OpClass]int64{kernels.FP32FMA: int64(1+i) * 3e10}}
			k, err := sys.Device(i).Prepare(d)
			if err != nil {
				errs[i] = err
				return
			}
			defer k.Close()
			res[i], errs[i] = m.Measure(ctx, i, k, "fma", Options{Warmup: 100 * time.Millisecond, MinUpdates: 4})
		}()
	}
	wg.Wait()
	if _, err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("GPU %d: %v", i, errs[i])
		}
		if r.GPU != i || r.Region.EnergyJ <= 0 || r.End-r.Start < 300*time.Millisecond {
			t.Fatalf("GPU %d: %+v", i, r)
		}
	}
	// Same power (the work per launch doubles, so does its time), different energy per launch.
	e0 := res[0].Region.EnergyJ / float64(res[0].Launches)
	e1 := res[1].Region.EnergyJ / float64(res[1].Launches)
	if e1 < 1.7*e0 || e1 > 2.3*e0 {
		t.Errorf("energy per launch %.4g J and %.4g J: want the second about twice the first", e0, e1)
	}
}

// TestMeasureAll: a kernel the device refuses is listed as a failure and the others are
// measured; a cancelled context ends the run with its error.
func TestMeasureAll(t *testing.T) {
	cfg, _ := sim.Preset("h100")
	sm, m := startOn(t, cfg)
	sys := sm.Sys
	good := kernels.Descriptor{Name: "fma", Blocks: 1056, Threads: 256, Ops: map[kernels.OpClass]int64{kernels.FP32FMA: 1e10}}
	bad := kernels.Descriptor{Name: "empty"} // no work: the sim refuses it
	opt := Options{Warmup: 100 * time.Millisecond, MinUpdates: 5}
	ms, failed, err := m.MeasureAll(context.Background(), 0, sys.Device(0), []kernels.Descriptor{good, bad, good}, opt, nil)
	if err != nil || len(ms) != 3 || ms[0] == nil || ms[1] != nil || ms[2] == nil || len(failed) != 1 || failed[0].Name != "empty" {
		t.Fatalf("ms %v, failed %v, err %v", ms, failed, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.MeasureAll(ctx, 0, sys.Device(0), []kernels.Descriptor{good}, opt, nil); err == nil {
		t.Fatal("a cancelled context did not end MeasureAll")
	}
	m.Stop()
}

// TestRunSuite: the suite's failures become warnings with the caller's code and the names
// it returns, a run that goes through is not incomplete, an interrupted one is, and the
// Meter is stopped with its trace either way.
func TestRunSuite(t *testing.T) {
	good := kernels.Descriptor{Name: "fma", Blocks: 1056, Threads: 256, Ops: map[kernels.OpClass]int64{kernels.FP32FMA: 1e10}}
	bad := kernels.Descriptor{Name: "empty"} // no work: the sim refuses it
	opt := Options{Warmup: 100 * time.Millisecond, MinUpdates: 5}
	for _, interrupt := range []bool{false, true} {
		sm, m := startOn(t, simtest.Preset(t, "h100"))
		ctx, cancel := context.WithCancel(context.Background())
		if interrupt {
			cancel()
		}
		run, err := m.RunSuite(ctx, 0, sm.Dev, []kernels.Descriptor{bad, good}, time.Second, opt, nil)
		cancel()
		if err != nil || run.Trace == nil || len(run.Trace.Samples) == 0 {
			t.Fatalf("interrupt %v: err %v, trace %v", interrupt, err, run.Trace)
		}
		var st status.Status
		failed := run.Tell(ctx, &st, "not_measured")
		if interrupt {
			if run.Err == nil || !st.Incomplete || st.Reason != "interrupted" || len(failed) != 0 {
				t.Errorf("interrupted: err %v, status %+v, failed %v", run.Err, st, failed)
			}
			continue
		}
		if run.Err != nil || st.Incomplete || len(run.Measured) != 2 || run.Measured[0] != nil || run.Measured[1] == nil ||
			len(failed) != 1 || failed[0] != "empty" || len(st.Warnings) != 1 || st.Warnings[0].Code != "not_measured" || st.Warnings[0].Subject != "empty" {
			t.Errorf("err %v, status %+v, measured %v, failed %v", run.Err, st, run.Measured, failed)
		}
	}
}

// TestShortMeasurementsRareCounter is the H200's case on the sim: the energy counter is
// read (here: updates) only every 1.5 s, the measurements last 1.2-2 s at power levels
// that change from one kernel to the next, and the sample ring has its own gain and offset
// error (+3 %, -4 W) against an ideal counter. The counter's own figure, from zero to two
// readings inside and interpolated across readings in the neighbours' warm-ups, is off by
// several percent; the headline, from the ring on the counter's scale (calibrated over
// the session), is within 1 % of the truth.
func TestShortMeasurementsRareCounter(t *testing.T) {
	cfg, err := sim.LoadConfig(strings.NewReader(`{"preset":"h200","seed":3,"sensors":{
		"energy.total":{"gain":1,"period_s":1.5,"jitter":0.2},
		"power.samples":{"gain":1.03,"offset_w":-4}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sm, m := startOn(t, cfg)
	clk, dev := sm.Clock, sm.Dev
	ctx := context.Background()
	if err := m.Idle(ctx, 0, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	powers := []units.Power{250, 620, 180, 560, 300, 650, 200, 480, 640, 220, 540, 330, 600, 190}
	var ms []*Measurement
	for i, p := range powers {
		k := &stepKernel{dev: dev, clk: clk, per: 2 * time.Millisecond, power: p}
		d := time.Duration(1200+60*i) * time.Millisecond
		me, err := m.Measure(ctx, 0, k, fmt.Sprintf("k%d", i), Options{Warmup: 250 * time.Millisecond, MinDuration: d, MaxDuration: d, MinUpdates: 1})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, me)
	}
	if _, err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	cal := m.Calibration(0)
	if cal == nil || cal.Channel != "power.samples" || math.Abs(cal.Gain*1.03-1) > 0.01 || math.Abs(cal.OffsetW-4*cal.Gain) > 2 {
		t.Fatalf("calibration %+v, want gain 1/1.03, offset +4 W", cal)
	}
	t.Logf("calibration: %s", cal)
	var worstNew, worstCtr, worstRaw float64
	for _, me := range ms {
		r := me.Region
		truth := dev.TrueEnergy(me.Start, me.End).Joules()
		relNew := r.EnergyJ/truth - 1
		relCtr := r.CounterEnergyJ/truth - 1
		relRaw := 0.0
		for _, c := range r.Channels {
			if c.Channel == "power.samples" {
				relRaw = c.EnergyJ/truth - 1
			}
		}
		t.Logf("%s %.2f s: truth %7.1f J; headline %+6.2f %% (%s, %d readings); counter %+6.2f %% (%d readings inside); raw ring %+6.2f %%",
			me.Name, (me.End - me.Start).Seconds(), truth, 100*relNew, r.EnergySource, r.EnergyReadings, 100*relCtr, r.CounterReadings, 100*relRaw)
		if r.CounterReadings >= 3 {
			t.Errorf("%s: %d counter readings inside a %v measurement", me.Name, r.CounterReadings, me.End-me.Start)
		}
		if r.EnergySource != "power.samples (calibrated to energy.total)" {
			t.Errorf("%s: energy from %q", me.Name, r.EnergySource)
		}
		if math.Abs(relNew) > 0.01 {
			t.Errorf("%s: headline %.1f J, truth %.1f J (%+.2f %%)", me.Name, r.EnergyJ, truth, 100*relNew)
		}
		for _, w := range r.Warnings {
			// (power.usage and power.average lag a 0.25 s warm-up by their 1 s window: those
			// warnings are right.)
			if m := w.Message; strings.Contains(m, "interpolated") || strings.HasPrefix(m, "power.samples") || strings.HasPrefix(m, "power.instant") || strings.Contains(m, "updates of") {
				t.Errorf("%s: warning %q", me.Name, w)
			}
		}
		worstNew = max(worstNew, math.Abs(relNew))
		if r.CounterEnergyJ > 0 {
			worstCtr = max(worstCtr, math.Abs(relCtr))
		}
		worstRaw = max(worstRaw, math.Abs(relRaw))
	}
	t.Logf("worst: headline %.2f %%, counter alone %.2f %%, raw ring %.2f %%", 100*worstNew, 100*worstCtr, 100*worstRaw)
	if worstCtr < 0.05 {
		t.Errorf("the counter alone is off by at most %.2f %%: the test does not show what it should", 100*worstCtr)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{Warmup: -1, MinUpdates: 10, MinDuration: time.Second, MaxDuration: 5 * time.Second}, ""},
		{Options{MinUpdates: -1}, "--min-updates -1"},
		{Options{MinDuration: -time.Second}, "--min-duration -1s"},
		{Options{MinDuration: 6 * time.Second, MaxDuration: 5 * time.Second}, "longer than the longest"},
		{Options{Launches: -2}, "launches -2"},
	} {
		err := c.o.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}
