package characterize

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Section titles of the page, in order (the tests look for them).
const (
	TitleGPU       = "The GPU and this run"
	TitleHeadline  = "Every figure"
	TitleSensors   = "Power sensors: what they measure and how gpuwatt corrects them"
	TitleMicro     = "Energy per operation by unit"
	TitleArchline  = "The energy roofline and its balance points"
	TitleLoadlevel = "Efficiency at each load level"
	TitleWarnings  = "Every warning raised on the way"
	TitleRefs      = "References"
)

// The folded parts of the datasheet, in order, after its summary.
const (
	FoldRun       = "The card and this run"
	FoldFigures   = "Every figure, with its interval"
	FoldSensors   = "Power sensors: what each measures and how it is corrected"
	FoldMicro     = "Energy per operation, by instruction and memory level"
	FoldArchline  = "Energy roofline: energy per flop and per byte, balance points"
	FoldLoadlevel = "Efficiency under load"
)

// References are the papers the datasheet's methods come from, cited here rather than in
// its headings.
var References = []string{
	"SPEC Power methodology: von Kistowski et al., A measurement methodology for servers with GPGPU accelerators at multiple load levels (the load levels).",
	"MIPP: a microbenchmark suite for performance, power and energy of GPU functional units (energy per operation).",
	"Archline: J. Holtmann, Power consumption properties of modern GPUs, FAU Erlangen-Nürnberg, 2024, after Choi et al.'s energy roofline (the energy roofline, its Tables and equations).",
	"K20 sensor: M. Burtscher, I. Zecena, Z. Zong, Measuring GPU power with the K20 built-in sensor (the sensor corrections and anomaly tests).",
	"Lang and Rünger, High-resolution power profiling of GPU functions using low-resolution measurement (gpuwatt profile).",
}

func referencesSection() report.Section {
	return report.Section{Title: TitleRefs, Text: "The methods come from these papers (docs/references.md in gpuwatt's repository):\n\n" + strings.Join(References, "\n\n")}
}

// plainTitle drops paper references from a heading ("Kernels against the peaks (Table 3):
// best rate" becomes "Kernels against the peaks: best rate"); the captions keep them.
func plainTitle(t string) string {
	t = paperRef.ReplaceAllString(t, "")
	if strings.HasPrefix(t, "Seed 002's fits for comparison") {
		return "The archline paper's own fits, for comparison"
	}
	return strings.TrimSpace(t)
}

var paperRef = regexp.MustCompile(`\s*\((?:[Tt]ables? [0-9][0-9, and-]*|seed 00[0-9]|eqs? [0-9][0-9, and]*)\)`)

// SimNotice is the banner of a page measured on the sim device.
const SimNotice = "Measured on the sim device, gpuwatt's digital twin of a GPU: no NVIDIA GPU was used, and every figure here is simulated."

func g4(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.4g", v)
}

// Title is the page's title for one result.
func (r *Result) Title() string {
	name := r.GPU.Name
	if name == "" {
		name = "GPU"
	}
	return "Energy datasheet: " + name
}

// Page renders the results as one self-contained HTML page. It reads nothing but r, so
// the same results.json always gives the same page.
func (r *Result) Page() report.Page {
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	p := report.Page{Title: r.Title(),
		Subtitle: fmt.Sprintf("%s · GPU %d · %s run · gpuwatt %s · %s · %s", r.Device, r.GPU.Index, mode, r.Version, r.Host, r.Date)}
	var notes []string
	if r.Sim {
		notes = append(notes, SimNotice)
	}
	if r.Incomplete {
		notes = append(notes, "INCOMPLETE: "+r.Reason+". What was measured is shown.")
	}
	p.Notice = strings.Join(notes, " ")
	p.Sections = append(p.Sections, r.summarySection())
	fold := func(name string, secs ...report.Section) {
		for _, s := range secs {
			s.Fold = name
			s.Title = plainTitle(s.Title)
			p.Sections = append(p.Sections, s)
		}
	}
	fold(FoldRun, r.gpuSection())
	fold(FoldFigures, report.Section{Title: TitleHeadline,
		Text:  "Every figure of the run with its 95 % interval on this board's scale; gpuwatt report DIR1 DIR2 puts them side by side.",
		Table: headlineTable([]*Result{r}, nil)})
	fold(FoldSensors, r.sensorSections()...)
	fold(FoldMicro, r.microSections()...)
	fold(FoldArchline, r.archlineSections()...)
	fold(FoldLoadlevel, r.loadlevelSections()...)
	ws := r.WarningLines()
	text := fmt.Sprintf("%d warning(s).", len(ws))
	if len(ws) == 0 {
		text = "No warnings."
	}
	p.Sections = append(p.Sections, report.Section{Title: TitleWarnings, Text: text, Warnings: ws})
	p.Sections = append(p.Sections, referencesSection())
	return p
}

