package measure

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Page builds report.html: the summary, and every recorded channel over time with the
// command's start and end marked.
func Page(tr *trace.Trace, s *Summary) report.Page {
	m := tr.Meta
	p := report.Page{
		Title:    "gpuwatt measure: " + strings.Join(s.Command, " "),
		Subtitle: fmt.Sprintf("%s on %s, gpuwatt %s, driver %s, started %s", m.Device, m.Host, m.Version, m.DriverVersion, m.Start.Format("2006-01-02 15:04:05 MST")),
	}
	var notes []string
	if m.Simulated {
		notes = append(notes, "Measured on the sim device: every figure here is simulated, not read from a GPU.")
	}
	if s.Incomplete {
		notes = append(notes, "INCOMPLETE: "+s.Reason+". What was recorded is shown.")
	}
	p.Notice = strings.Join(notes, " ")
	marks := []report.VLine{{X: s.StartS, Label: "cmd start"}, {X: s.EndS, Label: "cmd end"}}
	band := []report.Band{{X0: s.StartS, X1: s.EndS, Label: "command"}}
	for _, g := range s.GPUs {
		sec := report.Section{Title: fmt.Sprintf("GPU %d: %s", g.Index, g.Name), Warnings: status.Group(append(slices.Clone(s.Warnings), g.Warnings...), 0)}
		ended := fmt.Sprintf("exited with %d", s.ExitCode)
		if s.Signal != "" {
			ended = "was killed by " + s.Signal
		}
		sec.Text = fmt.Sprintf("UUID %s. The command ran %.3f s and %s.", g.UUID, s.DurationS, ended)
		sec.Table = figuresTable(s, g)
		p.Sections = append(p.Sections, sec)
		sec = report.Section{Title: fmt.Sprintf("GPU %d: every channel", g.Index),
			Text: "corrected: the channel's sensor model inverted, ± its 95 % interval on the board's scale; raw: its readings integrated as recorded (above idle and mean power: raw)."}
		tab := &report.Table{
			Caption: "Energy during the command, by channel",
			Header:  []string{"channel", "corrected (± 95 %)", "raw", "above idle", "idle power", "mean power", "max power", "samples", "update period", "poll interval", "repeats"},
			Align:   []string{"l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"},
		}
		for _, c := range g.Channels {
			maxs := ""
			if c.MaxPowerW != 0 {
				maxs = units.Power(c.MaxPowerW).String()
			}
			corr := "–"
			if c.CorrectedEnergyJ != nil {
				corr = energy.FmtPM(*c.CorrectedEnergyJ, (*c.CorrectedEnergyHighJ-*c.CorrectedEnergyLowJ)/2)
			}
			tab.Rows = append(tab.Rows, []string{c.Channel, corr, units.Energy(c.EnergyJ).String(), units.Energy(c.EnergyAboveIdleJ).String(),
				units.Power(c.IdlePowerW).String(), units.Power(c.MeanPowerW).String(), maxs, fmt.Sprint(c.Samples),
				units.FormatSeconds(c.UpdatePeriodS, 3), pollCell(c.PollIntervalS, s.Poll.Mode), fmt.Sprint(c.Repeats)})
		}
		sec.Table = tab
		sec.Plots = gpuPlots(tr, g, marks, band)
		if pl, ok := seriesPlot(tr, g, s, marks, append(slices.Clone(band), regionBands(s)...)); ok {
			sec.Plots = append(sec.Plots, pl)
		}
		p.Sections = append(p.Sections, sec)
	}
	if s.Regions != nil {
		p.Sections = append(p.Sections, regionSection(s))
	}
	p.Sections = append(p.Sections, channelSection(m))
	return p
}

// regionBands are the top-level marked regions as bands on the corrected power plot
// (none where there are more than 20: the table lists them).
func regionBands(s *Summary) []report.Band {
	// Each region its own colour (the palette in turn), so that neighbours tell apart.
	var out []report.Band
	pal := report.Palette()
	for _, r := range s.Regions {
		if r.Depth == 0 {
			out = append(out, report.Band{X0: r.StartS, X1: r.EndS, Label: fmt.Sprintf("%s #%d", r.Name, r.Instance), Color: pal[len(out)%len(pal)]})
		}
	}
	if len(out) > 20 {
		return nil
	}
	return out
}

