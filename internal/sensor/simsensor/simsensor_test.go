package simsensor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

const ms = time.Millisecond

func powerChan(name string) trace.Channel {
	return trace.Channel{Name: name, Quantity: trace.QPower}
}

// ideal is a model with no errors.
func ideal(period, window time.Duration) sensormodel.Model {
	return sensormodel.Model{Period: period, Window: window, Gain: 1}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// overlap returns the length of the intersection of [a0, a1] and [b0, b1].
func overlap(a0, a1, b0, b1 time.Duration) time.Duration {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi < lo {
		return 0
	}
	return hi - lo
}

// readAt advances v to t and reads s once.
func readAt(t *testing.T, v *clock.Virtual, s sensor.Sensor, at time.Duration) float64 {
	t.Helper()
	v.AdvanceTo(at)
	r, err := s.Read(nil)
	if err != nil {
		t.Fatalf("Read at %v: %v", at, err)
	}
	if len(r) != 1 {
		t.Fatalf("Read at %v: %d readings, want 1", at, len(r))
	}
	return r[0].Value
}

func TestInstantSeesOnlyOverlappingWindows(t *testing.T) {
	// power.instant on A100/H100: T=100 ms, the mean of the last 25 ms before each update.
	const idle, busy = 100.0, 500.0
	tests := []struct {
		name         string
		start, width time.Duration
	}{
		{"between windows", 1030 * ms, 20 * ms},
		{"inside a window", 1080 * ms, 10 * ms},
		{"straddles a window start", 1070 * ms, 10 * ms},
		{"straddles an update", 1090 * ms, 20 * ms},
		{"covers a window", 1060 * ms, 60 * ms},
		{"long", 1000 * ms, 350 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoad(idle)
			l.SetSteps(tt.start, []Step{{tt.start, busy}, {tt.start + tt.width, idle}})
			v := clock.NewVirtual(time.Time{})
			p, err := NewPublished(v, l, powerChan("power.instant"), ideal(100*ms, 25*ms), 1)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for k := 1; k <= 20; k++ {
				tk := time.Duration(k) * 100 * ms
				ov := overlap(tk-25*ms, tk, tt.start, tt.start+tt.width)
				want := idle + (busy-idle)*ov.Seconds()/0.025
				// Read just after the update and just before the next one: the same value.
				for _, at := range []time.Duration{tk, tk + 99*ms} {
					if got := readAt(t, v, p, at); !near(got, want, 1e-9) {
						t.Errorf("update %d read at %v: got %.6f W, want %.6f W", k, at, got, want)
					}
				}
				if got := p.ValueAt(k); !near(got, want, 1e-9) {
					t.Errorf("ValueAt(%d) = %v, want %v", k, got, want)
				}
				if ov > 0 {
					seen++
				}
			}
			if tt.name == "between windows" && seen != 0 {
				t.Errorf("a pulse between windows was seen by %d updates", seen)
			}
		})
	}
}

