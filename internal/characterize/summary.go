package characterize

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/termtext"
)

// TitleSummary is the datasheet's first section: the figures people compare GPUs by.
const TitleSummary = "Summary"

// KeyFigure is one of the five figures people compare GPUs by, with its 95 % interval on the
// absolute scale: comparing two boards, each board's gain error counts (GainPart).
type KeyFigure struct {
	Name  string     `json:"name"`
	Unit  string     `json:"unit"`
	Value float64    `json:"value"`
	Abs   [2]float64 `json:"abs_ci"` // zero where there is no interval (NoInterval says why)
	// Abs is the interval its stage recorded (archline's, micro's and loadlevel's *_abs_ci
	// keys). Widened: a run recorded before those keys existed has none, so Abs is the
	// relative interval widened by the ±5 % gain part (root sum of squares, as the energy
	// estimator's absolute interval is made), marked * on the page.
	Widened    bool   `json:"widened,omitempty"`
	NoInterval string `json:"no_interval,omitempty"`
	// How is where the figure comes from, in plain words.
	How string `json:"how"`
}

// HasInterval reports whether the figure carries an interval.
func (f KeyFigure) HasInterval() bool { return f.Abs[1] > f.Abs[0] }

// Text is "value ± half-width unit" (or "[low, high]" where lopsided), with the reason
// where there is no interval.
func (f KeyFigure) Text() string {
	s := archline.PM(f.Value, f.Abs) + " " + f.Unit
	if !f.HasInterval() {
		why := f.NoInterval
		if why == "" {
			why = "no interval recorded"
		}
		s += " (" + why + ")"
	}
	return s
}

// absolute returns the absolute interval of v: abs where recorded, else the relative
// interval rel widened by the gain part (widened true); zero where neither is known.
func absolute(v float64, rel, abs [2]float64) ([2]float64, bool) {
	if abs[1] > abs[0] {
		return abs, false
	}
	if !(rel[1] > rel[0]) || math.IsNaN(v) {
		return [2]float64{}, false
	}
	g := GainPart * math.Abs(v)
	lo := math.Hypot(math.Max(v-rel[0], 0), g)
	hi := math.Hypot(math.Max(rel[1]-v, 0), g)
	return [2]float64{v - lo, v + hi}, true
}

func newFigure(name, unit string, v float64, rel, abs [2]float64, how string) KeyFigure {
	f := KeyFigure{Name: name, Unit: unit, Value: v, How: how}
	f.Abs, f.Widened = absolute(v, rel, abs)
	return f
}

// KeyFigures are the five figures people compare GPUs by, as far as the run measured them:
// energy per flop by precision, energy per byte of HBM, pi0, active idle power and
// efficiency at full load.
func (r *Result) KeyFigures() []KeyFigure {
	var fs []KeyFigure
	if a := r.Archline; a != nil {
		fs = append(fs, archlineFigures(a)...)
	}
	if f, ok := r.activeIdle(); ok {
		fs = append(fs, f)
	}
	if f, ok := r.fullLoad(); ok {
		fs = append(fs, f)
	}
	return fs
}

// archlineFigures are energy per flop by precision, per byte of HBM and pi0, from the
// card's joint fit (one pi0 and eps_mem per card) where it succeeded, else from each
// precision's own fit.
func archlineFigures(a *archline.Result) []KeyFigure {
	var fs []KeyFigure
	how := "the energy roofline fit E = W eps_flop + Q eps_mem + T pi0 over the intensity sweep"
	if j := a.Pi0; j != nil && j.Error == "" && j.Pi0W > 0 {
		for _, p := range precisions(a) {
			if v, ok := j.EpsFlopPJ[p]; ok {
				fs = append(fs, newFigure("Energy per flop, "+p, "pJ/flop", v, j.EpsFlopCI[p], j.EpsFlopAbsCI[p], how))
			}
		}
		fs = append(fs, newFigure("Energy per byte of HBM", "pJ/B", j.EpsMemPJPerByte, j.EpsMemCI, j.EpsMemAbsCI, how))
		fs = append(fs, newFigure("pi0, constant power while a kernel runs", "W", j.Pi0W, j.Pi0CI, j.Pi0AbsCI, how+" (one pi0 for the card)"))
		return fs
	}
	var mem, pi0 *archline.PrecisionResult
	for _, p := range precisions(a) {
		res := a.Results[p]
		fs = append(fs, newFigure("Energy per flop, "+p, "pJ/flop", res.EpsFlopPJ, res.EpsFlopCI, res.EpsFlopAbsCI, how))
		if mem == nil {
			mem, pi0 = res, res
		}
	}
	if mem != nil {
		fs = append(fs, newFigure("Energy per byte of HBM", "pJ/B", mem.EpsMemPJPerByte, mem.EpsMemCI, mem.EpsMemAbsCI, how+" ("+mem.Precision+")"))
		fs = append(fs, newFigure("pi0, constant power while a kernel runs", "W", pi0.Pi0W, pi0.Pi0CI, pi0.Pi0AbsCI, how+" ("+pi0.Precision+")"))
	}
	return fs
}