func (r *Result) gpuSection() report.Section {
	t := &report.Table{Header: []string{"", ""}, Align: []string{"l", "l"}}
	add := func(k, v string) {
		if v != "" {
			t.Rows = append(t.Rows, []string{k, v})
		}
	}
	add("GPU", fmt.Sprintf("%d: %s", r.GPU.Index, r.GPU.Name))
	add("UUID", r.GPU.UUID)
	add("PCI bus", r.GPU.PCIBusID)
	add("device", r.Device)
	add("driver", r.DriverVersion)
	add("NVML", r.NVMLVersion)
	if r.Props.SMs > 0 {
		add("SMs, compute capability", fmt.Sprintf("%d, %s", r.Props.SMs, r.Props.ComputeCapability))
		add("max SM clock", fmt.Sprintf("%.0f MHz", r.Props.MaxSMClockHz/1e6))
	}
	if r.Props.MemoryBytes > 0 {
		add("memory", fmt.Sprintf("%.1f GiB", float64(r.Props.MemoryBytes)/(1<<30)))
	}
	if r.GPU.PowerLimitW > 0 {
		add("power limit", fmt.Sprintf("%.0f W (default %.0f W)", r.GPU.PowerLimitW, r.GPU.DefaultPowerLimit))
	}
	add("gpuwatt", r.Version)
	add("host", r.Host)
	if len(r.Runs) > 1 {
		for i, run := range r.Runs {
			add(fmt.Sprintf("run %d", i+1), fmt.Sprintf("%s, %s (gpuwatt %s)", strings.Join(run.Command, " "), run.Date, run.Version))
		}
	} else {
		add("command", strings.Join(r.Command, " "))
		add("date", r.Date)
	}
	var clockS float64
	for _, st := range r.Stages {
		clockS += st.ClockS
	}
	add("time on the measurement clock", fmt.Sprintf("%.0f s (%.1f min) over %d stages", clockS, clockS/60, len(r.Stages)))
	for _, st := range r.Stages {
		v := fmt.Sprintf("%s: %.1f s on the measurement clock, %.2f s on the host", st.Status, st.ClockS, st.WallS)
		if len(r.Runs) > 1 && st.Run > 0 {
			v += fmt.Sprintf(" (run %d)", st.Run)
		}
		if st.Error != "" {
			v += "; " + st.Error
		}
		add("stage "+st.Name, v)
	}
	text := "Four stages run one after the other: the sensor characterisation, the microbenchmark suite, the archline sweep and fit, and a load-level run. The measurement clock is GPU time on a GPU; on the sim device it is the virtual time the same work would take on the GPU the sim models."
	sec := report.Section{Title: TitleGPU, Text: text, Table: t}
	return sec
}

// notRun is the text of a stage's section when the stage has no result.
func (r *Result) notRun(stage string) string {
	if s := r.Stage(stage); s != nil {
		switch s.Status {
		case StatusFailed:
			return "This stage failed: " + s.Error
		case StatusNotRun:
			return "This stage was not run: the run was interrupted before it."
		}
	}
	return "This stage was not run."
}

