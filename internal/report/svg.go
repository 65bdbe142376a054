// Package report presents gpuwatt's results: JSON files, deterministic SVG charts and one
// self-contained HTML page. Nothing it writes refers to anything outside itself: no
// scripts, fonts, style sheets or images are fetched, so a report opens the same offline,
// years later, and byte-for-byte identical inputs give byte-for-byte identical outputs.
package report

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Style says how a Series is drawn.
type Style int

const (
	// Line joins consecutive points with straight segments.
	Line Style = iota
	// Step draws sample-and-hold: each value holds until the next point's X. It is the
	// honest way to draw sensor readings, which keep their value until the next update.
	Step
	// Points draws one dot per point (a scatter plot).
	Points
)

// Series is one named set of points.
//
// Points whose X or Y is NaN or ±Inf (or not positive on a log axis) are skipped and break
// the line. X and Y should have the same length; extra values in the longer one are ignored.
type Series struct {
	Name  string // shown in the legend; a series without a name has no legend entry
	X, Y  []float64
	Style Style
	// Color is any SVG colour ("#0072B2", "teal"); empty picks the next colour of a fixed
	// colour-blind-safe palette (Okabe-Ito), in series order.
	Color string
	Dash  bool // dashed line (Line and Step)
	// YLow and YHigh, when both are set, shade a band around the line (a confidence band,
	// a min-max envelope), drawn in the series colour with the series style.
	YLow, YHigh []float64
	// Colors optionally colours each point of a Points series (e.g. by occupancy); a
	// missing or empty entry falls back to Color.
	Colors []string
}

// VLine is a vertical marker at X with a label above the plot area, such as "cmd start".
type VLine struct {
	X     float64
	Label string
	Color string // empty: dark grey
}

// HLine is a horizontal reference line at Y with a label, such as "power limit 700 W".
type HLine struct {
	Y     float64
	Label string
	Color string // empty: dark red
}

// Band shades the x-range [X0, X1] over the full height of the plot, for example the time
// a command ran. A labelled band gets a legend entry.
type Band struct {
	X0, X1 float64
	Label  string
	Color  string // empty: grey
}

// Plot is a 2-D chart rendered to SVG by its SVG method.
//
// The axis ranges are chosen to show every series point, band bound and marker, padded a
// little; XMin, XMax, YMin and YMax fix either end of either axis instead (data outside is
// clipped). Labels should carry units: "time (s)", "power (W)".
type Plot struct {
	Title          string
	XLabel, YLabel string
	Width, Height  int // pixels of the SVG viewBox; 0 means 800 × 360
	XLog, YLog     bool
	// Optional fixed ranges; nil means automatic.
	XMin, XMax, YMin, YMax *float64
	Series                 []Series
	VLines                 []VLine
	HLines                 []HLine
	Bands                  []Band
}

// Float returns a pointer to v, for the optional range fields of Plot.
func Float(v float64) *float64 { return &v }

// palette is the default series colours in order: Okabe and Ito's colour-blind-safe set,
// with the yellow that is hard to see on white moved to the end.
var palette = [...]string{"#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"}

// Palette returns the colours given to series without a Color, in order (a copy).
func Palette() []string { return slices.Clone(palette[:]) }

// MaxRenderPoints is the number of points above which a Line or Step series is thinned
// for drawing: each pixel column keeps its first, lowest, highest and last point, so the
// drawing looks the same and no spike is lost. Points series are thinned to one dot per
// pixel and colour.
const MaxRenderPoints = 4000

// Layout and look, in pixels.
const (
	fontFamily   = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"
	fontSize     = 12.0
	smallSize    = 11.0
	titleSize    = 14.0
	margin       = 10.0
	tickLen      = 5.0
	legendRowH   = 18.0
	markerRowH   = 14.0
	lineWidth    = 1.5
	pointRadius  = 2.5
	colText      = "#222"
	colAxis      = "#444"
	colGrid      = "#e6e6e6"
	colMarker    = "#555"
	colHLine     = "#A61C1C"
	colBand      = "#888"
	clipToken    = "\x00clip\x00" // replaced by the clip-path id; NUL cannot occur in escaped text
	minPlotPixel = 20.0
)

// SVG renders the plot as one complete, well-formed <svg> element with inline styling.
// The same Plot always gives the same bytes.
func (p Plot) SVG() string {
	r := newRenderer(p)
	r.layout()
	return r.render()
}

type point struct{ x, y float64 }

// prepared is one series with its colour resolved.
type prepared struct {
	Series
	color string
	n     int // number of usable (X, Y) pairs
	// marked: a Line of few points (at most SparsePoints) gets a dot on each, so that two
	// measured points joined by a line do not read as a measured curve.
	marked bool
	// cut: the band reaches past the frame at a few points (bandLimits), where it is cut.
	cut bool
}

// SparsePoints is the most points a Line series may have and still get a dot on each point.
const SparsePoints = 40

