package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/termtext"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// deviceReport is `gpuwatt devices --json`.
type deviceReport struct {
	System        string      `json:"system"`
	DriverVersion string      `json:"driver_version"`
	NVMLVersion   string      `json:"nvml_version"`
	Note          string      `json:"note,omitempty"`
	GPUs          []gpuReport `json:"gpus"`
}

type gpuReport struct {
	trace.GPU
	// Kernels says why gpuwatt's own kernels (micro, archline, profile) cannot run on the
	// GPU; absent where they can. Told for the sim's presets only: asking a real GPU opens
	// a CUDA context.
	Kernels  string          `json:"kernels_unsupported,omitempty"`
	Channels []channelReport `json:"channels"`
}

type channelReport struct {
	Name        string  `json:"name"`
	Unit        string  `json:"unit"`
	Works       bool    `json:"works"`
	Value       float64 `json:"value,omitempty"`
	Text        string  `json:"text"` // the value with its unit, or why it does not work
	Description string  `json:"description"`
	Source      string  `json:"source,omitempty"`
	LatencyUS   float64 `json:"call_latency_us,omitempty"`
}

func (a *App) devices(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withJSON, "")
	wide := fs.Bool("wide", false, fmt.Sprintf("print each channel's description on one line, however long (default: wrapped to %d columns)", termtext.Width))
	if code, ok := a.parseFlags(fs, args, "[--device auto|nvml|amdsmi|sim[:PRESET]] [--json] [--wide]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("devices", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	clk := clock.Clock(clock.NewReal())
	if a.NewClock != nil {
		clk = a.NewClock()
	}
	rep := deviceReport{}
	// auto's fall-back is noted in the report (Note), not on stderr.
	op, err := device.Open(sh.dev.spec(), device.Options{Clock: clk, NVMLPaths: a.NVMLPaths, AMDSMIPaths: a.AMDSMIPaths})
	if err != nil {
		return a.exitFor("devices", err)
	}
	if op.Fallback != nil {
		rep.Note = fmt.Sprintf("%v. The sim device is listed instead (--device sim, or sim:PRESET).", op.Fallback)
	}
	sys := op.System
	defer sys.Close()
	rep.System, rep.DriverVersion, rep.NVMLVersion = sys.Name(), sys.DriverVersion(), sys.NVMLVersion()
	for _, d := range sys.Devices() {
		gr := gpuReport{GPU: d.Info()}
		if err := device.NVIDIAOnly(d, d.Info().Index); err != nil {
			gr.Kernels = kernels.KernelVerbs + " cannot run on an AMD GPU: " + device.KernelsNVIDIAOnly
		} else if ex, ok := d.(gpu.Executor); ok && sys.Simulated() {
			if why := kernels.Unsupported(ex.Props().ComputeCapability); why != "" {
				gr.Kernels = kernels.KernelVerbs + " cannot run: " + why
			}
		}
		for _, s := range d.Sensors() {
			gr.Channels = append(gr.Channels, probe(clk, s))
		}
		rep.GPUs = append(rep.GPUs, gr)
	}
	if sh.json {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return a.fail("devices", err)
		}
		return ExitOK
	}
	width := termtext.Width
	if *wide {
		width = 0
	}
	a.printDevices(rep, width)
	return ExitOK
}

// probe reads a channel once.
func probe(clk clock.Clock, s sensor.Sensor) channelReport {
	ch := s.Channel()
	cr := channelReport{Name: ch.Name, Unit: ch.Unit, Description: ch.Description, Source: ch.Source}
	t0 := clk.Now()
	rs, err := s.Read(nil)
	cr.LatencyUS = float64(clk.Now()-t0) / 1e3
	switch {
	case err != nil:
		cr.Text = "unavailable: " + err.Error()
	case len(rs) == 0:
		cr.Works = true
		cr.Text = "works (no new sample yet)"
	default:
		cr.Works = true
		cr.Value = rs[len(rs)-1].Value
		cr.Text = formatValue(ch, cr.Value)
		if ch.Buffered {
			cr.Text += fmt.Sprintf(" (newest of %d samples)", len(rs))
		}
	}
	return cr
}

