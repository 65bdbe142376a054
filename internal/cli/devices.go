package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
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
	if code, ok := a.parseFlags(fs, args, "[--device auto|nvml|amdsmi|sim[:PRESET]] [--json]"); !ok {
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
	a.printDevices(rep)
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

func (a *App) printDevices(rep deviceReport) {
	w := a.Stdout
	if rep.Note != "" {
		fmt.Fprintf(w, "%s\n\n", rep.Note)
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
		fmt.Fprintf(w, "\nGPU %d  %s%s\n  uuid %s", g.Index, g.Name, vendor, g.UUID)
		if g.PCIBusID != "" {
			fmt.Fprintf(w, ", pci %s", g.PCIBusID)
		}
		if g.PowerLimitW > 0 {
			fmt.Fprintf(w, ", power limit %s (default %s)", units.Power(g.PowerLimitW), units.Power(g.DefaultPowerLimit))
		}
		fmt.Fprintf(w, "\n")
		if g.Kernels != "" {
			fmt.Fprintf(w, "  %s\n", g.Kernels)
		}
		fmt.Fprintf(w, "\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  channel\tvalue\twhat it is\n")
		for _, c := range g.Channels {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, c.Text, c.Description)
		}
		tw.Flush()
	}
}
