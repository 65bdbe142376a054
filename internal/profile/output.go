package profile

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// CSVHeader is the header of profile.csv: one row per bin of the deconvolved profile
// (kind "profile"), per bin of the raw profile ("raw") and per reading ("point", at the
// middle of its window: t_s = t_end_s).
var CSVHeader = []string{"kind", "t_s", "t_end_s", "n", "power_w", "low_w", "high_w", "run"}

// WriteCSV writes profile.csv.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 9, 64) }
	rows := [][]string{CSVHeader}
	for _, kind := range []struct {
		name string
		bins []Bin
	}{{"profile", r.Profile}, {"raw", r.Raw}} {
		for _, b := range kind.bins {
			rows = append(rows, []string{kind.name, f(b.StartS), f(b.EndS), strconv.Itoa(b.N), f(b.PowerW), f(b.LowW), f(b.HighW), ""})
		}
	}
	for _, p := range r.Points {
		rows = append(rows, []string{"point", f(p.MidS), f(p.MidS), "1", f(p.PowerW), "", "", strconv.Itoa(p.Run)})
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// WriteText writes a short summary.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s profile of %s (%.3g ms) on %s: %d runs, %d readings\n", r.Method, r.Kernel, r.KernelS*1e3, r.Channel, r.Runs, len(r.Points))
	if r.ChannelWhy != "" {
		fmt.Fprintf(&b, "channel: %s\n", r.ChannelWhy)
	}
	fmt.Fprintf(&b, "sensor model: %s; update period %.4g ms, window %.3g ms, lag tau %.3g ms, delay %.3g ms (coverage %.0f %%)\n", r.Model, r.PeriodS*1e3, r.WindowS*1e3, r.TauS*1e3, r.DelayS*1e3, 100*r.Coverage)
	if g := r.Grid; g != nil {
		fmt.Fprintf(&b, "sample grid: %.4g ms, %.0f %% of the driver's stamps on it (coherence %.2f); %d readings moved onto it\n", g.PeriodS*1e3, 100*g.OnGrid, g.R, g.Snapped)
	}
	if len(r.Profile) > 0 {
		fmt.Fprintf(&b, "effective resolution %.3g ms: %s\n", r.ResolutionS*1e3, r.ResolutionWhy)
		fmt.Fprintf(&b, "baseline %.1f W; energy per run %.4g J (95 %%: %.4g .. %.4g J; fit ±%.2g J, runs ±%.2g J, sensor model ±%.2g J, bins ±%.2g J, regularisation %.2g J), %.4g J above the baseline\n", r.BaselineW, r.EnergyJ, r.LowJ, r.HighJ, r.EnergyStatHalfWidthJ, r.EnergyJackknifeHalfWidthJ, r.EnergyModelHalfWidthJ, r.EnergyBinsJ, r.EnergyRegularisationJ, r.EnergyAboveBaselineJ)
		if r.EnergyModelHalfWidthJ == 0 && r.EnergyModelNote != "" {
			fmt.Fprintf(&b, "  (sensor model: %s)\n", r.EnergyModelNote)
		}
		if r.LongRun != nil {
			fmt.Fprintf(&b, "long back-to-back runs (%d launches): %.4g J per launch", r.LongRun.Launches, r.LongRun.EnergyPerLaunchJ)
			if r.EnergyDiff != nil {
				fmt.Fprintf(&b, "; the profile's energy differs by %+.2f %%", 100**r.EnergyDiff)
			}
			b.WriteString("\n")
		}
		for _, l := range phaseLines(r) {
			fmt.Fprintf(&b, "%s\n", l)
		}
		fmt.Fprintf(&b, "%10s %10s %10s %21s\n", "from (ms)", "to (ms)", "power (W)", "95 % band (W)")
		for _, bin := range r.Profile {
			fmt.Fprintf(&b, "%10.3f %10.3f %10.1f %10.1f .. %7.1f\n", bin.StartS*1e3, bin.EndS*1e3, bin.PowerW, bin.LowW, bin.HighW)
		}
	}
	if r.Incomplete {
		fmt.Fprintf(&b, "INCOMPLETE: %s\n", r.Reason)
	}
	for _, wn := range status.Group(r.Warnings, 0) {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Page is report.html: the cloud with the raw binned profile (the paper's Fig. 3, or Fig.
// 5 for the online variant) and the deconvolved profile with its 95 % band.
func Page(r *Result) report.Page {
	p := report.Page{
		Title:    fmt.Sprintf("gpuwatt profile: %s on %s", r.Kernel, r.Channel),
		Subtitle: fmt.Sprintf("%s, %s method, %d runs", r.Device, r.Method, r.Runs),
	}
	if r.Simulated {
		p.Notice = "Measured on the sim device: every figure here is simulated, not read from a GPU."
	}
	tab := &report.Table{Header: []string{"quantity", "value"}}
	add := func(k, v string) { tab.Rows = append(tab.Rows, []string{k, v}) }
	add("kernel run time", fmt.Sprintf("%.4g ms", r.KernelS*1e3))
	if r.ChannelWhy != "" {
		add("channel", r.ChannelWhy)
	}
	add("sensor", fmt.Sprintf("%s: update period %.4g ms, window %.3g ms, lag tau %.3g ms, delay %.3g ms (coverage %.0f %%)", r.Model, r.PeriodS*1e3, r.WindowS*1e3, r.TauS*1e3, r.DelayS*1e3, 100*r.Coverage))
	if g := r.Grid; g != nil {
		add("sample grid", fmt.Sprintf("%.4g ms, %.0f %% of the stamps on it, %d readings moved onto it", g.PeriodS*1e3, 100*g.OnGrid, g.Snapped))
	}
	add("readings", fmt.Sprintf("%d (%d updates not tied to a run)", len(r.Points), r.Dropped))
	if len(r.Profile) > 0 {
		add("resolution (measured on a step)", fmt.Sprintf("%.3g ms (bins of %.3g ms; placed within %.3g ms)", r.ResolutionS*1e3, r.BinS*1e3, r.PlacementS*1e3))
		add("baseline", fmt.Sprintf("%.1f W", r.BaselineW))
		add("energy per run (profile)", fmt.Sprintf("%.4g J (95 %%: %.4g .. %.4g J; with the board's ±5 %% gain error %.4g .. %.4g J)", r.EnergyJ, r.LowJ, r.HighJ, r.AbsoluteLowJ, r.AbsoluteHighJ))
		add("energy above the baseline", fmt.Sprintf("%.4g J", r.EnergyAboveBaselineJ))
	}
	if r.LongRun != nil {
		add("energy per launch (long runs)", fmt.Sprintf("%.4g J over %d back-to-back launches (%s)", r.LongRun.EnergyPerLaunchJ, r.LongRun.Launches, r.LongRun.Source))
		if r.EnergyDiff != nil {
			add("profile vs long runs", fmt.Sprintf("%+.2f %%", 100**r.EnergyDiff))
		}
	}
	text := "Each point is one sensor update, placed at the middle of its averaging window relative to the kernel's start; the step line is the cloud binned (mean and 95 % band): the kernel smeared by the window. The deconvolved profile undoes the sensor's model by regularised least squares (Tikhonov, strength by generalised cross-validation); its band holds the fit's statistics and the sensor model's intervals."
	if r.ResolutionWhy != "" {
		text += "\n\nResolution: " + r.ResolutionWhy + "."
	}
	if pl := phaseLines(r); len(pl) > 0 {
		text += "\n\nTwo-phase kernel: " + strings.Join(pl, "; ") + "."
	}
	p.Sections = append(p.Sections, report.Section{Title: "Summary", Text: text, Table: tab, Warnings: warnLines(r)})

	var px, py []float64
	for _, pt := range r.Points {
		px, py = append(px, pt.MidS*1e3), append(py, pt.PowerW)
	}
	ms := func(bins []Bin) (x, y, lo, hi []float64) {
		for _, b := range bins {
			x, y, lo, hi = append(x, b.StartS*1e3), append(y, b.PowerW), append(lo, b.LowW), append(hi, b.HighW)
		}
		if len(bins) > 0 {
			last := bins[len(bins)-1]
			x, y, lo, hi = append(x, last.EndS*1e3), append(y, last.PowerW), append(lo, last.LowW), append(hi, last.HighW)
		}
		return
	}
	rx, ry, rlo, rhi := ms(r.Raw)
	fig := "Fig. 3"
	if r.Method == "online" {
		fig = "Fig. 5"
	}
	kernelBand := []report.Band{{X0: 0, X1: r.KernelS * 1e3, Label: "kernel"}}
	cloud := report.Plot{
		Title: fmt.Sprintf("Readings against the kernel's progress (as the paper's %s)", fig), XLabel: "time since the kernel's start (ms)", YLabel: "power (W)",
		Series: []report.Series{
			{Name: "readings (window middle)", X: px, Y: py, Style: report.Points},
			{Name: "binned, 95 % band", X: rx, Y: ry, YLow: rlo, YHigh: rhi, Style: report.Step},
		},
		Bands: kernelBand,
	}
	dx, dy, dlo, dhi := ms(r.Profile)
	prof := report.Plot{
		Title: "Deconvolved power profile", XLabel: "time since the kernel's start (ms)", YLabel: "power (W)",
		Series: []report.Series{{Name: "profile, 95 % band", X: dx, Y: dy, YLow: dlo, YHigh: dhi, Style: report.Step}},
		Bands:  kernelBand,
	}
	if len(r.Profile) > 0 {
		prof.HLines = []report.HLine{{Y: r.BaselineW, Label: fmt.Sprintf("baseline %.0f W", r.BaselineW), Color: "grey"}}
	}
	for _, ph := range r.Phases {
		prof.HLines = append(prof.HLines, report.HLine{Y: ph.SteadyW, Label: fmt.Sprintf("%s steady %.0f W", ph.Name, ph.SteadyW)})
	}
	if t := r.Transition; t != nil {
		prof.VLines = append(prof.VLines, report.VLine{X: t.AtS * 1e3, Label: "phase boundary"})
	}
	p.Sections = append(p.Sections, report.Section{Title: "Profile", Plots: []report.Plot{cloud, prof}})
	return p
}

// phaseLines describe a two-phase kernel's phases against their steady powers, and the
// transition.
func phaseLines(r *Result) []string {
	var out []string
	for _, p := range r.Phases {
		l := fmt.Sprintf("phase %s [%.3f, %.3f) ms: steady %.1f W (%s); ", p.Name, p.StartS*1e3, p.EndS*1e3, p.SteadyW, p.SteadySource)
		switch {
		case p.Bins == 0:
			l += fmt.Sprintf("no bin clear of its edges by half the resolution and the placement (%.3g ms): not resolved", (r.ResolutionS/2+r.PlacementS)*1e3)
		case p.Resolved:
			l += fmt.Sprintf("profile %.1f W ±%.1f W over %d bins (%+.1f %%): resolved", p.ProfileW, p.BandW, p.Bins, 100*p.Diff)
		default:
			l += fmt.Sprintf("profile %.1f W ±%.1f W over %d bins (%+.1f %%): more than %.0f %% off, not resolved", p.ProfileW, p.BandW, p.Bins, 100*p.Diff, 100*MaxPhaseDiff)
		}
		out = append(out, l)
	}
	if t := r.Transition; t != nil {
		within := "within"
		if !t.Within {
			within = "beyond"
		}
		out = append(out, fmt.Sprintf("transition at %.3f ms: shown at %.3f ms, 10-90 %% over %.3g ms (%s the resolution %.3g ms and placement %.3g ms stated for a step of its height)",
			t.AtS*1e3, t.MidS*1e3, t.WidthS*1e3, within, t.ResolutionS*1e3, t.PlacementS*1e3))
	}
	return out
}

// warnLines are the page's warnings: incomplete first, then the warnings grouped.
func warnLines(r *Result) []string {
	var out []string
	if r.Incomplete {
		out = append(out, "incomplete: "+r.Reason)
	}
	return append(out, status.Group(r.Warnings, 0)...)
}
