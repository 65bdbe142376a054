package clock

import (
	"context"
	"testing"
	"time"
)

// ticker fires every period and records when.
type ticker struct {
	name   string
	next   time.Duration
	period time.Duration
	log    *[]string
	clk    *Virtual
}

func (t *ticker) Next() time.Duration { return t.next }
func (t *ticker) Fire(now time.Duration) {
	if t.clk.Now() != now {
		panic("Fire: Now differs from the due time")
	}
	*t.log = append(*t.log, t.name+"@"+now.String())
	t.next += t.period
}

func TestVirtualFiresInOrder(t *testing.T) {
	v := NewVirtual(time.Time{})
	var log []string
	v.Add(&ticker{name: "a", next: 10 * time.Millisecond, period: 10 * time.Millisecond, log: &log, clk: v})
	v.Add(&ticker{name: "b", next: 15 * time.Millisecond, period: 15 * time.Millisecond, log: &log, clk: v})
	if err := v.Sleep(context.Background(), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []string{"a@10ms", "b@15ms", "a@20ms", "a@30ms", "b@30ms"}
	if len(log) != len(want) {
		t.Fatalf("fired %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("fired %v, want %v", log, want)
		}
	}
	if v.Now() != 30*time.Millisecond {
		t.Fatalf("Now = %v", v.Now())
	}
	if !v.Epoch().Equal(DefaultEpoch) || !IsVirtual(v) || IsVirtual(NewReal()) {
		t.Fatal("epoch or IsVirtual wrong")
	}
}

func TestVirtualRemoveAndCancel(t *testing.T) {
	v := NewVirtual(time.Time{})
	var log []string
	tk := &ticker{name: "a", next: time.Millisecond, period: time.Millisecond, log: &log, clk: v}
	v.Add(tk)
	v.Advance(3 * time.Millisecond)
	v.Remove(tk)
	v.Advance(3 * time.Millisecond)
	if len(log) != 3 {
		t.Fatalf("fired %d times, want 3 before removal", len(log))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := v.Sleep(ctx, time.Second); err == nil || v.Now() != 6*time.Millisecond {
		t.Fatalf("Sleep on a cancelled context: err %v, now %v", err, v.Now())
	}
}

func TestRealSleep(t *testing.T) {
	r := NewReal()
	t0 := r.Now()
	if err := r.Sleep(context.Background(), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := r.Now() - t0; d < 5*time.Millisecond {
		t.Fatalf("slept %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("Sleep ignored a cancelled context")
	}
}

type due struct{ at time.Duration }

func (d *due) Next() time.Duration    { return d.at }
func (d *due) Fire(now time.Duration) { d.at = Never }

func TestNextEvent(t *testing.T) {
	v := NewVirtual(time.Time{})
	if v.NextEvent() != Never {
		t.Errorf("no participants: %v, want Never", v.NextEvent())
	}
	a, b := &due{at: 5 * time.Second}, &due{at: 2 * time.Second}
	v.Add(a)
	v.Add(b)
	if got := v.NextEvent(); got != 2*time.Second {
		t.Errorf("NextEvent %v, want 2s", got)
	}
	v.AdvanceTo(3 * time.Second)
	if got := v.NextEvent(); got != 5*time.Second {
		t.Errorf("after b fired: %v, want 5s", got)
	}
}