// activeIdle is the board's power with the GPU's context up and no work: the load-level
// run's active-idle level where it has one, else micro's idle reading.
func (r *Result) activeIdle() (KeyFigure, bool) {
	const name = "Active idle power"
	if l := r.Loadlevel; l != nil {
		for _, lv := range l.Levels {
			if lv.ActiveIdle && lv.PowerW > 0 {
				f := newFigure(name, "W", lv.PowerW, [2]float64{lv.PowerLowW, lv.PowerHighW}, deref(lv.PowerAbsCI), "the load-level run's active-idle level")
				if !f.HasInterval() {
					f.NoInterval = "none recorded"
				}
				return f, true
			}
		}
	}
	if m := r.Micro; m != nil && m.IdlePowerW > 0 {
		return KeyFigure{Name: name, Unit: "W", Value: m.IdlePowerW, How: "the microbenchmark stage's idle reading",
			NoInterval: "a reading: no interval"}, true
	}
	return KeyFigure{}, false
}

// fullLoad is the transactions per joule at the 100 % load level, its interval from the
// level's power interval (the rate is counted, not estimated).
func (r *Result) fullLoad() (KeyFigure, bool) {
	l := r.Loadlevel
	if l == nil {
		return KeyFigure{}, false
	}
	for _, lv := range l.Levels {
		if lv.ActiveIdle || lv.TargetLoad != 1 || lv.TxPerJ <= 0 {
			continue
		}
		rel := perJoule(lv.TxPerS, [2]float64{lv.PowerLowW, lv.PowerHighW})
		abs := perJoule(lv.TxPerS, deref(lv.PowerAbsCI))
		tx := l.Workload
		if len(l.Configs) > 0 && len(l.Configs[0].Runs) > 0 && l.Configs[0].Runs[0].Workload != "" {
			tx = l.Configs[0].Runs[0].Workload
		}
		f := newFigure("Efficiency at full load", "tx/J", lv.TxPerJ, rel, abs,
			fmt.Sprintf("transactions (%s) per joule at the 100 %% load level", tx))
		if !f.HasInterval() {
			f.NoInterval = "none recorded"
		}
		return f, true
	}
	return KeyFigure{}, false
}

// perJoule is the interval of rate/power from power's interval p (zero where p is none).
func perJoule(rate float64, p [2]float64) [2]float64 {
	if !(p[0] > 0 && p[1] > p[0]) {
		return [2]float64{}
	}
	return [2]float64{rate / p[1], rate / p[0]}
}

// deref is *p, or no interval where p is nil (a run recorded before the key existed).
func deref(p *[2]float64) [2]float64 {
	if p == nil {
		return [2]float64{}
	}
	return *p
}

// Verdict is the checks of a run in a few lines: whether it completed, how well the
// roofline model fits, the sensors' anomaly tests, the load levels' validity, the warnings.
func (r *Result) Verdict() []string {
	var v []string
	failed := 0
	for _, st := range r.Stages {
		if st.Status != StatusDone {
			failed++
		}
	}
	switch {
	case r.Incomplete:
		v = append(v, "Incomplete: "+r.Reason+".")
	case failed > 0:
		v = append(v, fmt.Sprintf("%d of %d stages did not finish.", failed, len(r.Stages)))
	default:
		v = append(v, fmt.Sprintf("Complete: all %d stages ran.", len(r.Stages)))
	}
	if a := r.Archline; a != nil {
		if j := a.Pi0; j != nil && j.Error == "" && j.Points > 0 {
			v = append(v, fmt.Sprintf("Energy roofline model: R² %.4f over %d points.", j.R2, j.Points))
		}
	}
	if s := r.Sensor; s != nil && len(s.Anomalies) > 0 {
		if n := len(s.AnomalyWarnings()); n > 0 {
			v = append(v, fmt.Sprintf("Sensor anomaly tests: %d finding(s) (see Power sensors).", n))
		} else {
			v = append(v, "Sensor anomaly tests: none found.")
		}
	}
	if l := r.Loadlevel; l != nil {
		if l.Valid {
			v = append(v, "Load levels: valid (every level held its target).")
		} else {
			v = append(v, "Load levels: not valid (see Efficiency under load).")
		}
	}
	if n := len(r.WarningLines()); n > 0 {
		v = append(v, fmt.Sprintf("%d warning(s), listed at the end.", n))
	} else {
		v = append(v, "No warnings.")
	}
	return v
}

