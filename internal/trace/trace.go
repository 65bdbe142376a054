// Package trace holds what a Sampler recorded: timestamped readings of power, energy, clock,
// temperature and state channels of one or more GPUs, with the metadata needed to interpret
// them. It reads and writes gpuwatt's CSV + JSON sidecar, reads nvidia-smi CSV logs, and turns
// samples into energy over regions. It does not know where samples came from.
package trace

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Format is the value of Meta.Format written by this version.
const Format = "gpuwatt-trace/1"

// Quantity names what a channel measures; it decides the unit of Sample.Value.
type Quantity string

// Quantities and their units.
const (
	QPower       Quantity = "power"       // W
	QEnergy      Quantity = "energy"      // J, cumulative counter
	QFrequency   Quantity = "frequency"   // Hz
	QTemperature Quantity = "temperature" // degC
	QUtilization Quantity = "utilization" // % (0..100)
	QState       Quantity = "state"       // a small integer (performance state P0..P15)
	QReasons     Quantity = "reasons"     // a bit mask (clock-event / throttle reasons)
)

// Unit returns the unit written beside values of quantity q.
func (q Quantity) Unit() string {
	switch q {
	case QPower:
		return "W"
	case QEnergy:
		return "J"
	case QFrequency:
		return "Hz"
	case QTemperature:
		return "degC"
	case QUtilization:
		return "%"
	case QState:
		return "pstate"
	case QReasons:
		return "mask"
	}
	return ""
}

// Channel describes one recorded series of one GPU.
type Channel struct {
	GPU         int      `json:"gpu"`
	Name        string   `json:"name"`     // e.g. "power.instant"
	Quantity    Quantity `json:"quantity"` // decides the unit
	Unit        string   `json:"unit"`
	Description string   `json:"description"`      // what the value means and how it is made
	Source      string   `json:"source,omitempty"` // the API call that reads it
	// Cumulative channels (energy counters) lose resolution, not information, when an
	// update is missed.
	Cumulative bool `json:"cumulative,omitempty"`
	// Buffered channels are read from a driver ring buffer of timestamped samples.
	Buffered bool `json:"buffered,omitempty"`
	// Setting channels report a configured value (the power limit), not a measurement:
	// they are recorded, plotted, and left out of energy figures.
	Setting bool `json:"setting,omitempty"`
	// Stats are filled in by the Sampler at the end of a recording.
	Stats *ChannelStats `json:"stats,omitempty"`
}

// HostGPU is the GPU index of the host's own channels (the CPU packages' and DRAM's RAPL
// counters, cpu.*): they belong to no GPU. The CSV writes it as -1.
const HostGPU = -1

// Key identifies a channel within a trace.
type Key struct {
	GPU  int
	Name string
}

// Key returns c's key.
func (c Channel) Key() Key { return Key{c.GPU, c.Name} }

// ChannelStats tells how a channel was polled and what came of it.
type ChannelStats struct {
	Polls        int     `json:"polls"`   // calls made
	Samples      int     `json:"samples"` // new values recorded
	Repeats      int     `json:"repeats"` // readings that only repeated the previous one
	Errors       int     `json:"errors"`  // failed calls
	LastError    string  `json:"last_error,omitempty"`
	UpdatePeriod float64 `json:"update_period_s"`         // learned median interval between new values
	PollInterval float64 `json:"poll_interval_s"`         // mean interval between calls over the recording
	PhaseLocked  bool    `json:"phase_locked,omitempty"`  // polled in windows around the expected updates
	CallLatency  float64 `json:"call_latency_s"`          // median duration of one call
	Missed       int     `json:"missed_updates_estimate"` // intervals of about 2x or more the update period
	// LostMax bounds the updates the Sampler itself may have missed: each gap between two
	// calls longer than the update period counts the periods inside it. Missed beyond it
	// are intervals where the sensor held its value. Periodic: a channel the Sampler polls
	// to catch every update, or the driver's sample ring (not a counter or a state); the
	// ring loses samples only where two reads lie further apart than it is deep.
	LostMax  int  `json:"lost_updates_max"`
	Periodic bool `json:"periodic,omitempty"`
	// SlowDropped counts a counter's readings left out because their calls took longer
	// than half its update period (the value may have been taken anywhere in the call:
	// a busy driver); SlowestCall is the longest of those calls.
	SlowDropped int     `json:"slow_calls_dropped,omitempty"`
	SlowestCall float64 `json:"slowest_dropped_call_s,omitempty"`
}

// Sample is one new reading of one channel.
type Sample struct {
	T        time.Duration // on the trace's monotonic axis, since its origin
	GPU      int
	Channel  string
	Value    float64 // in the channel's unit
	DriverUS int64   // the driver's own timestamp in µs since 1970, 0 when it gives none
}

