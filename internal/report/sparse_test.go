package report

import (
	"strings"
	"testing"
)

// TestSparseLineMarked: a line of few points gets a dot on each (and its legend swatch one),
// a dense line none, so that two measured points joined by a line do not pass for a curve.
func TestSparseLineMarked(t *testing.T) {
	two := Plot{Series: []Series{{Name: "two", X: []float64{0, 100}, Y: []float64{120, 540}, Style: Line}}}
	if n := strings.Count(two.SVG(), "<circle"); n != 3 {
		t.Errorf("a two-point line: %d dots, want 2 on the points and 1 in the legend", n)
	}
	var x, y []float64
	for i := range SparsePoints + 1 {
		x, y = append(x, float64(i)), append(y, float64(i*i))
	}
	dense := Plot{Series: []Series{{Name: "dense", X: x, Y: y, Style: Line}}}
	if n := strings.Count(dense.SVG(), "<circle"); n != 0 {
		t.Errorf("a line of %d points: %d dots, want none", len(x), n)
	}
	step := Plot{Series: []Series{{Name: "readings", X: []float64{0, 1, 2}, Y: []float64{1, 2, 1}, Style: Step}}}
	if n := strings.Count(step.SVG(), "<circle"); n != 0 {
		t.Errorf("a step series: %d dots, want none (its last point may be a hold, not a reading)", n)
	}
}

// TestBandCutAtEdges: a power series whose first and last bins have intervals of 0-1400 W
// around 680 W (a corrected series at a command's edges) keeps the y-axis near the line,
// the wide bins cut at the frame and the legend saying so; a band wide everywhere is shown
// whole.
func TestBandCutAtEdges(t *testing.T) {
	var x, y, lo, hi []float64
	for i := range 200 {
		x, y = append(x, float64(i)*0.02), append(y, 680)
		l, h := 670.0, 690.0
		if i < 2 || i >= 198 {
			l, h = 0, 1400
		}
		lo, hi = append(lo, l), append(hi, h)
	}
	p := Plot{Series: []Series{{Name: "corrected power, 95 % band", X: x, Y: y, YLow: lo, YHigh: hi, Style: Step}}}
	r := newRenderer(p)
	if r.ys.lo < 500 || r.ys.hi > 900 {
		t.Errorf("y-axis %.0f-%.0f W: the edge bins' 0-1400 W set it", r.ys.lo, r.ys.hi)
	}
	if !r.ys.inRange(670) || !r.ys.inRange(690) {
		t.Errorf("y-axis %.0f-%.0f W does not show the band's 670-690 W", r.ys.lo, r.ys.hi)
	}
	if svg := p.SVG(); !strings.Contains(svg, "(cut at the frame)") {
		t.Errorf("the legend does not say the band is cut")
	}
	for i := range lo {
		lo[i], hi[i] = 0, 1400
	}
	r = newRenderer(p)
	if !r.ys.inRange(0) || !r.ys.inRange(1400) {
		t.Errorf("a band 0-1400 W everywhere: y-axis %.0f-%.0f W, want it whole", r.ys.lo, r.ys.hi)
	}
	if svg := p.SVG(); strings.Contains(svg, "(cut at the frame)") {
		t.Errorf("a band shown whole says it is cut")
	}
}
