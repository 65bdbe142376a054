package marks

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseLines: any marks file gives events or warnings, one or the other for every line
// that is not blank or a comment, and pairing them never fails.
func FuzzParseLines(f *testing.F) {
	for _, s := range []string{"begin a\nend a\n", "begin a 1.5\nend a 2\n", "bgin\n", "end x 1e400\n", "begin a -1\n", "# c\n\nbegin \x00\n", "begin a NaN\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var lines []Line
		want := 0
		for i, l := range strings.Split(s, "\n") {
			lines = append(lines, Line{No: i + 1, Text: l, Arrived: time.Duration(i) * time.Millisecond})
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				want++
			}
		}
		evs, ws := ParseLines(lines, func(sec float64) time.Duration { return time.Duration(sec * 1e9) })
		bad := 0
		for _, w := range ws {
			if w.Code == CodeBadLine {
				bad++
			}
		}
		if len(evs)+bad != want {
			t.Fatalf("%d events + %d bad lines, want %d lines accounted for", len(evs), bad, want)
		}
		spans, _ := Pair(evs)
		for _, sp := range spans {
			if sp.Parent >= len(spans) {
				t.Fatalf("parent %d of %d spans", sp.Parent, len(spans))
			}
		}
	})
}