type renderer struct {
	p        Plot
	w, h     float64
	series   []prepared
	hasData  bool // at least one drawable point
	hasAxes  bool // ranges could be determined
	xs, ys   scale
	xt, yt   axisTicks
	x0, x1   float64 // plot area, pixels
	y0, y1   float64
	titleY   float64
	legend   []legendItem
	legendRs int
	marks    []placedMarker
	markRows int
}

type legendItem struct {
	label    string
	color    string
	style    Style
	dash     bool
	band     bool // draw a shaded swatch behind (series band) or instead of (Band) the line
	bandOnly bool
	marked   bool     // a dot on the line, as its sparse points have
	colors   []string // distinct per-point colours of a Points series, at most 3
	x, y     float64  // position of the swatch's left edge and the text baseline
}

type placedMarker struct {
	v     VLine
	px    float64
	tx    float64 // label centre
	row   int
	color string
}

func newRenderer(p Plot) *renderer {
	r := &renderer{p: p, w: 800, h: 360}
	if p.Width > 0 {
		r.w = float64(p.Width)
	}
	if p.Height > 0 {
		r.h = float64(p.Height)
	}
	pal := 0
	for _, s := range p.Series {
		ps := prepared{Series: s, n: min(len(s.X), len(s.Y))}
		if k := finitePairs(s.X[:ps.n], s.Y[:ps.n]); s.Style == Line && k > 0 && k <= SparsePoints {
			ps.marked = true
		}
		ps.color = s.Color
		if ps.color == "" {
			ps.color = palette[pal%len(palette)]
			pal++
		}
		r.series = append(r.series, ps)
	}
	r.ranges()
	return r
}

// ranges decides both axis ranges from the data, the markers and the fixed ends.
func (r *renderer) ranges() {
	xv := scale{log: r.p.XLog}
	yv := scale{log: r.p.YLog}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	addX := func(v float64) {
		if xv.valid(v) {
			xlo, xhi = math.Min(xlo, v), math.Max(xhi, v)
		}
	}
	addY := func(v float64) {
		if yv.valid(v) {
			ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
		}
	}
	hasPoints := false
	for _, s := range r.series {
		if s.Style == Points || s.marked {
			hasPoints = true // dots need room at the ends
		}
		for i := range s.n {
			if xv.valid(s.X[i]) && yv.valid(s.Y[i]) {
				addX(s.X[i])
				addY(s.Y[i])
				r.hasData = true
			}
		}
	}
	// A band sets the y-axis as far as most of it reaches: a few points whose interval is
	// far wider than the rest (the edges of a corrected power series) are cut at the frame
	// rather than squeeze the line into a sliver.
	for k := range r.series {
		s := &r.series[k]
		lim := bandLimits(yv, *s)
		for i := range min(len(s.X), len(s.YLow), len(s.YHigh)) {
			if xv.valid(s.X[i]) && yv.valid(s.YLow[i]) && yv.valid(s.YHigh[i]) {
				addX(s.X[i])
				lo, hi := yv.t(s.YLow[i]), yv.t(s.YHigh[i])
				if lo < lim[0] || hi > lim[1] {
					s.cut = true
				}
				addY(yv.inv(math.Max(lo, lim[0])))
				addY(yv.inv(math.Min(hi, lim[1])))
			}
		}
	}
	for _, m := range r.p.VLines {
		addX(m.X)
	}
	for _, b := range r.p.Bands {
		if xv.valid(b.X0) && xv.valid(b.X1) {
			addX(b.X0)
			addX(b.X1)
		}
	}
	for _, m := range r.p.HLines {
		addY(m.Y)
	}
	// Lines and steps fill the x-axis edge to edge, like a time axis should; dots and
	// markers alone get room so that they do not sit on the frame.
	xpad := 0.0
	if hasPoints {
		xpad = 0.03
	} else if !r.hasData {
		xpad = 0.05
	}
	var okx, oky bool
	xv.lo, xv.hi, okx = fixRange(xlo, xhi, r.p.XMin, r.p.XMax, xv, xpad)
	yv.lo, yv.hi, oky = fixRange(ylo, yhi, r.p.YMin, r.p.YMax, yv, 0.05)
	// An axis with nothing on it still gets a range when the other one has one.
	r.hasAxes = okx || oky
	r.xs, r.ys = xv, yv
}