func TestAverageRampsOverItsWindow(t *testing.T) {
	// power.usage / power.average on H100/H200: a 1 s boxcar updated every 100 ms.
	l := NewLoad(121)
	l.Set(2*time.Second, 717)
	l.Set(6*time.Second, 121)
	p, err := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("power.average"), ideal(100*ms, time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	for j := -5; j <= 15; j++ {
		k := 20 + j // t_k = 2 s + j*100 ms
		frac := min(max(float64(j)/10, 0), 1)
		want := 121 + (717-121)*frac
		if got := p.ValueAt(k); !near(got, want, 1e-9) {
			t.Errorf("rise: %v after the step: got %.4f, want %.4f", time.Duration(j)*100*ms, got, want)
		}
		k = 60 + j // the fall at 6 s
		want = 717 - (717-121)*frac
		if got := p.ValueAt(k); !near(got, want, 1e-9) {
			t.Errorf("fall: %v after the step: got %.4f, want %.4f", time.Duration(j)*100*ms, got, want)
		}
	}
}

func TestRCLagFollowsExponential(t *testing.T) {
	// The K20's sensor: y approaches P as 1 - e^{-t/tau}, tau = 0.84 s.
	const p0, p1, p2 = 25.0, 158.0, 52.5
	tau := 840 * ms
	l := NewLoad(p0)
	l.Set(time.Second, p1)
	l.Set(3*time.Second, p2)
	m := sensormodel.Model{Period: 15 * ms, Tau: tau, Gain: 1}
	p, err := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("power.usage"), m, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := tau.Seconds()
	y3 := p1 + (p0-p1)*math.Exp(-2/ts)
	for k := 0; k < 400; k++ {
		tk := p.UpdateTime(k).Seconds()
		var want float64
		switch {
		case tk < 1:
			want = p0
		case tk < 3:
			want = p1 + (p0-p1)*math.Exp(-(tk-1)/ts)
		default:
			want = p2 + (y3-p2)*math.Exp(-(tk-3)/ts)
		}
		if got := p.ValueAt(k); !near(got, want, 1e-9) {
			t.Fatalf("t=%.3f s: got %.6f, want %.6f", tk, got, want)
		}
	}
}

func TestLaggedWindowMatchesNumericIntegration(t *testing.T) {
	// An independent check of the closed forms: Euler-integrate the lag with a 10 µs step and
	// average it over each window.
	steps := []Step{{200 * ms, 300}, {230 * ms, 80}, {260 * ms, 400}, {700 * ms, 120}, {710 * ms, 500}, {1300 * ms, 100}}
	l := NewLoad(100)
	l.SetSteps(0, steps)
	m := sensormodel.Model{Period: 50 * ms, Window: 25 * ms, Delay: 5 * ms, Tau: 150 * ms, Gain: 1}
	p, err := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("x"), m, 1)
	if err != nil {
		t.Fatal(err)
	}
	const dt = 10 * time.Microsecond
	y := 100.0
	var ys []float64 // y at i*dt
	for i := 0; i < 200000; i++ {
		ys = append(ys, y)
		y += dt.Seconds() * (float64(l.Power(time.Duration(i)*dt)) - y) / m.Tau.Seconds()
	}
	for k := 1; k < 38; k++ {
		end := p.UpdateTime(k) - m.Delay
		var sum float64
		n := int(m.Window / dt)
		for i := int((end - m.Window) / dt); i < int(end/dt); i++ {
			sum += ys[i]
		}
		want := sum / float64(n)
		if got := p.ValueAt(k); !near(got, want, 0.05) {
			t.Errorf("update %d: closed form %.4f, numeric %.4f", k, got, want)
		}
	}
}

func TestDelayShiftsTheWindow(t *testing.T) {
	l := NewLoad(0)
	l.SetSteps(0, []Step{{90 * ms, 100}, {95 * ms, 0}})
	m := ideal(100*ms, 10*ms)
	m.Delay = 8 * ms // window of update 1 is [82, 92] ms: 2 ms of the pulse
	p, _ := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("x"), m, 1)
	if got := p.ValueAt(1); !near(got, 20, 1e-9) {
		t.Errorf("got %v, want 20", got)
	}
}

