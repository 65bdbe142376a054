package ptd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestClientAgainstFake(t *testing.T) {
	f, err := StartFake(&Fake{Power: func() float64 { return 250 }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Dial(context.Background(), f.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Identify()
	if err != nil || !strings.Contains(id, "mode=power") {
		t.Fatalf("Identify = %q, %v", id, err)
	}
	if err := c.Stop(); !errors.Is(err, ErrReply) {
		t.Fatalf("Stop before Go: %v, want ErrReply", err)
	}
	if _, err := c.Watts(); !errors.Is(err, ErrNoSamples) {
		t.Fatalf("Watts before Go: %v, want ErrNoSamples", err)
	}
	if err := c.Go(5*time.Millisecond, "_001_lvl_ru_"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mark("_001_lvl_rc_"); err != nil {
		t.Fatal(err)
	}
	// Until 3 samples are logged under the mark (a 60 ms sleep gave 2 on a loaded machine),
	// bounded.
	for deadline := time.Now().Add(10 * time.Second); f.MarkSamples()["_001_lvl_rc_"] < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	rd, err := c.Watts()
	if err != nil {
		t.Fatal(err)
	}
	if rd.Avg != 250 || rd.Samples < 3 || rd.Valid != rd.Samples {
		t.Fatalf("Watts = %+v", rd)
	}
	if f.MarkSamples()["_001_lvl_rc_"] == 0 {
		t.Errorf("no samples under the mark: %v", f.MarkSamples())
	}
	// Error replies.
	if _, err := c.Command("Bogus"); !errors.Is(err, ErrReply) {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := c.Command("Go,1"); !errors.Is(err, ErrReply) {
		t.Errorf("Go,1: %v", err)
	}
	f.mu.Lock()
	f.FailNext = "Watts"
	f.mu.Unlock()
	if _, err := c.Watts(); !errors.Is(err, ErrReply) {
		t.Errorf("injected: %v", err)
	}
	if err := c.Mark("a,b"); err == nil {
		t.Error("mark with comma accepted")
	}
	want := []string{"Hello", "Identify", "Stop", "Watts", "Go,5,0,_001_lvl_ru_", "Mark,_001_lvl_rc_", "Stop", "Watts"}
	got := f.Commands()
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("commands = %q, want prefix %q", got, want)
		}
	}
}

func TestDialNotPTD(t *testing.T) {
	if _, err := Dial(context.Background(), "127.0.0.1:1", 500*time.Millisecond); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

func TestParseWatts(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
		w  Reading
	}{
		{"Watts,310.059167,223.7,365.2,240,0,240", true, Reading{310.059167, 223.7, 365.2, 240, 0, 240}},
		{"Watts,1,2,3,4,5", false, Reading{}},
		{"Volts,1,2,3,4,5,6", false, Reading{}},
		{"Watts,x,2,3,4,5,6", false, Reading{}},
		{"Watts,1,2,3,-4,5,6", false, Reading{}},
	} {
		got, err := ParseWatts(tc.in)
		if (err == nil) != tc.ok || got != tc.w {
			t.Errorf("ParseWatts(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func FuzzParseWatts(f *testing.F) {
	f.Add("Watts,310.059167,223.7,365.2,240,0,240")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseWatts(s)
		if err == nil && (r.Samples < 0 || r.Errors < 0 || r.Valid < 0) {
			t.Fatalf("negative count from %q", s)
		}
	})
}
