package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// powerTracePlot is a sim-like power trace: the true power at 1 ms (10 001 points, so it
// is thinned for drawing), a 100 ms sample-and-hold sensor with a dropped reading, a
// 1 s average, the command's run as a band and markers.
func powerTracePlot() Plot {
	rng := rand.New(rand.NewPCG(1, 2))
	truth := func(t float64) float64 {
		switch {
		case t < 2:
			return 62
		case t < 8:
			return 640 + 40*math.Sin(t*3)
		case t < 9:
			return 95 // active idle
		}
		return 62
	}
	var tx, ty []float64
	for i := 0; i <= 10000; i++ {
		t := float64(i) / 1000
		tx = append(tx, t)
		ty = append(ty, truth(t)+rng.NormFloat64()*4)
	}
	ty[5000] = 760 // a spike that thinning must keep
	var sx, sy []float64
	for i := 0; i <= 100; i++ {
		t := float64(i) / 10
		sx = append(sx, t)
		v := 0.0
		for k := range 25 { // 25 ms boxcar ending at t
			v += truth(t - float64(k)/1000)
		}
		sy = append(sy, math.Round(v/25))
	}
	sy[55] = math.NaN() // a failed read breaks the steps
	var ax, ay []float64
	for i := 0; i <= 10; i++ {
		t := float64(i)
		v := 0.0
		for k := range 1000 {
			v += truth(t - float64(k)/1000)
		}
		ax = append(ax, t)
		ay = append(ay, v/1000)
	}
	return Plot{
		Title:  "Power during the command (sim device, h100-instant preset)",
		XLabel: "time since start (s)",
		YLabel: "power (W)",
		Series: []Series{
			{Name: "true power (1 ms)", X: tx, Y: ty, Color: "#bbbbbb"},
			{Name: "power.instant (100 ms updates)", X: sx, Y: sy, Style: Step},
			{Name: "power.average (1 s)", X: ax, Y: ay, Style: Step, Dash: true},
		},
		VLines: []VLine{{X: 2, Label: "cmd start"}, {X: 8, Label: "cmd end"}},
		HLines: []HLine{{Y: 700, Label: "power limit 700 W"}},
		Bands:  []Band{{X0: 2, X1: 8, Label: "command running"}},
	}
}

// logScatterPlot is a log-log scatter coloured per point, with a model line and band.
func logScatterPlot() Plot {
	rng := rand.New(rand.NewPCG(3, 4))
	occ := []string{"#a5db36", "#4ac16d", "#1f988b", "#365c8d", "#440154"} // viridis, low to high
	var x, y []float64
	var cols []string
	for i := range 60 {
		ai := math.Pow(10, -2+5*float64(i)/59) // arithmetic intensity, flop/byte
		perf := math.Min(3.35e3*ai, 6.7e4)     // Gflop/s
		x = append(x, ai)
		y = append(y, perf*math.Exp(rng.NormFloat64()*0.15))
		cols = append(cols, occ[i%len(occ)])
	}
	var mx, my, lo, hi []float64
	for i := range 101 {
		ai := math.Pow(10, -2+5*float64(i)/100)
		p := math.Min(3.35e3*ai, 6.7e4)
		mx, my = append(mx, ai), append(my, p)
		lo, hi = append(lo, p/1.3), append(hi, p*1.3)
	}
	return Plot{
		Title:  "Roofline (log-log)",
		XLabel: "arithmetic intensity (flop/byte)",
		YLabel: "performance (Gflop/s)",
		XLog:   true, YLog: true,
		Series: []Series{
			{Name: "model ±30 %", X: mx, Y: my, YLow: lo, YHigh: hi, Color: "#D55E00"},
			{Name: "kernels (colour: occupancy)", X: x, Y: y, Style: Points, Colors: cols},
		},
		VLines: []VLine{{X: 20, Label: "ridge point"}},
	}
}

func emptyPlot() Plot {
	return Plot{Title: "Nothing recorded", XLabel: "time (s)", YLabel: "power (W)",
		Series: []Series{{Name: "power", X: nil, Y: nil}}}
}