// fixRange applies fixed ends, padding (a fraction of the span, in log space on a log
// axis) on automatic ends, and widens empty ranges. ok is false when nothing at all
// determined the range.
func fixRange(lo, hi float64, fmin, fmax *float64, s scale, pad float64) (float64, float64, bool) {
	ok := lo <= hi
	fixedLo := fmin != nil && s.valid(*fmin)
	fixedHi := fmax != nil && s.valid(*fmax)
	if fixedLo {
		lo = *fmin
		ok = true
	}
	if fixedHi {
		hi = *fmax
		ok = true
	}
	if !ok {
		if s.log {
			return 1, 10, false
		}
		return 0, 1, false
	}
	switch {
	case fixedLo && !fixedHi && !(hi >= lo):
		hi = lo
	case fixedHi && !fixedLo && !(lo <= hi):
		lo = hi
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if (!s.log && degenerate(lo, hi)) || (s.log && hi/lo < 1+1e-9) {
		a, b := expandDegenerate(lo, hi, s.log)
		if !fixedLo {
			lo = a
		}
		if !fixedHi {
			hi = b
		}
		if lo >= hi {
			lo, hi = a, b
		}
		return lo, hi, true
	}
	if pad > 0 {
		if s.log {
			d := (math.Log10(hi) - math.Log10(lo)) * pad
			if !fixedLo {
				lo /= math.Pow(10, d)
			}
			if !fixedHi {
				hi *= math.Pow(10, d)
			}
		} else {
			d := (hi/2 - lo/2) * 2 * pad
			if !fixedLo {
				lo = math.Max(lo-d, -math.MaxFloat64)
			}
			if !fixedHi {
				hi = math.Min(hi+d, math.MaxFloat64)
			}
		}
	}
	return lo, hi, true
}

// layout places the title, legend, marker labels and plot area. Tick labels decide the
// margins and the plot area decides the ticks, so it iterates to a fixed point.
func (r *renderer) layout() {
	yLabelW, xLabelHalf := 28.0, 12.0
	for range 4 {
		left := margin + yLabelW + tickLen + 4
		if r.p.YLabel != "" {
			left += fontSize + 8
		}
		right := margin + math.Max(xLabelHalf, 6)
		r.x0, r.x1 = math.Round(left), math.Round(r.w-right)
		if r.x1-r.x0 < minPlotPixel {
			r.x1 = r.x0 + minPlotPixel
		}

		top := margin
		if r.p.Title != "" {
			r.titleY = top + titleSize - 2
			top += titleSize + 8
		}
		r.layoutLegend(top)
		if r.legendRs > 0 {
			top += float64(r.legendRs)*legendRowH + 2
		}
		r.xs.p0, r.xs.p1 = r.x0, r.x1
		r.layoutMarkers()
		if r.markRows > 0 {
			top += float64(r.markRows)*markerRowH + 2
		} else {
			top += 4
		}
		bottom := margin + tickLen + 4 + fontSize
		if r.p.XLabel != "" {
			bottom += fontSize + 10
		}
		r.y0, r.y1 = math.Round(top), math.Round(r.h-bottom)
		if r.y1-r.y0 < minPlotPixel {
			r.y1 = r.y0 + minPlotPixel
		}
		r.ys.p0, r.ys.p1 = r.y1, r.y0

		if !r.hasAxes {
			return
		}
		r.yt = r.ticksFor(r.ys, false)
		r.xt = r.ticksFor(r.xs, true)
		newYW := 0.0
		for _, l := range r.yt.labels {
			newYW = math.Max(newYW, textWidth(l, fontSize))
		}
		newXHalf := 0.0
		for i, l := range r.xt.labels {
			// Only a label near the right edge needs room in the right margin.
			over := r.xs.px(r.xt.major[i]) + textWidth(l, fontSize)/2 - r.x1
			newXHalf = math.Max(newXHalf, over)
		}
		newYW, newXHalf = math.Ceil(newYW), math.Ceil(newXHalf)
		if newYW == yLabelW && newXHalf == xLabelHalf {
			return
		}
		yLabelW, xLabelHalf = newYW, newXHalf
	}
}

// ticksFor picks the densest ticks whose labels do not collide.
func (r *renderer) ticksFor(s scale, horizontal bool) axisTicks {
	length := math.Abs(s.p1 - s.p0)
	spacing := 30.0
	if horizontal {
		spacing = 60
	}
	var t axisTicks
	for n := max(2, int(length/spacing)+1); n >= 2; n-- {
		if s.log {
			t = logTicks(s.lo, s.hi, n)
		} else {
			t = linearTicks(s.lo, s.hi, n)
		}
		if !r.collide(s, t, horizontal) {
			break
		}
	}
	return t
}

func (r *renderer) collide(s scale, t axisTicks, horizontal bool) bool {
	for i := 1; i < len(t.major); i++ {
		gap := math.Abs(s.px(t.major[i]) - s.px(t.major[i-1]))
		need := fontSize + 4
		if horizontal {
			need = (textWidth(t.labels[i], fontSize)+textWidth(t.labels[i-1], fontSize))/2 + 10
		}
		if gap < need {
			return true
		}
	}
	return false
}

// layoutLegend packs the legend entries into right-aligned rows above the plot area.
func (r *renderer) layoutLegend(top float64) {
	r.legend = r.legend[:0]
	for _, s := range r.series {
		if s.Name == "" {
			continue
		}
		label := s.Name
		if s.cut {
			label += " (cut at the frame)"
		}
		r.legend = append(r.legend, legendItem{
			label: label, color: s.color, style: s.Style, dash: s.Dash, marked: s.marked,
			band:   len(s.YLow) > 0 && len(s.YHigh) > 0,
			colors: firstColors(s, 3),
		})
	}
	for _, b := range r.p.Bands {
		if b.Label != "" {
			r.legend = append(r.legend, legendItem{label: b.Label, color: cmp.Or(b.Color, colBand), bandOnly: true})
		}
	}
	r.legendRs = 0
	if len(r.legend) == 0 {
		return
	}
	avail := r.x1 - r.x0
	var rows [][]int
	rowW := []float64{}
	for i, it := range r.legend {
		w := itemWidth(it)
		if len(rows) == 0 || rowW[len(rows)-1]+w > avail {
			rows = append(rows, nil)
			rowW = append(rowW, 0)
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		rowW[len(rows)-1] += w
	}
	for ri, row := range rows {
		x := r.x1 - rowW[ri] + 14 // the last item's trailing gap hangs off the right edge
		y := top + float64(ri)*legendRowH + fontSize
		for _, i := range row {
			r.legend[i].x, r.legend[i].y = x, y
			x += itemWidth(r.legend[i])
		}
	}
	r.legendRs = len(rows)
}

// firstColors returns the first n distinct colours a Points series draws with, when it
// colours its points individually.
func firstColors(s prepared, n int) []string {
	if s.Style != Points || len(s.Colors) == 0 {
		return nil
	}
	var out []string
	for i := range min(s.n, len(s.Colors)) {
		c := cmp.Or(s.Colors[i], s.color)
		if !slices.Contains(out, c) {
			out = append(out, c)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

func itemWidth(it legendItem) float64 { return 22 + 5 + textWidth(it.label, fontSize) + 14 }

// layoutMarkers places the labels of vertical markers in rows above the plot area,
// centred over their line, moving a label up a row when it would overlap another.
func (r *renderer) layoutMarkers() {
	r.marks = r.marks[:0]
	r.markRows = 0
	if !r.hasAxes {
		return
	}
	var rows [][][2]float64
	for _, v := range r.p.VLines {
		if !r.xs.inRange(v.X) {
			continue
		}
		m := placedMarker{v: v, px: r.xs.px(v.X), color: cmp.Or(v.Color, colMarker)}
		if v.Label != "" {
			tw := textWidth(v.Label, smallSize)
			m.tx = math.Max(margin+tw/2, math.Min(r.w-margin-tw/2, m.px))
			iv := [2]float64{m.tx - tw/2 - 4, m.tx + tw/2 + 4}
			m.row = -1
			for ri, row := range rows {
				if !slices.ContainsFunc(row, func(o [2]float64) bool { return iv[0] < o[1] && o[0] < iv[1] }) {
					m.row = ri
					break
				}
			}
			if m.row < 0 {
				if len(rows) < 4 {
					rows = append(rows, nil)
				}
				m.row = len(rows) - 1
			}
			rows[m.row] = append(rows[m.row], iv)
		}
		r.marks = append(r.marks, m)
	}
	r.markRows = len(rows)
}

// svgWriter accumulates SVG text.
type svgWriter struct{ strings.Builder }

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(&w.Builder, format, args...) }

// num formats a pixel coordinate with at most one decimal.
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (r *renderer) render() string {
	var w svgWriter
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" font-size="%s" fill="%s">`+"\n",
		num(r.w), num(r.h), num(r.w), num(r.h), fontFamily, num(fontSize), colText)
	if r.p.Title != "" {
		w.f("<title>%s</title>\n", esc(r.p.Title))
	}
	w.f(`<rect width="%s" height="%s" fill="#fff"/>`+"\n", num(r.w), num(r.h))
	pw, ph := r.x1-r.x0, r.y1-r.y0
	w.f(`<defs><clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath></defs>`+"\n",
		clipToken, num(r.x0), num(r.y0), num(pw), num(ph))

	if r.hasAxes {
		r.renderGrid(&w)
		w.f(`<g clip-path="url(#%s)">`+"\n", clipToken)
		r.renderBands(&w)
		for _, s := range r.series {
			r.renderSeriesBand(&w, s)
		}
		for _, s := range r.series {
			r.renderSeries(&w, s)
		}
		r.renderHLines(&w)
		w.f("</g>\n")
		r.renderVLines(&w)
	}
	w.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" shape-rendering="crispEdges"/>`+"\n",
		num(r.x0), num(r.y0), num(pw), num(ph), colAxis)
	if r.hasAxes {
		r.renderTicks(&w)
	}
	if !r.hasData {
		w.f(`<text x="%s" y="%s" text-anchor="middle" fill="#888" font-size="14" stroke="#fff" stroke-width="4" stroke-linejoin="round" paint-order="stroke">no data</text>`+"\n",
			num((r.x0+r.x1)/2), num((r.y0+r.y1)/2+5))
	}
	r.renderLabels(&w)
	r.renderLegend(&w)
	w.f("</svg>\n")

	out := w.String()
	h := fnv.New64a()
	h.Write([]byte(out))
	return strings.ReplaceAll(out, clipToken, fmt.Sprintf("gwclip-%016x", h.Sum64()))
}

func (r *renderer) renderGrid(w *svgWriter) {
	w.f(`<g stroke="%s" stroke-width="1" shape-rendering="crispEdges">`+"\n", colGrid)
	for _, v := range r.xt.major {
		if x := r.xs.px(v); r.xs.inRange(v) && x > r.x0+0.5 && x < r.x1-0.5 {
			w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(x), num(r.y0), num(x), num(r.y1))
		}
	}
	for _, v := range r.yt.major {
		if y := r.ys.px(v); r.ys.inRange(v) && y > r.y0+0.5 && y < r.y1-0.5 {
			w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(r.x0), num(y), num(r.x1), num(y))
		}
	}
	w.f("\n</g>\n")
}

