package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
)

// TestPageHasCorrectedPower (issue 13): report.html draws the corrected power during the
// command, the curve `energy --series` writes (energy.PowerSeries over the command), with
// its band: on the synthetic trace (100 W, 300 W during the command), the bins inside the
// command away from its edges show 300 W within their band.
func TestPageHasCorrectedPower(t *testing.T) {
	t.Parallel()
	r := synthetic()
	s := Summarize(r, []string{"load"}, time.Second)
	p := Page(r.Trace, s)
	ser, err := energy.PowerSeries(r.Trace, 0, r.Start, r.End, 0, energy.Options{What: "the command"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sec := range p.Sections {
		for _, pl := range sec.Plots {
			if !strings.Contains(pl.Title, "corrected power") {
				continue
			}
			found = true
			sr := pl.Series[0]
			if len(sr.X) != len(ser.Points)+1 || len(sr.YLow) != len(sr.Y) || len(sr.YHigh) != len(sr.Y) {
				t.Fatalf("plot of %d points, band %d/%d; the series has %d bins", len(sr.X), len(sr.YLow), len(sr.YHigh), len(ser.Points))
			}
			for i, x := range sr.X[:len(ser.Points)] {
				if sr.Y[i] != ser.Points[i].PowerW {
					t.Errorf("point %d: %.2f W, the series %.2f W", i, sr.Y[i], ser.Points[i].PowerW)
				}
				if x > 1.1 && x < 2.9 && !(sr.YLow[i] <= 300 && 300 <= sr.YHigh[i]) {
					t.Errorf("t %.2f s: %.1f W [%.1f, %.1f], want 300 W inside", x, sr.Y[i], sr.YLow[i], sr.YHigh[i])
				}
			}
		}
	}
	if !found {
		t.Error("no corrected power plot in report.html")
	}
}
