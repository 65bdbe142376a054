package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/raplsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// HostPoll is how often the recorder reads the host's RAPL counters: often enough to
// unwrap them (they wrap after a minute at the soonest), seldom enough for jobs of days.
// The job's edges are read by begin and end themselves, just before and after the GPUs'
// counters, so the recorder's pace does not widen the job's figures.
const HostPoll = time.Second

// HostReading is one reading of a host RAPL counter (cpu.package.0) on the job's axis:
// energy_uj / 1e6 as the process that read it first saw it (unwrapped from there), where
// the counter wraps (RangeJ; 0: not known). Its stamp is that of the Sampler's readings:
// half an update period before the middle of the call.
type HostReading struct {
	Channel string  `json:"channel"`
	T       float64 `json:"t_s"`
	EnergyJ float64 `json:"energy_j"`
	RangeJ  float64 `json:"range_j,omitempty"`
}

// HostReadings are a process's readings of the host's RAPL counters at one edge of the
// job (before and after the GPUs' counters), or why there are none.
type HostReadings struct {
	Unavailable string        `json:"unavailable,omitempty"`
	Readings    []HostReading `json:"readings,omitempty"`
}

// HostEdge reads the host's counters around an edge of the job: once before read (the
// GPUs' counters) and once again at least two update periods after it returns, so the
// counters' values at the edge lie between the two readings. Where ss is empty, read
// alone runs and why is the one line saying why.
func HostEdge(ctx context.Context, ss []sensor.Sensor, why string, clk clock.Clock, read func()) HostReadings {
	if len(ss) == 0 {
		read()
		return HostReadings{Unavailable: why}
	}
	var h HostReadings
	h.Readings = readHost(ss, clk, nil)
	read()
	_ = clk.Sleep(ctx, 2*raplsensor.UpdatePeriod)
	h.Readings = readHost(ss, clk, h.Readings)
	return h
}

// readHost reads each sensor once.
func readHost(ss []sensor.Sensor, clk clock.Clock, dst []HostReading) []HostReading {
	for _, s := range ss {
		t0 := clk.Now()
		rs, err := s.Read(nil)
		t1 := clk.Now()
		if err != nil || len(rs) == 0 {
			continue
		}
		r := HostReading{Channel: s.Channel().Name, T: (t0 + (t1-t0)/2 - raplsensor.UpdatePeriod/2).Seconds(), EnergyJ: rs[len(rs)-1].Value}
		if rg, ok := s.(interface{ RangeUJ() uint64 }); ok {
			r.RangeJ = float64(rg.RangeUJ()) / 1e6
		}
		dst = append(dst, r)
	}
	return dst
}

