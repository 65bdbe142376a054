// Package termtext fits gpuwatt's text output to a terminal: Width columns at most,
// long text wrapped at spaces with its continuation lines indented.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// Width is the widest line gpuwatt prints by default (--wide lifts it where a verb has it).
const Width = 120

// Len is the width of s in columns: one per rune (gpuwatt prints no wide characters).
func Len(s string) int { return utf8.RuneCountInString(s) }

// Wrap breaks s into lines of at most width columns at spaces; a word longer than width
// is cut. Runs of spaces inside s are kept within a line.
func Wrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		words := strings.Fields(para)
		cur := ""
		for _, w := range words {
			for Len(w) > width { // a word too long for any line
				if cur != "" {
					lines, cur = append(lines, cur), ""
				}
				r := []rune(w)
				lines, w = append(lines, string(r[:width])), string(r[width:])
			}
			switch {
			case cur == "":
				cur = w
			case Len(cur)+1+Len(w) <= width:
				cur += " " + w
			default:
				lines, cur = append(lines, cur), w
			}
		}
		lines = append(lines, cur)
	}
	return lines
}

// Indent wraps s to width columns in all, the first line after first and the others after
// as many spaces as rest (first and rest are printed as given: "   ! " and 5).
func Indent(s, first string, rest, width int) string {
	lines := Wrap(s, width-max(Len(first), rest))
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(strings.Repeat(" ", rest))
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.String()
}
