package loadlevel

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/ptd"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

func TestFFTAgainstReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for n := MinFFTSize; n <= 1<<16; n *= 2 { // up to MaxFFTSize it only takes longer
		x := make([]complex128, n)
		x32 := make([]complex64, n)
		for i := range x {
			x32[i] = complex(float32(2*r.Float64()-1), float32(2*r.Float64()-1))
			x[i] = complex128(x32[i])
		}
		ref := ReferenceFFT(x)
		if n <= 1024 { // the O(n²) DFT holds the reference itself
			dft := DFT(x)
			var e float64
			for i := range dft {
				e = math.Max(e, cmplx.Abs(dft[i]-ref[i]))
			}
			if e > 1e-9*float64(n) {
				t.Errorf("n=%d: reference FFT differs from the DFT by %g", n, e)
			}
		}
		got := make([]complex64, n)
		NewPlan(n).Transform(got, x32)
		if e := RelError(got, ref); e > DefaultTolerance/10 {
			t.Errorf("n=%d: float32 FFT relative error %g", n, e)
		}
	}
	for _, bad := range []int{0, 32, 100, 3 << 10, MaxFFTSize * 2} {
		if _, err := NewFFT(bad); err == nil {
			t.Errorf("NewFFT(%d) accepted", bad)
		}
	}
}

func quick() Intervals {
	return Intervals{Warmup: time.Second, Calibrations: 3, Pre: 2 * time.Second, Record: 30 * time.Second, Post: 2 * time.Second, Idle: 5 * time.Second}
}

