package status

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestGroupMergesSharedWarnings(t *testing.T) {
	var ws []Warning
	for i, k := range []string{"fp32.fma", "fp64.fma", "dram.copy", "l2.read"} {
		ws = append(ws, Warning{Code: "missed_updates", Subject: k, Key: "energy.total: updates were missed",
			Message: "energy.total: about N updates were missed", Value: float64(10 + i), Unit: "updates"})
	}
	ws = append(ws, Warnf("throttling", "power capped"), Warnf("throttling", "power capped"))
	got := Group(ws, 39)
	if len(got) != 2 {
		t.Fatalf("want 2 lines (one group, one deduplicated), got %d: %q", len(got), got)
	}
	if !strings.Contains(got[0], "on 4 of 39, 10 … 13 updates") || !strings.Contains(got[0], "fp32.fma, fp64.fma, dram.copy, l2.read") {
		t.Errorf("group line %q", got[0])
	}
	if got[1] != "power capped" {
		t.Errorf("second line %q", got[1])
	}
}

func TestGroupKeepsFewAsTheyAre(t *testing.T) {
	ws := []Warning{
		{Code: "c", Subject: "a", Key: "k", Message: "m1"},
		{Code: "c", Subject: "b", Key: "k", Message: "m2"},
	}
	got := Group(ws, 0)
	if len(got) != 2 || got[0] != "a: m1" || got[1] != "b: m2" {
		t.Errorf("got %q", got)
	}
}

func TestMarkIncompleteKeepsReasons(t *testing.T) {
	var s Status
	s.MarkIncomplete("interrupted")
	s.MarkIncomplete("interrupted")
	s.Merge("micro", Status{Incomplete: true, Reason: "GPU lost"})
	if !s.Incomplete || s.Reason != "interrupted; micro: GPU lost" {
		t.Errorf("status %+v", s)
	}
}

// TestWarningDecodesOldStrings: results.json files written before warnings had codes hold
// plain strings; they load as messages without a code, beside new objects.
func TestWarningDecodesOldStrings(t *testing.T) {
	var ws []Warning
	in := `["micro: int32.add: power.usage and power.samples disagree", {"code":"missed_updates","subject":"fp32.fma","key":"k","message":"m","value":12,"unit":"updates"}]`
	if err := json.Unmarshal([]byte(in), &ws); err != nil {
		t.Fatal(err)
	}
	want := []Warning{{Message: "micro: int32.add: power.usage and power.samples disagree"},
		{Code: "missed_updates", Subject: "fp32.fma", Key: "k", Message: "m", Value: 12, Unit: "updates"}}
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("got %+v\nwant %+v", ws, want)
	}
	// A new warning survives a round trip.
	b, err := json.Marshal(want[1])
	if err != nil {
		t.Fatal(err)
	}
	var back Warning
	if err := json.Unmarshal(b, &back); err != nil || back != want[1] {
		t.Errorf("round trip %s: %+v, %v", b, back, err)
	}
	for _, bad := range []string{`3`, `"unterminated`, `{"value":"x"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestGroupByStage: a warning shared within a stage is told once with the stage before it
// and its count out of that stage's total; another stage's members form their own group;
// signed figures keep their signs.
func TestGroupByStage(t *testing.T) {
	var ws []Warning
	for i, k := range []string{"int32.add", "fp32.sin", "l2.read"} {
		ws = append(ws, Warning{Code: "channel_disagreement", Subject: "micro: " + k, Key: "A and B disagree", Message: "m", Value: float64(i*8 - 5), Unit: "%"})
	}
	ws = append(ws, Warning{Code: "channel_disagreement", Subject: "archline: baseline", Key: "A and B disagree", Message: "A and B disagree by 7 %", Value: 7, Unit: "%"})
	got := GroupEach(ws, func(stage string) int { return map[string]int{"micro": 39}[stage] })
	want := []string{"micro: A and B disagree (on 3 of 39, -5.0 … +11.0 %: int32.add, fp32.sin, l2.read)", "archline: baseline: A and B disagree by 7 %"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestWithSubject(t *testing.T) {
	ws := []Warning{{Message: "a"}, {Subject: "fp32", Message: "b"}}
	got := WithSubject("archline", ws)
	if got[0].Subject != "archline" || got[1].Subject != "archline: fp32" || ws[1].Subject != "fp32" {
		t.Errorf("got %+v (from %+v)", got, ws)
	}
}

func TestWriteText(t *testing.T) {
	var b strings.Builder
	WriteText(&b, " ", nil)
	if b.Len() != 0 {
		t.Errorf("no warnings wrote %q", b.String())
	}
	WriteText(&b, "  ", []string{"a", "b"})
	if want := "\n  warnings:\n  ! a\n  ! b\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestGroupPercentOneDecimal(t *testing.T) {
	var ws []Warning
	for i, v := range []float64{-7, 9.85, 13} {
		ws = append(ws, Warning{Code: "disagree", Subject: string(rune('a' + i)), Key: "k", Message: "m", Value: v, Unit: "%"})
	}
	got := Group(ws, 0)
	if len(got) != 1 || !strings.Contains(got[0], "-7.0 … +13.0 %") {
		t.Errorf("got %q, want the range as -7.0 … +13.0 %%", got)
	}
}

type sigCause struct{}

func (sigCause) Error() string { return "interrupted by SIGTERM" }

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := Interrupted(ctx); got != "interrupted" {
		t.Errorf("plain cancel: %q", got)
	}
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(sigCause{})
	if got := Interrupted(ctx); got != "interrupted by SIGTERM" {
		t.Errorf("a signal's cause: %q, want it named", got)
	}
}

func TestCap(t *testing.T) {
	var ws []Warning
	for i := range 50 {
		ws = append(ws, Warning{Code: "a", Message: string(rune(48 + i%10))})
		if i < 3 {
			ws = append(ws, Warning{Code: "b"})
		}
	}
	got := Cap(ws, 5)
	if len(got) != 5+3+1 || got[len(got)-1].Message != "45 more warnings like the 5 above (a) are not shown" || got[len(got)-1].Value != 45 {
		t.Errorf("%d warnings, last %+v", len(got), got[len(got)-1])
	}
	if len(ws) != 53 {
		t.Error("Cap changed its input")
	}
}