// figureTable is the figures of one or more results, a column each (names label them).
func figureTable(rs []*Result, names []string) *report.Table {
	t := &report.Table{Header: []string{"figure"}, Caption: "± is the 95 % interval on the absolute scale: it includes each board's ±5 % gain error, so figures of two boards can be compared."}
	var order []string
	vals := map[string][]string{}
	widened := false
	for i, r := range rs {
		name := "value ± 95 % (absolute)"
		if len(rs) > 1 && i < len(names) {
			name = names[i]
		}
		t.Header = append(t.Header, name)
		for _, f := range r.KeyFigures() {
			k := f.Name + " (" + f.Unit + ")"
			if _, ok := vals[k]; !ok {
				order = append(order, k)
				vals[k] = make([]string, len(rs))
			}
			s := f.Text()
			if f.Widened {
				s += " *"
				widened = true
			}
			vals[k][i] = s
		}
	}
	for _, k := range order {
		row := []string{k}
		for _, v := range vals[k] {
			if v == "" {
				v = "not measured"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	if widened {
		t.Caption += " * No absolute interval was recorded: the relative interval widened by the ±5 % gain part."
	}
	t.Align = make([]string, len(t.Header))
	for i := range t.Align {
		t.Align[i] = "l"
	}
	return t
}

// summaryPlot is the one energy-roofline picture of the summary: the archline (flops per
// joule over intensity) of the first precision measured.
func summaryPlot(r *Result) []report.Plot {
	a := r.Archline
	if a == nil {
		return nil
	}
	for _, p := range precisions(a) {
		if ps := a.Plots(p); len(ps) > 1 {
			return []report.Plot{ps[1]}
		}
	}
	return nil
}

// summarySection is the datasheet's first screen: the card, its figures with their
// intervals, the archline picture, and the verdict of its checks.
func (r *Result) summarySection() report.Section {
	text := r.cardLine() + " " + strings.Join(r.Verdict(), " ")
	return report.Section{Title: TitleSummary, Text: text, Table: figureTable([]*Result{r}, nil), Plots: summaryPlot(r), Side: true}
}

// cardLine says which card and run in one sentence.
func (r *Result) cardLine() string {
	name := r.GPU.Name
	if name == "" {
		name = "GPU"
	}
	mode := "full run"
	if r.Quick {
		mode = "quick run"
	}
	parts := []string{fmt.Sprintf("%s (GPU %d", name, r.GPU.Index)}
	if r.GPU.PowerLimitW > 0 {
		parts[0] += fmt.Sprintf(", power limit %.0f W", r.GPU.PowerLimitW)
	}
	parts[0] += ")"
	parts = append(parts, mode, r.Date)
	if r.DriverVersion != "" {
		parts = append(parts, "driver "+r.DriverVersion)
	}
	if r.Sim {
		parts = append(parts, "simulated")
	}
	return strings.Join(parts, " · ") + "."
}

// WriteSummary prints the datasheet's first screen as text: the card, the key figures with
// their absolute intervals, the verdict, and where the page is.
func (r *Result) WriteSummary(w io.Writer, page string) {
	var b strings.Builder
	b.WriteString("\n" + termtext.Indent(r.cardLine(), " ", 1, termtext.Width) + "\n")
	figs := r.KeyFigures()
	width := 0
	for _, f := range figs {
		width = max(width, termtext.Len(f.Name+" ("+f.Unit+")"))
	}
	widened := false
	for _, f := range figs {
		name := f.Name + " (" + f.Unit + ")"
		v := f.Text()
		if f.Widened {
			v += " *"
			widened = true
		}
		fmt.Fprintf(&b, "   %s%s  %s\n", name, strings.Repeat(" ", width-termtext.Len(name)), v)
	}
	if len(figs) > 0 {
		note := "± is the 95 % interval on the absolute scale (each board's ±5 % gain error in)."
		if widened {
			note += " * no absolute interval recorded: the relative one widened by the gain part."
		}
		b.WriteString(termtext.Indent(note, "   ", 3, termtext.Width))
	}
	b.WriteString("\n" + termtext.Indent(strings.Join(r.Verdict(), " "), " ", 1, termtext.Width))
	if page != "" {
		b.WriteString(" The datasheet: " + page + "\n")
	}
	io.WriteString(w, b.String())
}
