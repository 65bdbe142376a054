package energy

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// MarkedRegion is one marked region with its energy on each GPU.
type MarkedRegion struct {
	Name string `json:"name"`
	// Instance counts the regions of one name from 1; Depth is how many regions enclose it;
	// Parent is the index in the list of the innermost of them (absent: top level).
	Instance int  `json:"instance"`
	Depth    int  `json:"depth"`
	Parent   *int `json:"parent,omitempty"`
	// StartS and EndS are on the trace's t_s axis.
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// Start and End are StartS and EndS to the nanosecond.
	Start time.Duration `json:"-"`
	End   time.Duration `json:"-"`
	// BeginLine and EndLine are the marks file's lines (absent: markers made in process).
	BeginLine int `json:"begin_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
	// Timing says where the edges' times come from: "writer" (the marker's own
	// CLOCK_MONOTONIC time), "arrival" (stamped when read, up to marks.ArrivalPoll late: an edge
	// component in the interval), "mixed", or "process" (Begin and End in a Go program).
	Timing string      `json:"timing"`
	GPUs   []GPUFigure `json:"gpus"`
	// Host is the host's RAPL domains' energy over the region and the node's total
	// (MarkedOptions.Host; absent where the trace has no host channel).
	Host *HostEnergy `json:"host,omitempty"`
	// Warnings about this region (on every GPU: a GPU's own are in its entry).
	Warnings []status.Warning `json:"warnings"`
}

// GPUFigure is a region's energy on one GPU: internal/energy's figure over the region
// (Method, Channel and Source say how and from which channel). NoFigure: no energy could
// be given (Warnings say why); the figures are then 0 and mean nothing.
type GPUFigure struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Figure
	MeanPowerW float64 `json:"mean_power_w"`
	NoFigure   bool    `json:"no_figure,omitempty"`
}

// MarkedOptions of Marked.
type MarkedOptions struct {
	// GPUs to give figures for (default: every GPU of the trace).
	GPUs []trace.GPU
	// Cache is shared by every region (default: a new one).
	Cache *Cache
	// SyncCheck looks at the power after each region's end for work that ran past it.
	SyncCheck bool
	// Host gives each region the host's RAPL domains' energy, and the node's total where
	// AllGPUs (every GPU of the machine is in the trace) and every part has a figure.
	Host, AllGPUs bool
}

// Marked gives every span its energy on each GPU (Region with one calibration
// per GPU fitted over the whole trace, shared by the regions) and, with o.SyncCheck,
// flags ends the power shows the work ran past (CheckSync).
func Marked(tr *trace.Trace, spans []marks.Span, o MarkedOptions) []MarkedRegion {
	gpus := o.GPUs
	if gpus == nil {
		gpus = tr.Meta.GPUs
	}
	cache := o.Cache
	if cache == nil {
		cache = &Cache{}
	}
	cals := map[int]*Calibration{}
	for _, g := range gpus {
		if c, err := FitCalibration(tr, g.Index, 0, 0); err == nil {
			cals[g.Index] = &c
		}
	}
	out := make([]MarkedRegion, 0, len(spans))
	for _, s := range spans {
		r := MarkedRegion{Name: s.Name, Instance: s.Instance, Depth: s.Depth, StartS: s.Start.Seconds(), EndS: s.End.Seconds(),
			DurationS: (s.End - s.Start).Seconds(), Start: s.Start, End: s.End, BeginLine: s.Begin.Line, EndLine: s.Stop.Line,
			GPUs: []GPUFigure{}, Warnings: []status.Warning{}}
		if s.Parent >= 0 {
			p := s.Parent
			r.Parent = &p
		}
		r.Timing = timing(s)
		what := fmt.Sprintf("region %s #%d", s.Name, s.Instance)
		for _, g := range gpus {
			ge := GPUFigure{Index: g.Index, UUID: g.UUID, Figure: Figure{Warnings: []status.Warning{}}}
			if s.End <= s.Start {
				ge.NoFigure = true
				ge.Warnings = append(ge.Warnings, status.Warnf(marks.CodeNoRegionFigs, "%s is empty (it ends where it begins): no energy figure", what))
				r.GPUs = append(r.GPUs, ge)
				continue
			}
			late, lateNote := arrivalLate(s)
			est := Region(tr, g.Index, s.Start, s.End, Options{What: what, Calibration: cals[g.Index], Cache: cache, Late: late, LateNote: lateNote})
			if est.Method == NoFigure {
				ge.Warnings = append(ge.Warnings, est.Warnings...)
				ge.NoFigure, ge.Method = true, est.Method
				r.GPUs = append(r.GPUs, ge)
				continue
			}
			ge.Figure = est.Figure
			ge.MeanPowerW = est.EnergyJ / (s.End - s.Start).Seconds()
			r.GPUs = append(r.GPUs, ge)
		}
		if o.Host && s.End > s.Start {
			r.Host = hostOf(tr, s, r.GPUs, o.AllGPUs)
		}
		out = append(out, r)
	}
	if o.SyncCheck {
		for _, g := range gpus {
			CheckSync(tr, g.Index, spans, out, cache)
		}
	}
	return out
}

func timing(s marks.Span) string {
	w := func(e marks.Event) string {
		switch {
		case e.Line == 0:
			return "process"
		case e.Stamped:
			return "writer"
		}
		return "arrival"
	}
	a, b := w(s.Begin), w(s.Stop)
	if a != b {
		return "mixed"
	}
	return a
}

// arrivalLate is how late a span's edges may be placed, both together: a marker stamped
// when it was read may have been written up to marks.ArrivalPoll before, at each such
// edge; the estimator adds that time at the region's mean power to the interval.
func arrivalLate(s marks.Span) (time.Duration, string) {
	n := 0
	for _, ev := range []marks.Event{s.Begin, s.Stop} {
		if ev.Line > 0 && !ev.Stamped {
			n++
		}
	}
	if n == 0 {
		return 0, ""
	}
	return time.Duration(n) * marks.ArrivalPoll, fmt.Sprintf("%d edge(s) stamped when the marker was read, up to %s after it was written: that time at the region's mean power, at each", n, marks.ArrivalPoll)
}

// LagAllowance is the least time the power may stay at a region's level after its end
// before CheckSync says the work ran past the marker: what the corrected power's bins
// (ActiveBins of them) and the markers' timing can blur, at least MinLag.
const (
	ActiveBins = 3
	MinLag     = 100 * time.Millisecond
	// LookAfter caps how far after an end CheckSync looks.
	LookAfter = 10 * time.Second
)

// CheckSync flags region ends that the power shows the work ran past: after the end of a
// region that drew clearly above idle, while no other region runs (up to the next begin,
// the command's end or LookAfter), the corrected power (PowerSeries on the best
// channel, bins of its update period) stays above halfway between the idle baseline and
// the region's mean power for longer than the sensor's lag and the bins explain
// (ActiveBins bins, at least MinLag, plus marks.ArrivalPoll for a marker stamped on arrival).
// A region synchronised at its end drops at once (a GPU's power falls within
// milliseconds when its work stops; the inversion undoes the sensor's lag). The
// warning goes to the region's entry of GPU gpu.
func CheckSync(tr *trace.Trace, gpu int, spans []marks.Span, regions []MarkedRegion, cache *Cache) {
	if len(spans) == 0 {
		return
	}
	idle, idleText := 0.0, "no idle baseline: halfway to 0 W"
	if b, ok := correct.TraceBaseline(tr, gpu); ok {
		if est := Region(tr, gpu, b.From, b.To, Options{What: "the baseline", Cache: cache}); est.Method != NoFigure {
			idle = est.EnergyJ / (b.To - b.From).Seconds()
			idleText = fmt.Sprintf("%s %.0f W", b.Level, idle)
		}
	}
	end := time.Duration(tr.Meta.Duration * float64(time.Second))
	for i, s := range spans {
		gi := -1
		for k, ge := range regions[i].GPUs {
			if ge.Index == gpu {
				gi = k
			}
		}
		if gi < 0 {
			continue
		}
		ge := regions[i].GPUs[gi]
		level := ge.MeanPowerW
		drew := !ge.NoFigure && level-idle >= 0.2*max(idle, 1) && level-idle >= 20
		// The gap after the end while no region is open: up to the next begin of any region
		// (one that begins at this very end included: an adjacent region's work is its own),
		// unless another region is still open at this end.
		open := false
		next := min(end, s.End+LookAfter)
		for j, o := range spans {
			if j == i {
				continue
			}
			if o.Start < s.End && o.End > s.End {
				open = true
				break
			}
			if o.Start >= s.End {
				next = min(next, o.Start)
			}
		}
		if open || next <= s.End {
			continue
		}
		ser, err := PowerSeries(tr, gpu, s.End, next, 0, Options{Cache: cache})
		if err != nil || len(ser.Points) == 0 {
			continue
		}
		allow := max(time.Duration(ActiveBins*ser.StepS*float64(time.Second)), MinLag)
		if s.Stop.Line > 0 && !s.Stop.Stamped {
			allow += marks.ArrivalPoll
		}
		if next-s.End <= allow {
			continue // the next region starts before the power could tell
		}
		// A region too short for the sensor to see its own work (Begin, a launch, End
		// without a synchronise: no time at all on the twin) is judged by the power after
		// it against idle: its mean says nothing of its work, which ran after its end. It
		// was not flagged, and the region before it was blamed for its work.
		short := s.End-s.Start <= allow
		if !drew && !short {
			continue // the region drew too little above idle to tell its work from none
		}
		thr := idle + (level-idle)/2
		if short {
			floor := idle
			if floor == 0 {
				// No idle baseline (a Go program's recording): the lowest of the gap's power.
				floor = ser.Points[0].PowerW
				for _, p := range ser.Points {
					floor = min(floor, p.PowerW)
				}
			}
			thr = floor + max(20, 0.2*max(floor, 1))
		}
		ran := next - s.End
		for _, p := range ser.Points {
			if p.PowerW < thr {
				ran = time.Duration(p.StartS*float64(time.Second)) - s.End
				break
			}
		}
		if ran <= allow {
			continue
		}
		var mean, n float64
		for _, p := range ser.Points {
			if time.Duration(p.StartS*float64(time.Second))-s.End < ran {
				mean += p.PowerW
				n++
			}
		}
		if n > 0 {
			mean /= n
		}
		r := &regions[i]
		if short {
			r.GPUs[gi].Warnings = append(r.GPUs[gi].Warnings, status.Warning{Code: marks.CodeUnsynced, Key: s.Name, Value: ran.Seconds(), Unit: "s",
				Message: fmt.Sprintf("the power rose to %.0f W (%s) for %.2f s after %s, while no region ran: the region lasted %.3f s, too short for its own work, which ran after its end marker (written before the GPU finished); synchronise the GPU before writing it (torch.cuda.synchronize(), cudaDeviceSynchronize()): this region's energy is too low",
					mean, idleText, ran.Seconds(), s.Stop.Where(), (s.End - s.Start).Seconds())})
			continue
		}
		r.GPUs[gi].Warnings = append(r.GPUs[gi].Warnings, status.Warning{Code: marks.CodeUnsynced, Key: s.Name, Value: ran.Seconds(), Unit: "s",
			Message: fmt.Sprintf("the power stayed at %.0f W (the region's mean %.0f W, %s) for %.2f s after %s, while no region ran: longer than the sensor's lag and the markers' timing explain (%.2f s). The work this region measured ran past its end marker (written before the GPU finished); synchronise the GPU before writing it (torch.cuda.synchronize(), cudaDeviceSynchronize()): this region's energy is too low",
				mean, level, idleText, ran.Seconds(), s.Stop.Where(), allow.Seconds())})
	}
}

// hostOf is a region's host energy: each RAPL domain's over the span, with an edge stamped
// on arrival (its marker written up to marks.ArrivalPoll before it was read) widening the
// interval to every span the marker allows (the domain's energy grows with the span: the
// least over the shortest, the most over the longest), and the node's total.
func hostOf(tr *trace.Trace, s marks.Span, gpus []GPUFigure, all bool) *HostEnergy {
	late := func(e marks.Event) time.Duration {
		if e.Line > 0 && !e.Stamped {
			return marks.ArrivalPoll
		}
		return 0
	}
	lb, le := late(s.Begin), late(s.Stop)
	var parts []GPUPart
	for _, g := range gpus {
		parts = append(parts, GPUPart{Index: g.Index, OK: !g.NoFigure && g.OK(), Interval: g.Interval})
	}
	mid := HostOver(tr, s.Start-lb/2, s.End-le/2, parts, all, "")
	if mid == nil || lb+le == 0 {
		return mid
	}
	short := HostRegions(tr, s.Start, s.End-le)
	long := HostRegions(tr, s.Start-lb, s.End)
	for i := range mid.Domains {
		d := &mid.Domains[i]
		if !d.OK() || !short[i].OK() || !long[i].OK() {
			continue
		}
		d.LowJ, d.HighJ = min(d.LowJ, short[i].LowJ), max(d.HighJ, long[i].HighJ)
		d.AbsoluteLowJ, d.AbsoluteHighJ = d.LowJ, d.HighJ
		d.Uncertainty.HalfWidthJ = (d.HighJ - d.LowJ) / 2
		d.Uncertainty.AbsoluteLowJ, d.Uncertainty.AbsoluteHighJ = d.LowJ, d.HighJ
		d.Uncertainty.Components = append(slices.Clone(d.Uncertainty.Components), Component{Name: "markers", Known: true,
			Note: fmt.Sprintf("edge(s) stamped when the marker was read, up to %s after it was written: the interval spans every region the markers allow", marks.ArrivalPoll)})
		d.MeanPowerW = d.EnergyJ / (s.End - s.Start).Seconds()
	}
	mid.SetNode(parts, all, "")
	return mid
}
