package loadlevel

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// DefaultLevels are the SERT CPU levels: 100, 75, 50 and 25 % (active idle follows).
var DefaultLevels = []float64{1, 0.75, 0.5, 0.25}

// SSJLevels are SPECpower_ssj2008's: 100 % down to 10 % in steps of 10.
var SSJLevels = []float64{1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1}

// ParseLevels parses "ssj", "default" or a list of percentages ("100,60,20").
func ParseLevels(s string) ([]float64, error) {
	switch s {
	case "", "default":
		return DefaultLevels, nil
	case "ssj":
		return SSJLevels, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f), "%"), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return nil, fmt.Errorf("load level %q: want a percentage in (0, 100], a list of them, or ssj", f)
		}
		out = append(out, v/100)
	}
	return out, nil
}

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// LevelCV is the run-to-run variation of one level over the runs of a configuration.
type LevelCV struct {
	Label      string  `json:"label"`
	TargetLoad float64 `json:"target_load"`
	ActiveIdle bool    `json:"active_idle"`
	TxCV       float64 `json:"tx_per_s_cv"`
	PowerCV    float64 `json:"power_w_cv"`
}

// ConfigResult is every run of one dataset size and context count.
type ConfigResult struct {
	Size     int          `json:"size"`
	Contexts int          `json:"contexts"`
	Runs     []*RunResult `json:"runs"`
	CV       []LevelCV    `json:"cv,omitempty"`
}

// Result is a whole `gpuwatt loadlevel` invocation. Levels and OverallScore repeat the
// first run of the first configuration.
type Result struct {
	// Schema is ReportSchema (absent in files whose intervals are in nanoseconds).
	Schema       int       `json:"schema"`
	Workload     string    `json:"workload"`
	Variant      string    `json:"variant"`
	Device       string    `json:"device,omitempty"`
	Simulated    bool      `json:"simulated"` // on the sim device: power from the twin
	Intervals    Intervals `json:"intervals"`
	Levels       []Level   `json:"levels"`
	OverallScore float64   `json:"overall_score,omitempty"`
	// ScoreUnavailable says why OverallScore is absent (a level's power is unavailable).
	ScoreUnavailable string          `json:"overall_score_unavailable,omitempty"`
	Valid            bool            `json:"valid"`
	Configs          []*ConfigResult `json:"configs"`
	// Status: the sweep's warnings (each run's are in the run), and whether it was cut short.
	status.Status
}

// Sweep describes the configurations to run.
type Sweep struct {
	// Workload names the workload in the report: fft (default) or gemm.
	Workload        string
	Sizes, Contexts []int
	Runs            int
	// Variant names the workload's variant in the report: cpu (default), gpu, cufft.
	Variant string
	// Device describes where the variant runs (a GPU's name), for the report.
	Device string
	// Base is copied for each run; Tx, Users and Seed are set per run.
	Base Config
	// NewTx makes the transaction for a dataset size and number of users.
	NewTx func(size, users int) (Transaction, error)
}

// RunSweep runs every size × contexts configuration Runs times.
func RunSweep(ctx context.Context, s Sweep) (*Result, error) {
	rep := &Result{Schema: ReportSchema, Variant: s.Variant, Device: s.Device, Intervals: s.Base.Intervals, Valid: true, Status: status.Status{Warnings: []status.Warning{}}}
	if rep.Variant == "" {
		rep.Variant = "cpu"
	}
	for _, size := range s.Sizes {
		for _, n := range s.Contexts {
			cr := &ConfigResult{Size: size, Contexts: n}
			rep.Configs = append(rep.Configs, cr)
			for r := range max(s.Runs, 1) {
				tx, err := s.NewTx(size, n)
				if err != nil {
					return nil, err
				}
				cfg := s.Base
				cfg.Tx, cfg.Users = tx, n
				if st, ok := tx.(*SimTx); ok && st.Load != nil {
					cfg.Busy = simBusy{st.Load}
				}
				cfg.Seed = s.Base.Seed + uint64(r)*1000003 + uint64(size)*31 + uint64(n)
				res, err := Measure(ctx, cfg)
				if res != nil {
					cr.Runs = append(cr.Runs, res)
					rep.Valid = rep.Valid && res.Valid
					if rep.Workload == "" {
						rep.Workload = s.Workload
						if rep.Workload == "" {
							rep.Workload = WorkloadFFT
						}
						rep.Levels, rep.OverallScore, rep.ScoreUnavailable = res.Levels, res.OverallScore, res.ScoreUnavailable
					}
				}
				if err != nil {
					if ctx.Err() != nil {
						rep.MarkIncomplete(status.Interrupted(ctx))
					} else {
						rep.MarkIncomplete(err.Error())
					}
					rep.Valid = false
					cr.CV = cvs(cr.Runs)
					return rep, err
				}
			}
			cr.CV = cvs(cr.Runs)
		}
	}
	return rep, nil
}