// GPU describes one recorded device.
type GPU struct {
	Index             int     `json:"index"`
	Name              string  `json:"name"`
	UUID              string  `json:"uuid"`
	PCIBusID          string  `json:"pci_bus_id,omitempty"`
	PowerLimitW       float64 `json:"power_limit_w,omitempty"`         // enforced
	DefaultPowerLimit float64 `json:"default_power_limit_w,omitempty"` // default
	// SamplerCPUSecs is the CPU time the Sampler's threads spent polling this GPU while
	// recording (absent: not known, as on a virtual clock).
	SamplerCPUSecs float64 `json:"sampler_cpu_s,omitempty"`
	// Vendor is "amd" for AMD boards; empty for NVIDIA's (every board before AMD's came).
	Vendor string `json:"vendor,omitempty"`
}

// VendorAMD is GPU.Vendor of an AMD board.
const VendorAMD = "amd"

// Mark is a named instant on the trace's axis (a command's start, a kernel's end...).
type Mark struct {
	T    float64 `json:"t_s"`
	Name string  `json:"name"`
}

// Poll records the Sampler's polling settings.
type Poll struct {
	Mode     string  `json:"mode"`                 // "adaptive", "max" or "fixed"
	Interval float64 `json:"interval_s,omitempty"` // for "fixed"
	// CounterEvery is the energy counter's asked-for read interval (measure
	// --counter-every); absent: as the Sampler's CPU cap allows (the default).
	CounterEvery float64 `json:"counter_every_s,omitempty"`
}

// Meta is the JSON sidecar of a trace.
type Meta struct {
	Format         string    `json:"format"`
	Version        string    `json:"gpuwatt_version"`
	Host           string    `json:"host"`
	Device         string    `json:"device"`              // "nvml" or "sim:<preset>"
	Simulated      bool      `json:"simulated,omitempty"` // recorded on the sim device
	DriverVersion  string    `json:"driver_version,omitempty"`
	NVMLVersion    string    `json:"nvml_version,omitempty"`
	Command        []string  `json:"command,omitempty"` // the gpuwatt command line
	Start          time.Time `json:"start"`             // wall-clock time of t_s = 0
	Duration       float64   `json:"duration_s"`
	Poll           Poll      `json:"poll"`
	GPUs           []GPU     `json:"gpus"`
	Channels       []Channel `json:"channels"`
	Unavailable    []Missing `json:"unavailable,omitempty"` // channels that could not be read
	Marks          []Mark    `json:"marks,omitempty"`
	Incomplete     bool      `json:"incomplete"`
	IncompleteWhy  string    `json:"incomplete_reason,omitempty"`
	SourceFormat   string    `json:"source_format,omitempty"` // set by readers of foreign formats
	VirtualClock   bool      `json:"virtual_clock,omitempty"`
	SamplerCPUSecs float64   `json:"sampler_cpu_s,omitempty"` // process CPU time spent while recording
}

// Missing is a channel that was asked for but could not be read, and why.
type Missing struct {
	GPU    int    `json:"gpu"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Trace is a recording: metadata plus samples sorted by time.
type Trace struct {
	Meta    Meta
	Samples []Sample
	// Warnings are what a reader found wrong with its input but could read anyway (rows out
	// of time order, a clock change in an nvidia-smi log); a verb reporting on the trace
	// passes them on.
	Warnings []status.Warning
	// cols holds the readings of a compact trace (ReadCompact) instead of Samples.
	cols []*column
}

// Channel returns the metadata of a channel, or false.
func (tr *Trace) Channel(gpu int, name string) (Channel, bool) {
	for _, c := range tr.Meta.Channels {
		if c.GPU == gpu && c.Name == name {
			return c, true
		}
	}
	return Channel{}, false
}

// Series returns the samples of one channel in time order (a new slice).
func (tr *Trace) Series(gpu int, name string) []Sample {
	if tr.cols != nil {
		for _, c := range tr.cols {
			if c.key == (Key{gpu, name}) {
				return c.samples()
			}
		}
		return nil
	}
	// Counted first, then copied into a slice of that size: appending one sample at a
	// time over a long trace grew and copied the slice again and again (a quarter of
	// internal/cli's test CPU went to growslice, this the largest share).
	n := 0
	for i := range tr.Samples {
		if s := &tr.Samples[i]; s.GPU == gpu && s.Channel == name {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Sample, 0, n)
	for i := range tr.Samples {
		if s := &tr.Samples[i]; s.GPU == gpu && s.Channel == name {
			out = append(out, *s)
		}
	}
	return out
}

// Mark returns the time of the first mark with the given name, or false.
func (tr *Trace) Mark(name string) (time.Duration, bool) {
	for _, m := range tr.Meta.Marks {
		if m.Name == name {
			return time.Duration(m.T * float64(time.Second)), true
		}
	}
	return 0, false
}
