package measure

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/termtext"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// WriteText prints the summary in the spirit of `perf stat`.
func WriteText(w io.Writer, s *Summary) error {
	var b strings.Builder
	cmd := strings.Join(s.Command, " ")
	state := fmt.Sprintf("exit %d", s.ExitCode)
	if s.Signal != "" {
		state = fmt.Sprintf("killed by %s, exit %d", s.Signal, s.ExitCode)
	}
	if s.Incomplete {
		state = "INCOMPLETE: " + s.Reason
	}
	if s.Simulated {
		fmt.Fprintf(&b, "\n SIMULATED: every figure below is the sim device's (%s), not a measurement\n", s.Device)
		if s.SimLoad != "" {
			b.WriteString(termtext.Indent(s.SimLoad, " ", 1, termtext.Width))
		}
	}
	fmt.Fprintf(&b, "\n Power and energy for '%s' (%s)\n", cmd, state)
	fmt.Fprintf(&b, " device %s, poll %s, baseline %s before, recording %s in all\n", s.Device, pollText(s), units.FormatSeconds(s.BaselineS, 3), units.FormatSeconds(s.RecordingS, 3))
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "\n GPU %d  %s  %s\n\n", g.Index, g.Name, g.UUID)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		// The value is right-aligned in its column; the label follows it, left-aligned
		// (a cell not ended by a tab is not aligned): each label two spaces from its value.
		line := func(v, what string) { fmt.Fprintf(tw, "%s\t  %s\n", v, strings.TrimSuffix(what, "\t")) }
		line(fmtSec(s.DurationS), "duration\t")
		if g.EnergySource != "" {
			u := g.Uncertainty
			if g.HighJ > 0 {
				line(energy.FmtPM(g.EnergyJ, u.HalfWidthJ), "energy (95 %, this board), from "+g.EnergySource+"\t")
				line(units.Energy(u.AbsoluteLowJ).String()+" – "+units.Energy(u.AbsoluteHighJ).String(),
					fmt.Sprintf("with the board's ±%.0f %% gain error (absolute)\t", 100*u.GainErrorFraction))
			} else {
				line(units.Energy(g.EnergyJ).String(), "energy, from "+g.EnergySource+"\t")
			}
			line(units.Energy(g.EnergyAboveIdleJ).String(), fmt.Sprintf("above idle (%s %s)\t", idleName(g.IdleLevel), units.Power(g.IdlePowerW)))
			if g.HighJ > 0 && s.DurationS > 0 {
				line(units.Power(g.MeanPowerW).String()+" ± "+units.Power(u.HalfWidthJ/s.DurationS).String(), "mean power\t")
			} else {
				line(units.Power(g.MeanPowerW).String(), "mean power\t")
			}
		}
		if g.MaxPowerSource != "" {
			extra := ""
			if g.PowerLimitW > 0 {
				extra = fmt.Sprintf(", limit %s", units.Power(g.PowerLimitW))
			}
			line(units.Power(g.MaxPowerW).String(), fmt.Sprintf("max power (%s%s)\t", g.MaxPowerSource, extra))
		}
		if r := g.SMClockMHz; r != nil {
			mem := ""
			if m := g.MemClockMHz; m != nil {
				mem = fmt.Sprintf(" (memory %s MHz)", rangeText(m, "%.0f"))
			}
			line(rangeText(r, "%.0f")+" MHz", "SM clock"+mem+"\t")
		}
		if r := g.TemperatureC; r != nil {
			line(rangeText(r, "%.0f")+" °C", "temperature\t")
		}
		var th []string
		for _, r := range g.Throttle {
			th = append(th, fmt.Sprintf("%s %.0f %%", r.Reason, 100*r.Share))
		}
		if len(th) == 0 {
			th = []string{"none"}
			if g.ThrottleUnavailable != "" {
				th = []string{"unavailable (" + g.ThrottleUnavailable + ")"}
			}
		}
		line("", "clock events: "+strings.Join(th, ", ")+"\t")
		tw.Flush()

		if len(g.Channels) > 0 {
			fmt.Fprintf(&b, "\n")
			tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, " channel\tcorrected (95 %%)\traw\tabove idle\tidle\tmean\tmax\tsamples\tupdate\tpoll\t\n")
			for _, c := range g.Channels {
				maxs := "-"
				if c.MaxPowerW != 0 {
					maxs = units.Power(c.MaxPowerW).String()
				}
				corr := "-"
				if c.CorrectedEnergyJ != nil {
					corr = energy.FmtPM(*c.CorrectedEnergyJ, (*c.CorrectedEnergyHighJ-*c.CorrectedEnergyLowJ)/2)
				}
				fmt.Fprintf(tw, " %s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", c.Channel, corr,
					units.Energy(c.EnergyJ), units.Energy(c.EnergyAboveIdleJ), units.Power(c.IdlePowerW),
					units.Power(c.MeanPowerW), maxs, c.Samples, units.FormatSeconds(c.UpdatePeriodS, 3), pollCell(c.PollIntervalS, s.Poll.Mode))
			}
			tw.Flush()
			b.WriteString(termtext.Indent("corrected: the channel's sensor model inverted, ± its 95 % interval on the board's scale; raw: its readings integrated as recorded (above idle, mean: raw)", "   ", 3, termtext.Width))
		}
		if ws := status.Group(append(slices.Clone(s.Warnings), g.Warnings...), 0); len(ws) > 0 {
			fmt.Fprintf(&b, "\n   warnings:\n")
			for _, w := range ws {
				b.WriteString(termtext.Indent(w, "   ! ", 5, termtext.Width))
			}
		}
	}
	if t := s.Total; t != nil {
		fmt.Fprintf(&b, "\n All %d GPUs\n\n", t.GPUs)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		// The value is right-aligned in its column; the label follows it, left-aligned
		// (a cell not ended by a tab is not aligned): each label two spaces from its value.
		line := func(v, what string) { fmt.Fprintf(tw, "%s\t  %s\n", v, strings.TrimSuffix(what, "\t")) }
		what := "energy (95 %, the boards' intervals added)\t"
		if t.Missing != "" {
			what = "energy of the others (95 %, their intervals added; " + t.Missing + ")\t"
		}
		line(units.Energy(t.EnergyJ).String()+" ("+units.Energy(t.LowJ).String()+" – "+units.Energy(t.HighJ).String()+")", what)
		line(units.Energy(t.AbsoluteLowJ).String()+" – "+units.Energy(t.AbsoluteHighJ).String(), "with each board's gain error (absolute)\t")
		line(units.Energy(t.EnergyAboveIdleJ).String(), "above idle\t")
		line(units.Power(t.MeanPowerW).String(), "mean power\t")
		tw.Flush()
	}
	writeHost(&b, s.Host)
	if len(s.Sampler) > 1 || (len(s.Sampler) == 1 && s.Sampler[0].CPUUnknown == "") {
		fmt.Fprintf(&b, "\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "   sampler\tpower updates\tread (at least)\tlost (at most)\tsensor held\tCPU, of one core\t\n")
		note := ""
		for _, h := range s.Sampler {
			cpu := "unavailable"
			if h.CPUUnknown == notPerGPU {
				cpu, note = "-", h.CPUUnknown
			}
			if h.CPUUnknown == "" {
				cpu = fmt.Sprintf("%.2f %%", 100*h.CPUShare)
			}
			if h.Expected == 0 {
				fmt.Fprintf(tw, "   GPU %d\t-\t-\t-\t-\t%s\t\n", h.GPU, cpu)
				continue
			}
			fmt.Fprintf(tw, "   GPU %d\t%d\t%.2f %%\t%d\t%d\t%s\t\n", h.GPU, h.Expected, 100*h.SeenShare, h.LostMax, h.Held, cpu)
		}
		tw.Flush()
		if note != "" {
			b.WriteString(termtext.Indent("CPU per GPU: "+note, "   ", 3, termtext.Width))
		}
	}
	if s.Regions != nil {
		writeRegions(&b, s)
	}
	if len(s.Unavailable) > 0 {
		var u []string
		for _, m := range s.Unavailable {
			u = append(u, fmt.Sprintf("gpu%d/%s", m.GPU, m.Name))
		}
		b.WriteString("\n" + termtext.Indent("not recorded (unavailable on this device; reasons in trace.json): "+strings.Join(u, ", "), " ", 1, termtext.Width))
	}
	if s.SamplerCPUShare > 0 {
		fmt.Fprintf(&b, " sampler CPU (the whole process while recording): %.2f %% of one core\n", 100*s.SamplerCPUShare)
	}
	writeCounterCost(&b, s)
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func pollText(s *Summary) string {
	if s.Poll.Mode == "fixed" {
		return units.FormatSeconds(s.Poll.Interval, 3)
	}
	return s.Poll.Mode
}

func pollCell(iv float64, mode string) string {
	if mode == "max" {
		return "busy"
	}
	return units.FormatSeconds(iv, 3)
}

func fmtSec(sec float64) string { return fmt.Sprintf("%.3f s", sec) }

func rangeText(r *Range, f string) string {
	if r.Min == r.Max {
		return fmt.Sprintf(f, r.Min)
	}
	return fmt.Sprintf(f+" – "+f, r.Min, r.Max)
}

// idleName is the idle level's name for people ("idle at rest"), "idle" where not known.
func idleName(level string) string {
	if level == "" {
		return "idle"
	}
	return level
}

// writeRegions prints the marked regions: one row per region and GPU, nested regions
// indented under their parent.
func writeRegions(b *strings.Builder, s *Summary) {
	if len(s.Regions) == 0 {
		fmt.Fprintf(b, "\n regions: none (the command wrote no complete region to $GPUWATT_MARKS)\n")
		return
	}
	fmt.Fprintf(b, "\n regions (from $GPUWATT_MARKS; energy ± its 95 %% interval on the board's scale)\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "   region\tGPU\tstart\tduration\tenergy (95 %%)\tmean power\tfrom\t\n")
	for _, r := range s.Regions {
		name := strings.Repeat("  ", r.Depth) + fmt.Sprintf("%s #%d", r.Name, r.Instance)
		for _, g := range r.GPUs {
			e, p, from := "-", "-", "no figure"
			if !g.NoFigure {
				e = energy.FmtPM(g.EnergyJ, (g.HighJ-g.LowJ)/2)
				p = units.Power(g.MeanPowerW).String()
				from = string(g.Method)
			}
			for _, w := range g.Warnings {
				if w.Code == marks.CodeUnsynced {
					from += " !unsynchronised"
				}
			}
			fmt.Fprintf(tw, "   %s\t%d\t%.3f s\t%s\t%s\t%s\t%s\t\n", name, g.Index, r.StartS, units.FormatSeconds(r.DurationS, 3), e, p, from)
		}
		for _, h := range hostRows(r) {
			fmt.Fprintf(tw, "   %s\t%s\t%.3f s\t%s\t%s\t%s\t%s\t\n", name, h.what, r.StartS, units.FormatSeconds(r.DurationS, 3), h.energy, h.power, h.from)
		}
	}
	tw.Flush()
	if hasHost(s.Regions) {
		fmt.Fprintf(b, "   cpu: every CPU package, dram: their DRAM (RAPL, its own accuracy not included); node: the GPUs, CPU packages and DRAM\n")
	}
}

// hostRow is one of a region's host figures for people: the CPU packages together, their
// DRAM, the platform (psys), the node.
type hostRow struct {
	what, energy, value, low, high, power, from string
}

// hostRows are a region's host figures: each kind of RAPL domain summed, and the node's
// total (or why there is none).
func hostRows(r energy.MarkedRegion) []hostRow {
	h := r.Host
	if h == nil {
		return nil
	}
	var out []hostRow
	row := func(what string, iv energy.Interval, from string) {
		p := "-"
		if r.DurationS > 0 {
			p = units.Power(iv.EnergyJ / r.DurationS).String()
		}
		out = append(out, hostRow{what: what, energy: energy.FmtPM(iv.EnergyJ, iv.HalfWidthJ()), value: units.Energy(iv.EnergyJ).String(), low: units.Energy(iv.LowJ).String(),
			high: units.Energy(iv.HighJ).String(), power: p, from: from})
	}
	for _, k := range []struct{ what, kind string }{{"cpu", "package"}, {"dram", "dram"}, {"psys", "psys"}} {
		if iv, ok := h.KindTotal(k.kind); ok {
			row(k.what, iv, string(energy.MethodHostCounter))
		} else {
			for _, d := range h.Domains {
				if d.Kind == k.kind {
					out = append(out, hostRow{what: k.what, energy: "-", value: "no figure", power: "-", from: "no figure: " + d.Name})
					break
				}
			}
		}
	}
	if h.Node != nil {
		row("node", *h.Node, "sum")
	} else if h.NodeMissing != "" {
		out = append(out, hostRow{what: "node", energy: "-", value: "no figure", power: "-", from: "none: " + h.NodeMissing})
	}
	return out
}

func hasHost(rs []energy.MarkedRegion) bool {
	for _, r := range rs {
		if r.Host != nil {
			return true
		}
	}
	return false
}

// writeHost writes the host's RAPL domains and the node's total, or the one line saying why
// there are none.
func writeHost(b *strings.Builder, h *HostSummary) {
	if h == nil {
		return
	}
	if h.Unavailable != "" {
		fmt.Fprintf(b, "\n Host: %s\n", h.Unavailable)
		return
	}
	fmt.Fprintf(b, "\n Host (RAPL)\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, d := range h.Domains {
		if !d.OK() {
			fmt.Fprintf(tw, "no figure\t  %s\t\n", d.Name)
			continue
		}
		fmt.Fprintf(tw, "%s (%s – %s)\t  %s, %s mean\t\n", units.Energy(d.EnergyJ), units.Energy(d.LowJ), units.Energy(d.HighJ), d.Name, units.Power(d.MeanPowerW))
	}
	if n := h.Node; n != nil {
		fmt.Fprintf(tw, "%s (%s – %s)\t  node: the GPUs, CPU packages and DRAM\t\n", units.Energy(n.EnergyJ), units.Energy(n.LowJ), units.Energy(n.HighJ))
	} else if h.NodeMissing != "" {
		fmt.Fprintf(tw, "no node total\t  %s\t\n", h.NodeMissing)
	}
	tw.Flush()
	fmt.Fprintf(b, "   each domain's counter bracketed at both edges by its readings; RAPL's own accuracy is not included\n")
}

// writeCounterCost says, where --counter-every asked for a read interval, how often each
// GPU's energy counter was read and what its calls cost (the default's cap keeps them to
// 0.2 % of a core, so the line is left out then).
func writeCounterCost(b *strings.Builder, s *Summary) {
	if s.Poll.CounterEvery <= 0 {
		return
	}
	for _, h := range s.Sampler {
		if h.CounterReadEveryS <= 0 {
			continue
		}
		cost := ""
		if h.CounterCallS > 0 {
			cost = fmt.Sprintf(", %v a call: %.2f %% of one core", time.Duration(h.CounterCallS*1e9).Round(time.Microsecond), 100*h.CounterCPUShare)
		}
		fmt.Fprintf(b, " energy counter, GPU %d: read every %.3f s (--counter-every %s)%s\n", h.GPU, h.CounterReadEveryS, time.Duration(s.Poll.CounterEvery*1e9), cost)
	}
}