func (r *Result) sensorSections() []report.Section {
	s := r.Sensor
	if s == nil {
		return []report.Section{{Title: TitleSensors, Text: r.notRun(StageSensor)}}
	}
	t := &report.Table{Header: []string{"channel", "model (how gpuwatt corrects it)", "update period T (ms)", "window W (ms)", "lag tau (ms)", "delay (ms)", "coverage W/T", "active idle (W)", "load (W)", "vs energy counter"}}
	for _, c := range s.Channels {
		t.Rows = append(t.Rows, []string{c.Name, c.Model, g4(c.PeriodS * 1e3), g4(c.WindowS * 1e3), g4(c.TauS * 1e3), g4(c.DelayS * 1e3),
			fmt.Sprintf("%.0f %%", 100*c.Coverage), g4(c.IdleW), g4(c.LoadW), g4(c.RatioToCounter)})
	}
	var b strings.Builder
	b.WriteString("Each power channel was driven with a known load (a step, then square waves at several periods and phases) and its readings fitted with two models: a boxcar average over a window W, refreshed every update period T, or a first-order lag with time constant tau; each has a delay. The better fit is the channel's model. ")
	b.WriteString("gpuwatt corrects a channel by inverting its model before it integrates (docs/energy.md): a lag (rc) through P = y + tau dy/dt, integrated as the integral of the readings plus tau times the change of the reading across the region; a long boxcar (W >= 1.5 T, the 1 s averages) by deconvolution, E[a, b] = W (r(b) - r(a)) + E[a - W, b - W]; a short boxcar (W < 1.5 T) by letting each reading stand for its own period, a cell centred on its window's centre (t - delay - W/2). Every reading describes the power its delay before its timestamp. A channel whose window covers less than its update period (coverage W/T < 100 %) does not see part of the time: short regions are uncertain and flagged. energy --sensor sensor.json applies these models to any trace.")
	if c := s.Counter; c != nil {
		fmt.Fprintf(&b, "\n\nEnergy counter %s: updated every %s ms, %s W at steady load.", c.Name, g4(c.PeriodS*1e3), g4(c.SteadyW))
	}
	if s.Reference != "" {
		fmt.Fprintf(&b, " Reference channel: %s.", s.Reference)
	}
	secs := []report.Section{{Title: TitleSensors, Text: b.String(), Table: t}}
	if len(r.SensorPlots) > 0 {
		secs = append(secs, report.Section{Title: "Sensor responses with the fitted models", Plots: r.SensorPlots})
	}
	if len(s.Anomalies) > 0 {
		secs = append(secs, report.Section{Title: "Anomaly tests on every power channel", Text: sensorchar.AnomalyIntro(), Table: sensorchar.AnomalyTable(s.Anomalies), Warnings: status.Group(s.AnomalyWarnings(), len(s.Anomalies))})
	}
	return secs
}

func (r *Result) microSections() []report.Section {
	m := r.MicroAbovePi0()
	if m == nil {
		return []report.Section{{Title: TitleMicro, Text: r.notRun(StageMicro)}}
	}
	plot, names := microPlot(m)
	secs := []report.Section{{Title: TitleMicro, Text: "The MIPP microbenchmark suite: each kernel exercises one instruction class or one memory level; its energy per unit of work (pJ per instruction or per byte) is split into the baseline power's share and what the work adds above it. The classes whose operand data gpuwatt controls run twice, with zeroed and with random operands (the same code): the column random/zeros above pi0 is the data dependence of their energy.\n\nThe kernels in the plot: " + strings.Join(names, " · ") + ".",
		Plots: []report.Plot{plot}}}
	for _, s := range micro.Page(m).Sections {
		if s.Title == "Warnings" {
			continue // they are in the warnings section
		}
		s.Title = "Energy per operation: " + s.Title
		secs = append(secs, s)
	}
	return secs
}

// microPlot is energy per unit over the kernels whose unit is an instruction or a byte (the
// baseline's is a launch, off this scale), numbered in table order; names are "n kernel".
func microPlot(m *micro.Result) (report.Plot, []string) {
	p := report.Plot{Title: "Energy per unit of work, by kernel (numbered as listed above the plot)", XLabel: "kernel number", YLabel: "energy per unit (pJ)", YLog: true}
	all := report.Series{Name: "in all", Style: report.Points}
	above := report.Series{Name: "above pi0", Style: report.Points}
	var names []string
	for _, row := range m.Rows {
		if row.Unit != "op" && row.Unit != "B" {
			continue
		}
		n := float64(len(names) + 1)
		names = append(names, fmt.Sprintf("%d %s", len(names)+1, row.Name))
		all.X, all.Y = append(all.X, n), append(all.Y, row.PJPerUnit)
		if row.PJPerUnitAbovePi0 > 0 {
			above.X, above.Y = append(above.X, n), append(above.Y, row.PJPerUnitAbovePi0)
		}
	}
	p.Series = []report.Series{all, above}
	return p, names
}

