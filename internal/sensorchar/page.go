package sensorchar

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Page is report.html: the channels' table, each channel's step response and square-wave
// readings with the fitted model, and the anomaly tests.
func (r *Result) Page() report.Page {
	p := report.Page{Title: "gpuwatt sensor: " + r.GPUName, Subtitle: r.Device}
	if r.Simulated {
		p.Notice = "Measured on the sim device: the figures are simulated"
	}
	t := &report.Table{Header: []string{"channel", "model", "T (ms)", "jitter (ms)", "delay (ms)", "first move (ms)", "W (ms)", "tau (ms)", "coverage", "call (µs)", "vs counter"}}
	for _, c := range r.Channels {
		t.Rows = append(t.Rows, []string{c.Name, c.Kind, f3(c.PeriodS * 1e3), f3(c.PeriodJitterS * 1e3), f3(c.DelayS * 1e3), f3(c.FirstMoveS * 1e3),
			f3(c.WindowS * 1e3), f3(c.TauS * 1e3), fmt.Sprintf("%.0f %%", 100*c.Coverage), f3(c.CallLatencyUS), f3(c.RatioToCounter)})
	}
	p.Sections = append(p.Sections, report.Section{Title: "Channels", Table: t, Warnings: status.Group(r.AllChannelWarnings(), len(r.Channels)),
		Text: "Each channel's model is the best least-squares fit, boxcar (window W, delay) or first-order lag (tau, delay), to its readings under the known schedule of the load: a step and square waves of periods T/2 and T/4 at several phases."})
	rec := r.rec
	s0 := rec.step.start.Seconds()
	sch := newSchedule(append([][2]float64(nil), rec.on...))
	for _, c := range r.Channels {
		if len(c.ts) == 0 || c.Kind == "none" {
			continue
		}
		var xs, ys, mx []float64
		for i, t := range c.ts {
			if t <= rec.step.end.Seconds()+0.5 {
				xs, ys = append(xs, t-s0), append(ys, c.ys[i])
			}
		}
		for t := s0 - 0.5; t <= rec.step.end.Seconds()+0.5; t += 0.002 {
			mx = append(mx, t)
		}
		my := sch.predict(c.fit, mx)
		for i := range mx {
			mx[i] -= s0
		}
		step := report.Plot{Title: c.Name + ": step response", XLabel: "time since the load started (s)", YLabel: "power (W)",
			Series: []report.Series{{Name: "readings", X: xs, Y: ys, Style: report.Points}, {Name: "model " + c.Model, X: mx, Y: my}}}
		plots := []report.Plot{step}
		if len(rec.waves) > 0 {
			w0, w1 := rec.waves[0].start.Seconds(), rec.waves[len(rec.waves)-1].end.Seconds()
			var wx, wy, wt []float64
			for i, t := range c.ts {
				if t >= w0 && t <= w1 {
					wx, wy, wt = append(wx, t-w0), append(wy, c.ys[i]), append(wt, t)
				}
			}
			wp := sch.predict(c.fit, wt)
			plots = append(plots, report.Plot{Title: c.Name + ": square waves (T/2, T/4, several phases)", XLabel: "time since the first wave (s)", YLabel: "power (W)",
				Series: []report.Series{{Name: "readings", X: wx, Y: wy, Style: report.Points}, {Name: "model", X: wx, Y: wp, Style: report.Points}}})
		}
		p.Sections = append(p.Sections, report.Section{Title: c.Name, Text: c.Intervals(), Plots: plots})
	}
	if len(r.Anomalies) > 0 {
		p.Sections = append(p.Sections, report.Section{Title: "Anomaly tests (seed 003) on every power channel", Text: AnomalyIntro(), Table: AnomalyTable(r.Anomalies), Warnings: status.Group(r.AnomalyWarnings(), len(r.Anomalies))})
	}
	return p
}

// AnomalyIntro says what the anomaly tests are, for a page.
func AnomalyIntro() string {
	return "Seed 003's tests of a sensor's energy, on every power channel with its fitted model: a kernel run twice as long must take twice the energy (doubling, 2.00 ± 0.04); a run 1 s after another must take the same as the first (back-to-back, ± 2 %); and the energy above idle that a kernel leaves after it ends (the tail) shows what a trace cut at the kernel's end misses. Corrected is through the channel's model (correct), naive the plain integral of its readings, side by side."
}

