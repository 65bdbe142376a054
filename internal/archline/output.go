package archline

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// precisions returns the report's precisions in order: fp32 before fp64.
// AllWarnings are the run's warnings, then each precision's (about that precision), then
// the points' (about each point: PointWarnings).
func (r *Result) AllWarnings() []status.Warning {
	ws := slices.Clone(r.Warnings)
	for _, p := range r.precisions() {
		ws = append(ws, status.WithSubject(p, r.Results[p].Warnings)...)
	}
	pw, _ := r.PointWarnings()
	return append(ws, pw...)
}

func (r *Result) precisions() []string {
	var ps []string
	for p := range r.Results {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

func f4(v float64) string { return fmt.Sprintf("%.4g", v) }

// Tables returns the report's tables, after the thesis's Tables 3-9.
func (r *Result) Tables() []report.Table {
	ps := r.precisions()
	var ts []report.Table
	// Table 3: kernels against the peaks.
	t3 := report.Table{Caption: "Kernels against the peaks (Table 3): best rate at the top clock",
		Header: []string{"precision", "flop kernel TFLOP/s", "% of spec", "copy GB/s", "roofline TFLOP/s (I max)", "% of spec", "roofline GB/s (I min)", "% of copy"}}
	for _, p := range ps {
		res := r.Results[p]
		var flop, rfHi, rfLo float64
		for _, x := range res.Points {
			if x.OffClock {
				continue
			}
			switch x.Kernel {
			case "flop":
				flop = max(flop, x.FlopsPerS)
			case "roofline":
				if x.Intensity == maxIntensity(res.Points) {
					rfHi = max(rfHi, x.FlopsPerS)
				}
				if x.Intensity == minIntensity(res.Points) {
					rfLo = max(rfLo, x.BytesPerS)
				}
			}
		}
		d := res.Derived
		t3.Rows = append(t3.Rows, []string{p, f4(flop / 1e12), pct(flop, d.SpecFlopsPerS), f4(d.PeakBytesPerS / 1e9),
			f4(rfHi / 1e12), pct(rfHi, d.SpecFlopsPerS), f4(rfLo / 1e9), pct(rfLo, d.PeakBytesPerS)})
	}
	ts = append(ts, t3)
	// Table 4: accuracy.
	t4 := report.Table{Caption: fmt.Sprintf("Accuracy of the model (Table 4): R² on the points within %.0f %% of the top clock, R²* on all", 100*r.ClockTolerance),
		Header: []string{"precision", "R²", "R²*", "points fitted", "off clock", "max |residual| %", "top clock MHz"}}
	for _, p := range ps {
		res := r.Results[p]
		t4.Rows = append(t4.Rows, []string{p, fmt.Sprintf("%.4f", res.R2), fmt.Sprintf("%.4f", res.R2All), fmt.Sprint(res.Fitted), fmt.Sprint(res.OffClock), fmt.Sprintf("%.2f", res.MaxResidualPct), fmt.Sprintf("%.0f", res.TopClock)})
	}
	ts = append(ts, t4)
	if t, ok := r.tensorTable(); ok {
		ts = append(ts, t)
	}
	// Table 5: reference kernels.
	t5 := report.Table{Caption: "Reference benchmarks (Table 5): pi0 = E/T of the baseline kernel; eps_flop and eps_mem with the baseline's pi0 x T taken off",
		Header: []string{"precision", "kernel", "parameter", "value", "± (occupancies)", "combined fit", "difference", "R²"}}
	for _, p := range ps {
		for _, ref := range r.Results[p].References {
			rr := "-"
			if ref.R2 != 0 {
				rr = fmt.Sprintf("%.4f", ref.R2)
			}
			t5.Rows = append(t5.Rows, []string{p, ref.Kernel, ref.Param, fmt.Sprintf("%.4g %s", ref.Value, ref.Unit), f4(ref.Spread), f4(ref.Fitted), pctDiff(ref.Value, ref.Fitted), rr})
		}
	}
	ts = append(ts, t5)
	// Tables 6 and 8: fitted parameters with their intervals, and the normalised forms.
	t6 := report.Table{Caption: "Fitted parameters (Tables 6 and 8) with their 95 % intervals, eq 5 and the normalised forms (eqs 6, 7)",
		Header: []string{"precision", "form", "eps_flop pJ/flop", "eps_mem pJ/B", "eps_mop pJ/word", "pi0 W", "R²", "points"}}
	for _, p := range ps {
		res := r.Results[p]
		forms := map[string]Form{}
		if res.Checks != nil {
			for _, f := range res.Checks.Forms {
				forms[f.Name] = f
			}
		}
		for _, f := range []struct {
			name, form string
			fit        Fit
		}{{"eq 5", "eq 5", res.Fit}, {"eq 5, all points", "", res.FitAll}, {"eq 6 (per flop)", "eq 6", res.Eq6}, {"eq 7 (per byte)", "eq 7", res.Eq7}} {
			if f.fit.Error != "" {
				t6.Rows = append(t6.Rows, []string{p, f.name, "-", "-", "-", "-", "-", fmt.Sprint(f.fit.Points)})
				continue
			}
			fo := forms[f.form]
			if f.form == "eq 5" {
				fo.EpsFlopCI, fo.EpsMemCI, fo.Pi0CI = res.EpsFlopCI, res.EpsMemCI, res.Pi0CI
			}
			w := float64(res.Derived.WordBytes)
			t6.Rows = append(t6.Rows, []string{p, f.name, PM(f.fit.EpsFlopPJ, fo.EpsFlopCI), PM(f.fit.EpsMemPJPerByte, fo.EpsMemCI),
				PM(f.fit.EpsMemPJPerByte*w, [2]float64{fo.EpsMemCI[0] * w, fo.EpsMemCI[1] * w}), PM(f.fit.Pi0W, fo.Pi0CI), fmt.Sprintf("%.4f", f.fit.R2), fmt.Sprint(f.fit.Points)})
		}
	}
	ts = append(ts, t6)
	if j := r.Pi0; j != nil && j.Error == "" {
		tj := report.Table{Caption: "The card's pi0: eq 5 fitted to every precision's points together (one eps_flop per precision, one eps_mem), with 95 % intervals",
			Header: []string{"pi0 W", "eps_mem pJ/B"}}
		row := []string{PM(j.Pi0W, j.Pi0CI), PM(j.EpsMemPJPerByte, j.EpsMemCI)}
		for _, p := range ps {
			if v, ok := j.EpsFlopPJ[p]; ok {
				tj.Header = append(tj.Header, p+" eps_flop pJ/flop")
				row = append(row, PM(v, j.EpsFlopCI[p]))
			}
		}
		tj.Header = append(tj.Header, "R²", "points")
		tj.Rows = [][]string{append(row, fmt.Sprintf("%.4f", j.R2), fmt.Sprint(j.Points))}
		ts = append(ts, tj)
	}
	ts = append(ts, r.checkTables(ps)...)
	// Tables 7 and 9: flop energy efficiency and balance points.
	t7 := report.Table{Caption: "Flop energy efficiency and balance points (Tables 7 and 9)",
		Header: []string{"precision", "pi_flop W", "pi_mem W", "eta_flop", "B_tau flop/B", "B_eps flop/B", "effective balance flop/B", "powerline max W", "power limit W"}}
	for _, p := range ps {
		d := r.Results[p].Derived
		res := r.Results[p]
		eta := fmt.Sprintf("%.2f %%", 100*d.EtaFlop)
		if ci := res.EtaFlopCI; ci[1] > ci[0] {
			eta = PM(100*d.EtaFlop, [2]float64{100 * ci[0], 100 * ci[1]}) + " %"
		}
		t7.Rows = append(t7.Rows, []string{p, f4(d.PiFlopW), f4(d.PiMemW), eta, f4(d.BTau), PM(d.BEps, res.BEpsCI), PM(d.BEffective, res.BEffectiveCI), f4(d.PowerlineMaxW), f4(d.PowerLimitW)})
	}
	ts = append(ts, t7)
	// The thesis's figures for comparison.
	ts = append(ts, report.Table{Caption: "Seed 002's fits for comparison (Tables 6-9)",
		Header: []string{"GPU", "precision", "eps_flop pJ/flop", "eps_mem pJ/B", "pi0 W", "eta_flop"},
		Rows: [][]string{
			{"A100 40GB", "fp32", "6.21", "93.48", "98.42", "55.14 %"},
			{"A100 80GB", "fp32", "6.63", "102.06", "107.21", "54.67 %"},
			{"GH200", "fp32", "4.89", "96.53", "169.27", "65.94 %"},
			{"A100 40GB", "fp64", "14.33", "81.59", "96.08", "59.24 %"},
			{"A100 80GB", "fp64", "14.96", "83.45", "104.23", "58.31 %"},
			{"GH200", "fp64", "11.68", "89.22", "170.10", "70.00 %"},
		}})
	return ts
}

func maxIntensity(pts []Point) float64 {
	m := 0.0
	for _, p := range pts {
		if p.Kernel == "roofline" {
			m = max(m, p.Intensity)
		}
	}
	return m
}

func minIntensity(pts []Point) float64 {
	m := math.Inf(1)
	for _, p := range pts {
		if p.Kernel == "roofline" {
			m = min(m, p.Intensity)
		}
	}
	return m
}

func pct(v, of float64) string {
	if of <= 0 || v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*v/of)
}

func pctDiff(v, of float64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", 100*(v/of-1))
}

// WriteText prints the tables.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n Energy roofline (archline) of GPU %d, %s (%s, %d SMs, cc %s)\n", r.GPU.Index, r.GPU.Name, r.Device, r.Props.SMs, r.Props.ComputeCapability)
	idle := r.IdleLevel
	if idle == "" {
		idle = "idle"
	}
	fmt.Fprintf(&b, " %s %.1f W; %d intensities x %d occupancies per precision; warm-up %.2g s, >= %.2g s and %d sensor updates per point\n",
		idle, r.IdlePowerW, len(r.Intensities), len(r.Occupancies), r.Warmup, r.MinDuration, r.MinUpdates)
	if r.EnergyNote != "" {
		fmt.Fprintf(&b, " energy per point: %s\n", r.EnergyNote)
	}
	if r.Incomplete {
		fmt.Fprintf(&b, " INCOMPLETE: %s\n", r.Reason)
	}
	for _, t := range r.Tables() {
		fmt.Fprintf(&b, "\n %s\n", t.Caption)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, " %s\t\n", strings.Join(t.Header, "\t"))
		for _, row := range t.Rows {
			fmt.Fprintf(tw, " %s\t\n", strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	ws := slices.Clone(r.Warnings)
	for _, p := range r.precisions() {
		ws = append(ws, status.WithSubject(p, r.Results[p].Warnings)...)
	}
	pw, n := r.PointWarnings()
	status.WriteText(&b, " ", append(status.Group(ws, 0), status.Group(pw, n)...))
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// occColors gives each occupancy a palette colour.
func (r *Result) occColors() map[float64]string {
	pal := report.Palette()
	m := map[float64]string{}
	for i, o := range r.Occupancies {
		m[o] = pal[i%len(pal)]
	}
	return m
}

// logGrid is n log-spaced values from a to b.
func logGrid(a, b float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = a * math.Pow(b/a, float64(i)/float64(n-1))
	}
	return xs
}

// Plots returns one precision's plots: roofline (Figs 4, 6, 8), archline, powerline
// (Figs 7, 9) and the residuals.
func (r *Result) Plots(prec string) []report.Plot {
	res := r.Results[prec]
	if res == nil {
		return nil
	}
	d := res.Derived
	colors := r.occColors()
	var roof []Point
	for _, p := range res.Points {
		if p.Kernel == "roofline" {
			roof = append(roof, p)
		}
	}
	lo, hi := minIntensity(roof), maxIntensity(roof)
	if len(roof) == 0 {
		lo, hi = 0.125, 256
	}
	grid := logGrid(lo/2, hi*2, 200)
	// measured series, one per occupancy, and the off-clock points apart.
	measured := func(y func(Point) float64) []report.Series {
		var ss []report.Series
		for _, o := range r.Occupancies {
			s := report.Series{Name: "occupancy " + occName(o), Style: report.Points, Color: colors[o]}
			for _, p := range roof {
				if p.Occupancy == o && !p.OffClock {
					s.X, s.Y = append(s.X, p.Intensity), append(s.Y, y(p))
				}
			}
			if len(s.X) > 0 {
				ss = append(ss, s)
			}
		}
		off := report.Series{Name: "off the top clock (not fitted)", Style: report.Points, Color: "#999999"}
		for _, p := range roof {
			if p.OffClock {
				off.X, off.Y = append(off.X, p.Intensity), append(off.Y, y(p))
				off.Colors = append(off.Colors, "#999999")
			}
		}
		if len(off.X) > 0 {
			ss = append(ss, off)
		}
		return ss
	}
	model := func(name string, f func(float64) float64, color string, dash bool) report.Series {
		s := report.Series{Name: name, Style: report.Line, Color: color, Dash: dash, X: grid}
		for _, I := range grid {
			s.Y = append(s.Y, f(I))
		}
		return s
	}
	vlines := []report.VLine{
		{X: d.BTau, Label: fmt.Sprintf("B_tau %.3g", d.BTau), Color: "#D55E00"},
		{X: d.BEps, Label: fmt.Sprintf("B_eps %.3g", d.BEps), Color: "#0072B2"},
		{X: d.BEffective, Label: fmt.Sprintf("eff. %.3g", d.BEffective), Color: "#56B4E9"},
	}
	P := strings.ToUpper(prec)
	roofPlot := report.Plot{Title: P + " roofline: measured performance by occupancy", XLabel: "intensity (flop/byte)", YLabel: "performance (GFLOP/s)",
		XLog: true, YLog: true, VLines: vlines[:1],
		Series: append(measured(func(p Point) float64 { return p.FlopsPerS / 1e9 }),
			model("roofline min(p_peak, I b_peak)", func(I float64) float64 { return d.Roofline(I) / 1e9 }, "#D55E00", false))}
	archPlot := report.Plot{Title: P + " archline: flops per joule", XLabel: "intensity (flop/byte)", YLabel: "energy efficiency (GFLOP/J)",
		XLog: true, YLog: true, VLines: vlines,
		HLines: []report.HLine{{Y: 1 / (res.EpsFlopPJ * 1e-12) / 1e9, Label: "1/eps_flop", Color: "#0072B2"}},
		Series: append(measured(func(p Point) float64 { return p.W / p.EnergyJ / 1e9 }),
			model("archline (eq 9)", func(I float64) float64 { return d.Archline(I) / 1e9 }, "#0072B2", false))}
	powPlot := report.Plot{Title: P + " powerline with the power limit", XLabel: "intensity (flop/byte)", YLabel: "power (W)",
		XLog: true, VLines: vlines[:1],
		Series: append(measured(func(p Point) float64 { return p.PowerW }),
			model("powerline (eq 10)", func(I float64) float64 { return d.Powerline(I, 0) }, "#000000", true),
			model("powerline, capped", d.PowerlineCapped, "#000000", false))}
	if d.PowerLimitW > 0 {
		powPlot.HLines = []report.HLine{{Y: d.PowerLimitW, Label: fmt.Sprintf("power limit %.0f W", d.PowerLimitW)}}
	}
	resPlot := report.Plot{Title: P + " residuals of the fit", XLabel: "intensity (flop/byte)", YLabel: "(measured - model) / model (%)",
		XLog: true, HLines: []report.HLine{{Y: 0, Label: "0", Color: "#666666"}},
		Series: measured(func(p Point) float64 { return p.ResidualPct })}
	return []report.Plot{roofPlot, archPlot, powPlot, resPlot}
}

// Page is report.html.
func Page(r *Result) report.Page {
	pg := report.Page{Title: "gpuwatt archline: the energy roofline",
		Subtitle: fmt.Sprintf("%s, GPU %d %s (%d SMs, cc %s)", r.Device, r.GPU.Index, r.GPU.Name, r.Props.SMs, r.Props.ComputeCapability)}
	if r.Simulated {
		pg.Notice = "Measured on the sim device: the figures are simulated."
	}
	pw, n := r.PointWarnings()
	warns := append(status.Group(r.Warnings, 0), status.Group(pw, n)...)
	if r.Incomplete {
		warns = append(warns, "incomplete: "+r.Reason)
	}
	tables := r.Tables()
	pg.Sections = append(pg.Sections, report.Section{Title: "Method",
		Text: "The roofline kernel (seed 002, Algorithm 4: load, K FMAs per element, store) is swept over intensity and occupancy in each precision, with the baseline, copy and flop kernels as cross-checks; each point is measured with the measurement loop (time, energy, median SM clock). " +
			"Points whose median SM clock lies more than the tolerance below the dominant top clock are shown in grey and left out of the fit (section 3.1.2). " +
			"The fit is the ordinary least squares of E = W eps_flop + Q eps_mem + T pi0 (eq 5) per precision; R² is that of the fitted points, R²* that of all points with the same parameters. " +
			"± is the 95 % interval: " + CIMethod + ". " + Pi0Definition,
		Warnings: warns, Table: &tables[0]})
	for i, t := range tables[1:] {
		sec := report.Section{Title: t.Caption, Table: &tables[i+1]}
		pg.Sections = append(pg.Sections, sec)
	}
	for _, p := range r.precisions() {
		res := r.Results[p]
		pg.Sections = append(pg.Sections, report.Section{Title: strings.ToUpper(p) + ": roofline, archline, powerline",
			Warnings: status.Group(res.Warnings, 0), Plots: r.Plots(p)})
	}
	return pg
}

// JSONResults is what --json prints: one entry per precision.
func (r *Result) JSONResults() map[string]*PrecisionResult { return r.Results }

// PM is v ± the half-width of its interval ci (v alone without one; [lo, hi] where the
// interval is lopsided).
func PM(v float64, ci [2]float64) string {
	if !(ci[1] > ci[0]) {
		return f4(v)
	}
	a, b := v-ci[0], ci[1]-v
	if a > 0 && b > 0 && math.Abs(a-b) <= 0.25*max(a, b) {
		return fmt.Sprintf("%s ± %.2g", f4(v), max(a, b))
	}
	return fmt.Sprintf("%s [%s, %s]", f4(v), f4(ci[0]), f4(ci[1]))
}

// checkTables are the model checks (Checks) and the memory split, per precision.
func (r *Result) checkTables(ps []string) []report.Table {
	occ := report.Table{Caption: "Model check: eq 5 on each occupancy alone, and each occupancy predicted by eq 5 fitted to the others (measured − predicted, %)",
		Header: []string{"precision", "occupancy", "points", "eps_flop pJ/flop", "eps_mem pJ/B", "pi0 W", "R²", "predicted from the others: mean %", "rms %", "max |%|"}}
	fam := report.Table{Caption: "Model check: residuals by kernel family against eq 5 (flop kernel: W eps_flop + T pi0; copy: Q eps_mem + T pi0; baseline: T pi0), %",
		Header: []string{"precision", "kernel", "points", "mean %", "rms %", "min %", "max %"}}
	mod := report.Table{Caption: "Model choice: eq 5 against eq 5 with a static power of occupied SMs (T × occupancy × pi_occ), by BIC (lower is better)",
		Header: []string{"precision", "model", "eps_flop pJ/flop", "eps_mem pJ/B", "pi0 W", "pi_occ W", "AIC", "BIC", "chosen"}}
	forms := report.Table{Caption: "Eqs 5, 6 and 7: the same model weighted per joule, per flop and per byte; the largest difference of eq 6 or 7 from eq 5",
		Header: []string{"precision", "eps_flop", "eps_mem", "pi0"}}
	mem := report.Table{Caption: "eps_mem split by the board's memory power channel: the part of a DRAM byte's energy drawn on the memory rail, and the rest (the GPU die), with 95 % intervals",
		Header: []string{"precision", "channel", "points", "eps_mem pJ/B", "on the memory rail pJ/B", "share", "the rest pJ/B", "memory rail per flop pJ", "memory rail pi0 W", "R²"}}
	for _, p := range ps {
		res := r.Results[p]
		c := res.Checks
		if c != nil {
			loo := map[float64]Holdout{}
			for _, h := range c.LeaveOneOut {
				loo[h.Occupancy] = h
			}
			for _, o := range c.PerOccupancy {
				row := []string{p, occName(o.Occupancy), fmt.Sprint(o.Points), "-", "-", "-", "-"}
				if o.Error == "" {
					row = []string{p, occName(o.Occupancy), fmt.Sprint(o.Points), f4(o.EpsFlopPJ), f4(o.EpsMemPJPerByte), f4(o.Pi0W), fmt.Sprintf("%.4f", o.R2)}
				}
				if h, ok := loo[o.Occupancy]; ok && h.Error == "" {
					row = append(row, fmt.Sprintf("%+.2f", h.MeanPct), fmt.Sprintf("%.2f", h.RMSPct), fmt.Sprintf("%.2f", h.MaxAbsPct))
				} else {
					row = append(row, "-", "-", "-")
				}
				occ.Rows = append(occ.Rows, row)
			}
			for _, f := range c.Families {
				fam.Rows = append(fam.Rows, []string{p, f.Kernel, fmt.Sprint(f.Points), fmt.Sprintf("%+.2f", f.MeanPct), fmt.Sprintf("%.2f", f.RMSPct), fmt.Sprintf("%+.2f", f.MinPct), fmt.Sprintf("%+.2f", f.MaxPct)})
			}
			for _, m := range c.Models {
				if m.Error != "" {
					mod.Rows = append(mod.Rows, []string{p, m.Name, "-", "-", "-", "-", "-", "-", m.Error})
					continue
				}
				po := "-"
				if m.Params == 4 {
					po = f4(m.PiOccW)
				}
				ch := ""
				if m.Chosen {
					ch = "yes"
				}
				mod.Rows = append(mod.Rows, []string{p, m.Name, f4(m.EpsFlopPJ), f4(m.EpsMemPJPerByte), f4(m.Pi0W), po, fmt.Sprintf("%.1f", m.AIC), fmt.Sprintf("%.1f", m.BIC), ch})
			}
			forms.Rows = append(forms.Rows, []string{p, fmt.Sprintf("%.1f %%", c.FormSpreadPct[0]), fmt.Sprintf("%.1f %%", c.FormSpreadPct[1]), fmt.Sprintf("%.1f %%", c.FormSpreadPct[2])})
		}
		if m := res.Memory; m != nil {
			if m.Error != "" {
				mem.Rows = append(mem.Rows, []string{p, m.Channel, fmt.Sprint(m.Points), f4(res.EpsMemPJPerByte), "-", "-", "-", "-", "-", m.Error})
				continue
			}
			mem.Rows = append(mem.Rows, []string{p, m.Channel, fmt.Sprint(m.Points), PM(res.EpsMemPJPerByte, res.EpsMemCI), PM(m.RailPJPerByte, m.RailPJPerByteCI),
				fmt.Sprintf("%.0f %%", 100*m.RailShare), PM(m.RestPJPerByte, m.RestPJPerByteCI), PM(m.RailFlopPJ, m.RailFlopPJCI), PM(m.RailPi0W, m.RailPi0WCI), fmt.Sprintf("%.4f", m.R2)})
		}
	}
	var out []report.Table
	for _, t := range []report.Table{occ, fam, mod, forms, mem} {
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// tensorTable is the tensor precisions' energy per MAC (issue 33): eps_mac = 2 eps_flop,
// the energy balance in MACs per byte, and where the power cap bends the archline.
func (r *Result) tensorTable() (report.Table, bool) {
	t := report.Table{Caption: "Tensor cores (issue 33): E = MACs eps_mac + Q eps_mem + T pi0, with 95 % intervals; B_eps = eps_mem / eps_mac; the powerline meets the power limit where the GPU lowers its clock",
		Header: []string{"precision", "eps_mac pJ/MAC", "eps_mem pJ/B", "pi0 W", "B_eps MAC/B", "effective balance MAC/B", "B_tau MAC/B", "power-capped from, flop/B"}}
	for _, p := range r.precisions() {
		res := r.Results[p]
		if res == nil || !kernels.Precision(p).Tensor() || res.EpsMACCI == nil {
			continue
		}
		d := res.Derived
		capped := "never"
		if d.CappedFromFlop > 0 {
			capped = fmt.Sprintf("%.4g to %.4g", d.CappedFromFlop, d.CappedToFlop)
		}
		half := func(ci [2]float64) [2]float64 { return [2]float64{ci[0] / 2, ci[1] / 2} }
		t.Rows = append(t.Rows, []string{p, PM(res.EpsMACPJ, *res.EpsMACCI), PM(res.EpsMemPJPerByte, res.EpsMemCI), PM(res.Pi0W, res.Pi0CI),
			PM(d.BEps/2, half(res.BEpsCI)), PM(d.BEffective/2, half(res.BEffectiveCI)), f4(d.BTau / 2), capped})
	}
	return t, len(t.Rows) > 0
}
