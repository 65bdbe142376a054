package sensor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestRealClock runs the tests whose samplers poll on the real clock side by side, each as
// a subtest under its own name (-run 'TestRealClock/TestSlowShare'). They sleep through
// 0.3-1.5 s and take little CPU: as parallel tests they ran two at a time (-parallel is
// GOMAXPROCS, 2 here and on CI), 6-7 s of the package's wall one after another, beside the
// CPU-bound twin tests; here they run all at once, ~1.6 s, and serially before the package's
// parallel tests, so no CPU-bound neighbour of this process delays their polls (issue 30).
func TestRealClock(t *testing.T) {
	sideBySide(t, map[string]func(*testing.T){
		"TestSlowShare":               testSlowShare,
		"TestLeanPolling":             testLeanPolling,
		"TestCounterShareByMeanCall":  testCounterShareByMeanCall,
		"TestSlowCounterCallsLeftOut": testSlowCounterCallsLeftOut,
		"TestSamplerRealClock":        testSamplerRealClock,
	})
}

// sideBySide runs each function as a subtest of t, all at once: t.Run from goroutines, not
// t.Parallel, so that -parallel does not queue them.
func sideBySide(t *testing.T, tests map[string]func(*testing.T)) {
	t.Helper()
	var wg sync.WaitGroup
	for name, f := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, f)
		}()
	}
	wg.Wait()
}

// slowSensor is a state channel whose every call takes 2 ms (an H200's clock.sm took 1.5).
type slowSensor struct{ name string }

func (s slowSensor) Channel() trace.Channel {
	return trace.Channel{Name: s.name, Quantity: trace.QFrequency, Unit: "Hz"}
}

func (s slowSensor) Read(dst []Reading) ([]Reading, error) {
	time.Sleep(2 * time.Millisecond)
	return append(dst, Reading{Value: 1e9}), nil
}

// cheapSensor is a power channel whose calls cost nothing.
type cheapSensor struct{}

func (cheapSensor) Channel() trace.Channel {
	return trace.Channel{Name: "power.usage", Quantity: trace.QPower, Unit: "W"}
}

func (cheapSensor) Read(dst []Reading) ([]Reading, error) {
	return append(dst, Reading{Value: 100}), nil
}

// testSlowShare (TestRealClock/TestSlowShare): in Fixed mode with SlowShare, a channel whose
// calls are slow is read at most every latency/SlowShare (2 ms / 1 % = 0.2 s here), the others
// at the interval; without it every channel at the interval.
func testSlowShare(t *testing.T) {
	run := func(t *testing.T, share float64) (slow, fast int) {
		s := New(clock.NewReal(), []Sensor{slowSensor{"clock.sm"}, cheapSensor{}}, Options{Mode: Fixed, Interval: 10 * time.Millisecond, SlowShare: share})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1200 * time.Millisecond)
		chans, _ := s.Stop()
		for _, c := range chans {
			if c.Name == "clock.sm" {
				slow = c.Stats.Polls
			} else {
				fast = c.Stats.Polls
			}
		}
		return slow, fast
	}
	// The two samplers side by side (each sleeps through its 1.2 s).
	sideBySide(t, map[string]func(*testing.T){"1%": func(t *testing.T) {
		slow, fast := run(t, 0.01)
		t.Logf("SlowShare 1 %%: the 2 ms channel polled %d times in 1.2 s, the cheap one %d", slow, fast)
		if slow > 20 || fast < 40 {
			t.Errorf("SlowShare 1 %%: slow channel %d polls (want <= 20: 8 at the interval, then every ~0.2 s), cheap one %d (want >= 40)", slow, fast)
		}
	}, "0": func(t *testing.T) {
		slow0, _ := run(t, 0)
		if slow0 < 40 {
			t.Errorf("SlowShare 0: the slow channel polled %d times in 1.2 s, want every 10 ms (>= 40)", slow0)
		}
	}})
}

// testLeanPolling (TestRealClock/TestLeanPolling): measure's default, --poll lean, caps a slow
// state channel in adaptive mode by SlowShare (2 ms / 1 % = 0.2 s here) and reads a cheap
// state channel at most every LeanStateInterval, while a power channel keeps its adaptive
// interval; plain adaptive polling reads both state channels far more often.
func testLeanPolling(t *testing.T) {
	run := func(t *testing.T, o Options) (slow, temp, power int) {
		s := New(clock.NewReal(), []Sensor{slowSensor{"clock.sm"}, slowSensor{"temp.gpu"}, cheapSensor{}}, o)
		// temp.gpu here: a second state channel, its reads 2 ms as well
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		chans, _ := s.Stop()
		for _, c := range chans {
			switch c.Name {
			case "clock.sm":
				slow = c.Stats.Polls
			case "temp.gpu":
				temp = c.Stats.Polls
			default:
				power = c.Stats.Polls
			}
		}
		return
	}
	lean, err := ParsePoll("lean")
	if err != nil || !lean.Lean || lean.String() != "lean" {
		t.Fatalf("ParsePoll(lean) = %+v, %v", lean, err)
	}
	lean.SlowShare = 0.01
	// The two samplers side by side (each sleeps through its 1.5 s).
	sideBySide(t, map[string]func(*testing.T){"lean": func(t *testing.T) {
		slow, temp, power := run(t, lean)
		t.Logf("lean: clock.sm %d polls, temp.gpu %d, power.usage %d in 1.5 s", slow, temp, power)
		if slow > 20 || temp > 20 || power < 60 {
			t.Errorf("lean: state channels polled %d and %d times in 1.5 s (want <= 20: learning, then >= 0.2 s apart), the power channel %d (want >= 60)", slow, temp, power)
		}
	}, "adaptive": func(t *testing.T) {
		slowA, _, _ := run(t, Options{Mode: Adaptive})
		if slowA < 25 {
			t.Errorf("adaptive: the state channel polled %d times in 1.5 s, want more than lean's (>= 25)", slowA)
		}
	}})
}

