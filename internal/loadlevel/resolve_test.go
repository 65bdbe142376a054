package loadlevel

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	lv := func(target, p, half float64) Level {
		return Level{TargetLoad: target, ActiveIdle: target == 0, PowerW: p, PowerLowW: p - half, PowerHighW: p + half}
	}
	// Well apart: 100 W steps against ±2 W intervals (3 × sqrt(2² + 2²) = 8.5 W).
	ok, note := Resolve([]Level{lv(1, 500, 2), lv(0.5, 400, 2), lv(0.25, 300, 2), lv(0, 120, 1)})
	if !ok || note != "" {
		t.Errorf("resolved %v %q", ok, note)
	}
	// 8 W apart with ±2 W each: not more than 8.5 W.
	ok, note = Resolve([]Level{lv(1, 128, 2), lv(0.5, 120, 2), lv(0, 100, 1)})
	if ok || !strings.Contains(note, "100 % draws 128.0 W, 50 % 120.0 W: 8.0 W apart") {
		t.Errorf("resolved %v %q", ok, note)
	}
	// Power falling with load.
	if ok, note = Resolve([]Level{lv(1, 300, 1), lv(0.5, 310, 1), lv(0, 100, 1)}); ok || !strings.Contains(note, "-10.0 W apart") {
		t.Errorf("resolved %v %q", ok, note)
	}
	// Without an interval, 2 % of the power: 122.6 vs 121.6 W at active idle (the seed's
	// transactions on the H200) is not resolved.
	if ok, _ = Resolve([]Level{{TargetLoad: 1, PowerW: 122.6}, {ActiveIdle: true, PowerW: 121.6}}); ok {
		t.Error("1 W apart at 120 W resolved")
	}
}

// kindMeter reads a fixed power and says what it covers.
type kindMeter struct {
	kind string
	w    float64
}

func (k kindMeter) Name() string       { return k.kind + " meter" }
func (k kindMeter) Kind() string       { return k.kind }
func (k kindMeter) Begin(string) error { return nil }
func (k kindMeter) End(w Window) (float64, error) {
	return k.w + 100*w.BusySeconds/w.Length.Seconds(), nil
}

// The GPU's and the host's power side by side and summed; the first meter gives power_w.
func TestHostBesideGPU(t *testing.T) {
	t.Parallel()
	f, _ := NewFFT(64)
	f.NsPerOp = 2000
	iv := Intervals{Calibrations: 2, Record: 2 * time.Second, Idle: time.Second}
	res, err := Measure(context.Background(), Config{Tx: f, Users: 2, Levels: []float64{1, 0.5}, Intervals: iv,
		Clock: clock.NewVirtual(time.Time{}), Meters: []Meter{kindMeter{KindGPU, 200}, kindMeter{KindHost, 50}}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.HostPowerSource != "host meter" || res.HostPowerUnavailable != "" {
		t.Errorf("host source %q, unavailable %q", res.HostPowerSource, res.HostPowerUnavailable)
	}
	for _, l := range res.Levels {
		if l.PowerW != l.GPUPowerW || l.GPUPowerW < 200 || l.HostPowerW < 50 || math.Abs(l.TotalPowerW-l.GPUPowerW-l.HostPowerW) > 1e-9 {
			t.Errorf("level %s: power %.1f, GPU %.1f, host %.1f, sum %.1f", levelName(l), l.PowerW, l.GPUPowerW, l.HostPowerW, l.TotalPowerW)
		}
	}
	if !res.LevelsResolved {
		t.Errorf("not resolved: %s", res.ResolveNote)
	}
}

// slowCheck is the CPU FFT whose verification takes 50 ms (a GEMM row in float64 takes
// 0.15 s and more).
type slowCheck struct{ *FFT }

func (s slowCheck) Verify(in, out any, tol float64) error {
	time.Sleep(50 * time.Millisecond)
	return s.FFT.Verify(in, out, tol)
}

// Picks still queued when the run ends are dropped, not checked after it: the run ends
// within one check's time of its last interval.
func TestVerificationDoesNotHoldTheRun(t *testing.T) {
	f, _ := NewFFT(64)
	iv := Intervals{Calibrations: 2, Record: 100 * time.Millisecond, Idle: 50 * time.Millisecond}
	t0 := time.Now()
	res, err := Measure(context.Background(), Config{Tx: slowCheck{f}, Users: 1, Levels: []float64{0.5}, Intervals: iv,
		Clock: clock.NewReal(), Seed: 2, VerifyFraction: 1, VerifyQueue: 64, LoadTolerance: 1})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	t.Logf("run of 0.35 s took %v: verified %d, dropped %d", took, res.Verified, res.VerifyDropped)
	if took > 2*time.Second || res.VerifyDropped == 0 || res.Verified == 0 {
		t.Errorf("took %v, verified %d, dropped %d: want the queued checks dropped at the end", took, res.Verified, res.VerifyDropped)
	}
}
