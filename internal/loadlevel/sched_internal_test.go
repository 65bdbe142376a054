package loadlevel

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
)

func TestSleepUntil(t *testing.T) {
	clk := clock.NewReal()
	for _, d := range []time.Duration{-time.Millisecond, 0, 30 * time.Microsecond, 3 * time.Millisecond} {
		at := clk.Now() + d
		if err := sleepUntil(context.Background(), clk, at); err != nil {
			t.Fatalf("sleepUntil(+%v): %v", d, err)
		}
		if now := clk.Now(); now < at {
			t.Errorf("sleepUntil(+%v) returned %v early", d, at-now)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepUntil(ctx, clk, clk.Now()+100*time.Microsecond); err == nil {
		t.Error("sleepUntil with a cancelled context returned nil")
	}
}