func TestEnergyCounterIsExactIntegral(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewLoad(120)
	at := time.Duration(0)
	for range 500 {
		at += time.Duration(rng.Int64N(int64(50 * ms)))
		l.Set(at, units.Power(100+600*rng.Float64()))
	}
	for _, gain := range []float64{1, 0.97} {
		m := sensormodel.Model{Period: 100 * ms, Phase: 37 * ms, Gain: gain, Quantum: 0.001}
		c, err := NewCounter(clock.NewVirtual(time.Time{}), l, trace.Channel{Name: "energy.total", Quantity: trace.QEnergy}, m, 1, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Channel().Cumulative {
			t.Error("counter channel not Cumulative")
		}
		for k := 0; k < 150; k++ {
			tk := c.UpdateTime(k)
			want := 5000 + gain*float64(l.Energy(0, tk))
			got := c.ValueAt(k)
			if !near(got, want, 0.0005+1e-9) {
				t.Fatalf("gain %v, update %d: counter %.6f J, integral %.6f J", gain, k, got, want)
			}
			if mj := got * 1000; !near(mj, math.Round(mj), 1e-6) {
				t.Fatalf("counter %v is not a whole number of mJ", got)
			}
			// A difference of two readings is the integral between them to 1 mJ.
			if k > 0 {
				d := got - c.ValueAt(k-1)
				e := gain * float64(l.Energy(c.UpdateTime(k-1), tk))
				if !near(d, e, 0.001+1e-9) {
					t.Fatalf("delta %v vs %v", d, e)
				}
			}
		}
	}
}

func TestReadRepeatsBetweenUpdates(t *testing.T) {
	l := NewLoad(300)
	m := sensormodel.Model{Period: 100 * ms, Jitter: 0.2, Phase: 13 * ms, Window: 25 * ms, Noise: 0.5, Quantum: 0.001, Gain: 1}
	v := clock.NewVirtual(time.Time{})
	p, err := NewPublished(v, l, powerChan("power.instant"), m, 7)
	if err != nil {
		t.Fatal(err)
	}
	changes, prev := 0, math.NaN()
	var buf []sensor.Reading
	for now := time.Duration(0); now <= 3*time.Second; now += ms {
		v.AdvanceTo(now)
		buf, _ = p.Read(buf[:0])
		got := buf[0].Value
		if want := p.ValueAt(p.UpdateIndex(now)); got != want {
			t.Fatalf("at %v: read %v, update value %v", now, got, want)
		}
		if got != prev && now > 0 {
			changes++
		}
		prev = got
	}
	if want := p.UpdateIndex(3*time.Second) - p.UpdateIndex(0); changes != want {
		t.Errorf("%d new values, want %d (one per update)", changes, want)
	}
	if n := len(p.UpdateTimes(0, 3*time.Second)); n != changes {
		t.Errorf("UpdateTimes lists %d updates, reads saw %d", n, changes)
	}
}

func TestBufferedReturnsEachSampleOnce(t *testing.T) {
	l := NewLoad(122)
	l.Set(time.Second, 700)
	l.Set(2*time.Second, 122)
	m := sensormodel.Model{Period: 20 * ms, Phase: 3 * ms, Window: 20 * ms, Noise: 0.3, Quantum: 0.001, Gain: 1}
	v := clock.NewVirtual(time.Time{})
	b, err := NewBuffered(v, l, powerChan("power.samples"), m, 3, 119)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Channel().Buffered {
		t.Fatal("channel not Buffered")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var got []sensor.Reading
	now := 500 * ms
	for now < 20*time.Second {
		v.AdvanceTo(now)
		var err error
		if got, err = b.Read(got); err != nil {
			t.Fatal(err)
		}
		now += time.Duration(rng.Int64N(int64(2*time.Second))) + ms // < 119 * 20 ms
	}
	first := b.UpdateIndex(-1) + 1
	if b.UpdateTime(first) < 0 || b.UpdateTime(first-1) >= 0 {
		t.Fatal("first index wrong")
	}
	last := b.UpdateIndex(v.Now())
	if len(got) != last-first+1 {
		t.Fatalf("%d samples, want %d (every sample from the origin on, once)", len(got), last-first+1)
	}
	epoch := v.Epoch().UnixMicro()
	for i, r := range got {
		k := first + i
		if !r.Timed || r.T != b.UpdateTime(k) || r.Value != b.ValueAt(k) {
			t.Fatalf("sample %d: %+v, want T=%v value %v", i, r, b.UpdateTime(k), b.ValueAt(k))
		}
		if r.DriverUS != epoch+r.T.Microseconds() {
			t.Fatalf("sample %d: DriverUS %d, want %d", i, r.DriverUS, epoch+r.T.Microseconds())
		}
	}
	// The buffer follows the step within one sample.
	if k := b.UpdateIndex(time.Second) + 2; b.ValueAt(k) < 690 || b.UpdateTime(k) > time.Second+2*m.Period {
		t.Errorf("one sample after the step: %v W", b.ValueAt(k))
	}

	// After a gap longer than the ring, only the newest 119 samples remain.
	v.Advance(10 * time.Second)
	r, _ := b.Read(nil)
	if len(r) != 119 || r[len(r)-1].T != b.UpdateTime(b.UpdateIndex(v.Now())) {
		t.Fatalf("after a gap: %d samples ending at %v", len(r), r[len(r)-1].T)
	}
	if r2, _ := b.Read(nil); len(r2) != 0 {
		t.Errorf("an immediate second read returned %d samples", len(r2))
	}
}

func TestJitteredScheduleIsDeterministicAndBounded(t *testing.T) {
	m := sensormodel.Model{Period: 15 * ms, Jitter: 0.45, Phase: 2 * ms, Gain: 1}
	l := NewLoad(50)
	mk := func(seed uint64, name string) *Published {
		p, err := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan(name), m, seed)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c, d := mk(1, "power.usage"), mk(1, "power.usage"), mk(2, "power.usage"), mk(1, "power.other")
	const n = 20000
	same, diffSeed, diffChan := true, false, false
	minI, maxI := time.Hour, time.Duration(0)
	for k := -10; k < n; k++ {
		tk := a.UpdateTime(k)
		grid := m.Phase + time.Duration(k)*m.Period
		if dev := tk - grid; dev < -time.Duration(m.Jitter*float64(m.Period)) || dev > time.Duration(m.Jitter*float64(m.Period)) {
			t.Fatalf("t_%d = %v is %v off the grid", k, tk, dev)
		}
		if iv := a.UpdateTime(k+1) - tk; iv <= 0 {
			t.Fatalf("updates out of order at %d", k)
		} else {
			minI, maxI = min(minI, iv), max(maxI, iv)
		}
		same = same && tk == b.UpdateTime(k)
		diffSeed = diffSeed || tk != c.UpdateTime(k)
		diffChan = diffChan || tk != d.UpdateTime(k)
		// UpdateIndex inverts UpdateTime.
		for _, q := range []time.Duration{tk, tk - 1, tk + 1} {
			i := a.UpdateIndex(q)
			if a.UpdateTime(i) > q || a.UpdateTime(i+1) <= q {
				t.Fatalf("UpdateIndex(%v) = %d: t_i=%v, t_i+1=%v", q, i, a.UpdateTime(i), a.UpdateTime(i+1))
			}
		}
	}
	if !same || !diffSeed || !diffChan {
		t.Errorf("same seed same times: %v; another seed differs: %v; another channel differs: %v", same, diffSeed, diffChan)
	}
	mean := (a.UpdateTime(n) - a.UpdateTime(0)) / n
	if d := mean - m.Period; d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("mean interval %v, want %v", mean, m.Period)
	}
	if minI > 3*ms || maxI < 27*ms {
		t.Errorf("intervals range over [%v, %v]; want them to vary widely", minI, maxI)
	}
}

func TestNoiseIsDeterministicAndGaussian(t *testing.T) {
	l := NewLoad(200)
	m := sensormodel.Model{Period: 10 * ms, Window: 10 * ms, Noise: 2, Gain: 1}
	p1, _ := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("a"), m, 9)
	p2, _ := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("a"), m, 9)
	var sum, sum2 float64
	const n = 20000
	for k := range n {
		v := p1.ValueAt(k)
		if v != p2.ValueAt(k) {
			t.Fatal("noise not deterministic")
		}
		sum += v - 200
		sum2 += (v - 200) * (v - 200)
	}
	mean, sd := sum/n, math.Sqrt(sum2/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 0.05 || math.Abs(sd-2) > 0.05 {
		t.Errorf("noise mean %.3f sd %.3f, want 0 and 2", mean, sd)
	}
}