// mergeHost adds begin's and end's host readings to the recorder's unwrapped series of
// the same counters. Each process unwraps from its own first reading, so a reading is
// shifted by the whole wraps that put it just above the recorder's reading before it (or
// just below the one after it, for begin's, read before the recorder started); one that
// still contradicts the series (a wrap unknown, a range not known) is left out.
func mergeHost(tr *trace.Trace, groups ...[]HostReading) {
	series := map[string][]trace.Sample{}
	for _, s := range tr.Samples {
		if s.GPU == trace.HostGPU {
			series[s.Channel] = append(series[s.Channel], s)
		}
	}
	var add []trace.Sample
	for _, g := range groups {
		// A process's readings of one counter share its unwrapping: shift them alike.
		byCh := map[string][]HostReading{}
		for _, r := range g {
			byCh[r.Channel] = append(byCh[r.Channel], r)
		}
		for ch, rs := range byCh {
			ser := series[ch]
			if len(ser) == 0 {
				continue
			}
			shift := wrapShift(ser, rs[0])
			for _, r := range rs {
				s := trace.Sample{T: secs(r.T), GPU: trace.HostGPU, Channel: ch, Value: r.EnergyJ + shift}
				if fits(ser, s) {
					add = append(add, s)
				}
			}
		}
	}
	if len(add) == 0 {
		return
	}
	tr.Samples = append(tr.Samples, add...)
	slices.SortStableFunc(tr.Samples, func(a, b trace.Sample) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
}

// hostTol is how far a reading may fall below the series before it counts as a
// contradiction: a quantum of the counters and float rounding.
const hostTol = 1e-3

// wrapShift is the multiple of r's range that puts r at or just above the series' last
// reading at or before it, or (none before: begin's, read before the recorder started) at
// or just below the first after it: a process's first reading is energy_uj itself, within
// one range, and less than a range of energy passes between r and that neighbour (the
// recorder reads every HostPoll; the counters wrap after a minute at the soonest). With no
// range known, no shift: fits then drops a reading across a wrap.
func wrapShift(ser []trace.Sample, r HostReading) float64 {
	if r.RangeJ <= 0 {
		return 0
	}
	if i := after(ser, secs(r.T)) - 1; i >= 0 {
		return math.Ceil((ser[i].Value-r.EnergyJ-hostTol)/r.RangeJ) * r.RangeJ
	}
	return math.Floor((ser[0].Value-r.EnergyJ+hostTol)/r.RangeJ) * r.RangeJ
}

// fits reports whether s lies between the series' readings around it.
func fits(ser []trace.Sample, s trace.Sample) bool {
	i := after(ser, s.T)
	if i > 0 && s.Value < ser[i-1].Value-hostTol {
		return false
	}
	return i >= len(ser) || s.Value <= ser[i].Value+hostTol
}

// after is the index of the first reading of ser after t.
func after(ser []trace.Sample, t time.Duration) int {
	i, _ := slices.BinarySearchFunc(ser, t, func(s trace.Sample, t time.Duration) int {
		if s.T <= t {
			return -1
		}
		return 1
	})
	return i
}

// HostResult is the host's energy over the job (job.json's "host_energy"): each RAPL domain's
// figure, the node's total where every part has one, or why none.
type HostResult = energy.HostEnergy

// hostResult is the job's host part: from the recorder's trace with begin's and end's
// readings at the edges; nil where neither begin nor the trace says anything of the host
// (a job begun by a gpuwatt before the host was read).
func hostResult(b *Begin, endHost *HostReadings, tr *trace.Trace, recorderWhy string, gpus []GPUResult, from, to time.Duration) *HostResult {
	if b.HostReadings == nil {
		return nil
	}
	if b.HostReadings.Unavailable != "" {
		return &HostResult{Unavailable: b.HostReadings.Unavailable}
	}
	if tr == nil {
		return &HostResult{Unavailable: "no recording of the job (" + recorderWhy + "): the RAPL counters wrap, so begin's and end's readings alone cannot give the host's energy"}
	}
	if len(energy.HostChannels(tr)) == 0 {
		return &HostResult{Unavailable: "the recorder read no host counter (its log, " + LogFile + ", says why)"}
	}
	var endR []HostReading
	if endHost != nil {
		endR = endHost.Readings
	}
	mergeHost(tr, b.HostReadings.Readings, endR)
	var parts []energy.GPUPart
	for _, g := range gpus {
		parts = append(parts, energy.GPUPart{Index: g.Index, OK: g.OK(), Interval: g.Interval})
	}
	all := b.SystemGPUs > 0 && len(b.GPUs) >= b.SystemGPUs
	missing := fmt.Sprintf("the job has %d of the node's %d GPUs: the CPU and DRAM figures are the whole host's", len(b.GPUs), b.SystemGPUs)
	if b.SystemGPUs == 0 {
		missing = "the node's number of GPUs is not known"
	}
	return energy.HostOver(tr, from, to, parts, all, missing)
}

// hostComment is the AdminComment's host part: cpu_j, dram_j and psys_j (each the sum of
// the domains of that kind) and node_j, as ENERGY/LOW/HIGH, where there is a figure.
func hostComment(h *HostResult, f func(float64) string) []string {
	var out []string
	for _, k := range []struct{ key, kind string }{{"cpu_j", raplsensor.Package}, {"dram_j", raplsensor.DRAM}, {"psys_j", raplsensor.Psys}} {
		if iv, ok := h.KindTotal(k.kind); ok {
			out = append(out, k.key+"="+f(iv.EnergyJ)+"/"+f(iv.LowJ)+"/"+f(iv.HighJ))
		}
	}
	if h != nil && h.Node != nil {
		out = append(out, "node_j="+f(h.Node.EnergyJ)+"/"+f(h.Node.LowJ)+"/"+f(h.Node.HighJ))
	}
	return out
}

// writeHostText prints the host's domains and the node's total, or why there are none.
func writeHostText(w io.Writer, h *HostResult) {
	if h == nil {
		return
	}
	if h.Unavailable != "" {
		fmt.Fprintf(w, "  host: %s\n", h.Unavailable)
		return
	}
	for _, d := range h.Domains {
		if !d.OK() {
			fmt.Fprintf(w, "  host %s: no figure\n", d.Name)
			continue
		}
		fmt.Fprintf(w, "  host %s: %s (95 %%: %.2f to %.2f J), %.1f W mean, from RAPL (its own accuracy not included)\n", d.Name, energy.FmtPM(d.EnergyJ, d.HalfWidthJ()), d.LowJ, d.HighJ, d.MeanPowerW)
	}
	if n := h.Node; n != nil {
		fmt.Fprintf(w, "  node (GPUs, CPU packages, DRAM): %.1f J (95 %%: %.1f to %.1f J)\n", n.EnergyJ, n.LowJ, n.HighJ)
	} else if h.NodeMissing != "" {
		fmt.Fprintf(w, "  no node total: %s\n", h.NodeMissing)
	}
}
