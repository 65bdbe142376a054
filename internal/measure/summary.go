package measure

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// CodeOutlived: processes the command started ran on after it exited.
const CodeOutlived status.Code = "children_outlived"

// SummaryFormat is the value of Summary.Format.
const SummaryFormat = "gpuwatt-measure-summary/1"

// Summary is what `gpuwatt measure` prints and writes to summary.json.
type Summary struct {
	Format   string   `json:"format"`
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"`
	// Signal names the signal that ended the command (SIGKILL; exit_code is then 128 plus
	// its number); absent when it exited by itself.
	Signal string `json:"signal,omitempty"`
	Device string `json:"device"`
	// Simulated: the figures are the sim device's, not a measurement; SimLoad says what it
	// drew while the command ran (measure --sim-load).
	Simulated bool   `json:"simulated"`
	SimLoad   string `json:"sim_load,omitempty"`
	// Status: whether the recording was cut short, and why; run-wide warnings (each GPU's
	// are in its summary).
	status.Status
	StartS          float64      `json:"start_s"` // the command's run on the trace's t_s axis
	EndS            float64      `json:"end_s"`
	DurationS       float64      `json:"duration_s"`
	BaselineS       float64      `json:"baseline_s"` // idle recording used for the idle power
	RecordingS      float64      `json:"recording_s"`
	SamplerCPUShare float64      `json:"sampler_cpu_share"` // CPU seconds per second of recording
	Poll            trace.Poll   `json:"poll"`
	GPUs            []GPUSummary `json:"gpus"`
	// Total is the energy of all the recorded GPUs together; present with two or more.
	Total *Total `json:"total,omitempty"`
	// Sampler is how well the Sampler kept up with each GPU's power channels.
	Sampler []GPUSampler `json:"sampler"`
	// Regions are the command's marked regions (GPUWATT_MARKS), each with its energy per
	// GPU; absent where no marks file was read, [] where it held no region.
	Regions     []energy.MarkedRegion `json:"regions,omitempty"`
	Unavailable []trace.Missing       `json:"unavailable_channels,omitempty"`
	// Host is the host's CPU packages' and DRAM's energy over the command (RAPL), and the
	// node's; absent on a sim device that models no host.
	Host *HostSummary `json:"host,omitempty"`
}

// HostSummary is the host's energy over the command (or a region): each RAPL domain's
// (CPU package, DRAM, psys), and the node's (every GPU, package and DRAM together) only
// where every part has a figure and every GPU of the machine was recorded.
type HostSummary = energy.HostEnergy

// Total is the energy of several GPUs together (energy.NodeTotal of their figures). Each
// GPU's interval is added linearly, not in quadrature: the boards share the command's
// start and end (a timing error moves them all the same way) and may share a gain error
// of their SKU, so the sum of the bounds is the interval that holds whatever the
// correlation between boards. Where a board has no figure, Missing names it and the
// figures are the other boards' (Partial: a floor).
type Total struct {
	GPUs int `json:"gpus"`
	energy.Interval
	Missing          string  `json:"missing,omitempty"`
	EnergyAboveIdleJ float64 `json:"energy_above_idle_j"`
	MeanPowerW       float64 `json:"mean_power_w"`
}

// GPUSampler is the Sampler's health on one GPU over the whole recording, on the power
// channels it polls to catch every update (not the driver's sample buffer, which keeps
// 2 s of readings, nor the energy counter, which loses nothing by a missed update):
// the updates expected (the recording over each channel's update period), those read (new
// values), at most how many fell in gaps between its calls (LostMax), and the intervals
// where the sensor held its value (a long interval between new values not explained by a
// gap in polling: common at idle). SeenShare is 1 - LostMax/Expected: a lower bound on the
// share of updates read. CPUShare is the CPU its threads took polling this GPU, of one core.
type GPUSampler struct {
	GPU        int     `json:"gpu"`
	Expected   int     `json:"updates_expected"`
	Updates    int     `json:"updates_read"`
	LostMax    int     `json:"lost_updates_max"`
	Held       int     `json:"held_intervals"`
	SeenShare  float64 `json:"seen_share"`
	CPUShare   float64 `json:"cpu_share,omitempty"`
	CPUUnknown string  `json:"cpu_unavailable,omitempty"`
	// CounterReadEveryS is the mean interval between the Sampler's calls of the energy
	// counter over the recording (measure --counter-every asks for one; by default its
	// CPU cap sets it), CounterCallS the median call, and CounterCPUShare their ratio:
	// the share of one core the counter's calls took (on a real clock; an H200's call
	// busy-waits 3.4-6.3 ms). Absent where the GPU has no counter.
	CounterReadEveryS float64 `json:"counter_read_every_s,omitempty"`
	CounterCallS      float64 `json:"counter_call_s,omitempty"`
	CounterCPUShare   float64 `json:"counter_cpu_share,omitempty"`
}

