package termtext

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	s := "power.usage and energy.total disagree by -13.8 % (1780.0 J vs 2064.9 J): power.usage is a moving average over about 1 s"
	for _, width := range []int{12, 40, 80, 200} {
		lines := Wrap(s, width)
		for _, l := range lines {
			if Len(l) > width {
				t.Errorf("width %d: line %q is %d columns", width, l, Len(l))
			}
		}
		if got := strings.Join(lines, " "); got != s {
			t.Errorf("width %d: the words changed: %q", width, got)
		}
	}
	if got := Wrap("abcdefghij", 4); strings.Join(got, "|") != "abcd|efgh|ij" {
		t.Errorf("a long word: %q", got)
	}
	if got := Indent("one two three four", "  ! ", 4, 12); got != "  ! one two\n    three\n    four\n" {
		t.Errorf("Indent: %q", got)
	}
}
