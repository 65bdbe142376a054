package characterize

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/report"
)

// GainPart is the board's gain error between boards of one model (±5 %, Yang et al.):
// two cards' absolute figures differ only where they differ by more than their intervals
// and this.
const GainPart = 0.05

// Figure is one headline figure of one run with its 95 % interval (Low = High = 0: none).
type Figure struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Low       float64 `json:"low,omitempty"`
	High      float64 `json:"high,omitempty"`
	Absolute  bool    `json:"absolute"` // an energy or power on the board's scale (its gain error applies between boards)
	HasBounds bool    `json:"-"`
}

// Figures are the run's headline figures as numbers, in the order of the reproducibility
// table: pi0, micro's fp32/fp64 FMA, DRAM read and copy and the bf16/fp8 wgmma tensor
// cores, the load levels' full-load and active-idle power, each precision's eps_flop,
// eps_mem, pi0 and eps_mem's memory-rail part, B_tau and B_eps.
func (r *Result) Figures() []Figure {
	var fs []Figure
	add := func(name string, v, lo, hi float64, abs bool) {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		fs = append(fs, Figure{Name: name, Value: v, Low: lo, High: hi, Absolute: abs, HasBounds: hi > lo})
	}
	if pi0, ci, ok := r.cardPi0(); ok {
		add("pi0 (W)", pi0, ci[0], ci[1], true)
	}
	if m := r.Micro; m != nil {
		add("baseline kernel power (W)", m.Pi0W, m.Pi0W-m.Pi0HalfWidthW, m.Pi0W+m.Pi0HalfWidthW, true)
	}
	if m := r.MicroAbovePi0(); m != nil {
		for _, row := range m.Rows {
			switch row.Name {
			case "fp32.fma", "fp64.fma", "dram.copy", "dram.read", "bf16.wgmma", "e4m3.wgmma":
				add(fmt.Sprintf("micro %s (pJ/%s)", row.Name, row.Unit), row.PJPerUnit, row.PJPerUnitLow, row.PJPerUnitHigh, true)
				add(fmt.Sprintf("micro %s above pi0 (pJ/%s)", row.Name, row.Unit), row.PJPerUnitAbovePi0, row.PJPerUnitAbovePi0Low, row.PJPerUnitAbovePi0High, true)
			}
		}
	}
	if l := r.Loadlevel; l != nil {
		// The load levels' power is the board's (relative interval; the gain part applies
		// between boards); their transactions per joule have no interval and are not judged.
		for _, lv := range l.Levels {
			if lv.PowerCI == nil || (!lv.ActiveIdle && lv.TargetLoad != 1) {
				continue
			}
			name := "load level 100 % power (W)"
			if lv.ActiveIdle {
				name = "active idle power (W)"
			}
			add(name, lv.PowerW, lv.PowerCI[0], lv.PowerCI[1], true)
		}
	}
	if a := r.Archline; a != nil {
		for _, p := range precisions(a) {
			res := a.Results[p]
			add(p+" eps_flop (pJ/flop)", res.EpsFlopPJ, res.EpsFlopCI[0], res.EpsFlopCI[1], true)
			add(p+" eps_mem (pJ/B)", res.EpsMemPJPerByte, res.EpsMemCI[0], res.EpsMemCI[1], true)
			add(p+" pi0, this precision's fit (W)", res.Pi0W, res.Pi0CI[0], res.Pi0CI[1], true)
			if m := res.Memory; m != nil && m.Error == "" {
				add(p+" eps_mem on the memory rail (pJ/B)", m.RailPJPerByte, m.RailPJPerByteCI[0], m.RailPJPerByteCI[1], true)
				add(p+" eps_mem, the rest (pJ/B)", m.RestPJPerByte, m.RestPJPerByteCI[0], m.RestPJPerByteCI[1], true)
			}
			add(p+" B_tau (flop/B)", res.Derived.BTau, 0, 0, false)
			add(p+" B_eps (flop/B)", res.Derived.BEps, res.BEpsCI[0], res.BEpsCI[1], false)
		}
	}
	return fs
}

// Repro is the reproducibility of several runs' headline figures: each figure's mean,
// standard deviation and coefficient of variation over the runs, and, where the runs are
// of different cards, whether they differ beyond their intervals (and the gain part).
type Repro struct {
	Runs    []string      `json:"runs"`
	UUIDs   []string      `json:"uuids"`
	Cards   int           `json:"cards"`
	Figures []ReproFigure `json:"figures"`
	// Pooled is the archline fit over every run's points together per precision, its
	// intervals from a bootstrap over the runs and their points.
	Pooled map[string]PooledFit `json:"pooled_archline,omitempty"`
}