func (r *renderer) renderTicks(w *svgWriter) {
	var d strings.Builder
	for _, v := range r.xt.major {
		if r.xs.inRange(v) {
			fmt.Fprintf(&d, "M%s %sv%s", num(r.xs.px(v)), num(r.y1), num(tickLen))
		}
	}
	for _, v := range r.xt.minor {
		if r.xs.inRange(v) {
			fmt.Fprintf(&d, "M%s %sv3", num(r.xs.px(v)), num(r.y1))
		}
	}
	for _, v := range r.yt.major {
		if r.ys.inRange(v) {
			fmt.Fprintf(&d, "M%s %sh-%s", num(r.x0), num(r.ys.px(v)), num(tickLen))
		}
	}
	for _, v := range r.yt.minor {
		if r.ys.inRange(v) {
			fmt.Fprintf(&d, "M%s %sh-3", num(r.x0), num(r.ys.px(v)))
		}
	}
	if d.Len() > 0 {
		w.f(`<path d="%s" stroke="%s" fill="none" shape-rendering="crispEdges"/>`+"\n", d.String(), colAxis)
	}
	w.f(`<g text-anchor="middle">`)
	for i, v := range r.xt.major {
		if r.xs.inRange(v) {
			w.f(`<text x="%s" y="%s">%s</text>`, num(r.xs.px(v)), num(r.y1+tickLen+3+fontSize-1), esc(r.xt.labels[i]))
		}
	}
	w.f("</g>\n")
	w.f(`<g text-anchor="end">`)
	for i, v := range r.yt.major {
		if r.ys.inRange(v) {
			w.f(`<text x="%s" y="%s">%s</text>`, num(r.x0-tickLen-3), num(r.ys.px(v)+fontSize*0.35), esc(r.yt.labels[i]))
		}
	}
	w.f("</g>\n")
}

