package sensor

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

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

// TestSlowShare: in Fixed mode with SlowShare, a channel whose calls are slow is read at
// most every latency/SlowShare (2 ms / 1 % = 0.2 s here), the others at the interval;
// without it every channel at the interval.
func TestSlowShare(t *testing.T) {
	run := func(share float64) (slow, fast int) {
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
	slow, fast := run(0.01)
	t.Logf("SlowShare 1 %%: the 2 ms channel polled %d times in 1.2 s, the cheap one %d", slow, fast)
	if slow > 20 || fast < 40 {
		t.Errorf("SlowShare 1 %%: slow channel %d polls (want <= 20: 8 at the interval, then every ~0.2 s), cheap one %d (want >= 40)", slow, fast)
	}
	slow0, _ := run(0)
	if slow0 < 40 {
		t.Errorf("SlowShare 0: the slow channel polled %d times in 1.2 s, want every 10 ms (>= 40)", slow0)
	}
}
