package micro

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// PM formats a figure with its 95 % half-width from [lo, hi]: "4.213 ±0.031"; the figure
// alone where no interval was computed (hi = 0).
func PM(v, lo, hi float64) string {
	if hi == 0 && lo == 0 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " ±" + strconv.FormatFloat((hi-lo)/2, 'g', 2, 64)
}

// WriteText prints the suite's table, in the spirit of MIPP's Tables I-IV.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n MIPP suite on GPU %d, %s (%s, %d SMs, cc %s)\n", r.GPU.Index, r.GPU.Name, r.Device, r.Props.SMs, r.Props.ComputeCapability)
	fmt.Fprintf(&b, " %s %s, baseline power pi0 %s ± %s (%s)\n", idleName(r.IdleLevel), units.Power(r.IdlePowerW), units.Power(r.Pi0W), units.Power(r.Pi0HalfWidthW), r.Pi0Source)
	if r.Incomplete {
		fmt.Fprintf(&b, " INCOMPLETE: %s\n", r.Reason)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, " kernel\twhat\ttime/launch\tthroughput\tper clk/SM\tspec\tclock\tmean\tmax\tpJ/unit\tpi0 share\tabove pi0\t\n")
	for _, x := range r.Rows {
		spec := "-"
		if x.SpecPerCycleSM > 0 {
			spec = strconv.FormatFloat(x.SpecPerCycleSM, 'g', 4, 64)
		}
		if x.Unit == "launch" {
			fmt.Fprintf(tw, " %s\t%s\t%s\t-\t-\t-\t%.0f MHz\t%s\t%s\t-\t-\t-\t\n", x.Name, x.What,
				units.FormatSeconds(x.TimePerLaunchS, 3), x.ClockMHz, units.Power(x.MeanPowerW), units.Power(x.MaxPowerW))
			continue
		}
		fmt.Fprintf(tw, " %s\t%s\t%s\t%s\t%.1f\t%s\t%.0f MHz\t%s\t%s\t%s\t%.4g\t%s\t\n", x.Name, x.What,
			units.FormatSeconds(x.TimePerLaunchS, 3), throughput(x), x.PerCycleSM, spec, x.ClockMHz,
			units.Power(x.MeanPowerW), units.Power(x.MaxPowerW), PM(x.PJPerUnit, x.PJPerUnitLow, x.PJPerUnitHigh), x.PJPerUnitPi0,
			PM(x.PJPerUnitAbovePi0, x.PJPerUnitAbovePi0Low, x.PJPerUnitAbovePi0High))
	}
	tw.Flush()
	writeData(&b, r.Data)
	b.WriteString("\n pJ/unit: energy per instruction (op), tensor-core multiply-accumulate (MAC) or byte (B) in all; pi0 share: the baseline power's part; above pi0: what the work adds.\n")
	b.WriteString(" ±: the 95 % interval on this board's scale (readings, calibration, edges; pi0's too above pi0); the board's ±5 % gain error comes on top between boards.\n")
	status.WriteText(&b, " ", status.Group(append(r.RowWarnings(), r.Warnings...), len(r.Rows)))
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeData prints the operand data's effect: pJ per instruction above pi0 under each
// pattern, and random over zeros.
func writeData(b *strings.Builder, ds []DataEffect) {
	if len(ds) == 0 {
		return
	}
	b.WriteString("\n Operand data: pJ per instruction above pi0 (in all), and random over zeros\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, " class\tzeros\tconst\trandom\trandom/zeros above pi0\tin all\t\n")
	for _, d := range ds {
		cells := map[string]string{}
		for _, p := range d.Patterns {
			cells[p.Operands] = fmt.Sprintf("%s (%.4g)", PM(p.PJAbovePi0, p.PJAbovePi0CI[0], p.PJAbovePi0CI[1]), p.PJPerOp)
		}
		cell := func(k string) string {
			if c, ok := cells[k]; ok {
				return c
			}
			return "-"
		}
		ratio := func(v float64, ci [2]float64) string {
			if v == 0 {
				return "-"
			}
			return PM(v, ci[0], ci[1])
		}
		fmt.Fprintf(tw, " %s\t%s\t%s\t%s\t%s\t%s\t\n", d.Class, cell("zeros"), cell("const"), cell("random"),
			ratio(d.RandomOverZerosAbovePi0, d.RandomOverZerosAbovePi0CI), ratio(d.RandomOverZeros, d.RandomOverZerosCI))
	}
	tw.Flush()
	b.WriteString(" zeros: every operand 0; const: a fixed non-zero pattern; random: chains whose bits keep toggling (kernels.Operands).\n")
}

func throughput(x Row) string {
	switch {
	case x.FlopsPerSecond > 0:
		return fmt.Sprintf("%.4g TFLOP/s", x.FlopsPerSecond/1e12)
	case x.Unit == "B":
		return fmt.Sprintf("%.4g GB/s", x.PerSecond/1e9)
	case x.Unit == "MAC": // int8: two integer ops per MAC
		return fmt.Sprintf("%.4g TOPS", 2*x.PerSecond/1e12)
	case x.Unit == "op":
		return fmt.Sprintf("%.4g Gop/s", x.PerSecond/1e9)
	}
	return fmt.Sprintf("%.4g /s", x.PerSecond)
}

// CSVHeader is the header of results.csv.
var CSVHeader = []string{"name", "group", "what", "unit", "launches", "time_per_launch_s", "work_per_launch",
	"per_s", "flops_per_s", "per_cycle_per_sm", "spec_per_cycle_per_sm", "sm_clock_mhz", "mean_power_w", "max_power_w",
	"energy_per_launch_j", "pj_per_unit", "pj_per_unit_low", "pj_per_unit_high", "pj_per_unit_pi0", "pj_per_unit_above_pi0",
	"pj_per_unit_above_pi0_low", "pj_per_unit_above_pi0_high", "per_joule", "mips_per_watt_per_sm",
	"energy_source", "useful_bytes_per_launch", "pj_per_useful_byte", "variant", "operands", "operand_toggle"}

// WriteCSV writes results.csv: one row per kernel.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, x := range r.Rows {
		var vs []string
		for k, v := range x.Variant {
			vs = append(vs, k+"="+g(v))
		}
		sort.Strings(vs)
		rec := []string{x.Name, x.Group, x.What, x.Unit, strconv.Itoa(x.Launches), g(x.TimePerLaunchS), strconv.FormatInt(x.WorkPerLaunch, 10),
			g(x.PerSecond), g(x.FlopsPerSecond), g(x.PerCycleSM), g(x.SpecPerCycleSM), g(x.ClockMHz), g(x.MeanPowerW), g(x.MaxPowerW),
			g(x.EnergyPerLaunchJ), g(x.PJPerUnit), g(x.PJPerUnitLow), g(x.PJPerUnitHigh), g(x.PJPerUnitPi0), g(x.PJPerUnitAbovePi0),
			g(x.PJPerUnitAbovePi0Low), g(x.PJPerUnitAbovePi0High), g(x.PerJoule), g(x.MIPSPerWattPerSM),
			x.EnergySource, strconv.FormatInt(x.UsefulPerLaunch, 10), g(x.PJPerUsefulByte), strings.Join(vs, ";"),
			x.Operands, g(x.OperandToggle)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Page builds report.html: the tables, and the intensity variants plotted as MIPP's
// Figs. 6-8 (throughput and energy per byte, moved and used by the threads; average and
// maximum power).
func Page(r *Result) report.Page {
	p := report.Page{
		Title:    fmt.Sprintf("gpuwatt micro: %s", r.GPU.Name),
		Subtitle: fmt.Sprintf("%s, GPU %d (%s), %d SMs, compute capability %s", r.Device, r.GPU.Index, r.GPU.UUID, r.Props.SMs, r.Props.ComputeCapability),
	}
	var notes []string
	if r.Simulated {
		notes = append(notes, "Measured on the sim device: every figure here is simulated, not read from a GPU.")
	}
	if r.Incomplete {
		notes = append(notes, "INCOMPLETE: "+r.Reason+". What was measured is shown.")
	}
	p.Notice = strings.Join(notes, " ")
	intro := fmt.Sprintf("Idle power %s. Baseline power pi0 %s, from the %s: every energy per instruction or byte is shown in all, as pi0's share (pi0 times the time one unit takes), and as what the work adds above pi0.",
		units.Power(r.IdlePowerW), units.Power(r.Pi0W), r.Pi0Source)
	groups := []struct{ title, match string }{
		{"Arithmetic units (MIPP Tables I-II)", "arith"},
		{"Memory levels (MIPP Tables III-IV)", "memory"},
		{"Baseline", "baseline"},
	}
	for i, gr := range groups {
		sec := report.Section{Title: gr.title}
		if i == 0 {
			sec.Text = intro
		}
		var named []status.Warning
		nKernels := 0
		tab := &report.Table{Header: []string{"kernel", "unit", "time/launch", "throughput", "per clk/SM", "spec", "clock (MHz)", "mean power", "max power", "energy/launch", "pJ/unit", "pi0 share", "above pi0"}}
		for _, x := range r.Rows {
			if x.Group != gr.match {
				continue
			}
			spec := ""
			if x.SpecPerCycleSM > 0 {
				spec = strconv.FormatFloat(x.SpecPerCycleSM, 'g', 4, 64)
			}
			tab.Rows = append(tab.Rows, []string{x.Name, x.Unit, units.FormatSeconds(x.TimePerLaunchS, 3), throughput(x), fmt.Sprintf("%.1f", x.PerCycleSM), spec,
				fmt.Sprintf("%.0f", x.ClockMHz), units.Power(x.MeanPowerW).String(), units.Power(x.MaxPowerW).String(), units.Energy(x.EnergyPerLaunchJ).String(),
				PM(x.PJPerUnit, x.PJPerUnitLow, x.PJPerUnitHigh), fmt.Sprintf("%.4g", x.PJPerUnitPi0), PM(x.PJPerUnitAbovePi0, x.PJPerUnitAbovePi0Low, x.PJPerUnitAbovePi0High)})
			named = append(named, status.WithSubject(x.Name, x.Warnings)...)
			nKernels++
		}
		sec.Warnings = status.Group(named, nKernels)
		if len(tab.Rows) > 0 {
			sec.Table = tab
			p.Sections = append(p.Sections, sec)
		}
	}
	if sec, ok := tensorSection(r); ok {
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := dataSection(r); ok {
		p.Sections = append(p.Sections, sec)
	}
	for _, v := range []struct{ title, group, key, xlabel string }{
		{"DRAM coalescing (MIPP Fig. 6)", "coalescing", "coalescing", "threads per transaction"},
		{"DRAM access size (MIPP Fig. 7)", "access-size", "access_bytes", "access size (bytes)"},
		{"Shared-memory bank conflicts (MIPP Fig. 8)", "bank-conflicts", "conflicts", "bank conflicts"},
	} {
		if sec, ok := variantSection(r, v.title, v.group, v.key, v.xlabel); ok {
			p.Sections = append(p.Sections, sec)
		}
	}
	if len(r.Warnings) > 0 {
		p.Sections = append(p.Sections, report.Section{Title: "Warnings", Warnings: status.Group(r.Warnings, 0)})
	}
	return p
}

// dataSection is the operand data's effect: each class measured under more than one
// operand pattern, its energy per instruction under each, and random over zeros.
func dataSection(r *Result) (report.Section, bool) {
	if len(r.Data) == 0 {
		return report.Section{}, false
	}
	tab := &report.Table{Header: []string{"class", "operands", "bits toggling", "per clk/SM", "mean power", "pJ/op", "above pi0", "random/zeros", "random/zeros above pi0"}}
	for _, d := range r.Data {
		for i, p := range d.Patterns {
			row := []string{d.Class, p.Operands, fmt.Sprintf("%.0f %%", 100*p.Toggle), fmt.Sprintf("%.1f", p.PerCycleSM), units.Power(p.MeanPowerW).String(),
				PM(p.PJPerOp, p.PJPerOpCI[0], p.PJPerOpCI[1]), PM(p.PJAbovePi0, p.PJAbovePi0CI[0], p.PJAbovePi0CI[1]), "", ""}
			if i == len(d.Patterns)-1 && d.RandomOverZeros > 0 {
				row[7] = PM(d.RandomOverZeros, d.RandomOverZerosCI[0], d.RandomOverZerosCI[1])
				row[8] = PM(d.RandomOverZerosAbovePi0, d.RandomOverZerosAbovePi0CI[0], d.RandomOverZerosAbovePi0CI[1])
			}
			tab.Rows = append(tab.Rows, row)
		}
	}
	text := "The same kernel (the same PTX and SASS) under each operand pattern: zeros (every operand 0), const (a fixed non-zero bit pattern, each chain on an exact fixed point) and random (chains whose bits keep toggling: FMAs x = x*x + c with c = -1.99, chaotic; integer sums, products and Keccak's chi over rotating chains, seeded from a hash of the clock). Bits toggling: the share of source-operand bits that change from one instruction to the next in a thread's issue order, emulated. The ratios' intervals combine the two rows' as independent."
	return report.Section{Title: "Operand data: energy per instruction by operand pattern", Text: text, Table: tab}, true
}

// variantSection plots one intensity variant: throughput, mean and max power, and energy
// per byte moved, against the swept parameter.
func variantSection(r *Result, title, group, key, xlabel string) (report.Section, bool) {
	var rows []Row
	for _, x := range r.Rows {
		if x.Group == group {
			if _, ok := x.Variant[key]; ok {
				rows = append(rows, x)
			}
		}
	}
	if len(rows) == 0 {
		// Fall back to any variant key the rows carry.
		for _, x := range r.Rows {
			if x.Group == group && len(x.Variant) > 0 {
				rows = append(rows, x)
			}
		}
		if len(rows) == 0 {
			return report.Section{}, false
		}
		for k := range rows[0].Variant {
			key = k
			break
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Variant[key] < rows[j].Variant[key] })
	var x, thr, useful, mean, maxp, pj, pjUseful []float64
	hasUseful := false
	for _, row := range rows {
		x = append(x, row.Variant[key])
		thr = append(thr, row.PerSecond/1e9)
		mean = append(mean, row.MeanPowerW)
		maxp = append(maxp, row.MaxPowerW)
		pj = append(pj, row.PJPerUnit)
		u, pu := row.PerSecond, row.PJPerUnit // bytes used = bytes moved where not said otherwise
		if row.UsefulPerLaunch > 0 {
			u, pu, hasUseful = row.UsefulPerSecond, row.PJPerUsefulByte, true
		}
		useful = append(useful, u/1e9)
		pjUseful = append(pjUseful, pu)
	}
	unit := "GB/s"
	if rows[0].Unit == "op" {
		unit = "Gop/s"
	}
	logx := group != "bank-conflicts"
	thrSeries := []report.Series{{Name: "moved", X: x, Y: thr, Style: report.Line}, {X: x, Y: thr, Style: report.Points}}
	pjSeries := []report.Series{{Name: "pJ per " + rows[0].Unit + " moved", X: x, Y: pj, Style: report.Line}, {X: x, Y: pj, Style: report.Points}}
	if hasUseful {
		// What the sweep is for: the bytes the threads use, and what each of them costs.
		thrSeries = append(thrSeries, report.Series{Name: "used by the threads", X: x, Y: useful, Style: report.Line, Dash: true})
		pjSeries = append(pjSeries, report.Series{Name: "pJ per byte used", X: x, Y: pjUseful, Style: report.Line, Dash: true})
	}
	return report.Section{Title: title, Plots: []report.Plot{
		{Title: title + ": throughput", XLabel: xlabel, YLabel: "throughput (" + unit + ")", XLog: logx, YMin: report.Float(0), Series: thrSeries},
		{Title: title + ": power", XLabel: xlabel, YLabel: "power (W)", XLog: logx,
			Series: []report.Series{{Name: "mean power", X: x, Y: mean, Style: report.Line}, {Name: "max power", X: x, Y: maxp, Style: report.Line, Dash: true}}},
		{Title: title + ": energy per " + rows[0].Unit, XLabel: xlabel, YLabel: "energy (pJ per " + rows[0].Unit + ")", XLog: logx, YMin: report.Float(0), Series: pjSeries},
	}}, true
}

// RowWarnings are the kernels' warnings, each about its kernel (Subject), for
// status.Group to tell a warning many kernels share once.
func (r *Result) RowWarnings() []status.Warning {
	var ws []status.Warning
	for _, x := range r.Rows {
		ws = append(ws, status.WithSubject(x.Name, x.Warnings)...)
	}
	return ws
}

// idleName is the idle level's name for people ("active idle"), "idle" where not known.
func idleName(level string) string {
	if level == "" {
		return "idle"
	}
	return level
}