func examplePage() Page {
	return Page{
		Title:    "gpuwatt measure: ./train --epochs 1",
		Subtitle: "sim device (h100-instant preset) · gpuwatt dev · 2 channels",
		Notice:   "Measured on the sim device: no GPU was found. Numbers below come from the digital twin.",
		Sections: []Section{
			{
				Title: "Summary",
				Text:  "Energy is the integral of the corrected power over the command's run.\n\nThe sensor updates every 100 ms and averages over 25 ms, so short phases are under-sampled.",
				Table: &Table{
					Caption: "Energy by region",
					Header:  []string{"region", "duration (s)", "energy (J)", "mean power (W)", "coverage"},
					Rows: [][]string{
						{"before", "2.000", "124.0", "62.0", "100 %"},
						{"command", "6.000", "3851.2", "641.9", "97.5 %"},
						{"after", "2.000", "157.0", "78.5", "100 %"},
					},
				},
				Warnings: []string{
					"coverage 97.5 % < 100 %: one power.instant reading failed at t = 5.5 s",
					"power capped at 700 W for 0.2 s: the clock was lowered",
				},
			},
			{
				Title: "Power trace",
				Plots: []Plot{powerTracePlot()},
			},
			{
				Title: "Roofline",
				Text:  "Each dot is one kernel; colour shows occupancy, from green (low) to purple (high).",
				Plots: []Plot{logScatterPlot()},
			},
		},
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (%d bytes, want %d); if the change is intended, run go test ./internal/report -update and look at the result", name, len(got), len(want))
	}
}

// wellFormed parses doc with a strict XML decoder and returns the text of every element
// named name.
func wellFormed(t *testing.T, doc string, name string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	var texts []string
	var stack []string
	var cur *strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, snippet(doc, d.InputOffset()))
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			if tok.Name.Local == name {
				cur = &strings.Builder{}
			}
		case xml.EndElement:
			if tok.Name.Local == name && cur != nil {
				texts = append(texts, cur.String())
				cur = nil
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if cur != nil {
				cur.Write(tok)
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements: %v", stack)
	}
	return texts
}

func snippet(s string, off int64) string {
	a, b := max(0, int(off)-200), min(len(s), int(off)+200)
	return s[a:b]
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		plot Plot
	}{
		{"line_step.svg", powerTracePlot()},
		{"loglog_scatter.svg", logScatterPlot()},
		{"empty.svg", emptyPlot()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := tc.plot.SVG()
			wellFormed(t, svg, "svg")
			checkGolden(t, tc.name, []byte(svg))
		})
	}
	t.Run("page.html", func(t *testing.T) {
		var buf bytes.Buffer
		if err := examplePage().Render(&buf); err != nil {
			t.Fatal(err)
		}
		wellFormed(t, buf.String(), "html")
		checkGolden(t, "page.html", buf.Bytes())
	})
}