// AnomalyTable is the anomaly tests of several channels as one table: for each channel
// its corrected and naive figures side by side, and the verdict on the corrected one.
func AnomalyTable(as []*Anomalies) *report.Table {
	pass := map[bool]string{true: "pass", false: "FAIL"}
	t := &report.Table{Header: []string{"channel", "doubling: corrected | naive", "2.00 ± 0.04", "back-to-back: corrected | naive", "± 2 %", "tail above idle: corrected | naive", "true"}}
	for _, a := range as {
		name := a.Channel
		if a.Reference {
			name += " (reference)"
		}
		tail := "–"
		if a.TailTrueJ != nil {
			tail = fmt.Sprintf("%.1f J", *a.TailTrueJ)
		}
		t.Rows = append(t.Rows, []string{name,
			fmt.Sprintf("%.3f× | %.3f×", a.DoublingCorrected, a.DoublingNaive), pass[a.DoublingPass],
			fmt.Sprintf("%+.2f %% | %+.2f %%", 100*a.BackToBackCorrected, 100*a.BackToBackNaive), pass[a.BackToBackPass],
			fmt.Sprintf("%.1f J in %.2f s | %.1f J in %.2f s", a.TailCorrectedJ, a.TailCorrectedS, a.TailNaiveJ, a.TailNaiveS), tail})
	}
	return t
}

