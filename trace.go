package gpuwatt

import (
	"fmt"
	"io"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Trace is a recording: every reading of every channel of the recorded GPUs on one
// clock, with what the channels are and the marks (a region's "begin NAME" and
// "end NAME", a command's "cmd.start" and "cmd.end"). Result.Trace is one; LoadTrace
// reads one that gpuwatt wrote (`gpuwatt measure --out DIR`, Trace.Save), a CSV with
// t_s and power_w columns, or an nvidia-smi --format=csv log.
type Trace struct{ tr *trace.Trace }

// Reading is one new reading of a channel: its time on the trace's clock and its value
// in the channel's unit.
type Reading struct {
	T     time.Duration
	Value float64
}

// Channel describes a recorded channel of one GPU.
type Channel struct {
	GPU  int
	Name string // "power.instant", "power.samples", "energy.total", "clock.sm", ...
	// Unit of its values: W, J (cumulative, for energy counters), Hz, degC, %, pstate, mask.
	Unit        string
	Description string
}

// Mark is a named instant on the trace's clock.
type Mark struct {
	T    time.Duration
	Name string
}

// LoadTrace reads a trace from path: a directory holding trace.csv and trace.json
// (Save, `gpuwatt measure --out`), a CSV file (with its .json sidecar beside it where
// there is one), or an nvidia-smi --format=csv log. A bad file is an error naming it and
// the line.
func LoadTrace(path string) (*Trace, error) {
	tr, err := trace.Load(path)
	if err != nil {
		return nil, err
	}
	return &Trace{tr: tr}, nil
}

// ReadTrace reads a trace's CSV from r (gpuwatt's, any CSV with t_s and power_w columns,
// or an nvidia-smi --format=csv log); name is used in errors. Without the JSON sidecar
// the channels are described from their names.
func ReadTrace(r io.Reader, name string) (*Trace, error) {
	tr, err := trace.Read(r, name)
	if err != nil {
		return nil, err
	}
	return &Trace{tr: tr}, nil
}

// Save writes the trace into dir (created if needed) as trace.csv and trace.json, each
// written whole or not at all; `gpuwatt energy --trace DIR` reads it.
func (t *Trace) Save(dir string) error { return trace.Save(dir, t.tr) }

// WriteCSV writes the readings as gpuwatt's trace CSV (t_s,gpu,channel,power_w,value,
// unit,driver_t_us), one row per reading in time order.
func (t *Trace) WriteCSV(w io.Writer) error { return trace.WriteCSV(w, t.tr) }

// Device is "nvml", "sim:PRESET", or where a foreign file came from.
func (t *Trace) Device() string { return t.tr.Meta.Device }

// Simulated says the trace was recorded on the sim device.
func (t *Trace) Simulated() bool { return t.tr.Meta.Simulated }

// Started is the wall-clock time of the trace's time 0.
func (t *Trace) Started() time.Time { return t.tr.Meta.Start }

// Duration is how long the recording ran.
func (t *Trace) Duration() time.Duration {
	return time.Duration(t.tr.Meta.Duration * float64(time.Second))
}

// GPUs are the recorded GPUs.
func (t *Trace) GPUs() []GPU {
	var out []GPU
	for _, g := range t.tr.Meta.GPUs {
		out = append(out, gpuOf(g))
	}
	return out
}

// Channels are the recorded channels, in the order the recording lists them.
func (t *Trace) Channels() []Channel {
	var out []Channel
	for _, c := range t.tr.Meta.Channels {
		out = append(out, Channel{GPU: c.GPU, Name: c.Name, Unit: c.Unit, Description: c.Description})
	}
	return out
}

// Readings are the readings of one channel of one GPU in time order (none: no such
// channel).
func (t *Trace) Readings(gpu int, channel string) []Reading {
	s := t.tr.Series(gpu, channel)
	out := make([]Reading, len(s))
	for i, x := range s {
		out[i] = Reading{T: x.T, Value: x.Value}
	}
	return out
}

// Marks are the trace's marks in time order.
func (t *Trace) Marks() []Mark {
	var out []Mark
	for _, m := range t.tr.Meta.Marks {
		out = append(out, Mark{T: time.Duration(m.T * float64(time.Second)), Name: m.Name})
	}
	return out
}

// Energy is the energy of GPU gpu over [from, to] of the trace, with its 95 % interval:
// the estimator that gives the regions theirs, for any span.
func (t *Trace) Energy(gpu int, from, to time.Duration) Energy {
	est := energy.Region(t.tr, gpu, from, to, energy.Options{What: fmt.Sprintf("%s to %s", from, to)})
	uuid := ""
	for _, g := range t.tr.Meta.GPUs {
		if g.Index == gpu {
			uuid = g.UUID
		}
	}
	if est.Method == energy.NoFigure {
		return Energy{GPU: gpu, UUID: uuid, Warnings: warningsOf(est.Warnings), Method: string(est.Method)}
	}
	e := energyOf(est.Figure)
	e.GPU, e.UUID, e.OK = gpu, uuid, true
	if to > from {
		e.MeanWatts = est.EnergyJ / (to - from).Seconds()
	}
	return e
}

// Regions are the regions the trace's marks bracket ("begin NAME" and "end NAME", as
// Stop and `gpuwatt measure` write them), each with its energy on every GPU, as Stop
// gives them; warnings say which marks did not pair.
func (t *Trace) Regions() ([]RegionResult, []Warning) {
	evs := marks.FromTrace(t.tr.Meta.Marks)
	spans, ws := marks.Pair(evs)
	res := newResult(t.tr, spans, warningsOf(ws), false)
	return res.Regions, res.Warnings
}