func TestRobust(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	huge := make([]float64, 200000)
	hugeX := make([]float64, len(huge))
	for i := range huge {
		hugeX[i] = float64(i)
		huge[i] = math.Sin(float64(i) / 1000)
	}
	for _, tc := range []struct {
		name string
		plot Plot
	}{
		{"zero value", Plot{}},
		{"single point", Plot{Series: []Series{{Name: "one", X: []float64{3}, Y: []float64{7}}}}},
		{"single point step", Plot{Series: []Series{{X: []float64{3}, Y: []float64{7}, Style: Step}}}},
		{"all equal", Plot{Series: []Series{{X: []float64{1, 2, 3}, Y: []float64{5, 5, 5}}}}},
		{"all equal x", Plot{Series: []Series{{X: []float64{2, 2, 2}, Y: []float64{1, 2, 3}, Style: Points}}}},
		{"nan inf", Plot{Series: []Series{{X: []float64{0, 1, 2, 3, 4, nan, 6}, Y: []float64{1, nan, 3, inf, 5, 6, -inf}, Style: Step}}}},
		{"all nan", Plot{Series: []Series{{X: []float64{nan, nan}, Y: []float64{nan, 1}}}}},
		{"negative", Plot{Series: []Series{{X: []float64{-5, -1, 0, 3}, Y: []float64{-100, -3, 0, 2}}}}},
		{"mismatched lengths", Plot{Series: []Series{{X: []float64{1, 2, 3}, Y: []float64{1}, YLow: []float64{0}, YHigh: []float64{2, 3, 4}, Colors: []string{"red"}}}}},
		{"log with non-positive", Plot{XLog: true, YLog: true, Series: []Series{{X: []float64{-1, 0, 1, 10, 100}, Y: []float64{1, 2, 0, 4, 5}}}}},
		{"log narrow", Plot{YLog: true, Series: []Series{{X: []float64{0, 1}, Y: []float64{121.8, 122.4}}}}},
		{"fixed ranges", Plot{XMin: Float(0), XMax: Float(1), YMin: Float(0), YMax: Float(10), Series: []Series{{X: []float64{-1, 0.5, 2}, Y: []float64{-5, 5, 50}}}}},
		{"fixed inverted", Plot{XMin: Float(5), XMax: Float(1), Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}}},
		{"fixed min above data", Plot{YMin: Float(100), Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}}},
		{"markers only", Plot{VLines: []VLine{{X: 1, Label: "a"}, {X: 1.01, Label: "b"}, {X: 1.02, Label: "c"}}, HLines: []HLine{{Y: 3, Label: "h"}}}},
		{"huge values", Plot{Series: []Series{{X: []float64{0, 1e300, 2e300}, Y: []float64{-1e308, 0, 1e308}}}}},
		{"tiny values", Plot{Series: []Series{{X: []float64{0, 1e-9, 2e-9}, Y: []float64{1e-12, 3e-12, 2e-12}}}}},
		{"huge series", Plot{Series: []Series{{Name: "sin", X: hugeX, Y: huge}, {X: hugeX, Y: huge, Style: Points}}}},
		{"huge unsorted", Plot{Series: []Series{{X: reversed(hugeX), Y: huge, Style: Step, YLow: huge, YHigh: huge}}}},
		{"tiny canvas", Plot{Width: 10, Height: 10, Title: "t", XLabel: "x", YLabel: "y", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1, 2}}}}},
		{"many series", Plot{Series: manySeries(20)}},
		{"odd text", Plot{Title: "a\x00b\x1bc\xff\"'&<>", Series: []Series{{Name: "\n\r\t", X: []float64{1}, Y: []float64{1}, Color: `"><script>`}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := tc.plot.SVG()
			wellFormed(t, svg, "svg")
			if again := tc.plot.SVG(); again != svg {
				t.Error("two renders of the same plot differ")
			}
			if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
				t.Errorf("NaN or Inf leaked into the output")
			}
			if len(svg) > 1_000_000 {
				t.Errorf("output is %d bytes", len(svg))
			}
		})
	}
}

func manySeries(n int) []Series {
	var s []Series
	for i := range n {
		s = append(s, Series{Name: "series " + strings.Repeat("x", i), X: []float64{0, 1}, Y: []float64{float64(i), float64(i + 1)}})
	}
	return s
}

func TestEmptyPlotSaysNoData(t *testing.T) {
	for _, p := range []Plot{{}, emptyPlot(), {Series: []Series{{X: []float64{math.NaN()}, Y: []float64{1}}}}} {
		if !strings.Contains(p.SVG(), ">no data</text>") {
			t.Errorf("%+v: no \"no data\" text", p)
		}
	}
	if strings.Contains(powerTracePlot().SVG(), "no data") {
		t.Error("a plot with data says \"no data\"")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		max    int
		want   []float64
		labels []string
	}{
		{0, 712.3, 8, []float64{0, 100, 200, 300, 400, 500, 600, 700}, []string{"0", "100", "200", "300", "400", "500", "600", "700"}},
		{0, 712.3, 5, []float64{0, 200, 400, 600}, nil},
		{121.8, 122.4, 8, []float64{121.8, 121.9, 122, 122.1, 122.2, 122.3, 122.4}, []string{"121.8", "121.9", "122", "122.1", "122.2", "122.3", "122.4"}},
		{0, 1.6, 4, []float64{0, 0.5, 1, 1.5}, []string{"0", "0.5", "1", "1.5"}},
		{-1, 1, 5, []float64{-1, -0.5, 0, 0.5, 1}, []string{"-1", "-0.5", "0", "0.5", "1"}},
		{0, 25000, 6, []float64{0, 5000, 10000, 15000, 20000, 25000}, []string{"0", "5k", "10k", "15k", "20k", "25k"}},
		{9000, 13000, 9, []float64{9000, 9500, 10000, 10500, 11000, 11500, 12000, 12500, 13000}, []string{"9k", "9.5k", "10k", "10.5k", "11k", "11.5k", "12k", "12.5k", "13k"}},
		{0, 3e-5, 4, []float64{0, 1e-5, 2e-5, 3e-5}, []string{"0", "1e-5", "2e-5", "3e-5"}},
		{0.003, 0.0071, 5, []float64{0.003, 0.004, 0.005, 0.006, 0.007}, []string{"0.003", "0.004", "0.005", "0.006", "0.007"}},
	} {
		got := linearTicks(tc.lo, tc.hi, tc.max)
		if !slices.Equal(got.major, tc.want) {
			t.Errorf("linearTicks(%g, %g, %d) = %v, want %v", tc.lo, tc.hi, tc.max, got.major, tc.want)
		}
		if tc.labels != nil && !slices.Equal(got.labels, tc.labels) {
			t.Errorf("linearTicks(%g, %g, %d) labels = %q, want %q", tc.lo, tc.hi, tc.max, got.labels, tc.labels)
		}
	}
}

func TestNiceTicksProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	nice := regexp.MustCompile(`^-?[125]0*$`)
	for range 2000 {
		a := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(16)-6))
		b := a + rng.Float64()*math.Pow(10, float64(rng.IntN(16)-6))
		if degenerate(a, b) {
			continue
		}
		n := 2 + rng.IntN(10)
		ticks, step := niceTicks(a, b, n)
		if len(ticks) > n {
			t.Fatalf("niceTicks(%g, %g, %d): %d ticks", a, b, n, len(ticks))
		}
		if !nice.MatchString(strconv.FormatInt(step.m, 10)) {
			t.Fatalf("step %v is not nice", step)
		}
		for i, v := range ticks {
			if v < a-(b-a)*1e-9 || v > b+(b-a)*1e-9 {
				t.Fatalf("niceTicks(%g, %g, %d): tick %g out of range", a, b, n, v)
			}
			if i > 0 && !(v > ticks[i-1]) {
				t.Fatalf("niceTicks(%g, %g, %d): not increasing: %v", a, b, n, ticks)
			}
		}
	}
}

func reversed(s []float64) []float64 {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func TestDegenerateTicks(t *testing.T) {
	// A series of equal values, [5, 5], still gets an axis with 5 on it and nice ticks.
	p := Plot{Series: []Series{{X: []float64{0, 1, 2}, Y: []float64{5, 5, 5}}}}
	r := newRenderer(p)
	r.layout()
	if !(r.ys.lo < 5 && r.ys.hi > 5) {
		t.Fatalf("y range [%g, %g] does not contain 5 inside", r.ys.lo, r.ys.hi)
	}
	if !slices.Contains(r.yt.major, 5) {
		t.Errorf("y ticks %v lack 5", r.yt.major)
	}
	if len(r.yt.major) < 3 {
		t.Errorf("y ticks %v: too few", r.yt.major)
	}
	ticks := linearTicks(5, 5, 6)
	if !slices.Contains(ticks.major, 5) || len(ticks.major) < 3 {
		t.Errorf("linearTicks(5, 5) = %v", ticks.major)
	}
	if got := linearTicks(0, 0, 5).major; !slices.Contains(got, 0) || len(got) < 3 {
		t.Errorf("linearTicks(0, 0) = %v", got)
	}
	if got := logTicks(5, 5, 6); !slices.Contains(got.major, 10) && !slices.Contains(got.major, 5) {
		t.Errorf("logTicks(5, 5) = %v", got.major)
	}
}

func TestLogTicks(t *testing.T) {
	got := logTicks(1e-3, 1e4, 10)
	want := []float64{1e-3, 1e-2, 1e-1, 1, 10, 100, 1e3, 1e4}
	if !slices.Equal(got.major, want) {
		t.Errorf("majors %v, want %v", got.major, want)
	}
	wantLabels := []string{"0.001", "0.01", "0.1", "1", "10", "100", "1k", "10k"}
	if !slices.Equal(got.labels, wantLabels) {
		t.Errorf("labels %q, want %q", got.labels, wantLabels)
	}
	if len(got.minor) != 7*8 {
		t.Errorf("%d minor ticks, want 56 (2..9 in each of 7 decades)", len(got.minor))
	}
	for _, v := range []float64{0.002, 0.005, 20, 9000} {
		if !slices.Contains(got.minor, v) {
			t.Errorf("minor ticks lack %g", v)
		}
	}
	// Too many decades for the room: every other decade is labelled.
	got = logTicks(1e-3, 1e4, 4)
	if len(got.major) > 4 || len(got.major) < 2 {
		t.Errorf("logTicks(1e-3, 1e4, 4) majors %v", got.major)
	}
	// Less than two decades: 1-2-5.
	got = logTicks(1.5, 30, 8)
	if want := []float64{2, 5, 10, 20}; !slices.Equal(got.major, want) {
		t.Errorf("logTicks(1.5, 30) majors %v, want %v", got.major, want)
	}
	// Within a decade without 1-2-5 room: linear ticks.
	got = logTicks(121.8, 122.4, 8)
	if len(got.major) < 2 || got.major[0] < 121.8 || got.major[len(got.major)-1] > 122.4 {
		t.Errorf("logTicks(121.8, 122.4) majors %v", got.major)
	}
	// Large ones.
	got = logTicks(1, 1e9, 10)
	if want := []string{"1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M", "1G"}; !slices.Equal(got.labels, want) {
		t.Errorf("labels %q, want %q", got.labels, want)
	}
}

func TestFormatLog(t *testing.T) {
	for v, want := range map[float64]string{
		1e-6: "1e-6", 2e-4: "2e-4", 1e-3: "0.001", 0.5: "0.5", 20: "20", 1e3: "1k",
		2e4: "20k", 5e5: "500k", 1e6: "1M", 1e9: "1G", 1e12: "1T", 1e15: "1e15",
	} {
		if got := formatLog(v); got != want {
			t.Errorf("formatLog(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestThinningKeepsExtremes(t *testing.T) {
	const n = 100_000
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range n {
		x[i] = float64(i) * 1e-3
		y[i] = 100 + float64(i%7)
	}
	spike, dip := 54321, 77777
	y[spike], y[dip] = 1000, -500
	p := Plot{Series: []Series{{X: x, Y: y}}}
	r := newRenderer(p)
	r.layout()
	valid := func(i int) bool { return true }
	idx := r.thin(n, x, valid, func(i int) float64 { return y[i] })
	if len(idx) > 4*int(r.x1-r.x0+2) {
		t.Errorf("kept %d of %d points for a %g px wide plot", len(idx), n, r.x1-r.x0)
	}
	for _, want := range []int{0, spike, dip, n - 1} {
		if !slices.Contains(idx, want) {
			t.Errorf("thinning dropped sample %d", want)
		}
	}
	if !slices.IsSorted(idx) {
		t.Error("thinned indexes are out of order")
	}
	// The drawing reaches the spike's and the dip's pixel rows.
	svg := p.SVG()
	for _, v := range []float64{1000, -500} {
		if !strings.Contains(svg, " "+num(r.ys.px(v))) {
			t.Errorf("no point drawn at y=%g (pixel %s)", v, num(r.ys.px(v)))
		}
	}
	if len(svg) > 100_000 {
		t.Errorf("SVG of a thinned series is %d bytes", len(svg))
	}
	// Unsorted X: thinned by chunks of indexes, extremes still kept.
	slices.Reverse(x)
	idx = r.thin(n, x, valid, func(i int) float64 { return y[i] })
	if !slices.Contains(idx, spike) || !slices.Contains(idx, dip) {
		t.Error("thinning unsorted data dropped an extreme")
	}
	// Breaks survive thinning.
	y[500] = math.NaN()
	valid = func(i int) bool { return !math.IsNaN(y[i]) }
	idx = r.thin(n, x, valid, func(i int) float64 { return y[i] })
	if !slices.Contains(idx, -1) || slices.Contains(idx, 500) {
		t.Error("a NaN did not break the thinned line")
	}
}

func TestEscaping(t *testing.T) {
	const evil = `<script>alert("x") & 'y'</script>`
	p := Plot{
		Title: evil, XLabel: evil, YLabel: evil,
		Series: []Series{{Name: evil, X: []float64{1, 2}, Y: []float64{1, 2}}},
		VLines: []VLine{{X: 1.5, Label: evil}},
		HLines: []HLine{{Y: 1.5, Label: evil}},
		Bands:  []Band{{X0: 1, X1: 2, Label: evil}},
	}
	svg := p.SVG()
	if strings.Contains(svg, "<script") {
		t.Fatal("<script> appears as markup in the SVG")
	}
	texts := wellFormed(t, svg, "text")
	if n := strings.Count(strings.Join(texts, "\n"), evil); n < 6 {
		t.Errorf("the title survives as text %d times, want ≥ 6 (title, labels, legend ×2, markers): %q", n, texts)
	}
	if titles := wellFormed(t, svg, "title"); len(titles) != 1 || titles[0] != evil {
		t.Errorf("<title> = %q", titles)
	}

	page := Page{Title: evil, Subtitle: evil, Notice: evil, Sections: []Section{{
		Title: evil, Text: evil, Warnings: []string{evil},
		Table: &Table{Caption: evil, Header: []string{evil}, Rows: [][]string{{evil}}},
		Plots: []Plot{p},
	}}}
	var buf bytes.Buffer
	if err := page.Render(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") {
		t.Fatal("<script> appears as markup in the page")
	}
	if got := wellFormed(t, buf.String(), "h1"); len(got) != 1 || got[0] != evil {
		t.Errorf("<h1> = %q", got)
	}
	if got := wellFormed(t, buf.String(), "li"); len(got) != 1 || got[0] != evil {
		t.Errorf("warning <li> = %q", got)
	}
}

func TestPage(t *testing.T) {
	var buf bytes.Buffer
	p := examplePage()
	p.Sections = append(p.Sections, Section{Title: "Two plots", Plots: []Plot{powerTracePlot(), logScatterPlot()}})
	if err := p.Render(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	wellFormed(t, out, "html")
	for _, bad := range []string{"http://", "https://", "<script", "@import", "url(http", "<link", "<img", "src="} {
		if strings.Contains(strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page contains %q: it must not reference anything outside itself", bad)
		}
	}
	// Each plot has its own clip-path id, even a plot that appears twice (an id is
	// unique in a page), and each plot clips to its own.
	ids := regexp.MustCompile(`<clipPath id="([^"]+)"`).FindAllStringSubmatch(out, -1)
	refs := regexp.MustCompile(`clip-path="url\(#([^)]+)\)"`).FindAllStringSubmatch(out, -1)
	seen := map[string]bool{}
	for _, m := range ids {
		seen[m[1]] = true
	}
	if len(ids) != 4 || len(seen) != 4 {
		t.Errorf("clip ids %v: want 4 plots with 4 distinct ids (two plots appear twice)", ids)
	}
	for i, m := range refs {
		if i >= len(ids) || m[1] != ids[i][1] {
			t.Errorf("plot %d clips to %q, want its own clip path (ids %v)", i+1, m[1], ids)
		}
	}
	for _, want := range []string{`<meta charset="utf-8"/>`, `<td class="r">3851.2</td>`, `<td>command</td>`, `class="notice"`, `class="warnings"`, `<nav>`} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if got := wellFormed(t, out, "p"); !slices.Contains(got, "The sensor updates every 100 ms and averages over 25 ms, so short phases are under-sampled.") {
		t.Errorf("paragraphs %q", got)
	}
}

func TestTableAlign(t *testing.T) {
	tv := (&Table{
		Header: []string{"a", "b", "c"},
		Rows:   [][]string{{"x", "1.5", "2"}, {"y", "-3 W", "n/a"}, {"z"}},
		Align:  []string{"", "", "r"},
	}).view()
	got := []bool{tv.Header[0].Right, tv.Header[1].Right, tv.Header[2].Right}
	if want := []bool{false, true, true}; !slices.Equal(got, want) {
		t.Errorf("right-aligned columns %v, want %v", got, want)
	}
	if len(tv.Rows[2]) != 3 {
		t.Errorf("short row not padded: %v", tv.Rows[2])
	}
}

func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	v := map[string]any{"energy_j": 3851.2, "note": "<ok>"}
	if err := WriteJSON(path, v); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"energy_j\": 3851.2,\n  \"note\": \"<ok>\"\n}\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	// A value that cannot be encoded leaves the old file alone and no temporary behind.
	if err := WriteJSON(path, math.NaN()); err == nil {
		t.Error("encoding NaN did not fail")
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
		t.Error("a failed write changed the file")
	}
	if err := WriteJSON(filepath.Join(dir, "missing", "x.json"), 1); err == nil {
		t.Error("writing into a missing directory did not fail")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(entries))
	}
	var buf bytes.Buffer
	if err := WriteJSONTo(&buf, []int{1, 2}); err != nil || buf.String() != "[\n  1,\n  2\n]\n" {
		t.Errorf("WriteJSONTo: %q, %v", buf.String(), err)
	}
}

func TestPageWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	if err := examplePage().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, string(b), "html")
}

func BenchmarkHugeSeriesSVG(b *testing.B) {
	const n = 1_000_000
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range n {
		x[i] = float64(i) * 1e-3
		y[i] = 300 + 200*math.Sin(float64(i)/5000)
	}
	p := Plot{Series: []Series{{Name: "power", X: x, Y: y, Style: Step}}}
	var size int
	for b.Loop() {
		size = len(p.SVG())
	}
	b.ReportMetric(float64(size), "bytes/svg")
	b.ReportMetric(float64(n), "points")
}

// TestFolds: consecutive sections with one Fold share one <details> named by it, their
// titles as subheadings; unfolded sections keep theirs as headings, and the contents list
// gives way to the folds' names.
func TestFolds(t *testing.T) {
	p := Page{Title: "t", Sections: []Section{
		{Title: "Summary", Text: "first screen", Side: true, Table: &Table{Header: []string{"a"}, Rows: [][]string{{"1"}}}},
		{Title: "one", Fold: "Detail A"}, {Title: "two", Fold: "Detail A"},
		{Title: "three", Fold: "Detail B"},
		{Title: "Warnings"},
	}}
	var b strings.Builder
	if err := p.Render(&b); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	wellFormed(t, doc, "folds")
	if n := strings.Count(doc, "<details"); n != 2 {
		t.Errorf("%d <details>, want 2 (one per fold)", n)
	}
	if n := strings.Count(doc, "</details>"); n != 2 {
		t.Errorf("%d </details>, want 2", n)
	}
	for _, want := range []string{"<summary>Detail A</summary>", "<summary>Detail B</summary>", "<h3>one</h3>", "<h3>two</h3>", "<h3>three</h3>", "<h2>Summary</h2>", "<h2>Warnings</h2>", `<div class="side">`} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(doc, "<nav>") {
		t.Error("a page with folds has a contents list")
	}
	// The fold closes before the next fold opens, and Warnings is outside both.
	if a, b2, w := strings.Index(doc, "Detail A"), strings.Index(doc, "Detail B"), strings.Index(doc, "<h2>Warnings"); !(a < b2 && strings.Count(doc[a:b2], "</details>") == 1 && strings.Count(doc[b2:w], "</details>") == 1) {
		t.Error("the folds do not close where their sections end")
	}
}

// TestNoPageShowsNaN: a NaN formatted into a page (a table's cells, a section's text, a
// warning, the title) and an infinity as a table's figure are shown as "unavailable"; an
// infinity named in prose stays (issue 29: a results.json found by the fuzzer put "NaN" on
// report's page).
func TestNoPageShowsNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	p := Page{Title: fmt.Sprintf("mean %g W", nan), Sections: []Section{{
		Title:    "figures",
		Text:     fmt.Sprintf("pi0 %.1f W", nan),
		Warnings: []string{fmt.Sprintf("spread %v", nan), "ex2 chains grow to -Inf within a few steps"},
		Table: &Table{Header: []string{"figure", "value"}, Rows: [][]string{
			{"power", fmt.Sprintf("%.1f W", nan)}, {"efficiency", fmt.Sprintf("%g tx/J", inf)},
			{"ratio", strconv.FormatFloat(-inf, 'g', -1, 64)}, {"Nanometre", "Info"},
		}},
	}}}
	var b bytes.Buffer
	if err := p.Render(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"NaN", "Inf tx/J", "-Inf<", ">Inf<"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page shows %q", bad)
		}
	}
	for _, want := range []string{"mean unavailable W", "spread unavailable", ">unavailable W<", ">unavailable tx/J<", ">unavailable<", "pi0 unavailable W", "grow to -Inf within", ">Info<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