// CV is the coefficient of variation (sample standard deviation over mean).
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if m == 0 {
		return 0
	}
	return math.Sqrt(v/float64(len(xs)-1)) / math.Abs(m)
}

func cvs(runs []*RunResult) []LevelCV {
	if len(runs) < 2 {
		return nil
	}
	var out []LevelCV
	for i, l := range runs[0].Levels {
		var tx, pw []float64
		for _, r := range runs {
			if i < len(r.Levels) {
				tx, pw = append(tx, r.Levels[i].TxPerS), append(pw, r.Levels[i].PowerW)
			}
		}
		out = append(out, LevelCV{Label: l.Label, TargetLoad: l.TargetLoad, ActiveIdle: l.ActiveIdle, TxCV: CV(tx), PowerCV: CV(pw)})
	}
	return out
}

func levelName(l Level) string {
	if l.ActiveIdle {
		return "active idle"
	}
	return fmt.Sprintf("%g %%", 100*l.TargetLoad)
}

// Score is a run's overall score for people: "1.644 tx/J", or "unavailable (why)".
func Score(r *RunResult) string {
	if r.ScoreUnavailable != "" || r.OverallScore <= 0 {
		why := r.ScoreUnavailable
		if why == "" {
			why = "no level drew power"
		}
		return "unavailable (" + why + ")"
	}
	return f3(r.OverallScore) + " tx/J"
}

