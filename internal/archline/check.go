package archline

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// MemorySplit splits eps_mem with the board's memory power channel: the same model fitted
// to the memory channel's energy of each fitted point (E_mem = W a + Q b + T c) gives the
// part of a DRAM byte's energy drawn on the memory rail (b), and eq 5 fitted to the board
// energy less the memory channel's the rest (the GPU die: L2, fabric, memory controllers
// and PHY). Each with its 95 % bootstrap interval. The memory channel has its own scale
// (its own gain error), which the split inherits.
type MemorySplit struct {
	Channel string `json:"channel"`
	Points  int    `json:"points"`
	// RailPJPerByte (b) and its interval; RestPJPerByte = eps_mem of board − memory.
	RailPJPerByte   float64    `json:"eps_mem_rail_pj_per_byte"`
	RailPJPerByteCI [2]float64 `json:"eps_mem_rail_pj_per_byte_ci"`
	RestPJPerByte   float64    `json:"eps_mem_rest_pj_per_byte"`
	RestPJPerByteCI [2]float64 `json:"eps_mem_rest_pj_per_byte_ci"`
	// RailFlopPJ (a) is what a flop adds on the memory rail; RailPi0W (c) the memory
	// rail's constant power while a kernel runs.
	RailFlopPJ   float64    `json:"eps_flop_rail_pj"`
	RailFlopPJCI [2]float64 `json:"eps_flop_rail_pj_ci"`
	RailPi0W     float64    `json:"pi0_rail_w"`
	RailPi0WCI   [2]float64 `json:"pi0_rail_w_ci"`
	R2           float64    `json:"r2"`
	// RailShare is RailPJPerByte / eps_mem (board).
	RailShare float64 `json:"rail_share"`
	Error     string  `json:"error,omitempty"`
}

// memorySplit fits the memory channel's and the rest's energies (nil: no point has a
// memory channel).
func memorySplit(runs Runs, epsMem float64) *MemorySplit {
	var rail, rest []row
	var all []Point
	ch := ""
	for i, pts := range runs {
		var use []Point
		for _, p := range fitted(pts) {
			if p.MemoryEnergyJ > 0 {
				use = append(use, p)
				ch = p.MemoryChannel
			}
		}
		all = append(all, use...)
		rail = append(rail, rowsOfEnergy(use, 5, false, i, func(p Point) (float64, float64) { return p.MemoryEnergyJ, 0 })...)
		rest = append(rest, rowsOfEnergy(use, 5, false, i, func(p Point) (float64, float64) { return p.EnergyJ - p.MemoryEnergyJ, 0 })...)
	}
	if len(all) == 0 {
		return nil
	}
	m := &MemorySplit{Channel: ch, Points: len(all)}
	b, err := solveRows(rail)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	c, err := solveRows(rest)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	m.RailFlopPJ, m.RailPJPerByte, m.RailPi0W = b[0]*1e12, b[1]*1e12, b[2]
	m.RestPJPerByte = c[1] * 1e12
	var y, pr []float64
	for _, r := range rail {
		y, pr = append(y, r.y), append(pr, r.x[0]*b[0]+r.x[1]*b[1]+r.x[2]*b[2])
	}
	m.R2 = r2(y, pr)
	if epsMem != 0 {
		m.RailShare = m.RailPJPerByte / epsMem
	}
	if ci, err := bootstrapRows(rail, BootstrapReps, bootstrapSeed); err == nil {
		m.RailFlopPJCI, m.RailPJPerByteCI, m.RailPi0WCI = scaleCI(ci[0], 1e12), scaleCI(ci[1], 1e12), ci[2]
	}
	if ci, err := bootstrapRows(rest, BootstrapReps, bootstrapSeed); err == nil {
		m.RestPJPerByteCI = scaleCI(ci[1], 1e12)
	}
	return m
}