func (r *renderer) renderLabels(w *svgWriter) {
	cx, cy := (r.x0+r.x1)/2, (r.y0+r.y1)/2
	if r.p.Title != "" {
		anchor, x := "middle", cx
		if textWidth(r.p.Title, titleSize)*1.1 > r.x1-r.x0 {
			anchor, x = "start", margin
		}
		size, text := fitText(r.p.Title, titleSize, r.w-2*margin)
		w.f(`<text x="%s" y="%s" text-anchor="%s" font-size="%s" font-weight="600">%s</text>`+"\n",
			num(x), num(r.titleY), anchor, num(size), esc(text))
	}
	if r.p.XLabel != "" {
		size, text := fitText(r.p.XLabel, fontSize, r.w-2*margin)
		w.f(`<text x="%s" y="%s" text-anchor="middle" font-size="%s">%s</text>`+"\n",
			num(cx), num(r.h-margin-2), num(size), esc(text))
	}
	if r.p.YLabel != "" {
		// The label runs along the frame's height, centred on it: it must fit that height
		// and the margins, or it is cut off at the picture's edges.
		x := margin + fontSize - 2
		avail := 2 * math.Min(cy-margin, r.h-margin-cy)
		size, text := fitText(r.p.YLabel, fontSize, avail)
		w.f(`<text transform="translate(%s %s) rotate(-90)" text-anchor="middle" font-size="%s">%s</text>`+"\n",
			num(x), num(cy), num(size), esc(text))
	}
}

// minLabelSize is the smallest font a label is shrunk to before it is shortened.
const minLabelSize = 9.0

// fitText returns the font size (and, where even the smallest is too wide, the text cut
// with an ellipsis) that keeps s within avail pixels: a label longer than its picture is
// cut off by the SVG's edge, so it is shrunk or shortened here, where the width is known.
// The plot's <title> keeps the whole title.
func fitText(s string, size, avail float64) (float64, string) {
	const slack = 1.18 // textWidth assumes Helvetica's widths; DejaVu Sans (Linux's system-ui) is up to ~15 % wider
	tw := textWidth(s, size) * slack
	if tw <= avail || avail <= 0 {
		return size, s
	}
	if smaller := size * avail / tw; smaller >= minLabelSize {
		return math.Floor(smaller*10) / 10, s
	}
	rs := []rune(s)
	for n := len(rs) - 1; n > 1; n-- {
		cut := strings.TrimSpace(string(rs[:n])) + "…"
		if textWidth(cut, minLabelSize)*slack <= avail {
			return minLabelSize, cut
		}
	}
	return minLabelSize, s
}

