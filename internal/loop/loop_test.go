package loop

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/gpu/sim"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/units"
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

func TestMeasureAgainstSimTruth(t *testing.T) {
	clk := clock.NewVirtual(time.Time{})
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dev := sys.Device(0)
	m, err := Start(context.Background(), clk, sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	clk := clock.NewVirtual(time.Time{})
	cfg, err := sim.LoadConfig(strings.NewReader(`{"preset":"h200","sensors":{"energy.total":{"period_s":2}}}`))
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
