package marks

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func lines(texts ...string) []Line {
	var out []Line
	for i, t := range texts {
		out = append(out, Line{No: i + 1, Text: t, Arrived: sec(10 + float64(i))})
	}
	return out
}

func codes(ws []status.Warning) string {
	var c []string
	for _, w := range ws {
		c = append(c, string(w.Code))
	}
	return strings.Join(c, ",")
}

// TestParseAndPair: nesting, repeats, the writer's stamps mapped, lines without a stamp
// stamped on arrival, and every bad line a warning naming it, never a region.
func TestParseAndPair(t *testing.T) {
	t.Parallel()
	toAxis := func(s float64) time.Duration { return sec(s - 1000) }
	evs, ws := ParseLines(lines(
		"begin train 1001.0",
		"begin step 1001.5",
		"end step 1002.0",
		"# a comment",
		"",
		"begin step 1002.5",
		"  end step 1003.25  ",
		"end train 1004",
		"bgin x 1005",
		"begin two words here",
		"end step",
		"begin eval 1006.0",
		"begin x 12abc",
		"end ghost 1007",
		"begin open 1008",
	), toAxis)
	if got := codes(ws); got != "bad_marker,bad_marker,bad_marker,marker_stamped_on_arrival" {
		t.Errorf("warnings %s: %v", got, ws)
	}
	for _, want := range []string{`line 9 "bgin x 1005"`, `line 10 "begin two words here"`, `line 13 "begin x 12abc"`} {
		found := false
		for _, w := range ws {
			found = found || strings.Contains(w.Message, want)
		}
		if !found {
			t.Errorf("no warning names %s: %v", want, ws)
		}
	}
	spans, pws := Pair(evs)
	if got := codes(pws); got != "unmatched_marker,unmatched_marker,unended_region,unended_region" {
		t.Errorf("pair warnings %s: %v", got, pws)
	}
	// "end step" on line 11 has no stamp: stamped on arrival at 20 s, after eval began
	// (6 s) and ghost's end (7 s); no open step then: unmatched. eval and open never end.
	type want struct {
		name       string
		inst, dep  int
		par        int
		start, end float64
	}
	wants := []want{{"train", 1, 0, -1, 1, 4}, {"step", 1, 1, 0, 1.5, 2}, {"step", 2, 1, 0, 2.5, 3.25}}
	if len(spans) != len(wants) {
		t.Fatalf("%d spans, want %d: %+v", len(spans), len(wants), spans)
	}
	for i, w := range wants {
		s := spans[i]
		if s.Name != w.name || s.Instance != w.inst || s.Depth != w.dep || s.Parent != w.par || s.Start != sec(w.start) || s.End != sec(w.end) {
			t.Errorf("span %d = %s #%d depth %d parent %d %v..%v; want %+v", i, s.Name, s.Instance, s.Depth, s.Parent, s.Start, s.End, w)
		}
	}
	for _, w := range pws {
		if w.Code == CodeUnmatched && !strings.Contains(w.Message, `line 14 ("end ghost")`) && !strings.Contains(w.Message, `line 11`) {
			t.Errorf("unmatched warning names no line: %s", w.Message)
		}
	}
}

// TestPairSameNameNests: `end NAME` closes the innermost open region of that name.
func TestPairSameNameNests(t *testing.T) {
	t.Parallel()
	evs := []Event{{true, "a", sec(1), 0, false}, {true, "a", sec(2), 0, false}, {false, "a", sec(3), 0, false}, {false, "a", sec(4), 0, false}}
	spans, ws := Pair(evs)
	if len(ws) != 0 || len(spans) != 2 || spans[0].End != sec(4) || spans[1].Start != sec(2) || spans[1].End != sec(3) || spans[1].Parent != 0 {
		t.Errorf("spans %+v, warnings %v", spans, ws)
	}
}