func TestGainOffsetQuantum(t *testing.T) {
	l := NewLoad(123.45678)
	m := sensormodel.Model{Period: 100 * ms, Gain: 1.02, Offset: -1.5, Quantum: 0.001}
	p, _ := NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("x"), m, 1)
	want := math.Round((1.02*123.45678-1.5)*1000) / 1000
	if got := p.ValueAt(3); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	// Negative results publish as zero.
	m.Offset = -1000
	p, _ = NewPublished(clock.NewVirtual(time.Time{}), l, powerChan("x"), m, 1)
	if got := p.ValueAt(3); got != 0 || math.Signbit(got) {
		t.Errorf("got %v, want 0", got)
	}
}

func TestLoadSetAndEnergy(t *testing.T) {
	l := NewLoad(100)
	l.Set(time.Second, 300)
	l.Set(2*time.Second, 200)
	tests := []struct {
		t0, t1 time.Duration
		want   float64
	}{
		{-time.Second, 0, 100},
		{0, 3 * time.Second, 100 + 300 + 200},
		{500 * ms, 1500 * ms, 50 + 150},
		{2500 * ms, 2500 * ms, 0},
		{1500 * ms, 500 * ms, -200},
	}
	for _, tt := range tests {
		if got := float64(l.Energy(tt.t0, tt.t1)); !near(got, tt.want, 1e-9) {
			t.Errorf("Energy(%v, %v) = %v, want %v", tt.t0, tt.t1, got, tt.want)
		}
	}
	if l.Power(999*ms) != 100 || l.Power(time.Second) != 300 || l.Power(10*time.Second) != 200 {
		t.Error("Power wrong")
	}
	// Setting the future forgets what was set after it.
	l.Set(1500*ms, 50)
	if got := l.Steps(); len(got) != 2 || got[1] != (Step{1500 * ms, 50}) {
		t.Errorf("steps after Set: %v", got)
	}
	// Equal values merge.
	l.Set(1600*ms, 50)
	if l.Len() != 2 {
		t.Errorf("equal value not merged: %v", l.Steps())
	}
}

