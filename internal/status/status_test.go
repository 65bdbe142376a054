package status

import (
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