// Checks are the model's checks on one precision's sweep.
type Checks struct {
	// PerOccupancy is eq 5 fitted to each occupancy's points alone.
	PerOccupancy []OccupancyFit `json:"per_occupancy"`
	// LeaveOneOut predicts each occupancy's points from eq 5 fitted to the others:
	// (measured − predicted) / predicted.
	LeaveOneOut []Holdout `json:"leave_one_occupancy_out"`
	// Families are the residuals of every kernel family (roofline, flop, copy,
	// baseline) against the fit: the flop kernel predicted as W eps_flop + T pi0, the copy
	// kernel as Q eps_mem + T pi0, the baseline as T pi0.
	Families []Family `json:"families"`
	// Models are the candidate models, fitted to the same points, with AIC and BIC; Chosen
	// names the one of lowest BIC.
	Models []Model `json:"models"`
	Chosen string  `json:"chosen_model"`
	// Forms are eqs 5, 6 and 7 with their intervals; FormSpreadPct the largest
	// difference of eq 6's or eq 7's parameter from eq 5's (eps_flop, eps_mem, pi0), in %.
	Forms         []Form     `json:"forms"`
	FormSpreadPct [3]float64 `json:"form_spread_pct"`
}

// OccupancyFit is eq 5 on one occupancy's points.
type OccupancyFit struct {
	Occupancy       float64 `json:"occupancy"`
	Points          int     `json:"points"`
	EpsFlopPJ       float64 `json:"eps_flop_pj"`
	EpsMemPJPerByte float64 `json:"eps_mem_pj_per_byte"`
	Pi0W            float64 `json:"pi0_w"`
	R2              float64 `json:"r2"`
	Error           string  `json:"error,omitempty"`
}

// Holdout is the prediction error of one left-out occupancy, in %.
type Holdout struct {
	Occupancy float64 `json:"occupancy"`
	Points    int     `json:"points"`
	MeanPct   float64 `json:"mean_pct"`
	RMSPct    float64 `json:"rms_pct"`
	MaxAbsPct float64 `json:"max_abs_pct"`
	Error     string  `json:"error,omitempty"`
}

// Family is the residuals of one kernel family, in %.
type Family struct {
	Kernel  string  `json:"kernel"`
	Points  int     `json:"points"`
	MeanPct float64 `json:"mean_pct"`
	RMSPct  float64 `json:"rms_pct"`
	MinPct  float64 `json:"min_pct"`
	MaxPct  float64 `json:"max_pct"`
}

// Model is one candidate model of the energy.
type Model struct {
	Name            string  `json:"name"`
	Params          int     `json:"params"`
	RSS             float64 `json:"rss_j2"`
	AIC             float64 `json:"aic"`
	BIC             float64 `json:"bic"`
	EpsFlopPJ       float64 `json:"eps_flop_pj"`
	EpsMemPJPerByte float64 `json:"eps_mem_pj_per_byte"`
	Pi0W            float64 `json:"pi0_w"`
	// PiOccW is the static power of occupied SMs at full occupancy (ModelOcc only).
	PiOccW float64 `json:"pi_occ_w,omitempty"`
	Chosen bool    `json:"chosen"`
	Error  string  `json:"error,omitempty"`
}

// Form is one form of the model with its intervals.
type Form struct {
	Name            string     `json:"name"`
	EpsFlopPJ       float64    `json:"eps_flop_pj"`
	EpsFlopCI       [2]float64 `json:"eps_flop_pj_ci"`
	EpsMemPJPerByte float64    `json:"eps_mem_pj_per_byte"`
	EpsMemCI        [2]float64 `json:"eps_mem_pj_per_byte_ci"`
	Pi0W            float64    `json:"pi0_w"`
	Pi0CI           [2]float64 `json:"pi0_w_ci"`
	Error           string     `json:"error,omitempty"`
}

// The candidate models.
const (
	ModelEq5Name = "eq 5: E = W eps_flop + Q eps_mem + T pi0"
	ModelOcc     = "eq 5 + T occupancy pi_occ (static power of occupied SMs)"
)

// infoCriteria are AIC and BIC of a least-squares fit with Gaussian errors: n ln(RSS/n)
// + 2k and + k ln n.
func infoCriteria(rss float64, n, k int) (aic, bic float64) {
	if n == 0 || rss <= 0 {
		return math.Inf(-1), math.Inf(-1)
	}
	l := float64(n) * math.Log(rss/float64(n))
	return l + 2*float64(k), l + float64(k)*math.Log(float64(n))
}