// regionSection lists the marked regions ($GPUWATT_MARKS) with their energies.
func regionSection(s *Summary) report.Section {
	tab := &report.Table{
		Caption: "Regions marked by the command ($GPUWATT_MARKS), each with its energy ± 95 % on the board's scale",
		Header:  []string{"region", "GPU", "start", "duration", "energy", "95 % interval", "mean power", "from", "timing", "warnings"},
		Align:   []string{"l", "r", "r", "r", "r", "r", "r", "l", "l", "l"},
	}
	for _, r := range s.Regions {
		name := strings.Repeat("· ", r.Depth) + fmt.Sprintf("%s #%d", r.Name, r.Instance)
		for _, g := range r.GPUs {
			var ws []string
			for _, w := range g.Warnings {
				ws = append(ws, w.Message)
			}
			if g.NoFigure {
				tab.Rows = append(tab.Rows, []string{name, fmt.Sprint(g.Index), fmt.Sprintf("%.3f s", r.StartS), units.FormatSeconds(r.DurationS, 3), "no figure", "", "", "", r.Timing, strings.Join(ws, " ")})
				continue
			}
			tab.Rows = append(tab.Rows, []string{name, fmt.Sprint(g.Index), fmt.Sprintf("%.3f s", r.StartS), units.FormatSeconds(r.DurationS, 3),
				units.Energy(g.EnergyJ).String(), units.Energy(g.LowJ).String() + " – " + units.Energy(g.HighJ).String(),
				units.Power(g.MeanPowerW).String(), g.Source, r.Timing, strings.Join(ws, " ")})
		}
		for _, h := range hostRows(r) {
			iv := ""
			if h.low != "" {
				iv = h.low + " – " + h.high
			}
			tab.Rows = append(tab.Rows, []string{name, h.what, fmt.Sprintf("%.3f s", r.StartS), units.FormatSeconds(r.DurationS, 3), h.value, iv, h.power, h.from, r.Timing, ""})
		}
	}
	text := "The command appended `begin NAME` / `end NAME` lines to the file $GPUWATT_MARKS named; each pair is a region (nested and repeated names allowed), its energy from the same estimator as the command's. Where the host's RAPL counters were read: cpu (every CPU package), dram (their DRAM), psys, each the counters bracketed at the region's edges (RAPL's own accuracy not included), and node (the GPUs, CPU packages and DRAM: bounds added) where every GPU of the machine was recorded. Timing: writer (the marker's own monotonic time), arrival (stamped when gpuwatt read the line, up to 2 ms late). docs/markers.md says how to mark a region so that it ends when its GPU work ends."
	if len(s.Regions) == 0 {
		text = "The command wrote no complete region to $GPUWATT_MARKS."
		tab = nil
	}
	return report.Section{Title: "Regions", Text: text, Table: tab}
}

// gpuPlots draws every channel of one GPU, grouped by quantity.
func gpuPlots(tr *trace.Trace, g GPUSummary, marks []report.VLine, band []report.Band) []report.Plot {
	groups := []struct {
		title, ylabel string
		q             trace.Quantity
		scale         float64
	}{
		{"Power", "power (W)", trace.QPower, 1},
		{"Energy counter", "energy since driver load (J)", trace.QEnergy, 1},
		{"Clocks", "clock (MHz)", trace.QFrequency, 1e-6},
		{"Temperature", "temperature (°C)", trace.QTemperature, 1},
		{"Utilisation", "utilisation (%)", trace.QUtilization, 1},
		{"Performance state", "P-state", trace.QState, 1},
		{"Clock-event reasons", "reason mask", trace.QReasons, 1},
	}
	var plots []report.Plot
	for _, gr := range groups {
		pl := report.Plot{Title: fmt.Sprintf("GPU %d: %s", g.Index, gr.title), XLabel: "time (s)", YLabel: gr.ylabel, VLines: marks, Bands: band,
			XMin: report.Float(0), XMax: report.Float(tr.Meta.Duration)}
		for _, ch := range tr.Meta.Channels {
			if ch.GPU != g.Index || ch.Quantity != gr.q {
				continue
			}
			ss := tr.Series(g.Index, ch.Name)
			if len(ss) == 0 {
				continue
			}
			x := make([]float64, len(ss))
			y := make([]float64, len(ss))
			for i, smp := range ss {
				x[i], y[i] = smp.T.Seconds(), smp.Value*gr.scale
			}
			style := report.Step
			if gr.q == trace.QEnergy {
				style = report.Line
			} else if end := tr.Meta.Duration; end > x[len(x)-1] {
				// A reading holds until the next one: draw the last until the recording ends.
				x, y = append(x, end), append(y, y[len(y)-1])
			}
			pl.Series = append(pl.Series, report.Series{Name: ch.Name, X: x, Y: y, Style: style, Dash: ch.Setting})
		}
		if gr.q == trace.QPower && g.PowerLimitW > 0 {
			pl.HLines = []report.HLine{{Y: g.PowerLimitW, Label: fmt.Sprintf("power limit %s", units.Power(g.PowerLimitW))}}
		}
		if len(pl.Series) > 0 {
			plots = append(plots, pl)
		}
	}
	return plots
}