func (r *Result) archlineSections() []report.Section {
	a := r.Archline
	if a == nil {
		return []report.Section{{Title: TitleArchline, Text: r.notRun(StageArchline)}}
	}
	t := &report.Table{Header: []string{"precision", "eps_flop (pJ/flop)", "eps_mem (pJ/B)", "eps_mem on the memory rail (pJ/B)", "pi0 (W)", "R²", "B_tau (flop/B)", "B_eps (flop/B)", "effective B_eps (flop/B)", "peak GFLOP/s", "peak GB/s", "power limit meets powerline (flop/B)"}}
	for _, prec := range precisions(a) {
		res := a.Results[prec]
		d := res.Derived
		capped := "never"
		if d.CappedFromFlop > 0 {
			capped = g4(d.CappedFromFlop) + " to " + g4(d.CappedToFlop)
		}
		rail := "–"
		if m := res.Memory; m != nil && m.Error == "" {
			rail = archline.PM(m.RailPJPerByte, m.RailPJPerByteCI)
		}
		t.Rows = append(t.Rows, []string{prec, archline.PM(res.EpsFlopPJ, res.EpsFlopCI), archline.PM(res.EpsMemPJPerByte, res.EpsMemCI), rail, archline.PM(res.Pi0W, res.Pi0CI), fmt.Sprintf("%.4f", res.R2), g4(d.BTau), archline.PM(d.BEps, res.BEpsCI), archline.PM(d.BEffective, res.BEffectiveCI),
			g4(d.PeakFlopsPerS / 1e9), g4(d.PeakBytesPerS / 1e9), capped})
	}
	text := "The energy of a kernel is modelled as E = W eps_flop + Q eps_mem + T pi0 (Choi et al.): W flops, Q bytes, T seconds. The time balance B_tau is the intensity where a kernel turns from memory- to compute-bound; the energy balance B_eps (eps_mem / eps_flop) where its energy does; the effective balance counts pi0 too. " +
		"± is the relative 95 % interval, on this board's scale (" + archline.CIMethod + ", with the run-to-run spread): for comparing figures of one board. Against another board or the true energy, the absolute interval adds the board's ±5 % gain error (results.json: *_abs_ci). "
	if pi0, ci, ok := r.cardPi0(); ok {
		text += fmt.Sprintf("The card's pi0 is %s W. %s", archline.PM(pi0, ci), archline.Pi0Definition)
	}
	secs := []report.Section{{Title: TitleArchline, Text: text, Table: t}}
	for _, s := range archline.Page(a).Sections {
		if s.Title == "Method" {
			s.Warnings = nil // they are in the warnings section
		}
		s.Title = "Energy roofline: " + s.Title
		secs = append(secs, s)
	}
	return secs
}