// GPUSummary is the summary of one GPU during the command (see region.Summary).
type GPUSummary = region.Summary

// ChannelSummary is one channel's energy during the command.
type ChannelSummary = region.Channel

// Range is the span of a quantity during the command.
type Range = region.Range

// ReasonShare is the share of the command's run during which a clock-event reason was active.
type ReasonShare = region.ReasonShare

// Summarize turns a measure Result into its Summary.
func Summarize(r *Result, command []string, baseline time.Duration) *Summary {
	tr := r.Trace
	m := tr.Meta
	dur := r.End - r.Start
	s := &Summary{
		Format:      SummaryFormat,
		Command:     command,
		ExitCode:    r.ExitCode,
		Signal:      r.Signal,
		Device:      m.Device,
		Simulated:   m.Simulated,
		SimLoad:     r.SimLoad,
		Status:      status.Status{Warnings: []status.Warning{}, Incomplete: m.Incomplete, Reason: m.IncompleteWhy},
		StartS:      r.Start.Seconds(),
		EndS:        r.End.Seconds(),
		DurationS:   dur.Seconds(),
		RecordingS:  m.Duration,
		Poll:        m.Poll,
		Unavailable: m.Unavailable,
	}
	if m.Duration > 0 && !m.VirtualClock {
		s.SamplerCPUShare = m.SamplerCPUSecs / m.Duration
	}
	b0 := max(r.Start-baseline, 0)
	s.BaselineS = (r.Start - b0).Seconds()
	cache := &energy.Cache{}
	for _, g := range m.GPUs {
		s.GPUs = append(s.GPUs, region.Summarize(tr, g, r.Start, r.End, b0, r.Start, region.Options{What: "the command", IdleLevel: correct.IdleAtRest, ChannelIntervals: true, EnergyCache: cache}))
		s.Sampler = append(s.Sampler, samplerHealth(m, g))
	}
	if r.Outlived != nil {
		s.Warnings = append(s.Warnings, status.Warning{Code: CodeOutlived, Value: float64(len(r.Outlived.PIDs)), Unit: "processes", Message: r.Outlived.Error()})
	}
	if r.MarksRead {
		s.Warnings = append(s.Warnings, status.Cap(r.MarkWarnings, status.MaxPerCode)...)
		spans, ws := marks.Pair(r.Marks)
		s.Warnings = append(s.Warnings, status.Cap(ws, status.MaxPerCode)...)
		s.Regions = energy.Marked(tr, spans, energy.MarkedOptions{Cache: cache, SyncCheck: true, Host: true, AllGPUs: r.SystemGPUs <= len(r.Devices)})
		for _, reg := range s.Regions {
			for _, g := range reg.GPUs {
				for _, w := range g.Warnings {
					if w.Code == marks.CodeUnsynced {
						w.Subject = fmt.Sprintf("region %s #%d, GPU %d", reg.Name, reg.Instance, g.Index)
						s.Warnings = append(s.Warnings, w)
					}
				}
			}
		}
	}
	s.Total = total(s.GPUs, dur.Seconds())
	s.Host = hostSummary(r, s.GPUs)
	return s
}