func f3(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// Page renders the report as one HTML page.
func (rep *Result) Page(subtitle string) report.Page {
	p := report.Page{Title: "gpuwatt loadlevel: energy efficiency under transactional load", Subtitle: subtitle}
	if !rep.Valid {
		p.Notice = "INVALID run: see the reasons below."
	}
	var loadPlot = report.Plot{Title: "Power over load level", XLabel: "target load (%)", YLabel: "power (W)"}
	var effPlot = report.Plot{Title: "Efficiency over load level", XLabel: "target load (%)", YLabel: "transactions per joule (tx/J)"}
	for _, cr := range rep.Configs {
		for ri, r := range cr.Runs {
			sec := report.Section{Title: fmt.Sprintf("%s, %d contexts, run %d", r.Workload, cr.Contexts, ri+1)}
			sec.Text = fmt.Sprintf("Workload %s%s. Clock: %s. Power (power_w, tx/J) from: %s. Calibration rates %s tx/s; the 100 %% rate is the mean of all but the first: %s tx/s. Overall score %s. Verified %d results (%d picks dropped).",
				r.Workload, onDevice(rep.Device), r.Clock, orNone(r.PowerSource), joinF(r.CalibrationRates), f3(r.CalibratedRate), Score(r), r.Verified, r.VerifyDropped)
			others := otherSources(r)
			header := []string{"level", "target load", "actual load", "tx/s", "power (W)", "95 % interval (W)", "tx/J", "GPU (°C)", "valid"}
			host := r.HostPowerSource != ""
			if host {
				header = append(header, "GPU (W)", "host (W)", "GPU + host (W)")
			}
			switch {
			case host:
				sec.Text += fmt.Sprintf(" Host power from %s.", r.HostPowerSource)
			case r.HostPowerUnavailable != "":
				sec.Text += fmt.Sprintf(" Host power cannot be read: %s.", r.HostPowerUnavailable)
			}
			if r.ScoreUnavailable == "" && len(r.Levels) > 1 {
				if r.LevelsResolved {
					sec.Text += fmt.Sprintf(" The levels are resolved: power rises with load, adjacent levels more than %d times their combined uncertainty apart.", ResolveFactor)
				} else {
					sec.Text += " The workload does NOT resolve the levels: " + r.ResolveNote + "."
				}
			}
			for _, o := range others {
				header = append(header, o+" (W)")
			}
			if len(others) > 0 {
				sec.Text += " Further meters are shown in their own columns; power_w is the first source's."
			}
			t := &report.Table{Header: header}
			var xs, ys, ex, ey []float64
			for _, l := range r.Levels {
				tl, al := "-", "-"
				switch {
				case !l.ActiveIdle:
					tl, al = fmt.Sprintf("%.1f %%", 100*l.TargetLoad), fmt.Sprintf("%.2f %%", 100*l.ActualLoad)
					if l.PowerUnavailable == "" {
						xs, ys = append(xs, 100*l.TargetLoad), append(ys, l.PowerW)
						ex, ey = append(ex, 100*l.TargetLoad), append(ey, l.TxPerJ)
					}
				case l.PowerUnavailable == "":
					xs, ys = append(xs, 0), append(ys, l.PowerW)
				}
				pw, tj := f3(l.PowerW), f3(l.TxPerJ)
				if l.PowerUnavailable != "" {
					pw, tj = "unavailable", "unavailable"
				}
				if l.ActiveIdle {
					tj = "-"
				}
				ci, temp := "-", "-"
				if l.PowerHighW > l.PowerLowW && l.PowerLowW > 0 {
					ci = fmt.Sprintf("%s to %s", f3(l.PowerLowW), f3(l.PowerHighW))
				}
				if l.TemperatureC != nil {
					temp = fmt.Sprintf("%.0f to %.0f", l.TemperatureC.Min, l.TemperatureC.Max)
				}
				row := []string{levelName(l), tl, al, f3(l.TxPerS), pw, ci, tj, temp, strconv.FormatBool(l.Valid)}
				if host {
					row = append(row, wDash(l.GPUPowerW), wDash(l.HostPowerW), wDash(l.TotalPowerW))
				}
				for _, o := range others {
					if v, ok := l.Power[o]; ok {
						row = append(row, f3(v))
					} else {
						row = append(row, "-")
					}
				}
				t.Rows = append(t.Rows, row)
			}
			if len(r.Levels) > 0 {
				for _, src := range sortedKeys(r.Levels[0].PowerDetail) {
					sec.Text += fmt.Sprintf(" %s at %s: %s.", src, levelName(r.Levels[0]), r.Levels[0].PowerDetail[src])
				}
			}
			sec.Table = t
			sec.Warnings = append(append([]string(nil), r.Invalid...), status.Group(r.Warnings, 0)...)
			p.Sections = append(p.Sections, sec)
			if ri == 0 {
				name := fmt.Sprintf("%s, %d ctx", r.Workload, cr.Contexts)
				loadPlot.Series = append(loadPlot.Series, report.Series{Name: name, X: xs, Y: ys, Style: report.Line})
				effPlot.Series = append(effPlot.Series, report.Series{Name: name, X: ex, Y: ey, Style: report.Line})
			}
		}
		if len(cr.CV) > 0 {
			t := &report.Table{Caption: "run-to-run coefficient of variation", Header: []string{"level", "tx/s CV", "power CV"}}
			for _, c := range cr.CV {
				t.Rows = append(t.Rows, []string{levelName(Level{TargetLoad: c.TargetLoad, ActiveIdle: c.ActiveIdle}), fmt.Sprintf("%.2f %%", 100*c.TxCV), fmt.Sprintf("%.2f %%", 100*c.PowerCV)})
			}
			p.Sections = append(p.Sections, report.Section{Title: fmt.Sprintf("Reproducibility: %s, %d contexts, %d runs", cr.Runs[0].Workload, cr.Contexts, len(cr.Runs)), Table: t})
		}
	}
	plots := []report.Plot{loadPlot, effPlot}
	if sz := rep.sizePlot(); sz != nil {
		plots = append(plots, *sz)
	}
	p.Sections = append(p.Sections, report.Section{Title: "Power and efficiency over load", Text: "Power (active idle drawn at 0 % load) and transactions per joule against the target load, one line per workload and size (the first run of each).", Plots: plots})
	return p
}

// sizePlot is power and throughput at the 100 % level over the dataset size, normalised to
// the smallest size (as in the paper's Figs 10-12), one pair of series per context count.
func (rep *Result) sizePlot() *report.Plot {
	byCtx := map[int][]*ConfigResult{}
	for _, cr := range rep.Configs {
		if len(cr.Runs) > 0 && len(cr.Runs[0].Levels) > 0 {
			byCtx[cr.Contexts] = append(byCtx[cr.Contexts], cr)
		}
	}
	var ctxs []int
	for c, v := range byCtx {
		if len(v) > 1 {
			ctxs = append(ctxs, c)
		}
	}
	if len(ctxs) == 0 {
		return nil
	}
	sort.Ints(ctxs)
	pl := &report.Plot{Title: "Power and throughput over dataset size (100 % level, normalised to the smallest size)", XLabel: "size (FFT points, or GEMM width)", YLabel: "relative to smallest size (%)", XLog: true}
	for _, c := range ctxs {
		crs := byCtx[c]
		sort.Slice(crs, func(i, j int) bool { return crs[i].Size < crs[j].Size })
		b := crs[0].Runs[0].Levels[0]
		var xs, tp, pw []float64
		for _, cr := range crs {
			l := cr.Runs[0].Levels[0]
			xs = append(xs, float64(cr.Size))
			tp = append(tp, 100*l.TxPerS/b.TxPerS)
			pw = append(pw, 100*l.PowerW/nz(b.PowerW))
		}
		pl.Series = append(pl.Series, report.Series{Name: fmt.Sprintf("throughput, %d ctx", c), X: xs, Y: tp}, report.Series{Name: fmt.Sprintf("power, %d ctx", c), X: xs, Y: pw, Dash: true})
	}
	return pl
}

func wDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return f3(v)
}

func nz(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// otherSources are the meters of a run after the first.
func otherSources(r *RunResult) []string {
	if len(r.PowerSources) < 2 {
		return nil
	}
	return r.PowerSources[1:]
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func onDevice(d string) string {
	if d == "" {
		return ""
	}
	return " on " + d
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func joinF(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, f3(x))
	}
	return strings.Join(s, ", ")
}