// burstyCounter is an energy counter whose every fourth call takes 8 ms and the others
// nothing: its median call is free, its mean 2 ms.
type burstyCounter struct{ n *int }

func (c burstyCounter) Channel() trace.Channel {
	return trace.Channel{Name: "energy.total", Quantity: trace.QEnergy, Unit: "J", Cumulative: true}
}

func (c burstyCounter) Read(dst []Reading) ([]Reading, error) {
	*c.n++
	if *c.n%4 == 0 {
		time.Sleep(8 * time.Millisecond)
	}
	return append(dst, Reading{Value: float64(*c.n)}), nil
}

// testCounterShareByMeanCall (TestRealClock/TestCounterShareByMeanCall): in Fixed mode a
// counter's calls take at most CPUShare of the wall time by their mean duration: a counter
// whose median call is free and every fourth call costly is read every mean/CPUShare
// (2 ms / 2 % = 0.1 s here), not at the 10 ms interval (by the median it was: its calls then
// took ~15 % of the wall time).
func testCounterShareByMeanCall(t *testing.T) {
	n := 0
	s := New(clock.NewReal(), []Sensor{burstyCounter{&n}}, Options{Mode: Fixed, Interval: 10 * time.Millisecond, CPUShare: 0.02})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(1500 * time.Millisecond)
	chans, _ := s.Stop()
	wall := time.Since(t0)
	polls := chans[0].Stats.Polls
	inCalls := time.Duration(polls/4) * 8 * time.Millisecond
	share := inCalls.Seconds() / wall.Seconds()
	t.Logf("%d calls in %s: ~%s in calls, %.1f %% of the wall time (cap 2 %%)", polls, wall.Round(time.Millisecond), inCalls, 100*share)
	if share > 0.05 {
		t.Errorf("the counter's calls took %.1f %% of the wall time, want about the 2 %% cap", 100*share)
	}
}

// stallingCounter is an energy counter that steps every 100 ms (its hint) and counts
// 1 J per ms of real time; its every third call stalls 300 ms before it reads, as a call
// queued behind other NVML clients does: the value is of the call's end.
type stallingCounter struct {
	n  *int
	t0 time.Time
}

func (c stallingCounter) Channel() trace.Channel {
	return trace.Channel{Name: "energy.total", Quantity: trace.QEnergy, Unit: "J", Cumulative: true}
}

func (c stallingCounter) PeriodHint() time.Duration { return 100 * time.Millisecond }

func (c stallingCounter) Read(dst []Reading) ([]Reading, error) {
	*c.n++
	if *c.n%3 == 0 {
		time.Sleep(300 * time.Millisecond)
	}
	return append(dst, Reading{Value: float64(time.Since(c.t0).Microseconds()) / 1e3}), nil
}

// testSlowCounterCallsLeftOut (TestRealClock/TestSlowCounterCallsLeftOut): a counter reading
// whose call took longer than half the counter's update period is left out and counted
// (stamped at the call's middle it would lie ~40 ms early here, ~1.4 s on a busy two-H200
// host); the readings kept lie within half a short call and half an update period of their
// stamps.
func testSlowCounterCallsLeftOut(t *testing.T) {
	n := 0
	c := stallingCounter{n: &n, t0: time.Now()}
	clk := clock.NewReal()
	s := New(clk, []Sensor{c}, Options{Mode: Fixed, Interval: 20 * time.Millisecond, CPUShare: 1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	chans, samples := s.Stop()
	st := chans[0].Stats
	if st.SlowDropped < n/3-1 || st.SlowDropped > st.Polls/2 || st.SlowestCall < 0.3 {
		t.Errorf("%d of %d calls left out (slowest %.3f s), want every third (the stalled ones, 300 ms: %d)", st.SlowDropped, st.Polls, st.SlowestCall, n/3)
	}
	// The counter's value is the ms since c.t0 at the call's end; the trace's axis starts
	// at the clock's origin: value minus stamp is how early a reading is stamped. Kept,
	// at most half an update period and half a call of 50 ms (a stalled one kept: ~160 ms).
	skew := clk.Epoch().Sub(c.t0).Seconds()
	for _, smp := range samples {
		early := smp.Value/1e3 - skew - smp.T.Seconds()
		if early > 0.1 {
			t.Errorf("reading %.0f stamped at %.3f s: %.0f ms before it was taken", smp.Value, smp.T.Seconds(), 1e3*early)
		}
	}
}