// writeAnomalies prints the anomaly tests of every channel, corrected beside naive.
func writeAnomalies(w io.Writer, as []*Anomalies) {
	pass := map[bool]string{true: "pass", false: "FAIL"}
	fmt.Fprintf(w, "\n anomaly tests (seed 003), corrected | naive (active idle: each channel's own level before the tests, gpuwatt's CUDA context open):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, " channel\tdoubling (2.00 ± 0.04)\t\tback-to-back (± 2 %%)\t\ttail above idle after a kernel\t\n")
	for _, a := range as {
		name := a.Channel
		if a.Reference {
			name += " (ref)"
		}
		tail := fmt.Sprintf("%.1f J over %.2f s | %.1f J over %.2f s", a.TailCorrectedJ, a.TailCorrectedS, a.TailNaiveJ, a.TailNaiveS)
		if a.TailTrueJ != nil {
			tail += fmt.Sprintf("; true %.1f J", *a.TailTrueJ)
		}
		fmt.Fprintf(tw, " %s\t%.3f× | %.3f×\t%s\t%+.2f %% | %+.2f %%\t%s\t%s\t\n", name, a.DoublingCorrected, a.DoublingNaive, pass[a.DoublingPass],
			100*a.BackToBackCorrected, 100*a.BackToBackNaive, pass[a.BackToBackPass], tail)
	}
	tw.Flush()
}

// Intervals says each fitted parameter with its 95 % interval: "period 100 ms [99.9,
// 100.1], window 999.3 ms [998.9, 999.8], delay 0.6 ms [0, 1.1], noise 50 mW [37, 64]"
// ("" when none is known).
func (c *Channel) Intervals() string {
	m := c.model
	var parts []string
	add := func(name string, v float64, iv sensormodel.Interval, scale float64, unit string) {
		if !iv.Known() {
			return
		}
		f := "%s %.4g %s [%.4g, %.4g]"
		if name == "period" {
			f = "%s %.6g %s [%.6g, %.6g]"
		}
		parts = append(parts, fmt.Sprintf(f, name, v*scale, unit, iv.Low*scale, iv.High*scale))
	}
	add("period", m.Period.Seconds(), m.CI.Period, 1e3, "ms")
	add("window", m.Window.Seconds(), m.CI.Window, 1e3, "ms")
	add("tau", m.Tau.Seconds(), m.CI.Tau, 1e3, "ms")
	add("delay", m.Delay.Seconds(), m.CI.Delay, 1e3, "ms")
	add("noise", float64(m.Noise), m.CI.Noise, 1, "W")
	if len(parts) == 0 {
		return ""
	}
	return "95 % intervals: " + strings.Join(parts, ", ")
}

func f3(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.4g", v)
}

// WriteText prints the anomaly tests.
func (a *Anomalies) WriteText(w io.Writer) {
	pass := map[bool]string{true: "pass", false: "FAIL"}
	fmt.Fprintf(w, "doubling: %.3f× corrected (%s, want 2.00 ± 0.04), %.3f× naive\n", a.DoublingCorrected, pass[a.DoublingPass], a.DoublingNaive)
	fmt.Fprintf(w, "back-to-back: second run %+.2f %% corrected (%s, want ± 2 %%), %+.2f %% naive\n", 100*a.BackToBackCorrected, pass[a.BackToBackPass], 100*a.BackToBackNaive)
	fmt.Fprintf(w, "tail after a kernel: %.1f J above active idle (%.1f W) over %.2f s corrected (%.1f %% of the kernel's %.1f J); naive %.1f J over %.2f s", a.TailCorrectedJ, a.IdleW, a.TailCorrectedS, 100*a.TailShareOfKernel, a.KernelCorrectedJ, a.TailNaiveJ, a.TailNaiveS)
	if a.TailTrueJ != nil {
		fmt.Fprintf(w, "; true %.1f J", *a.TailTrueJ)
	}
	fmt.Fprintln(w)
}

// WriteText prints the report for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n Sensors of GPU %d (%s), %s, %.1f s recorded\n\n", r.GPU, r.GPUName, r.Device, r.DurationS)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, " channel\tmodel\tT (ms)\tjitter\tfirst move\tcall (µs)\tvs counter\tresidual\t\n")
	for _, c := range r.Channels {
		res := math.Min(c.ResidualBoxcar, c.ResidualRC)
		if c.ResidualBoxRC != nil {
			res = math.Min(res, *c.ResidualBoxRC)
		}
		fmt.Fprintf(tw, " %s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f %%\t\n", c.Name, c.Model, f3(c.PeriodS*1e3), f3(c.PeriodJitterS*1e3), f3(c.FirstMoveS*1e3), f3(c.CallLatencyUS), f3(c.RatioToCounter), 100*res)
	}
	if r.Counter != nil {
		fmt.Fprintf(tw, " %s\tcounter\t%s\t%s\t\t%s\t%.1f W steady\t\n", r.Counter.Name, f3(r.Counter.PeriodS*1e3), f3(r.Counter.PeriodJitterS*1e3), f3(r.Counter.CallLatencyUS), r.Counter.SteadyW)
	}
	tw.Flush()
	if len(r.Anomalies) > 0 {
		writeAnomalies(&b, r.Anomalies)
		for _, w := range status.Group(r.AnomalyWarnings(), len(r.Anomalies)) {
			fmt.Fprintf(&b, "   ! %s\n", w)
		}
		b.WriteString("\n")
	}
	for _, c := range r.Channels {
		if g := c.Grid; g != nil {
			fmt.Fprintf(&b, " %s: samples on a %.4g ms grid (%.0f %% of the driver's stamps on it, the rest moved onto it: up to %.3g ms early or %.3g ms late); jitter = RMS distance of the stamps from the grid\n",
				c.Name, g.PeriodS*1e3, 100*g.OnGrid, g.EarlyS*1e3, (g.PeriodS-g.EarlyS)*1e3)
		}
		if c.Transients > 0 {
			fmt.Fprintf(&b, " %s: %d transient readings dropped (the next update came less than T/8 later)\n", c.Name, c.Transients)
		}
		if iv := c.Intervals(); iv != "" {
			fmt.Fprintf(&b, " %s: %s\n", c.Name, iv)
		}
		fmt.Fprintf(&b, " %s: residual boxcar %.1f %%, rc %.1f %%", c.Name, 100*c.ResidualBoxcar, 100*c.ResidualRC)
		if c.ResidualBoxRC != nil {
			fmt.Fprintf(&b, ", boxcar of a lag %.1f %%", 100**c.ResidualBoxRC)
		}
		b.WriteString("\n")
	}
	for _, w := range status.Group(r.AllChannelWarnings(), len(r.Channels)) {
		fmt.Fprintf(&b, " ! %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AllChannelWarnings are the run's warnings, then each channel's (about that channel).
func (r *Result) AllChannelWarnings() []status.Warning {
	ws := slices.Clone(r.Warnings)
	for _, c := range r.Channels {
		ws = append(ws, status.WithSubject(c.Name, c.Warnings)...)
	}
	return ws
}
