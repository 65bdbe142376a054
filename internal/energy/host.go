package energy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// MethodHostCounter is how a host RAPL domain's energy is found: its counter at the
// region's edges, each bracketed by the readings around it.
const MethodHostCounter Method = "rapl_counter"

// HostUpdatePeriod is how stale a RAPL reading may be: the counters update about every
// millisecond.
const HostUpdatePeriod = time.Millisecond

// HostChannels lists the trace's host RAPL channels (cpu.*, on trace.HostGPU), in order.
func HostChannels(tr *trace.Trace) []trace.Channel {
	var out []trace.Channel
	for _, ch := range tr.Meta.Channels {
		if ch.GPU == trace.HostGPU && strings.HasPrefix(ch.Name, "cpu.") && ch.Cumulative {
			out = append(out, ch)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HostKind is a host channel's RAPL domain: "package", "dram" or "psys".
func HostKind(name string) string {
	k, _, _ := strings.Cut(strings.TrimPrefix(name, "cpu."), ".")
	return k
}

// HostRegion is the energy of host channel name (a RAPL counter) over [from, to]. The
// counter only grows and a reading made at c shows it as of its last update, in [c − U, c]
// (U the update period); the Sampler stamps it τ = c − U/2, so it shows the counter as of
// [τ − U/2, τ + U/2]. Its value at an edge t then lies between the last reading stamped at
// or before t − U/2 and the first at or after t + U/2: the interval brackets both edges
// that way (a bound, wider than a 95 % interval). The estimate reads the counter at each edge between the
// readings placed at their mean age, τ − U/2, inside the bracket. RAPL's own accuracy (a
// model on older parts, measured on newer ones; no vendor figure per part) is not in the
// interval: Partial says so, and the absolute interval equals the relative one.
func HostRegion(tr *trace.Trace, name string, from, to time.Duration) Figure {
	f := Figure{Method: MethodHostCounter, Channel: name, Warnings: []status.Warning{}}
	ch, ok := tr.Channel(trace.HostGPU, name)
	if !ok {
		f.Method = NoFigure
		f.Warnings = append(f.Warnings, status.Warnf(CodeNoHostFigure, "no host channel %s in the recording", name))
		return f
	}
	f.Source = ch.Source
	var t []time.Duration
	var v []float64
	for _, s := range tr.Samples {
		if s.GPU == trace.HostGPU && s.Channel == name {
			t, v = append(t, s.T), append(v, s.Value)
		}
	}
	a, okA := counterAt(t, v, from)
	b, okB := counterAt(t, v, to)
	if !okA || !okB || to <= from {
		f.Method = NoFigure
		f.Warnings = append(f.Warnings, status.Warnf(CodeNoHostFigure, "%s has no readings on both sides of %.3f–%.3f s: no figure", name, from.Seconds(), to.Seconds()))
		return f
	}
	f.EnergyJ = max(b.est-a.est, 0)
	f.LowJ = max(b.lo-a.hi, 0)
	f.HighJ = max(b.hi-a.lo, f.EnergyJ)
	f.AbsoluteLowJ, f.AbsoluteHighJ, f.Partial = f.LowJ, f.HighJ, true
	f.Note = "the counter at each edge, bracketed by the readings around it"
	f.Uncertainty = Uncertainty{HalfWidthJ: (f.HighJ - f.LowJ) / 2, Partial: true, AbsoluteLowJ: f.LowJ, AbsoluteHighJ: f.HighJ,
		Components: []Component{
			{Name: "edges", HalfWidthJ: (f.HighJ - f.LowJ) / 2, Known: true,
				Note: fmt.Sprintf("each edge's counter value lies between the readings surely before it and surely after it (each as of its counter's last update, up to %s before it was read)", HostUpdatePeriod)},
			{Name: "rapl_accuracy", Known: false, Note: "RAPL's own accuracy: not documented per part; not included"},
		}}
	if a.partial || b.partial {
		f.Warnings = append(f.Warnings, status.Warnf(CodeNoHostFigure, "%s: no reading surely after an edge (half an update period past it); that edge's upper bound is the last reading's", name))
	}
	return f
}

// CodeNoHostFigure marks a host domain without a (full) figure.
const CodeNoHostFigure status.Code = "host_energy"

type edgeValue struct {
	lo, est, hi float64
	partial     bool
}

// counterAt brackets a monotone counter read at times t (values v; stamped half an update
// period before each call) at time at.
func counterAt(t []time.Duration, v []float64, at time.Duration) (edgeValue, bool) {
	half := HostUpdatePeriod / 2
	i := sort.Search(len(t), func(k int) bool { return t[k] > at-half }) - 1 // surely as of at or before
	if i < 0 || i+1 >= len(t) {
		return edgeValue{}, false
	}
	j := sort.Search(len(t), func(k int) bool { return t[k] >= at+half }) // surely as of at or after
	e := edgeValue{lo: v[i]}
	if j >= len(t) {
		j, e.partial = len(t)-1, true
	}
	e.hi = v[j]
	// The readings' stamps are their mean age already: interpolate between the two around at.
	k := sort.Search(len(t), func(k int) bool { return t[k] > at })
	switch {
	case k == 0:
		e.est = v[0]
	case k >= len(t):
		e.est = v[len(t)-1]
	default:
		t0, t1 := t[k-1], t[k]
		w := float64(at-t0) / float64(t1-t0)
		e.est = v[k-1] + w*(v[k]-v[k-1])
	}
	e.est = min(max(e.est, e.lo), e.hi)
	return e, true
}

// HostFigure is one host RAPL domain's energy over a region: Figure with the domain's
// channel (cpu.package.0) and kind (package, dram, psys).
type HostFigure struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Figure
	MeanPowerW float64 `json:"mean_power_w"`
}

// HostRegions gives every host channel of tr its figure over [from, to].
func HostRegions(tr *trace.Trace, from, to time.Duration) []HostFigure {
	var out []HostFigure
	for _, ch := range HostChannels(tr) {
		f := HostRegion(tr, ch.Name, from, to)
		h := HostFigure{Name: ch.Name, Kind: HostKind(ch.Name), Figure: f}
		if f.OK() && to > from {
			h.MeanPowerW = f.EnergyJ / (to - from).Seconds()
		}
		out = append(out, h)
	}
	return out
}

// NodeTotal sums the GPUs' and the host's figures of one region into the node's energy,
// only where every part has one (ok false otherwise: a node total with a part missing
// would pass for the whole). The bounds add (a conservative interval); Partial where any
// part's is.
func NodeTotal(parts []Interval) (Interval, bool) {
	if len(parts) == 0 {
		return Interval{}, false
	}
	var n Interval
	for _, p := range parts {
		n.EnergyJ += p.EnergyJ
		n.LowJ += p.LowJ
		n.HighJ += p.HighJ
		n.AbsoluteLowJ += p.AbsoluteLowJ
		n.AbsoluteHighJ += p.AbsoluteHighJ
		n.Partial = n.Partial || p.Partial
	}
	return n, true
}

// HostEnergy is the host's energy over a span: each RAPL domain's figure and the node's
// total (NodeTotal) where every part has one; Unavailable says in one line why no domain
// was read (no powercap: a virtual machine; counters readable by root only), NodeMissing
// why there is no node total where they were.
type HostEnergy struct {
	Unavailable string       `json:"unavailable,omitempty"`
	Domains     []HostFigure `json:"domains,omitempty"`
	Node        *Interval    `json:"node,omitempty"`
	NodeMissing string       `json:"node_missing,omitempty"`
}

// GPUPart is one GPU's figure over a span as a part of the node's total (OK false: none).
type GPUPart struct {
	Index int
	OK    bool
	Interval
}

// HostOver is the host's energy over [from, to] of tr: every host channel's figure, and the
// node's total of the GPUs' figures and the packages' and DRAM's (psys left out: the
// platform's figure holds them) where every part has a figure and every GPU of the machine
// is among gpus (allGPUs; missing says which are not, for people). Nil where tr has no
// host channel.
func HostOver(tr *trace.Trace, from, to time.Duration, gpus []GPUPart, allGPUs bool, missing string) *HostEnergy {
	doms := HostRegions(tr, from, to)
	if len(doms) == 0 {
		return nil
	}
	h := &HostEnergy{Domains: doms}
	h.SetNode(gpus, allGPUs, missing)
	return h
}

// SetNode sets the node's total from the GPUs' figures and h's domains (HostOver), or
// NodeMissing saying why there is none.
func (h *HostEnergy) SetNode(gpus []GPUPart, allGPUs bool, missing string) {
	h.Node, h.NodeMissing = nil, ""
	var parts []Interval
	if !allGPUs {
		h.NodeMissing = missing
		if missing == "" {
			h.NodeMissing = "not every GPU of the machine was recorded"
		}
		return
	}
	for _, g := range gpus {
		if !g.OK {
			h.NodeMissing = fmt.Sprintf("GPU %d has no energy figure", g.Index)
			return
		}
		parts = append(parts, g.Interval)
	}
	for _, d := range h.Domains {
		if !d.OK() {
			h.NodeMissing = d.Name + " has no figure"
			return
		}
		if d.Kind != "psys" {
			parts = append(parts, d.Interval)
		}
	}
	if n, ok := NodeTotal(parts); ok {
		h.Node = &n
	}
}

// KindTotal is the sum of the host's domains of one kind (every package, or every DRAM),
// bounds added; ok false where there is none of that kind or one has no figure.
func (h *HostEnergy) KindTotal(kind string) (Interval, bool) {
	if h == nil {
		return Interval{}, false
	}
	var parts []Interval
	for _, d := range h.Domains {
		if d.Kind != kind {
			continue
		}
		if !d.OK() {
			return Interval{}, false
		}
		parts = append(parts, d.Interval)
	}
	return NodeTotal(parts)
}