func resid(rs []row, b []float64) (rss float64, pct []float64) {
	for _, r := range rs {
		p := 0.0
		for j := range b {
			p += r.x[j] * b[j]
		}
		rss += (r.y - p) * (r.y - p)
		if p != 0 {
			pct = append(pct, 100*(r.y/p-1))
		}
	}
	return rss, pct
}

func pctStats(pct []float64) (mean, rms, lo, hi float64) {
	if len(pct) == 0 {
		return 0, 0, 0, 0
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range pct {
		mean += v
		rms += v * v
		lo, hi = min(lo, v), max(hi, v)
	}
	n := float64(len(pct))
	return mean / n, math.Sqrt(rms / n), lo, hi
}

// check computes the checks of one precision's fit on its fitted points fitSet, with the
// flop, copy and baseline kernels' points for the families.
func check(fit Fit, fitSet, flop, cp, base []Point) *Checks {
	c := &Checks{}
	occs := map[float64][]Point{}
	for _, p := range fitSet {
		occs[p.Occupancy] = append(occs[p.Occupancy], p)
	}
	var os []float64
	for o := range occs {
		os = append(os, o)
	}
	sort.Float64s(os)
	for _, o := range os {
		f := fitPoints(occs[o], 5)
		c.PerOccupancy = append(c.PerOccupancy, OccupancyFit{Occupancy: o, Points: f.Points, EpsFlopPJ: f.EpsFlopPJ, EpsMemPJPerByte: f.EpsMemPJPerByte, Pi0W: f.Pi0W, R2: f.R2, Error: f.Error})
		if len(os) < 2 {
			continue
		}
		var rest []Point
		for _, p := range fitSet {
			if p.Occupancy != o {
				rest = append(rest, p)
			}
		}
		h := Holdout{Occupancy: o, Points: len(occs[o])}
		g := fitPoints(rest, 5)
		if g.Error != "" {
			h.Error = g.Error
		} else {
			var pct []float64
			for _, p := range occs[o] {
				if pr := g.Predict(p.W, p.Q, p.TimeS); pr != 0 {
					pct = append(pct, 100*(p.EnergyJ/pr-1))
				}
			}
			h.MeanPct, h.RMSPct, _, _ = pctStats(pct)
			for _, v := range pct {
				h.MaxAbsPct = max(h.MaxAbsPct, math.Abs(v))
			}
		}
		c.LeaveOneOut = append(c.LeaveOneOut, h)
	}
	// Families.
	fam := func(name string, pts []Point, pred func(Point) float64) {
		var pct []float64
		for _, p := range pts {
			if p.OffClock {
				continue
			}
			if pr := pred(p); pr != 0 {
				pct = append(pct, 100*(p.EnergyJ/pr-1))
			}
		}
		if len(pct) == 0 {
			return
		}
		f := Family{Kernel: name, Points: len(pct)}
		f.MeanPct, f.RMSPct, f.MinPct, f.MaxPct = pctStats(pct)
		c.Families = append(c.Families, f)
	}
	if fit.Error == "" {
		fam("roofline", fitSet, func(p Point) float64 { return fit.Predict(p.W, p.Q, p.TimeS) })
		fam("flop", flop, func(p Point) float64 { return fit.Predict(p.W, 0, p.TimeS) })
		fam("copy", cp, func(p Point) float64 { return fit.Predict(0, p.Q, p.TimeS) })
		fam("baseline", base, func(p Point) float64 { return fit.Predict(0, 0, p.TimeS) })
	}
	// Models, by BIC.
	best := math.Inf(1)
	for _, m := range []struct {
		name string
		occ  bool
	}{{ModelEq5Name, false}, {ModelOcc, true}} {
		rs := rowsOf(fitSet, 5, m.occ, 0)
		md := Model{Name: m.name, Params: 3}
		if m.occ {
			md.Params = 4
		}
		b, err := solveRows(rs)
		if err != nil {
			md.Error = err.Error()
			c.Models = append(c.Models, md)
			continue
		}
		md.EpsFlopPJ, md.EpsMemPJPerByte, md.Pi0W = b[0]*1e12, b[1]*1e12, b[2]
		if m.occ {
			md.PiOccW = b[3]
		}
		md.RSS, _ = resid(rs, b)
		md.AIC, md.BIC = infoCriteria(md.RSS, len(rs), md.Params)
		c.Models = append(c.Models, md)
		if md.BIC < best {
			best = md.BIC
			c.Chosen = md.Name
		}
	}
	for i := range c.Models {
		c.Models[i].Chosen = c.Models[i].Name == c.Chosen
	}
	// The forms, with intervals.
	base5 := [3]float64{}
	for i, form := range []int{5, 6, 7} {
		f := fitPoints(fitSet, form)
		fo := Form{Name: fmt.Sprintf("eq %d", form), EpsFlopPJ: f.EpsFlopPJ, EpsMemPJPerByte: f.EpsMemPJPerByte, Pi0W: f.Pi0W, Error: f.Error}
		if f.Error == "" {
			if ci, err := bootstrapRows(rowsOf(fitSet, form, false, 0), BootstrapReps, bootstrapSeed); err == nil {
				fo.EpsFlopCI, fo.EpsMemCI, fo.Pi0CI = scaleCI(ci[0], 1e12), scaleCI(ci[1], 1e12), ci[2]
			}
		}
		v := [3]float64{f.EpsFlopPJ, f.EpsMemPJPerByte, f.Pi0W}
		if i == 0 {
			base5 = v
		} else if f.Error == "" {
			for j := range v {
				if base5[j] != 0 {
					c.FormSpreadPct[j] = max(c.FormSpreadPct[j], math.Abs(100*(v[j]/base5[j]-1)))
				}
			}
		}
		c.Forms = append(c.Forms, fo)
	}
	return c
}

// Pi0Definition is what gpuwatt means by pi0 wherever it says pi0 (archline, the
// datasheet's headline and its energies above pi0).
const Pi0Definition = "pi0: the board's constant power while a kernel runs at the top clock, the T coefficient of " +
	"E = W eps_flop + Q eps_mem + T pi0 fitted to the roofline sweep: one figure per card, fitted to the fp32 and fp64 points " +
	"together (one eps_flop per precision, one eps_mem: Choi et al.'s form); each precision's own fit is a check of it. " +
	"The baseline kernel's power (E/T, seed 002's Algorithm 1) is a cross-check, not pi0."

// JointFit is eq 5 fitted to every precision's fitted roofline points together, with one
// eps_flop per precision and one eps_mem and pi0: the card's pi0 (Pi0Definition).
type JointFit struct {
	Pi0W            float64               `json:"pi0_w"`
	Pi0CI           [2]float64            `json:"pi0_w_ci"`
	EpsMemPJPerByte float64               `json:"eps_mem_pj_per_byte"`
	EpsMemCI        [2]float64            `json:"eps_mem_pj_per_byte_ci"`
	EpsFlopPJ       map[string]float64    `json:"eps_flop_pj"`
	EpsFlopCI       map[string][2]float64 `json:"eps_flop_pj_ci"`
	// The *CI include the run-to-run spread (energy.RelativeCI), as a precision's own fit's
	// do; the *AbsCI add the board's gain error (energy.AbsoluteCI): what comparing two
	// boards, or the truth, needs (the datasheet's summary shows them).
	EpsFlopAbsCI map[string][2]float64 `json:"eps_flop_pj_abs_ci,omitempty"`
	EpsMemAbsCI  [2]float64            `json:"eps_mem_pj_per_byte_abs_ci"`
	Pi0AbsCI     [2]float64            `json:"pi0_w_abs_ci"`
	R2           float64               `json:"r2"`
	Points       int                   `json:"points"`
	Runs         int                   `json:"runs"`
	Definition   string                `json:"definition"`
	Error        string                `json:"error,omitempty"`
}

// Joint fits the card's pi0 (JointFit) to the fitted roofline points of each precision,
// from one or several runs (runs[k][precision] = that run's points).
func Joint(runs []map[string][]Point) *JointFit {
	precs := map[string]bool{}
	for _, r := range runs {
		for p, pts := range r {
			if len(fitted(pts)) > 0 {
				precs[p] = true
			}
		}
	}
	var ps []string
	for p := range precs {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	if len(ps) == 0 {
		return nil
	}
	jf := &JointFit{Definition: Pi0Definition, EpsFlopPJ: map[string]float64{}, EpsFlopCI: map[string][2]float64{}, Runs: len(runs)}
	var rs []row
	for k, r := range runs {
		for i, p := range ps {
			for _, pt := range fitted(r[p]) {
				x := make([]float64, len(ps)+2)
				x[i] = pt.W
				x[len(ps)], x[len(ps)+1] = pt.Q, pt.TimeS
				sd := 0.0
				if pt.HighJ > pt.LowJ && pt.LowJ > 0 {
					sd = (pt.HighJ - pt.LowJ) / (2 * 1.96)
				}
				rs = append(rs, row{x: x, y: pt.EnergyJ, sd: sd, stratum: pt.Occupancy, run: k, key: pt.Name})
			}
		}
	}
	jf.Points = len(rs)
	b, err := solveRows(rs)
	if err != nil {
		jf.Error = err.Error()
		return jf
	}
	n := len(ps)
	for i, p := range ps {
		jf.EpsFlopPJ[p] = b[i] * 1e12
	}
	jf.EpsMemPJPerByte, jf.Pi0W = b[n]*1e12, b[n+1]
	var y, pr []float64
	for _, r := range rs {
		p := 0.0
		for j := range b {
			p += r.x[j] * b[j]
		}
		y, pr = append(y, r.y), append(pr, p)
	}
	jf.R2 = r2(y, pr)
	if ci, err := bootstrapRows(rs, BootstrapReps, bootstrapSeed); err == nil {
		jf.EpsFlopAbsCI = map[string][2]float64{}
		for i, p := range ps {
			jf.EpsFlopCI[p] = energy.RelativeCI(jf.EpsFlopPJ[p], scaleCI(ci[i], 1e12))
			jf.EpsFlopAbsCI[p] = energy.AbsoluteCI(jf.EpsFlopPJ[p], jf.EpsFlopCI[p])
		}
		jf.EpsMemCI = energy.RelativeCI(jf.EpsMemPJPerByte, scaleCI(ci[n], 1e12))
		jf.Pi0CI = energy.RelativeCI(jf.Pi0W, ci[n+1])
		jf.EpsMemAbsCI = energy.AbsoluteCI(jf.EpsMemPJPerByte, jf.EpsMemCI)
		jf.Pi0AbsCI = energy.AbsoluteCI(jf.Pi0W, jf.Pi0CI)
	} else {
		jf.Error = "no intervals: " + err.Error()
	}
	return jf
}

// Reanalyse fits a report again from its stored points (results.json written before the
// intervals and checks existed gets them; the points and their energies as measured). The
// off-clock marks, fits, intervals, checks, references and derived figures are recomputed;
// the points' own figures are kept.
func Reanalyse(rep *Result) {
	var pts []Point
	pts = append(pts, rep.Baseline...)
	pts = append(pts, rep.Copy...)
	var precs []kernels.Precision
	limit := 0.0
	for _, p := range rep.precisions() {
		res := rep.Results[p]
		if res == nil {
			continue
		}
		precs = append(precs, kernels.Precision(p))
		pts = append(pts, res.Points...)
		limit = max(limit, res.Derived.PowerLimitW)
	}
	if len(precs) == 0 {
		return
	}
	for i := range pts {
		pts[i].OffClock, pts[i].Fitted = false, false
	}
	opt := Options{Precisions: precs, Intensities: rep.Intensities, Occupancies: rep.Occupancies, ClockTolerance: rep.ClockTolerance}.withDefaults()
	rep.Results = map[string]*PrecisionResult{}
	analyse(rep, pts, opt, limit)
}

// FillMemory gives the points of a report written before they carried their memory power
// (memory_power_w) that figure from the run's trace (trace.csv of `archline --out`), where
// the trace has a memory power channel; it says whether it did. Reanalyse then splits
// eps_mem with it.
func FillMemory(rep *Result, tr *trace.Trace) bool {
	filled := false
	set := func(ps []Point) {
		for i := range ps {
			if ps[i].MemoryChannel == "" {
				setMemory(tr, rep.GPU.Index, &ps[i])
				filled = filled || ps[i].MemoryChannel != ""
			}
		}
	}
	set(rep.Baseline)
	set(rep.Copy)
	for _, r := range rep.Results {
		if r != nil {
			set(r.Points)
		}
	}
	return filled
}