func TestLagCacheSurvivesRewrites(t *testing.T) {
	tau := 300 * ms
	l := NewLoad(10)
	l.SetSteps(0, []Step{{100 * ms, 50}, {400 * ms, 20}, {900 * ms, 80}})
	_ = l.Lagged(2*time.Second, tau) // fill the cache
	l.SetSteps(400*ms, []Step{{400 * ms, 90}, {600 * ms, 30}})
	fresh := NewLoad(10)
	fresh.SetSteps(0, []Step{{100 * ms, 50}, {400 * ms, 90}, {600 * ms, 30}})
	for at := time.Duration(0); at < 3*time.Second; at += 37 * ms {
		if a, b := l.Lagged(at, tau), fresh.Lagged(at, tau); !near(float64(a), float64(b), 1e-9) {
			t.Fatalf("at %v: rewritten %v, fresh %v", at, a, b)
		}
		if a, b := l.Mean(at-50*ms, at, tau), fresh.Mean(at-50*ms, at, tau); !near(float64(a), float64(b), 1e-9) {
			t.Fatalf("mean at %v: rewritten %v, fresh %v", at, a, b)
		}
	}
}

func TestReadSeesTruthChanges(t *testing.T) {
	l := NewLoad(100)
	v := clock.NewVirtual(time.Time{})
	p, _ := NewPublished(v, l, powerChan("x"), ideal(100*ms, 0), 1)
	if got := readAt(t, v, p, 250*ms); got != 100 {
		t.Fatalf("got %v", got)
	}
	// A change that reaches back before the current update (a command that started a
	// moment before the observer was told) is seen at once.
	l.Set(150*ms, 400)
	if got := readAt(t, v, p, 260*ms); got != 400 {
		t.Errorf("after the change: got %v, want 400", got)
	}
}

func TestUnsupported(t *testing.T) {
	u := NewUnsupported(powerChan("power.module.instant"))
	dst, err := u.Read(make([]sensor.Reading, 2))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "not supported on this device") {
		t.Errorf("err = %v", err)
	}
	if len(dst) != 2 {
		t.Error("Read changed dst")
	}
}