// ReproFigure is one figure over the runs.
type ReproFigure struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	Lows   []float64 `json:"lows"`
	Highs  []float64 `json:"highs"`
	Mean   float64   `json:"mean"`
	SD     float64   `json:"sd"`
	CVPct  float64   `json:"cv_pct"`
	// Differs (several cards only): some two cards' figures differ by more than their
	// intervals (widened by GainPart for absolute figures); Verdict says so in words.
	Differs bool   `json:"differs"`
	Verdict string `json:"verdict"`
}

// PooledFit is the archline fit over several runs.
type PooledFit struct {
	EpsFlopPJ       float64            `json:"eps_flop_pj"`
	EpsMemPJPerByte float64            `json:"eps_mem_pj_per_byte"`
	Pi0W            float64            `json:"pi0_w"`
	R2              float64            `json:"r2"`
	Intervals       archline.Intervals `json:"intervals"`
	Error           string             `json:"error,omitempty"`
}

// Reproducibility compares the headline figures of several runs (names label them).
func Reproducibility(rs []*Result, names []string) *Repro {
	rp := &Repro{Runs: names}
	cards := map[string]bool{}
	for _, r := range rs {
		rp.UUIDs = append(rp.UUIDs, r.GPU.UUID)
		cards[r.GPU.UUID] = true
	}
	rp.Cards = len(cards)
	type acc struct {
		f   ReproFigure
		abs bool
		has []bool
	}
	byName := map[string]*acc{}
	var order []string
	for i, r := range rs {
		for _, f := range r.Figures() {
			a := byName[f.Name]
			if a == nil {
				a = &acc{f: ReproFigure{Name: f.Name, Values: make([]float64, len(rs)), Lows: make([]float64, len(rs)), Highs: make([]float64, len(rs))}, has: make([]bool, len(rs))}
				byName[f.Name] = a
				order = append(order, f.Name)
			}
			a.f.Values[i], a.f.Lows[i], a.f.Highs[i], a.abs, a.has[i] = f.Value, f.Low, f.High, f.Absolute, true
		}
	}
	for _, name := range order {
		a := byName[name]
		var vs []float64
		for i, ok := range a.has {
			if ok {
				vs = append(vs, a.f.Values[i])
			}
		}
		a.f.Mean, a.f.SD = meanSD(vs)
		if a.f.Mean != 0 {
			a.f.CVPct = 100 * a.f.SD / math.Abs(a.f.Mean)
		}
		if rp.Cards > 1 {
			a.f.Differs, a.f.Verdict = cardDifference(rs, a.f, a.has, a.abs)
		}
		rp.Figures = append(rp.Figures, a.f)
	}
	// The pooled archline fit, where every run is of one card.
	if rp.Cards == 1 {
		rp.Pooled = map[string]PooledFit{}
		for _, p := range []string{"fp32", "fp64"} {
			var runs archline.Runs
			for _, r := range rs {
				if r.Archline != nil && r.Archline.Results[p] != nil {
					runs = append(runs, r.Archline.Results[p].Points)
				}
			}
			if len(runs) < 2 {
				continue
			}
			fit, iv, err := archline.FitIntervals(runs)
			pf := PooledFit{EpsFlopPJ: fit.EpsFlopPJ, EpsMemPJPerByte: fit.EpsMemPJPerByte, Pi0W: fit.Pi0W, R2: fit.R2, Intervals: iv}
			if err != nil {
				pf.Error = err.Error()
			}
			rp.Pooled[p] = pf
		}
	}
	return rp
}

func meanSD(vs []float64) (mean, sd float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	if len(vs) < 2 {
		return mean, 0
	}
	for _, v := range vs {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(vs)-1))
}

// cardDifference says whether two cards' figures differ beyond their intervals: for each
// pair of runs of different cards, the gap between the values against the two half-widths
// (each at least the run-to-run SD of that card where it has several runs), plus GainPart
// of each value for an absolute figure.
func cardDifference(rs []*Result, f ReproFigure, has []bool, abs bool) (bool, string) {
	// Per card: the mean value and a half-width.
	type card struct {
		v, hw float64
		n     int
		vals  []float64
		hws   []float64
	}
	cs := map[string]*card{}
	var ids []string
	for i, r := range rs {
		if !has[i] {
			continue
		}
		c := cs[r.GPU.UUID]
		if c == nil {
			c = &card{}
			cs[r.GPU.UUID] = c
			ids = append(ids, r.GPU.UUID)
		}
		hw := 0.0
		if f.Highs[i] > f.Lows[i] {
			hw = (f.Highs[i] - f.Lows[i]) / 2
		}
		c.vals, c.hws = append(c.vals, f.Values[i]), append(c.hws, hw)
	}
	for _, c := range cs {
		var sd float64
		c.v, sd = meanSD(c.vals)
		for _, h := range c.hws {
			c.hw = max(c.hw, h)
		}
		c.hw = max(c.hw, 1.96*sd)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if cs[id].hw == 0 {
			return false, "not judged: a card's figure has no interval"
		}
	}
	var beyond []string
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			a, b := cs[ids[i]], cs[ids[j]]
			allow := a.hw + b.hw
			if abs {
				allow += GainPart * (math.Abs(a.v) + math.Abs(b.v))
			}
			if math.Abs(a.v-b.v) > allow {
				beyond = append(beyond, fmt.Sprintf("%s %.4g vs %s %.4g (%+.1f %%)", short(ids[i]), a.v, short(ids[j]), b.v, 100*(b.v/a.v-1)))
			}
		}
	}
	if len(beyond) == 0 {
		if abs {
			return false, "within the intervals and the ±5 % gain part"
		}
		return false, "within the intervals"
	}
	return true, "differ: " + strings.Join(beyond, "; ")
}