func (r *renderer) renderLegend(w *svgWriter) {
	for _, it := range r.legend {
		x, y := it.x, it.y
		mid := y - fontSize*0.35
		switch {
		case it.bandOnly:
			w.f(`<rect x="%s" y="%s" width="22" height="10" fill="%s" fill-opacity="0.18" stroke="%s" stroke-opacity="0.5"/>`,
				num(x), num(mid-5), esc(it.color), esc(it.color))
		case it.style == Points && len(it.colors) > 1:
			// Coloured per point: show the first few colours.
			for k, c := range it.colors {
				w.f(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, num(x+4+7*float64(k)), num(mid), esc(c))
			}
		case it.style == Points:
			w.f(`<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`, num(x+11), num(mid), esc(it.color))
		default:
			if it.band {
				w.f(`<rect x="%s" y="%s" width="22" height="10" fill="%s" fill-opacity="0.2"/>`, num(x), num(mid-5), esc(it.color))
			}
			dash := ""
			if it.dash {
				dash = ` stroke-dasharray="5 3"`
			}
			w.f(`<path d="M%s %sh22" stroke="%s" stroke-width="2"%s/>`, num(x), num(mid), esc(it.color), dash)
			if it.marked {
				w.f(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`, num(x+11), num(mid), num(pointRadius), esc(it.color))
			}
		}
		w.f(`<text x="%s" y="%s">%s</text>`+"\n", num(x+27), num(y), esc(it.label))
	}
}

func (r *renderer) renderBands(w *svgWriter) {
	for _, b := range r.p.Bands {
		if !r.xs.valid(b.X0) || !r.xs.valid(b.X1) {
			continue
		}
		a, c := r.xs.px(b.X0), r.xs.px(b.X1)
		if a > c {
			a, c = c, a
		}
		col := esc(cmp.Or(b.Color, colBand))
		w.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.14"/>`+"\n",
			num(a), num(r.y0), num(math.Max(c-a, 1)), num(r.y1-r.y0), col)
	}
}

func (r *renderer) renderHLines(w *svgWriter) {
	for _, m := range r.p.HLines {
		if !r.ys.inRange(m.Y) {
			continue
		}
		y := r.ys.px(m.Y)
		col := esc(cmp.Or(m.Color, colHLine))
		w.f(`<path d="M%s %sH%s" stroke="%s" stroke-width="1.2" stroke-dasharray="6 3"/>`+"\n", num(r.x0), num(y), num(r.x1), col)
		if m.Label != "" {
			ty := y - 4
			if ty-smallSize < r.y0 {
				ty = y + smallSize + 2
			}
			w.f(`<text x="%s" y="%s" text-anchor="end" font-size="%s" fill="%s" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">%s</text>`+"\n",
				num(r.x1-4), num(ty), num(smallSize), col, esc(m.Label))
		}
	}
}

func (r *renderer) renderVLines(w *svgWriter) {
	for _, m := range r.marks {
		col := esc(m.color)
		top := r.y0
		if m.v.Label != "" {
			top = r.y0 - 2 - float64(m.row)*markerRowH
		}
		w.f(`<path d="M%s %sV%s" stroke="%s" stroke-width="1.2" stroke-dasharray="4 3"/>`+"\n", num(m.px), num(r.y1), num(top), col)
		if m.v.Label != "" {
			w.f(`<text x="%s" y="%s" text-anchor="middle" font-size="%s" fill="%s">%s</text>`+"\n",
				num(m.tx), num(top-3), num(smallSize), col, esc(m.v.Label))
		}
	}
}

// renderSeries draws one series' line, steps or dots.
func (r *renderer) renderSeries(w *svgWriter, s prepared) {
	if s.Style == Points {
		r.renderPoints(w, s)
		return
	}
	valid := func(i int) bool { return r.xs.valid(s.X[i]) && r.ys.valid(s.Y[i]) }
	idx := r.thin(s.n, s.X, valid, func(i int) float64 { return s.Y[i] })
	var d strings.Builder
	var dots []point
	run := 0 // points in the current unbroken run
	var last point
	for k, i := range idx {
		if i < 0 {
			if run == 1 {
				dots = append(dots, last)
			}
			run = 0
			continue
		}
		pt := point{r.xs.px(s.X[i]), r.ys.px(s.Y[i])}
		switch {
		case run == 0:
			fmt.Fprintf(&d, "M%s %s", num(pt.x), num(pt.y))
		case s.Style == Step:
			fmt.Fprintf(&d, "H%sV%s", num(pt.x), num(pt.y))
		default:
			fmt.Fprintf(&d, "L%s %s", num(pt.x), num(pt.y))
		}
		run++
		last = pt
		// Sample-and-hold: a reading holds until the X of the next (broken) sample.
		if s.Style == Step && k+1 < len(idx) && idx[k+1] < 0 {
			if nx := nextX(s, idx, k); r.xs.valid(nx) && nx > s.X[i] {
				fmt.Fprintf(&d, "H%s", num(r.xs.px(nx)))
				run++
			}
		}
	}
	if run == 1 {
		dots = append(dots, last)
	}
	dash := ""
	if s.Dash {
		dash = ` stroke-dasharray="6 4"`
	}
	if d.Len() > 0 {
		w.f(`<path d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s/>`+"\n",
			d.String(), esc(s.color), num(lineWidth), dash)
	}
	// A point with no neighbour would be invisible as a line: draw it as a dot; a sparse
	// line gets a dot on every point.
	if s.marked {
		for i := range s.n {
			if valid(i) {
				w.f(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", num(r.xs.px(s.X[i])), num(r.ys.px(s.Y[i])), num(pointRadius), esc(s.color))
			}
		}
		return
	}
	for _, pt := range dots {
		w.f(`<circle cx="%s" cy="%s" r="2" fill="%s"/>`+"\n", num(pt.x), num(pt.y), esc(s.color))
	}
}

// finitePairs counts the points of x, y with both finite.
func finitePairs(x, y []float64) int {
	n := 0
	for i := range min(len(x), len(y)) {
		if !math.IsNaN(x[i]) && !math.IsInf(x[i], 0) && !math.IsNaN(y[i]) && !math.IsInf(y[i], 0) {
			n++
		}
	}
	return n
}

// bandLimits are how far series s's band may set the y-axis, on the axis's own scale
// (log10 on a log axis): from its 10th percentile low bound to its 90th percentile high
// bound, widened by a quarter of that span on each side. So a band wide everywhere is shown
// whole, and only a tenth of its points or fewer (the edges of a corrected power series,
// whose intervals span kilowatts) can be cut; the lines themselves always set the axis.
func bandLimits(yv scale, s prepared) [2]float64 {
	var lows, highs []float64
	for i := range min(len(s.X), len(s.YLow), len(s.YHigh)) {
		if yv.valid(s.YLow[i]) && yv.valid(s.YHigh[i]) {
			lows, highs = append(lows, yv.t(s.YLow[i])), append(highs, yv.t(s.YHigh[i]))
		}
	}
	if len(lows) == 0 {
		return [2]float64{math.Inf(-1), math.Inf(1)}
	}
	slices.Sort(lows)
	slices.Sort(highs)
	lo, hi := lows[len(lows)/10], highs[len(highs)-1-len(highs)/10]
	m := math.Max(hi-lo, 0.1*math.Max(math.Abs(lo), math.Abs(hi))) / 4
	return [2]float64{lo - m, hi + m}
}

// nextX returns the X of the raw sample after the one at idx[k] (the sample that broke the
// run), or NaN.
func nextX(s prepared, idx []int, k int) float64 {
	if i := idx[k] + 1; i < s.n {
		return s.X[i]
	}
	return math.NaN()
}

func (r *renderer) renderPoints(w *svgWriter, s prepared) {
	type key struct {
		x, y  int
		color string
	}
	seen := map[key]bool{}
	thin := s.n > MaxRenderPoints
	w.f(`<g fill="%s" fill-opacity="0.85">`+"\n", esc(s.color))
	for i := range s.n {
		if !r.xs.valid(s.X[i]) || !r.ys.valid(s.Y[i]) {
			continue
		}
		x, y := r.xs.px(s.X[i]), r.ys.px(s.Y[i])
		col := ""
		if i < len(s.Colors) && s.Colors[i] != "" && s.Colors[i] != s.color {
			col = s.Colors[i]
		}
		if thin {
			k := key{int(math.Round(x)), int(math.Round(y)), col}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		if col != "" {
			w.f(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`, num(x), num(y), num(pointRadius), esc(col))
		} else {
			w.f(`<circle cx="%s" cy="%s" r="%s"/>`, num(x), num(y), num(pointRadius))
		}
	}
	w.f("\n</g>\n")
}

// renderSeriesBand shades YLow..YHigh in the series colour.
func (r *renderer) renderSeriesBand(w *svgWriter, s prepared) {
	n := min(len(s.X), len(s.YLow), len(s.YHigh))
	if n == 0 {
		return
	}
	valid := func(i int) bool {
		return r.xs.valid(s.X[i]) && r.ys.valid(s.YLow[i]) && r.ys.valid(s.YHigh[i])
	}
	segs := r.bandSegments(n, s.X, valid, s.YLow, s.YHigh)
	var d strings.Builder
	for _, seg := range segs {
		if len(seg) < 2 && s.Style != Step {
			continue
		}
		// Upper edge forwards, lower edge backwards.
		for k, q := range seg {
			x, y := r.xs.px(q.x), r.ys.px(q.hi)
			switch {
			case k == 0:
				fmt.Fprintf(&d, "M%s %s", num(x), num(y))
			case s.Style == Step:
				fmt.Fprintf(&d, "H%sV%s", num(x), num(y))
			default:
				fmt.Fprintf(&d, "L%s %s", num(x), num(y))
			}
		}
		end := seg[len(seg)-1]
		if s.Style == Step && len(seg) > 0 && r.xs.valid(end.hold) {
			fmt.Fprintf(&d, "H%s", num(r.xs.px(end.hold)))
		}
		for k := len(seg) - 1; k >= 0; k-- {
			q := seg[k]
			x, y := r.xs.px(q.x), r.ys.px(q.lo)
			switch {
			case s.Style == Step:
				if k == len(seg)-1 {
					fmt.Fprintf(&d, "V%s", num(y))
				} else {
					fmt.Fprintf(&d, "H%sV%s", num(r.xs.px(seg[k+1].x)), num(y))
				}
			default:
				fmt.Fprintf(&d, "L%s %s", num(x), num(y))
			}
		}
		if s.Style == Step {
			fmt.Fprintf(&d, "H%s", num(r.xs.px(seg[0].x)))
		}
		d.WriteString("Z")
	}
	if d.Len() > 0 {
		w.f(`<path d="%s" fill="%s" fill-opacity="0.2" stroke="none"/>`+"\n", d.String(), esc(s.color))
	}
}

type bandPoint struct{ x, lo, hi, hold float64 }

// bandSegments returns the unbroken runs of a band, thinned like lines: each pixel column
// keeps its lowest low and highest high at its first and last X.
func (r *renderer) bandSegments(n int, xs []float64, valid func(int) bool, lo, hi []float64) [][]bandPoint {
	buckets := r.buckets(n, xs, valid)
	var segs [][]bandPoint
	var cur []bandPoint
	for _, b := range buckets {
		if b.start < 0 {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		if b.end-b.start == 1 || n <= MaxRenderPoints {
			for i := b.start; i < b.end; i++ {
				cur = append(cur, bandPoint{x: xs[i], lo: lo[i], hi: hi[i], hold: math.NaN()})
			}
		} else {
			l, h := math.Inf(1), math.Inf(-1)
			for i := b.start; i < b.end; i++ {
				l, h = math.Min(l, lo[i]), math.Max(h, hi[i])
			}
			cur = append(cur, bandPoint{x: xs[b.start], lo: l, hi: h, hold: math.NaN()},
				bandPoint{x: xs[b.end-1], lo: l, hi: h, hold: math.NaN()})
		}
		if len(cur) > 0 && b.end < n {
			cur[len(cur)-1].hold = xs[b.end]
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// bucket is a run of consecutive valid samples [start, end) that fall in one pixel column
// (or one chunk of indexes); start < 0 marks a break.
type bucket struct{ start, end int }

// buckets groups the valid samples of a series for thinning. Without thinning (n ≤
// MaxRenderPoints) every valid sample is its own bucket. With sorted X, a bucket is a pixel
// column; otherwise a fixed number of consecutive samples.
func (r *renderer) buckets(n int, xs []float64, valid func(int) bool) []bucket {
	var out []bucket
	brk := func() {
		if len(out) > 0 && out[len(out)-1].start >= 0 {
			out = append(out, bucket{-1, -1})
		}
	}
	if n <= MaxRenderPoints {
		for i := range n {
			if valid(i) {
				out = append(out, bucket{i, i + 1})
			} else {
				brk()
			}
		}
		return out
	}
	sorted := true
	prev := math.Inf(-1)
	for i := range n {
		if valid(i) {
			if xs[i] < prev {
				sorted = false
				break
			}
			prev = xs[i]
		}
	}
	chunk := max(1, n/int(2*(r.x1-r.x0)))
	col := func(i int) int {
		if sorted {
			return int(math.Floor(r.xs.px(xs[i])))
		}
		return i / chunk
	}
	start, c := -1, 0
	for i := range n {
		if !valid(i) {
			if start >= 0 {
				out = append(out, bucket{start, i})
				start = -1
			}
			brk()
			continue
		}
		ci := col(i)
		if start >= 0 && ci != c {
			out = append(out, bucket{start, i})
			start = -1
		}
		if start < 0 {
			start, c = i, ci
		}
	}
	if start >= 0 {
		out = append(out, bucket{start, n})
	}
	return out
}

// thin returns the sample indexes to draw, with -1 marking breaks in the line. Up to
// MaxRenderPoints samples all are kept; beyond, each bucket keeps its first, lowest,
// highest and last sample in their original order, so spikes survive.
func (r *renderer) thin(n int, xs []float64, valid func(int) bool, y func(int) float64) []int {
	var idx []int
	for _, b := range r.buckets(n, xs, valid) {
		if b.start < 0 {
			idx = append(idx, -1)
			continue
		}
		if b.end-b.start <= 4 {
			for i := b.start; i < b.end; i++ {
				idx = append(idx, i)
			}
			continue
		}
		lo, hi := b.start, b.start
		for i := b.start; i < b.end; i++ {
			if y(i) < y(lo) {
				lo = i
			}
			if y(i) > y(hi) {
				hi = i
			}
		}
		keep := []int{b.start, lo, hi, b.end - 1}
		slices.Sort(keep)
		idx = append(idx, slices.Compact(keep)...)
	}
	return idx
}

// esc escapes text for XML character data and attribute values, and replaces what XML
// cannot carry at all (control characters, invalid UTF-8) with U+FFFD.
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '&':
			b.WriteString("&amp;")
		case c == '"':
			b.WriteString("&quot;")
		case c == '\'':
			b.WriteString("&#39;")
		case c == '\n' || c == '\t' || c == '\r':
			b.WriteByte(' ')
		case !xmlChar(c) || (c == utf8.RuneError && size == 1):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// xmlChar reports whether XML 1.0 allows r in a document.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