func TestConcurrentReadsAndWrites(t *testing.T) {
	l := NewLoad(100)
	clk := clock.NewReal()
	var sensors []sensor.Sensor
	for i, m := range []sensormodel.Model{ideal(ms, 0), ideal(ms, 5*ms), {Period: ms, Tau: 50 * ms, Window: 2 * ms, Gain: 1}} {
		p, err := NewPublished(clk, l, powerChan(string(rune('a'+i))), m, 1)
		if err != nil {
			t.Fatal(err)
		}
		sensors = append(sensors, p)
	}
	b, _ := NewBuffered(clk, l, powerChan("s"), ideal(ms, ms), 1, 50)
	c, _ := NewCounter(clk, l, trace.Channel{Name: "e", Quantity: trace.QEnergy}, sensormodel.Model{Period: ms, Gain: 1, Quantum: 0.001}, 1, 0)
	sensors = append(sensors, b, c)
	ctx, cancel := context.WithTimeout(context.Background(), 50*ms)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range sensors {
		wg.Go(func() {
			var buf []sensor.Reading
			for ctx.Err() == nil {
				var err error
				if buf, err = s.Read(buf[:0]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		p := units.Power(100)
		for ctx.Err() == nil {
			p = 800 - p
			l.Set(clk.Now(), p)
			time.Sleep(100 * time.Microsecond)
		}
	})
	wg.Wait()
}

// fakeClock is a clock that moves by step at every Now, for benchmarks.
type fakeClock struct {
	t, step time.Duration
}

func (f *fakeClock) Now() time.Duration                               { f.t += f.step; return f.t }
func (f *fakeClock) Epoch() time.Time                                 { return clock.DefaultEpoch }
func (f *fakeClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func BenchmarkPublishedRead(b *testing.B) {
	l := NewLoad(120)
	for i := range 10000 {
		l.Set(time.Duration(i)*7*ms, units.Power(100+i%500))
	}
	for _, bc := range []struct {
		name string
		m    sensormodel.Model
	}{
		{"instant", sensormodel.Model{Period: 100 * ms, Window: 25 * ms, Noise: 0.1, Quantum: 0.001, Gain: 1}},
		{"average-jitter", sensormodel.Model{Period: 100 * ms, Jitter: 0.1, Window: time.Second, Noise: 0.1, Quantum: 0.001, Gain: 1}},
		{"rc-lag", sensormodel.Model{Period: 15 * ms, Jitter: 0.45, Tau: 840 * ms, Noise: 0.3, Quantum: 0.001, Gain: 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// A poll every 50 µs, as a Sampler in max mode.
			clk := &fakeClock{step: 50 * time.Microsecond}
			p, err := NewPublished(clk, l, powerChan("x"), bc.m, 1)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]sensor.Reading, 0, 1)
			for b.Loop() {
				buf, _ = p.Read(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/read")
		})
	}
}

// A sensor that averages the last 25 ms of every 100 ms misses a 10 ms pulse between its
// windows and sees 40 % of one inside a window.
func ExampleNewPublished() {
	load := NewLoad(100)
	load.SetSteps(0, []Step{{1030 * ms, 500}, {1040 * ms, 100}, {1180 * ms, 500}, {1190 * ms, 100}})
	clk := clock.NewVirtual(time.Time{})
	ch := trace.Channel{Name: "power.instant", Quantity: trace.QPower}
	p, err := NewPublished(clk, load, ch, sensormodel.Model{Period: 100 * ms, Window: 25 * ms, Gain: 1, Quantum: 0.001}, 1)
	if err != nil {
		panic(err)
	}
	for _, at := range []time.Duration{1100 * ms, 1200 * ms} {
		clk.AdvanceTo(at)
		r, _ := p.Read(nil)
		fmt.Printf("%v: %.3f W (true energy since the last update %.3f J)\n", at, r[0].Value, load.Energy(at-100*ms, at))
	}
	fmt.Println(p.Channel().Description)
	// Output:
	// 1.1s: 100.000 W (true energy since the last update 14.000 J)
	// 1.2s: 260.000 W (true energy since the last update 14.000 J)
	// sim: T=100 ms, boxcar W=25 ms, gain 1, quantum 1 mW
}