func precisions(a *archline.Result) []string {
	var ps []string
	for p := range a.Results {
		if a.Results[p] != nil {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

func (r *Result) loadlevelSections() []report.Section {
	l := r.Loadlevel
	if l == nil {
		return []report.Section{{Title: TitleLoadlevel, Text: r.notRun(StageLoadlevel)}}
	}
	iv := l.Intervals
	what := "This is the CPU variant: FFT transactions run on the host's cores, so the figures describe the host, not the GPU."
	if l.Variant != "cpu" && l.Variant != "" {
		tx := l.Workload
		if len(l.Configs) > 0 && len(l.Configs[0].Runs) > 0 {
			tx = l.Configs[0].Runs[0].Workload
		}
		what = fmt.Sprintf("Transactions %s (variant %s) on %s: each copies its input to the GPU, runs its kernels there and copies the result back, and power is the GPU's board power (corrected) beside the host's where it can be read.", tx, l.Variant, l.Device)
	}
	secs := []report.Section{{Title: TitleLoadlevel, Text: fmt.Sprintf("The SPEC Power methodology (von Kistowski et al.): calibrate the 100 %% transaction rate, then hold each target load and active idle, and report transactions per joule. %s Intervals: %s warm-up, %d calibrations, %s pre, %s recording, %s post, %s active idle. Overall score %s tx/J (valid: %v).",
		what, iv.Warmup, iv.Calibrations, iv.Pre, iv.Record, iv.Post, iv.Idle, g4(l.OverallScore), l.Valid)}}
	for _, s := range l.Page("").Sections {
		s.Title = "Load levels: " + s.Title
		s.Warnings = nil // they are in the warnings section
		secs = append(secs, s)
	}
	return secs
}

// Headline is one result's comparable figures, as (label, value) pairs in order.
func (r *Result) Headline() [][2]string {
	var h [][2]string
	add := func(k, v string) { h = append(h, [2]string{k, v}) }
	add("GPU", r.GPU.Name)
	add("UUID", r.GPU.UUID) // several cards of one model differ: the UUID tells them apart
	add("date", r.Date)
	add("device", r.Device)
	add("driver", r.DriverVersion)
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	add("run", mode)
	var clk float64
	for _, s := range r.Stages {
		clk += s.ClockS
	}
	add("measurement time (s)", fmt.Sprintf("%.0f", clk))
	add("complete", fmt.Sprint(!r.Incomplete))
	if s := r.Sensor; s != nil {
		for _, c := range s.Channels {
			add("sensor "+c.Name, c.Model)
		}
	}
	if pi0, ci, ok := r.cardPi0(); ok {
		add("pi0 (W)", archline.PM(pi0, ci))
	}
	if m := r.Micro; m != nil {
		add("active idle power (W)", g4(m.IdlePowerW))
		add("baseline kernel power (W)", archline.PM(m.Pi0W, [2]float64{m.Pi0W - m.Pi0HalfWidthW, m.Pi0W + m.Pi0HalfWidthW}))
		for _, row := range m.Rows {
			if row.Group == "arith" || row.Group == "memory" || row.Group == "tensor" { // tensor: pJ/MAC
				add(fmt.Sprintf("%s (pJ/%s)", row.Name, row.Unit), archline.PM(row.PJPerUnit, [2]float64{row.PJPerUnitLow, row.PJPerUnitHigh}))
			}
		}
		// The data dependence: each class's energy above pi0 with random operands over
		// that with zeros.
		for _, d := range m.Data {
			if d.RandomOverZerosAbovePi0 > 0 {
				add(d.Class+" data dependence (random/zeros above pi0)", micro.PM(d.RandomOverZerosAbovePi0, d.RandomOverZerosAbovePi0CI[0], d.RandomOverZerosAbovePi0CI[1]))
			}
		}
	}
	if a := r.Archline; a != nil {
		for _, p := range precisions(a) {
			res := a.Results[p]
			add(p+" eps_flop (pJ/flop)", archline.PM(res.EpsFlopPJ, res.EpsFlopCI))
			add(p+" eps_mem (pJ/B)", archline.PM(res.EpsMemPJPerByte, res.EpsMemCI))
			if m := res.Memory; m != nil && m.Error == "" {
				add(p+" eps_mem on the memory rail (pJ/B)", archline.PM(m.RailPJPerByte, m.RailPJPerByteCI))
			}
			add(p+" pi0, this precision's fit (W)", archline.PM(res.Pi0W, res.Pi0CI))
			add(p+" B_tau (flop/B)", g4(res.Derived.BTau))
			add(p+" B_eps (flop/B)", archline.PM(res.Derived.BEps, res.BEpsCI))
		}
	}
	if l := r.Loadlevel; l != nil {
		add("load-level score, "+l.Variant+" variant (tx/J)", g4(l.OverallScore))
		for _, lv := range l.Levels {
			name := fmt.Sprintf("load %g %% (tx/J)", 100*lv.TargetLoad)
			if lv.ActiveIdle {
				add("load active idle (W)", g4(lv.PowerW))
				continue
			}
			add(name, g4(lv.TxPerJ))
		}
	}
	add("warnings", fmt.Sprint(len(r.WarningLines())))
	return h
}

// headlineTable is the headline figures of one or more results, one column each; names
// label the columns (nil: "value").
func headlineTable(rs []*Result, names []string) *report.Table {
	t := &report.Table{Header: []string{"figure"}}
	var order []string
	vals := map[string][]string{}
	for i, r := range rs {
		name := "value"
		if i < len(names) {
			name = names[i]
		}
		t.Header = append(t.Header, name)
		for _, kv := range r.Headline() {
			if _, ok := vals[kv[0]]; !ok {
				order = append(order, kv[0])
				vals[kv[0]] = make([]string, len(rs))
			}
			vals[kv[0]][i] = kv[1]
		}
	}
	for _, k := range order {
		row := []string{k}
		for _, v := range vals[k] {
			if v == "" {
				v = "–"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Align = make([]string, len(t.Header))
	for i := range t.Align {
		t.Align[i] = "l"
	}
	return t
}

// ComparisonTitle is the title of Compare's first section.
const ComparisonTitle = "Summary, side by side"

// Compare renders several results on one page: the headline figures side by side (one
// column per result, labelled by names), then each result's page in turn.
func Compare(rs []*Result, names []string) report.Page {
	if len(rs) == 1 {
		return rs[0].Page()
	}
	p := report.Page{Title: fmt.Sprintf("gpuwatt report: %d energy datasheets side by side", len(rs)), Subtitle: strings.Join(names, " · ")}
	names = ShortNames(names)
	var notes []string
	for i, r := range rs {
		if r.Sim {
			notes = append(notes, fmt.Sprintf("%s was measured on the sim device: its figures are simulated.", names[i]))
		}
		if r.Incomplete {
			notes = append(notes, fmt.Sprintf("%s is INCOMPLETE: %s.", names[i], r.Reason))
		}
	}
	p.Notice = strings.Join(notes, " ")
	var verdicts []string
	var plots []report.Plot
	for i, r := range rs {
		verdicts = append(verdicts, names[i]+": "+r.cardLine()+" "+strings.Join(r.Verdict(), " "))
		for _, pl := range summaryPlot(r) {
			pl.Title = names[i] + ": " + pl.Title
			plots = append(plots, pl)
		}
	}
	p.Sections = append(p.Sections, report.Section{Title: ComparisonTitle, Text: strings.Join(verdicts, "\n\n"), Table: figureTable(rs, names), Plots: plots})
	p.Sections = append(p.Sections, report.Section{Title: TitleHeadline, Fold: "Every figure, side by side", Table: headlineTable(rs, names)})
	rep := Reproducibility(rs, names).Section()
	rep.Fold = "Reproducibility: each figure over the runs"
	p.Sections = append(p.Sections, rep)
	for i, r := range rs {
		for _, s := range r.Page().Sections {
			if s.Title == TitleRefs {
				continue
			}
			s.Title = plainTitle(s.Title)
			switch {
			case s.Fold != "":
				s.Fold = names[i] + ": " + s.Fold
			case s.Title == TitleWarnings:
				s.Fold = names[i] + ": " + s.Title
			default:
				s.Fold = names[i] + ": " + s.Title
				if r.Sim || r.Incomplete {
					s.Text = r.Page().Notice + "\n\n" + s.Text
				}
			}
			p.Sections = append(p.Sections, s)
		}
	}
	p.Sections = append(p.Sections, referencesSection())
	return p
}

// ShortNames labels directories by the fewest trailing path elements that tell them apart
// ("a/full/ch", "b/quick/ch" → "full/ch", "quick/ch"); the full paths where that fails.
func ShortNames(dirs []string) []string {
	parts := make([][]string, len(dirs))
	most := 0
	for i, d := range dirs {
		parts[i] = strings.Split(strings.Trim(filepath.ToSlash(filepath.Clean(d)), "/"), "/")
		most = max(most, len(parts[i]))
	}
	for k := 1; k <= most; k++ {
		out := make([]string, len(dirs))
		seen := map[string]bool{}
		unique := true
		for i, p := range parts {
			out[i] = strings.Join(p[max(0, len(p)-k):], "/")
			unique = unique && !seen[out[i]]
			seen[out[i]] = true
		}
		if unique {
			return out
		}
	}
	return dirs
}
