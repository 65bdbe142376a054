package gpuwatt

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Result is what a recording gives: each region's energy on each GPU, and the warnings.
type Result struct {
	// Device is "nvml" for NVIDIA GPUs, "sim:PRESET" for the sim device; Simulated says
	// every figure is simulated.
	Device    string `json:"device"`
	Simulated bool   `json:"simulated"`
	GPUs      []GPU  `json:"gpus"`
	// Regions in the order they began.
	Regions []RegionResult `json:"regions"`
	// Warnings about the recording as a whole (a region's own are in it).
	Warnings []Warning `json:"warnings"`
	// Incomplete says the recording was cut short (IncompleteReason: why); the figures
	// are of what was recorded.
	Incomplete       bool   `json:"incomplete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// HostUnavailable says in one line why the host's RAPL counters were not recorded (no
	// powercap: a virtual machine; counters readable by root only).
	HostUnavailable string `json:"host_unavailable,omitempty"`
	// Trace is the recording: every reading of every channel, and the regions' begin and
	// end as marks. Save it to read it again (LoadTrace) or with `gpuwatt energy`.
	Trace *Trace `json:"-"`
}

// Find returns the regions named name, in the order they began.
func (r *Result) Find(name string) []RegionResult {
	var out []RegionResult
	for _, g := range r.Regions {
		if g.Name == name {
			out = append(out, g)
		}
	}
	return out
}

// GPU describes a recorded GPU.
type GPU struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	UUID  string `json:"uuid"`
	// PowerLimitW is the enforced power limit in watts (0: not known).
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
}

// RegionResult is one region: its span and its energy on each GPU.
type RegionResult struct {
	Name string `json:"name"`
	// Instance counts the regions of one name from 1, in the order they began.
	Instance int `json:"instance"`
	// Depth is how many regions were open when it began; Parent is the index in
	// Result.Regions of the innermost of them (-1: none).
	Depth  int `json:"depth"`
	Parent int `json:"parent"`
	// Start and End are on the recording's clock (since its start: Trace's axis).
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
	// GPUs holds the region's energy on each recorded GPU, in the order of Result.GPUs.
	GPUs []Energy `json:"gpus"`
	// Warnings about the region on every GPU (a GPU's own are in its Energy).
	Warnings []Warning `json:"warnings"`
	// Host holds the region's energy on each of the host's RAPL domains (CPU packages,
	// DRAM, psys), where they were recorded (Result.HostUnavailable says why not); Node is
	// the GPUs, packages and DRAM together, only where every GPU of the machine was
	// recorded and every part has a figure. RAPL's own accuracy is not in their intervals
	// (Partial).
	Host []HostEnergy `json:"host,omitempty"`
	Node *Energy      `json:"node,omitempty"`
}

// HostEnergy is a region's energy on one host RAPL domain: Domain is its channel
// (cpu.package.0, cpu.dram.0, cpu.psys), Kind "package", "dram" or "psys"; Energy.GPU is -1.
type HostEnergy struct {
	Domain string `json:"domain"`
	Kind   string `json:"kind"`
	Energy
}

// Duration is End − Start.
func (r RegionResult) Duration() time.Duration { return r.End - r.Start }

// Energy is a region's energy on one GPU.
type Energy struct {
	GPU  int    `json:"gpu"`
	UUID string `json:"uuid"`
	// OK is false where no figure could be given (Warnings say why); the other figures
	// are then 0.
	OK bool `json:"ok"`
	// Joules is the estimate; Low and High its 95 % interval on the board's own scale (what
	// repeats on this board: figures of one board compare within it); AbsLow and AbsHigh
	// add the board's gain error (±5 %): the bounds of the true energy. Partial: a part of
	// the uncertainty could not be computed, so the interval is a floor.
	Joules  float64 `json:"energy_j"`
	Low     float64 `json:"energy_low_j"`
	High    float64 `json:"energy_high_j"`
	AbsLow  float64 `json:"absolute_low_j"`
	AbsHigh float64 `json:"absolute_high_j"`
	Partial bool    `json:"partial,omitempty"`
	// MeanWatts is Joules over the region's duration.
	MeanWatts float64 `json:"mean_power_w"`
	// Method is how the figure was found: "counter" (the driver's energy counter),
	// "calibrated_ring" (the 20 ms sample ring on the counter's scale), "inversion" (a
	// power channel with its sensor model undone) or "counter_interpolated"; Source names
	// the channel.
	Method   string    `json:"method"`
	Source   string    `json:"source"`
	Warnings []Warning `json:"warnings"`
}

// Warning is one thing a reader of a result must know.
type Warning struct {
	// Code names the kind, e.g. "unsynchronised_marker" (the work ran past a region's
	// end), "unended_region", "few_readings_in_region", "simulated" (the sim device on the wall clock: what it charged).
	Code string `json:"code"`
	// Subject is what it is about, where not the whole result (a region, a channel).
	Subject string `json:"subject,omitempty"`
	Message string `json:"message"`
}

// String is "subject: message", or the message.
func (w Warning) String() string {
	if w.Subject == "" {
		return w.Message
	}
	return w.Subject + ": " + w.Message
}

func warningsOf(ws []status.Warning) []Warning {
	out := make([]Warning, 0, len(ws))
	for _, w := range ws {
		out = append(out, Warning{Code: string(w.Code), Subject: w.Subject, Message: w.Message})
	}
	return out
}

func gpuOf(g trace.GPU) GPU {
	return GPU{Index: g.Index, Name: g.Name, UUID: g.UUID, PowerLimitW: g.PowerLimitW}
}

func regionOf(r energy.MarkedRegion) RegionResult {
	out := RegionResult{Name: r.Name, Instance: r.Instance, Depth: r.Depth, Parent: -1,
		Start: r.Start, End: r.End,
		Warnings: warningsOf(r.Warnings)}
	if r.Parent != nil {
		out.Parent = *r.Parent
	}
	for _, g := range r.GPUs {
		e := energyOf(g.Figure)
		e.GPU, e.UUID, e.OK, e.MeanWatts = g.Index, g.UUID, !g.NoFigure, g.MeanPowerW
		out.GPUs = append(out.GPUs, e)
	}
	return out
}

// energyOf is the one conversion of the estimator's figure into the library's Energy (the
// GPU, its UUID, OK and the mean power are the caller's).
func energyOf(f energy.Figure) Energy {
	e := energyOfInterval(f.Interval)
	e.Method, e.Source, e.Warnings = string(f.Method), f.Source, warningsOf(f.Warnings)
	return e
}

// energyOfInterval is an energy and its intervals as the library's Energy (a sum's, which
// has no method of its own: the caller's).
func energyOfInterval(iv energy.Interval) Energy {
	return Energy{Joules: iv.EnergyJ, Low: iv.LowJ, High: iv.HighJ, AbsLow: iv.AbsoluteLowJ, AbsHigh: iv.AbsoluteHighJ, Partial: iv.Partial}
}

// interval is e's energy and intervals as internal/energy's, to be summed.
func (e Energy) interval() energy.Interval {
	return energy.Interval{EnergyJ: e.Joules, LowJ: e.Low, HighJ: e.High, AbsoluteLowJ: e.AbsLow, AbsoluteHighJ: e.AbsHigh, Partial: e.Partial}
}