func virtualRun(t *testing.T, tx Transaction, users int, levels []float64) *RunResult {
	t.Helper()
	res, err := Measure(context.Background(), Config{
		Tx: tx, Users: users, Levels: levels, Intervals: quick(), Clock: clock.NewVirtual(time.Time{}),
		Meters: []Meter{ModelMeter{Idle: 50, PerBusyUser: 20}}, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// defaultLevelsRun is one virtual run of DefaultLevels (FFT-64 at 768 µs a transaction, 4
// users, seed 7, quick intervals), shared by TestLevelsOnTarget and TestInterArrivalKS: they
// check different things of the same run (each level's load; the delays' distribution at
// 50 %), and the run is about a million transactions (2 s of CPU). Each test had run its own
// until issue 30; the KS test's run differed only in running the 50 % level alone.
var defaultLevelsRun struct {
	once sync.Once
	res  *RunResult
	err  error
}

func sharedDefaultLevelsRun(t *testing.T) *RunResult {
	t.Helper()
	r := &defaultLevelsRun
	r.once.Do(func() {
		f, _ := NewFFT(64)
		f.NsPerOp = 2000 // 768 µs per transaction: 4 users calibrate to ~5200 tx/s
		r.res, r.err = Measure(context.Background(), Config{
			Tx: f, Users: 4, Levels: DefaultLevels, Intervals: quick(), Clock: clock.NewVirtual(time.Time{}),
			Meters: []Meter{ModelMeter{Idle: 50, PerBusyUser: 20}}, Seed: 7,
		})
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.res
}

// Every level within ±2 % (relative) of its target, on the virtual clock.
func TestLevelsOnTarget(t *testing.T) {
	t.Parallel()
	f, _ := NewFFT(64)
	f.NsPerOp = 2000
	res := sharedDefaultLevelsRun(t)
	if !res.Valid {
		t.Fatalf("invalid: %v", res.Invalid)
	}
	want := 4 / f.ModelTime(nil).Seconds()
	if math.Abs(res.CalibratedRate/want-1) > 0.001 {
		t.Errorf("calibrated %g tx/s, want %g", res.CalibratedRate, want)
	}
	if len(res.Levels) != 5 || !res.Levels[4].ActiveIdle || res.Levels[4].TxPerS != 0 {
		t.Fatalf("levels = %+v", res.Levels)
	}
	prevP := math.Inf(1)
	for _, l := range res.Levels {
		if !l.ActiveIdle {
			rel := l.ActualLoad/l.TargetLoad - 1
			t.Logf("%s target %.0f%% actual %.2f%% (rel %+.2f%%) %.0f tx/s %.1f W %.1f tx/J", l.Label, 100*l.TargetLoad, 100*l.ActualLoad, 100*rel, l.TxPerS, l.PowerW, l.TxPerJ)
			if math.Abs(rel) > 0.02 {
				t.Errorf("%s: actual %.4f vs target %.2f", l.Label, l.ActualLoad, l.TargetLoad)
			}
		}
		if l.PowerW > prevP {
			t.Errorf("power rises as load falls: %+v", l)
		}
		prevP = l.PowerW
	}
	if res.Levels[4].PowerW != 50 {
		t.Errorf("active idle power %g, want 50", res.Levels[4].PowerW)
	}
	var sumTx, sumP float64
	for _, l := range res.Levels {
		sumTx, sumP = sumTx+l.TxPerS, sumP+l.PowerW
	}
	if math.Abs(res.OverallScore-sumTx/sumP) > 1e-9 {
		t.Errorf("overall score %g, want %g", res.OverallScore, sumTx/sumP)
	}
	if res.Verified == 0 {
		t.Error("nothing was verified")
	}
	// Deterministic on the virtual clock: this whole run again where the slow tests run (CI);
	// by default two short runs (TestShortRunsDeterministic), the same claim for a third of
	// the CPU (issue 30).
	if !testkit.SlowOn() {
		return
	}
	f2, _ := NewFFT(64)
	f2.NsPerOp = 2000
	res2 := virtualRun(t, f2, 4, DefaultLevels)
	if res2.OverallScore != res.OverallScore || res2.Levels[2].Transactions != res.Levels[2].Transactions {
		t.Error("two virtual runs with one seed differ")
	}
}

// Two runs with one seed on the virtual clock give the same figures, over a short record
// (determinism does not depend on its length; TestLevelsOnTarget checks a whole run again
// where the slow tests run). A 2 s record with 0.5 s before and after it, and one counted
// calibration (was 5 s, 2 s and two, issue 30): each run still has some 20 000 transactions
// over four users, with meters, levels and the active idle, all of which must repeat to the
// last transaction and watt.
func TestShortRunsDeterministic(t *testing.T) {
	t.Parallel()
	run := func() *RunResult {
		f, _ := NewFFT(64)
		f.NsPerOp = 2000
		iv := quick()
		iv.Calibrations, iv.Record, iv.Pre, iv.Post = 2, 2*time.Second, 500*time.Millisecond, 500*time.Millisecond
		res, err := Measure(context.Background(), Config{
			Tx: f, Users: 4, Levels: []float64{1, 0.5}, Intervals: iv, Clock: clock.NewVirtual(time.Time{}),
			Meters: []Meter{ModelMeter{Idle: 50, PerBusyUser: 20}}, Seed: 7,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(), run()
	if a.OverallScore <= 0 || len(a.Levels) != 3 || a.Levels[1].Transactions == 0 {
		t.Fatalf("short run: %+v", a)
	}
	if b.OverallScore != a.OverallScore || b.CalibratedRate != a.CalibratedRate {
		t.Errorf("two virtual runs with one seed differ: score %g, %g; calibrated %g, %g", a.OverallScore, b.OverallScore, a.CalibratedRate, b.CalibratedRate)
	}
	for i := range a.Levels {
		if b.Levels[i].Transactions != a.Levels[i].Transactions || b.Levels[i].PowerW != a.Levels[i].PowerW {
			t.Errorf("level %d differs: %+v, %+v", i, a.Levels[i], b.Levels[i])
		}
	}
}

// The delays between transaction starts pass a Kolmogorov–Smirnov test against the
// exponential with the level's mean (U / rate).
// It reads the 50 % level of TestLevelsOnTarget's run (the same transactions, users and
// seed; the delays are capped at maxDelays, 5000, in either): a schedule whose delays are
// not exponential, or whose mean is not U / rate, fails it there as it did on a run of its
// own.
func TestInterArrivalKS(t *testing.T) {
	t.Parallel()
	res := sharedDefaultLevelsRun(t)
	l := res.Levels[2]
	if l.TargetLoad != 0.5 {
		t.Fatalf("level 2 is %g, want the 50 %% level", l.TargetLoad)
	}
	mean := 4 / (0.5 * res.CalibratedRate)
	d := append([]float64(nil), l.Delays...)
	sort.Float64s(d)
	n := float64(len(d))
	var D, sum float64
	for i, x := range d {
		c := 1 - math.Exp(-x/mean)
		D = math.Max(D, math.Max(c-float64(i)/n, float64(i+1)/n-c))
		sum += x
	}
	crit := 1.628 / math.Sqrt(n) // α = 0.01
	t.Logf("KS: n=%d D=%.4f critical %.4f; mean %.4g s, want %.4g s", len(d), D, crit, sum/n, mean)
	if len(d) < 1000 || D > crit {
		t.Errorf("KS test failed: n=%d D=%g > %g", len(d), D, crit)
	}
	if math.Abs(sum/n/mean-1) > 0.05 {
		t.Errorf("mean delay %g, want %g", sum/n, mean)
	}
}

// slowTx takes 1 ms, except every 100th transaction, which takes 50 ms: the user falls
// behind its schedule and must catch up without skipping transactions.
type slowTx struct{ n int64 }

func (s *slowTx) Name() string                          { return "slow" }
func (s *slowTx) NewContext() any                       { return nil }
func (s *slowTx) Generate(u *User) any                  { s.n++; return s.n }
func (s *slowTx) Process(u *User, in any) (any, error)  { return in, nil }
func (s *slowTx) Snapshot(in, out any) (any, any)       { return in, out }
func (s *slowTx) Verify(in, out any, tol float64) error { return nil }
func (s *slowTx) ModelTime(in any) time.Duration {
	if in.(int64)%100 == 0 {
		return 50 * time.Millisecond
	}
	return time.Millisecond
}

// sleepingTx is slowTx whose Process sleeps its model time: a real-clock transaction.
type sleepingTx struct{ slowTx }

func (s *sleepingTx) Process(u *User, in any) (any, error) {
	time.Sleep(s.ModelTime(in))
	return in, nil
}

func TestLateUserCatchesUp(t *testing.T) {
	t.Parallel()
	res := virtualRun(t, &slowTx{}, 1, []float64{0.5, 0.25})
	for _, l := range res.Levels[:2] {
		if math.Abs(l.ActualLoad-l.TargetLoad) > 0.02 {
			t.Errorf("%s: actual %.3f, target %.2f", l.Label, l.ActualLoad, l.TargetLoad)
		}
	}
}

// Verification catches a planted wrong result and names the transaction.
//
// A 5 s record and one counted calibration, not quick()'s 30 s and two (issue 30: 1.1 -> 0.2 s
// of CPU): a 20th of the transactions is checked and every 50th of user 1 is wrong, so a run
// of a few thousand transactions still holds several failures (the log line counts them; the
// seed fixes them), and the clean run, the same short run, is still valid.
func TestVerificationCatchesPlantedError(t *testing.T) {
	t.Parallel()
	f, _ := NewFFT(256)
	f.NsPerOp = 2000
	f.Corrupt = func(user int, seq int64) bool { return user == 1 && seq%50 == 0 }
	iv := quick()
	iv.Calibrations, iv.Record = 2, 5*time.Second
	res, err := Measure(context.Background(), Config{
		Tx: f, Users: 2, Levels: []float64{0.5}, Intervals: iv, Clock: clock.NewVirtual(time.Time{}),
		Seed: 3, VerifyFraction: 0.05,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || len(res.VerifyFailures) == 0 {
		t.Fatalf("planted errors not caught: verified %d, valid %v", res.Verified, res.Valid)
	}
	if !strings.Contains(res.VerifyFailures[0], "fft-256 transaction ") || !strings.Contains(res.VerifyFailures[0], "of user 1") {
		t.Errorf("failure does not name the transaction: %q", res.VerifyFailures[0])
	}
	t.Logf("%d checks, %d failures, first: %s", res.Verified, len(res.VerifyFailures), res.VerifyFailures[0])
	// Without the planted error the same run is valid.
	f.Corrupt = nil
	res, _ = Measure(context.Background(), Config{Tx: f, Users: 2, Levels: []float64{0.5}, Intervals: iv, Clock: clock.NewVirtual(time.Time{}), Seed: 3, VerifyFraction: 0.05})
	if !res.Valid {
		t.Errorf("clean run invalid: %v", res.Invalid)
	}
	t.Logf("clean run: %d checks, 50 %% level at %.2f %%", res.Verified, 100*res.Levels[0].ActualLoad)
}

// The real clock: short intervals, real goroutines, the background verifier.
func TestRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real clock")
	}
	f, _ := NewFFT(64)
	f.Corrupt = func(user int, seq int64) bool { return seq == 5 }
	// Two calibrations, the first not counted (was three, issue 30: the two users run back to
	// back through each, a third of the test's CPU): the calibrated rate, the planted error
	// (the 5th transaction, checked at once: VerifyFraction 1) and the 2 % level's throughput
	// are all still there to check.
	iv := Intervals{Warmup: 50 * time.Millisecond, Calibrations: 2, Pre: 50 * time.Millisecond, Record: 300 * time.Millisecond, Post: 20 * time.Millisecond, Idle: 100 * time.Millisecond}
	res, err := Measure(context.Background(), Config{Tx: f, Users: 2, Levels: []float64{0.5, 0.02}, Intervals: iv, Clock: clock.NewReal(), Seed: 1, VerifyFraction: 1, VerifyQueue: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.VerifyFailures) == 0 {
		t.Error("planted error not caught on the real clock")
	}
	l := res.Levels[1]
	t.Logf("real clock: calibrated %.0f tx/s; 50%% level actual %.2f%%, 2%% level actual %.2f%%", res.CalibratedRate, 100*res.Levels[0].ActualLoad, 100*l.ActualLoad)
	if res.CalibratedRate <= 0 || l.TxPerS <= 0 {
		t.Errorf("no throughput: %+v", res)
	}
}

func TestRAPLFixture(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(p, v string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "intel-rapl:0", "energy_uj"), "1000000")
	write(filepath.Join(root, "intel-rapl:0", "max_energy_range_uj"), "262143328850")
	write(filepath.Join(root, "intel-rapl:1", "energy_uj"), "262143000000") // about to wrap
	write(filepath.Join(root, "intel-rapl:1", "max_energy_range_uj"), "262143328850")
	write(filepath.Join(root, "intel-rapl:0:0", "energy_uj"), "5") // a sub-zone: ignored
	clk := clock.NewVirtual(time.Time{})
	r, err := OpenRAPL(root, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Begin("x"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	write(filepath.Join(root, "intel-rapl:0", "energy_uj"), "101000000") // +100 J
	write(filepath.Join(root, "intel-rapl:1", "energy_uj"), "99671150")  // wrapped: +100 J
	p, err := r.End(Window{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p-100) > 1e-6 {
		t.Errorf("RAPL power %g W, want 100", p)
	}
	if _, err := OpenRAPL(t.TempDir(), clk); err == nil {
		t.Error("empty powercap tree accepted")
	}
}

func TestPTDMeter(t *testing.T) {
	f, err := ptd.StartFake(&ptd.Fake{Power: func() float64 { return 321 }, Interval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ptd.Dial(context.Background(), f.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Real time, and the transactions take it (sleepingTx): slowTx's instant Process made
	// the calibration a busy loop and the level's rate millions a second, which on the
	// loaded 2-core VM once left no transaction in a 40 ms calibration and once no
	// analyzer sample in a level. 200 ms hold about 150 of them.
	tx := &sleepingTx{}
	iv := Intervals{Calibrations: 2, Pre: 5 * time.Millisecond, Record: 200 * time.Millisecond, Idle: 100 * time.Millisecond}
	res, err := Measure(context.Background(), Config{Tx: tx, Users: 1, Levels: []float64{0.5}, Intervals: iv, Clock: clock.NewReal(), Meters: []Meter{&PTDMeter{C: c}}, LoadTolerance: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Levels {
		// The analyzer's figure is the wall's: beside the others, never added to the GPU's.
		if l.PowerW != 321 || l.WallPowerW != 321 || l.HostPowerW != 0 || l.TotalPowerW != 0 {
			t.Errorf("%s: power %g, wall %g, host %g, sum %g: want 321 from the wall alone (warnings %v)", l.Label, l.PowerW, l.WallPowerW, l.HostPowerW, l.TotalPowerW, res.Warnings)
		}
	}
	marks := f.MarkSamples()
	if marks["_003_lvl_rc_"] == 0 || marks["_004_idle_rc_"] == 0 {
		t.Errorf("marks = %v", marks)
	}
}

func TestParseLevels(t *testing.T) {
	t.Parallel()
	if l, _ := ParseLevels("ssj"); len(l) != 10 || l[9] != 0.1 {
		t.Errorf("ssj = %v", l)
	}
	if l, err := ParseLevels("100,60,20"); err != nil || len(l) != 3 || l[1] != 0.6 {
		t.Errorf("list = %v, %v", l, err)
	}
	for _, bad := range []string{"0", "120", "x", "50,"} {
		if _, err := ParseLevels(bad); err == nil {
			t.Errorf("ParseLevels(%q) accepted", bad)
		}
	}
	if CV([]float64{1, 1, 1}) != 0 || math.Abs(CV([]float64{1, 2, 3})-0.5) > 1e-12 {
		t.Error("CV")
	}
}

// A level off its target by more than LoadTolerance is flagged, and the reason names the
// level by its target and gives the actual load.
//
// A 2 s record with 0.5 s before and after it, not quick()'s 30 s and 2 s (issue 30: 1.4 ->
// 0.1 s of CPU): the 1e-9 tolerance flags
// the 50 % level at any length (its load is a ratio of transaction counts, not exactly one
// half: the test fails at once if it ever is), and the reason's wording does not depend on
// it; TestLevelsOnTarget checks the loads themselves on the full record.
func TestLevelOffTargetNamed(t *testing.T) {
	t.Parallel()
	f, _ := NewFFT(64)
	f.NsPerOp = 2000
	iv := quick()
	iv.Calibrations, iv.Record, iv.Pre, iv.Post = 2, 2*time.Second, 500*time.Millisecond, 500*time.Millisecond
	res, err := Measure(context.Background(), Config{
		Tx: f, Users: 4, Levels: []float64{1, 0.5}, Intervals: iv, Clock: clock.NewVirtual(time.Time{}),
		Meters: []Meter{ModelMeter{Idle: 50, PerBusyUser: 20}}, Seed: 7, LoadTolerance: 1e-9,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || len(res.Invalid) == 0 {
		t.Fatalf("a 1e-9 tolerance let every level pass: %+v", res.Levels)
	}
	var l50 *Level
	for i := range res.Levels {
		if res.Levels[i].TargetLoad == 0.5 {
			l50 = &res.Levels[i]
		}
	}
	want := fmt.Sprintf("level 50 %% (interval %s): actual load %.2f %%", strings.Trim(l50.Label, "_"), 100*l50.ActualLoad)
	found := false
	for _, why := range res.Invalid {
		found = found || strings.HasPrefix(why, want)
	}
	if !found || l50.Valid {
		t.Errorf("reasons %q; want one starting %q", res.Invalid, want)
	}
}

// ModelMeter is a power model for the engine's tests on the virtual clock:
// Idle watts plus PerBusyUser watts for each user busy on average. It is a model, not a
// measurement, and is reported as such.
type ModelMeter struct{ Idle, PerBusyUser float64 }

// Name implements Meter.
func (m ModelMeter) Name() string { return "model (virtual clock)" }

// Begin implements Meter.
func (m ModelMeter) Begin(string) error { return nil }

// End implements Meter.
func (m ModelMeter) End(w Window) (float64, error) {
	return m.Idle + m.PerBusyUser*w.BusySeconds/w.Length.Seconds(), nil
}