// seriesPlot is the corrected power during the command (energy.PowerSeries: the best
// board channel with its sensor model undone, one bin per update period, each with the
// 95 % band of its energy), the curve `gpuwatt energy --series` writes.
func seriesPlot(tr *trace.Trace, g GPUSummary, s *Summary, marks []report.VLine, band []report.Band) (report.Plot, bool) {
	from, to := time.Duration(s.StartS*1e9), time.Duration(s.EndS*1e9)
	ser, err := energy.PowerSeries(tr, g.Index, from, to, 0, energy.Options{What: "the command"})
	if err != nil || len(ser.Points) == 0 {
		return report.Plot{}, false
	}
	var x, y, lo, hi []float64
	for _, p := range ser.Points {
		x, y, lo, hi = append(x, p.StartS), append(y, p.PowerW), append(lo, p.LowW), append(hi, p.HighW)
	}
	last := ser.Points[len(ser.Points)-1]
	x, y, lo, hi = append(x, last.EndS), append(y, last.PowerW), append(lo, last.LowW), append(hi, last.HighW)
	return report.Plot{
		Title:  fmt.Sprintf("GPU %d: corrected power during the command (%s through %s, bins of %s)", g.Index, ser.Channel, ser.Model, units.FormatSeconds(ser.StepS, 3)),
		XLabel: "time (s)", YLabel: "power (W)", VLines: marks, Bands: band,
		XMin: report.Float(0), XMax: report.Float(tr.Meta.Duration),
		Series: []report.Series{{Name: "corrected power, 95 % band", X: x, Y: y, YLow: lo, YHigh: hi, Style: report.Step}},
	}, true
}

// channelSection explains every channel: what it is, how it was polled, what failed.
func channelSection(m trace.Meta) report.Section {
	tab := &report.Table{
		Caption: "Channels: what each one measures and how the Sampler read it",
		Header:  []string{"gpu", "channel", "unit", "what it is", "polls", "new samples", "repeats", "errors"},
		Align:   []string{"r", "l", "l", "l", "r", "r", "r", "r"},
	}
	for _, c := range m.Channels {
		var st trace.ChannelStats
		if c.Stats != nil {
			st = *c.Stats
		}
		tab.Rows = append(tab.Rows, []string{fmt.Sprint(c.GPU), c.Name, c.Unit, c.Description, fmt.Sprint(st.Polls), fmt.Sprint(st.Samples), fmt.Sprint(st.Repeats), fmt.Sprint(st.Errors)})
	}
	var miss []string
	for _, u := range m.Unavailable {
		miss = append(miss, fmt.Sprintf("GPU %d %s: %s", u.GPU, u.Name, u.Reason))
	}
	text := "A repeat is a reading that only repeated the previous one (same value, same driver timestamp): it is counted, not stored."
	if len(miss) > 0 {
		text += " Not recorded: " + strings.Join(miss, "; ") + "."
	}
	return report.Section{Title: "Channels", Text: text, Table: tab}
}

// figuresTable is a GPU's figures as the terminal prints them: each energy and mean power
// with its 95 % interval, the absolute interval with the board's gain error.
func figuresTable(s *Summary, g GPUSummary) *report.Table {
	t := &report.Table{Header: []string{"figure", "value (± 95 %)"}, Align: []string{"l", "r"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("duration", fmtSec(s.DurationS)+" (timed on the host's clock)")
	if g.EnergySource != "" {
		u := g.Uncertainty
		if g.HighJ > 0 {
			add("energy (this board), from "+g.EnergySource, energy.FmtPM(g.EnergyJ, u.HalfWidthJ))
			add(fmt.Sprintf("energy with the board's ±%.0f %% gain error (absolute)", 100*u.GainErrorFraction),
				units.Energy(u.AbsoluteLowJ).String()+" – "+units.Energy(u.AbsoluteHighJ).String())
		} else {
			add("energy, from "+g.EnergySource, units.Energy(g.EnergyJ).String()+" (no interval: "+noInterval(g)+")")
		}
		add(fmt.Sprintf("above idle (%s %s)", idleName(g.IdleLevel), units.Power(g.IdlePowerW)), units.Energy(g.EnergyAboveIdleJ).String()+" (the idle level subtracted)")
		if g.HighJ > 0 && s.DurationS > 0 {
			add("mean power", units.Power(g.MeanPowerW).String()+" ± "+units.Power(u.HalfWidthJ/s.DurationS).String())
		} else {
			add("mean power", units.Power(g.MeanPowerW).String()+" (no interval: "+noInterval(g)+")")
		}
	}
	if g.MaxPowerSource != "" {
		add("max power ("+g.MaxPowerSource+")", units.Power(g.MaxPowerW).String()+" (the highest reading)")
	}
	if r := g.SMClockMHz; r != nil {
		add("SM clock", rangeText(r, "%.0f")+" MHz")
	}
	if r := g.TemperatureC; r != nil {
		add("temperature", rangeText(r, "%.0f")+" °C")
	}
	return t
}

// noInterval says why a GPU's energy has no interval.
func noInterval(g GPUSummary) string {
	if g.Uncertainty.Partial {
		return "a part of it is not known"
	}
	return "the source gives none"
}
