package gpu

import (
	"errors"
	"testing"
	"time"
)

// TestWithin: a call that returns in time gives its error; one that hangs is left behind
// after the bound.
func TestWithin(t *testing.T) {
	boom := errors.New("boom")
	if ok, err := Within(time.Second, func() error { return boom }); !ok || err != boom {
		t.Errorf("a call that returns: %v, %v", ok, err)
	}
	hang := make(chan struct{})
	defer close(hang)
	t0 := time.Now()
	if ok, err := Within(20*time.Millisecond, func() error { <-hang; return nil }); ok || err != nil {
		t.Errorf("a call that hangs: %v, %v", ok, err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("a hung call held Within for %v", d)
	}
}