// formatValue renders a channel value with its unit.
func formatValue(ch trace.Channel, v float64) string {
	switch ch.Quantity {
	case trace.QPower:
		return units.Power(v).String()
	case trace.QEnergy:
		return units.Energy(v).String()
	case trace.QFrequency:
		return fmt.Sprintf("%.0f MHz", v/1e6)
	case trace.QTemperature:
		return units.Temperature(v).String()
	case trace.QUtilization:
		return fmt.Sprintf("%.0f %%", v)
	case trace.QState:
		return fmt.Sprintf("P%.0f", v)
	case trace.QReasons:
		return fmt.Sprintf("0x%x (%s)", uint64(v), measure.ReasonNames(uint64(v)))
	}
	return fmt.Sprintf("%g %s", v, ch.Unit)
}

// printDevices prints the report as text, width columns at most (0: no limit): a channel's
// value and description wrap in their columns, and a channel that does not work reads
// "unavailable", its reason leading the description.
func (a *App) printDevices(rep deviceReport, width int) {
	w := a.Stdout
	para := func(s, first string, rest int) {
		if width == 0 {
			fmt.Fprintf(w, "%s%s\n", first, s)
			return
		}
		fmt.Fprint(w, termtext.Indent(s, first, rest, width))
	}
	if rep.Note != "" {
		para(rep.Note, "", 0)
		fmt.Fprintln(w)
	}
	nvmlVersion := ""
	if rep.NVMLVersion != "" {
		nvmlVersion = ", NVML " + rep.NVMLVersion
	}
	fmt.Fprintf(w, "system %s, driver %s%s, %d GPU(s)\n", rep.System, rep.DriverVersion, nvmlVersion, len(rep.GPUs))
	for _, g := range rep.GPUs {
		vendor := ""
		if g.Vendor == trace.VendorAMD {
			vendor = " (AMD)"
		}
		fmt.Fprintf(w, "\nGPU %d  %s%s\n", g.Index, g.Name, vendor)
		id := "uuid " + g.UUID
		if g.PCIBusID != "" {
			id += ", pci " + g.PCIBusID
		}
		if g.PowerLimitW > 0 {
			id += fmt.Sprintf(", power limit %s (default %s)", units.Power(g.PowerLimitW), units.Power(g.DefaultPowerLimit))
		}
		para(id, "  ", 4)
		if g.Kernels != "" {
			para(g.Kernels, "  ", 4)
		}
		fmt.Fprintf(w, "\n")
		rows := [][3]string{{"channel", "value", "what it is"}}
		for _, c := range g.Channels {
			value, what := c.Text, c.Description
			if !c.Works && width > 0 {
				value, what = "unavailable", strings.TrimPrefix(c.Text, "unavailable: ")+". "+c.Description
			}
			rows = append(rows, [3]string{c.Name, value, what})
		}
		printColumns(w, rows, width)
	}
}

// printColumns prints rows of three columns, indented by two spaces and two apart; where
// width > 0 the last column wraps within what is left of it (the first two are short).
func printColumns(w io.Writer, rows [][3]string, width int) {
	var c0, c1 int
	for _, r := range rows {
		c0, c1 = max(c0, termtext.Len(r[0])), max(c1, termtext.Len(r[1]))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-termtext.Len(s)) }
	for _, r := range rows {
		lead := "  " + pad(r[0], c0) + "  " + pad(r[1], c1) + "  "
		if width == 0 {
			fmt.Fprintf(w, "%s\n", strings.TrimRight(lead+r[2], " "))
			continue
		}
		lines := termtext.Wrap(r[2], max(width-termtext.Len(lead), 20))
		for i, l := range lines {
			if i > 0 {
				lead = strings.Repeat(" ", termtext.Len(lead))
			}
			fmt.Fprintf(w, "%s\n", strings.TrimRight(lead+l, " "))
		}
	}
}