func short(uuid string) string {
	if len(uuid) > 12 {
		return uuid[:12]
	}
	return uuid
}

// Table is the reproducibility table: each figure per run (value ± half-width), the mean,
// the CV, and for several cards the verdict.
func (rp *Repro) Table() *report.Table {
	t := &report.Table{Header: []string{"figure"}}
	t.Header = append(t.Header, rp.Runs...)
	t.Header = append(t.Header, "mean", "run-to-run CV")
	if rp.Cards > 1 {
		t.Header = append(t.Header, "card to card")
	}
	for _, f := range rp.Figures {
		row := []string{f.Name}
		for i, v := range f.Values {
			switch {
			case v == 0:
				row = append(row, "–")
			case f.Highs[i] > f.Lows[i]:
				row = append(row, PM(v, f.Lows[i], f.Highs[i]))
			default:
				row = append(row, g4(v))
			}
		}
		row = append(row, g4(f.Mean), fmt.Sprintf("%.2f %%", f.CVPct))
		if rp.Cards > 1 {
			row = append(row, f.Verdict)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Align = make([]string, len(t.Header))
	for i := range t.Align {
		t.Align[i] = "l"
	}
	return t
}

// PM is value ± the larger half of [lo, hi] (asymmetric intervals shown as [lo, hi]).
func PM(v, lo, hi float64) string {
	if !(hi > lo) {
		return g4(v)
	}
	a, b := v-lo, hi-v
	if a > 0 && b > 0 && math.Abs(a-b) <= 0.25*max(a, b) {
		return fmt.Sprintf("%s ± %s", g4(v), g2(max(a, b)))
	}
	return fmt.Sprintf("%s [%s, %s]", g4(v), g4(lo), g4(hi))
}

func g2(v float64) string { return fmt.Sprintf("%.2g", v) }

// ReproTitle is the title of the reproducibility section.
const ReproTitle = "Reproducibility: the headline figures run to run"

// Section is the reproducibility section of a page.
func (rp *Repro) Section() report.Section {
	text := fmt.Sprintf("%d runs of %d card(s). Each figure with its 95 %% interval in that run (on the board's scale), the mean and the coefficient of variation over the runs (sample SD / mean).", len(rp.Runs), rp.Cards)
	if rp.Cards > 1 {
		text += " Card to card: two cards differ only where their figures are farther apart than the sum of their intervals (each at least 1.96 × the card's run-to-run SD where it has several runs), plus ±5 % of each value for an energy or a power (the boards' gain error); the memory-rail part of eps_mem says whether a difference in eps_mem is the memory's."
	}
	sec := report.Section{Title: ReproTitle, Text: text, Table: rp.Table()}
	if len(rp.Pooled) > 0 {
		var ps []string
		for p := range rp.Pooled {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		var lines []string
		for _, p := range ps {
			f := rp.Pooled[p]
			if f.Error != "" {
				lines = append(lines, p+": pooled fit failed: "+f.Error)
				continue
			}
			iv := f.Intervals
			lines = append(lines, fmt.Sprintf("%s pooled over %d runs (%d points): eps_flop %s pJ, eps_mem %s pJ/B, pi0 %s W, R² %.4f", p, iv.Runs, iv.Points,
				PM(f.EpsFlopPJ, iv.EpsFlopPJ[0], iv.EpsFlopPJ[1]), PM(f.EpsMemPJPerByte, iv.EpsMemPJPerByte[0], iv.EpsMemPJPerByte[1]), PM(f.Pi0W, iv.Pi0W[0], iv.Pi0W[1]), f.R2))
		}
		sec.Text += "\n\nThe archline fit over every run's points (intervals: bootstrap over the runs, then their points): " + strings.Join(lines, "; ") + "."
	}
	return sec
}