// hostSummary is the host's part of the summary: nil on a sim device without a host.
func hostSummary(r *Result, gpus []GPUSummary) *HostSummary {
	tr := r.Trace
	if len(energy.HostChannels(tr)) == 0 {
		if tr.Meta.Simulated || r.HostUnavailable == "" {
			return nil
		}
		return &HostSummary{Unavailable: r.HostUnavailable}
	}
	var parts []energy.GPUPart
	for _, g := range gpus {
		parts = append(parts, energy.GPUPart{Index: g.Index, OK: hasFigure(g), Interval: g.Interval})
	}
	return energy.HostOver(tr, r.Start, r.End, parts, r.SystemGPUs <= len(r.Devices), "")
}

// samplerHealth sums the Sampler's statistics of g's power channels.
func samplerHealth(m trace.Meta, g trace.GPU) GPUSampler {
	h := GPUSampler{GPU: g.Index}
	for _, c := range m.Channels {
		st := c.Stats
		if c.GPU != g.Index || c.Quantity != trace.QPower || c.Setting || st == nil || !st.Periodic || st.UpdatePeriod <= 0 {
			continue
		}
		h.Expected += int(m.Duration/st.UpdatePeriod + 0.5)
		h.Updates += st.Samples
		h.LostMax += st.LostMax
		h.Held += max(st.Missed-st.LostMax, 0)
	}
	if h.Expected > 0 {
		h.SeenShare = max(1-float64(h.LostMax)/float64(h.Expected), 0)
	}
	h.counterCost(m, g)
	switch {
	case m.VirtualClock:
		h.CPUUnknown = "virtual clock: the CPU time measures the simulation"
	case !perGPUCPUMeasured(m):
		// The lean default polls every GPU from shared threads (--gpu-cpu gives each GPU
		// its own): there is no per-GPU figure, only the whole process's.
		h.CPUUnknown = notPerGPU
	case g.SamplerCPUSecs <= 0 || m.Duration <= 0:
		h.CPUUnknown = "no per-thread CPU time (not Linux, or a lane was abandoned in a hung call)"
	default:
		h.CPUShare = g.SamplerCPUSecs / m.Duration
	}
	return h
}

// counterCost fills in how often g's energy counter was read and what its calls cost.
func (h *GPUSampler) counterCost(m trace.Meta, g trace.GPU) {
	for _, c := range m.Channels {
		if c.GPU != g.Index || c.Name != trace.ChEnergyTotal || c.Stats == nil || c.Stats.Polls < 2 {
			continue
		}
		h.CounterReadEveryS = c.Stats.PollInterval
		if !m.VirtualClock {
			h.CounterCallS = c.Stats.CallLatency
			if c.Stats.PollInterval > 0 {
				h.CounterCPUShare = c.Stats.CallLatency / c.Stats.PollInterval
			}
		}
	}
}

// notPerGPU is why a lean recording has no CPU figure per GPU.
const notPerGPU = "not measured (measure --gpu-cpu measures it); the whole process's CPU is given below"

// perGPUCPUMeasured says whether the recording measured its lanes' CPU per GPU (measure
// --gpu-cpu): some GPU has a figure.
func perGPUCPUMeasured(m trace.Meta) bool {
	for _, g := range m.GPUs {
		if g.SamplerCPUSecs > 0 {
			return true
		}
	}
	return false
}

// hasFigure says whether the estimator gave g's energy a figure.
func hasFigure(g GPUSummary) bool { return g.EnergySource != "" }

// total adds the GPUs' energies; nil with fewer than two.
func total(gs []GPUSummary, durS float64) *Total {
	if len(gs) < 2 {
		return nil
	}
	t := &Total{GPUs: len(gs)}
	var parts []energy.Interval
	var missing []string
	for _, g := range gs {
		t.EnergyAboveIdleJ += g.EnergyAboveIdleJ
		if !hasFigure(g) {
			missing = append(missing, fmt.Sprint(g.Index))
			continue
		}
		parts = append(parts, g.Interval)
	}
	t.Interval, _ = energy.NodeTotal(parts)
	if len(missing) > 0 {
		t.Missing = "no energy figure for GPU " + strings.Join(missing, ", ")
		t.Partial = true
	}
	if durS > 0 {
		t.MeanPowerW = t.EnergyJ / durS
	}
	return t
}

// ReasonNames renders a clock-event mask as names.
func ReasonNames(mask uint64) string { return region.ReasonNames(mask) }
