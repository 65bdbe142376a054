package job

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Warning codes of job end.
const (
	CodeRecorderDied = "recorder_died"
	CodeNoCounter    = "no_counter"
)

// CounterOnly is the source of a GPU's figure when the recorder's trace is missing: the
// difference of the counter readings of begin and end.
const CounterOnly energy.Method = "counter_begin_end"

// AssumedCounterPeriod is the energy counter's update period taken where no trace shows
// it (the recorder died): 100 ms on the boards measured (FACTS.md: H100, H200).
const AssumedCounterPeriod = 100 * time.Millisecond

// GPUResult is one GPU's energy over the job: the estimator's figure over the job's span
// (Method is counter, calibrated_ring, inversion, counter_interpolated, or CounterOnly), or
// begin's and end's counter readings alone where the recorder's trace is missing.
type GPUResult struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	energy.Figure
	Corrected  bool    `json:"corrected"`
	MeanPowerW float64 `json:"mean_power_w"`
	// CounterBeginJ and CounterEndJ are the counter's readings by begin and end (absent
	// where none).
	CounterBeginJ *float64 `json:"counter_begin_j,omitempty"`
	CounterEndJ   *float64 `json:"counter_end_j,omitempty"`
}

// UnmarshalJSON reads a GPU of job.json, also as gpuwatt before issue 27 wrote it: the
// method under "source" and the description under "energy_source".
func (g *GPUResult) UnmarshalJSON(b []byte) error {
	type plain GPUResult
	var old struct {
		Method       *string `json:"method"`
		Source       string  `json:"source"`
		EnergySource *string `json:"energy_source"`
	}
	if err := json.Unmarshal(b, (*plain)(g)); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return err
	}
	if old.Method == nil && old.EnergySource != nil {
		g.Method, g.Source = energy.Method(old.Source), *old.EnergySource
	}
	return nil
}

// Result is job.json.
type Result struct {
	Format string `json:"format"`
	Job
	End time.Time `json:"end"`
	// StartS and EndS bound the job's span on the job's axis (begin's and end's counter
	// readings), SpanS its length.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	SpanS  float64 `json:"span_s"`
	status.Status
	// Recorder says what became of the recorder: "ok" (its trace was used) or why not.
	Recorder string      `json:"recorder"`
	GPUs     []GPUResult `json:"gpus"`
	// The job's energy over its GPUs: energy.IndependentSum of their figures (the
	// half-widths in quadrature: their errors are independent).
	energy.Interval
	// HostEnergy is the host's CPU packages' and DRAM's energy over the job (RAPL) and the
	// node's total, or the one line saying why there is none (absent: begin did not read it).
	HostEnergy *HostResult `json:"host_energy,omitempty"`
	// AdminComment is what `sacctmgr ... set AdminComment=` stores (docs/slurm.md).
	AdminComment string `json:"admin_comment"`
}

// Compute turns begin's record, end's counter readings (by GPU index; absent where none)
// at endT and its host readings (nil: none), and the recorder's trace (nil where there is
// none; recorderWhy says why) into the job's result.
func Compute(b *Begin, end map[int]*Counter, endHost *HostReadings, endT time.Duration, tr *trace.Trace, recorderWhy string) *Result {
	r := &Result{Format: Format, Job: b.Job, End: b.Start.Add(endT), Status: status.Status{Warnings: []status.Warning{}}, Recorder: "ok", GPUs: []GPUResult{}}
	from, to := time.Duration(0), endT
	for _, g := range b.GPUs {
		if g.Counter != nil {
			from = max(from, secs(g.Counter.T)) // the last begin reading: every GPU's counter is read by then
		}
	}
	for _, c := range end {
		to = min(to, secs(c.T))
	}
	r.StartS, r.EndS, r.SpanS = from.Seconds(), to.Seconds(), (to - from).Seconds()
	if tr == nil {
		r.Recorder = recorderWhy
		r.Incomplete = true
		r.Reason = "no recording of the job (" + recorderWhy + "): the energy is the counters' difference between begin and end"
		r.Warnings = append(r.Warnings, status.Warnf(CodeRecorderDied, "the recorder's trace is missing (%s): each GPU's energy is its counter's difference between begin and end, its interval from the counter's update period (%s, assumed) at the power limit", recorderWhy, AssumedCounterPeriod))
	} else {
		merge(tr, b, end)
	}
	cache := &energy.Cache{}
	var parts []energy.Interval
	for _, g := range b.GPUs {
		gr := GPUResult{Index: g.Index, UUID: g.UUID, Name: g.Name, Figure: energy.Figure{Warnings: []status.Warning{}}}
		if g.Counter != nil {
			v := g.Counter.EnergyJ
			gr.CounterBeginJ = &v
		}
		if c := end[g.Index]; c != nil {
			v := c.EnergyJ
			gr.CounterEndJ = &v
		}
		if tr != nil {
			gr.Figure = GPUFigure(tr, g, from, to, cache)
			gr.Corrected = gr.Method == energy.CalibratedRing || gr.Method == energy.Inversion
		} else {
			counterOnly(&gr, g, to-from)
		}
		if !gr.OK() {
			r.Incomplete = true
			r.Reason = joinReason(r.Reason, fmt.Sprintf("GPU %d has no energy figure", g.Index))
		}
		if r.SpanS > 0 {
			gr.MeanPowerW = gr.EnergyJ / r.SpanS
		}
		parts = append(parts, gr.Interval)
		r.GPUs = append(r.GPUs, gr)
	}
	r.Interval = energy.IndependentSum(parts)
	r.HostEnergy = hostResult(b, endHost, tr, recorderWhy, r.GPUs, from, to)
	r.AdminComment = AdminComment(r)
	return r
}

// GPUFigure is GPU g's figure over the job's span [from, to] of the recorder's trace: the
// estimator's, told that the span's edges are begin's and end's own counter readings
// (energy.CounterEdges: each late by at most the counter's update period).
func GPUFigure(tr *trace.Trace, g BeginGPU, from, to time.Duration, cache *energy.Cache) energy.Figure {
	period, assumed := AssumedCounterPeriod, true
	if ch, ok := tr.Channel(g.Index, trace.ChEnergyTotal); ok && ch.Stats != nil && ch.Stats.UpdatePeriod > 0 {
		period, assumed = secs(ch.Stats.UpdatePeriod), false
	}
	edges := &energy.CounterEdges{Period: period, PeriodAssumed: assumed, LimitW: g.PowerLimitW, Readings: edgeReadings}
	return energy.Region(tr, g.Index, from, to, energy.Options{What: "the job", Cache: cache, CounterEdges: edges}).Figure
}

// edgeReadings names a job's edges in the edges component's note.
const edgeReadings = "begin's and end's counter readings"

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// merge adds begin's and end's counter readings to the trace's counter series: the same
// counter on the same axis, read just before the recorder started and just after it
// stopped polling, so the job's edges have a reading each. Their stamps are the middle of
// their own calls; the recorder stamps a value that changed since its last poll half-way
// back to that poll, so a value it read after end's reading may carry an earlier stamp:
// a recorder reading that contradicts begin's or end's (a later stamp with a smaller value,
// or an earlier one with a larger) is left out, or the counter would seem to have reset.
func merge(tr *trace.Trace, b *Begin, end map[int]*Counter) {
	type anchor struct {
		t time.Duration
		v float64
	}
	anchors := map[int][]anchor{}
	var add []trace.Sample
	for _, g := range b.GPUs {
		if _, ok := tr.Channel(g.Index, trace.ChEnergyTotal); !ok {
			continue
		}
		for _, c := range []*Counter{g.Counter, end[g.Index]} {
			if c != nil {
				anchors[g.Index] = append(anchors[g.Index], anchor{secs(c.T), c.EnergyJ})
				add = append(add, trace.Sample{T: secs(c.T), GPU: g.Index, Channel: trace.ChEnergyTotal, Value: c.EnergyJ})
			}
		}
	}
	if len(add) == 0 {
		return
	}
	kept := tr.Samples[:0]
	for _, s := range tr.Samples {
		if s.Channel == trace.ChEnergyTotal {
			bad := false
			for _, a := range anchors[s.GPU] {
				bad = bad || (s.T < a.t && s.Value > a.v) || (s.T > a.t && s.Value < a.v)
			}
			if bad {
				continue
			}
		}
		kept = append(kept, s)
	}
	tr.Samples = append(kept, add...)
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

// counterOnly is a GPU's figure from begin's and end's counter readings alone. Each reading
// may be late by up to the counter's update period (assumed), in which the board drew at
// most its power limit: the difference is within ± limit × period, plus a quantum at each end.
func counterOnly(gr *GPUResult, g BeginGPU, span time.Duration) {
	gr.Method, gr.Channel, gr.Source = CounterOnly, trace.ChEnergyTotal, trace.ChEnergyTotal+" (begin and end readings only)"
	gr.Uncertainty = energy.Uncertainty{Components: []energy.Component{}, GainErrorFraction: energy.BoardGainError}
	if g.Counter == nil || gr.CounterEndJ == nil {
		gr.Method, gr.Channel, gr.Source = energy.NoFigure, "", ""
		why := "begin has no reading of its energy counter"
		if g.Counter != nil {
			why = "end could not read its energy counter"
		}
		gr.Warnings = append(gr.Warnings, status.Warnf(CodeNoCounter, "GPU %d: %s and the recorder's trace is missing: no energy figure", g.Index, why))
		return
	}
	e := *gr.CounterEndJ - g.Counter.EnergyJ
	gr.EnergyJ = e
	gr.Note = fmt.Sprintf("%s at begin and at end, %s apart", trace.ChEnergyTotal, energy.FmtDur(span.Seconds()))
	gr.Uncertainty.Components = append(gr.Uncertainty.Components, energy.Component{Name: "readings", HalfWidthJ: 2 * energy.CounterQuantumJ, Known: true,
		Note: "the counter counts in mJ (NVML's unit): a quantum at each end"})
	edges := energy.CounterEdges{Period: AssumedCounterPeriod, PeriodAssumed: true, LimitW: g.PowerLimitW, Readings: edgeReadings}
	gr.Uncertainty.Components = append(gr.Uncertainty.Components, edges.Component(g.PowerLimitW, "its power limit"))
	gr.Finish()
}

// AdminComment is what job end stores in the job's AdminComment: Slurm's own key=value
// list (as its TRES strings are written), numbers to 0.1 J:
//
//	gpuwatt=gpuwatt-job/1,energy_j=786.9,low_j=780.9,high_j=792.8,span_s=1.3[,incomplete=1][,simulated=1],gpuN=UUID/ENERGY/LOW/HIGH/METHOD,...[,cpu_j=E/L/H][,dram_j=E/L/H][,psys_j=E/L/H][,node_j=E/L/H]
//
// with each GPU's node index N, its UUID without "GPU-", lower case; energy_j is the GPUs'
// alone; cpu_j (every CPU package), dram_j, psys_j and node_j (GPUs, packages and DRAM)
// where the host's RAPL counters gave them. It holds no capital
// letter, no quote and no space: sacctmgr lower-cases what it stores and turns double quotes
// into backquotes (Slurm 22.05, deploy/slurm/ci-test.sh: a JSON comment came back from sacct
// as {`gpuwatt`:...,`uuid`:`gpu-5a1d...`}), so this is what sacct gives back, unchanged.
func AdminComment(r *Result) string {
	f := func(v float64) string { return strconv.FormatFloat(r1(v), 'f', -1, 64) }
	parts := []string{"gpuwatt=" + Format, "energy_j=" + f(r.EnergyJ), "low_j=" + f(r.LowJ), "high_j=" + f(r.HighJ), "span_s=" + f(r.SpanS)}
	if r.Incomplete {
		parts = append(parts, "incomplete=1")
	}
	if r.Simulated {
		// The sim device stood in (--device sim): none of it was measured.
		parts = append(parts, "simulated=1")
	}
	for _, g := range r.GPUs {
		uuid := strings.ToLower(strings.TrimPrefix(g.UUID, "GPU-"))
		parts = append(parts, fmt.Sprintf("gpu%d=%s/%s/%s/%s/%s", g.Index, uuid, f(g.EnergyJ), f(g.LowJ), f(g.HighJ), strings.ToLower(string(g.Method))))
	}
	parts = append(parts, hostComment(r.HostEnergy, f)...)
	return strings.Join(parts, ",")
}

func r1(v float64) float64 { return math.Round(v*10) / 10 }

// SacctmgrArgs are the arguments of the sacctmgr call that stores the AdminComment.
func SacctmgrArgs(r *Result) []string {
	return []string{"-i", "modify", "job", "where", "jobid=" + r.JobID, "set", "AdminComment=" + r.AdminComment}
}

// SacctmgrLine is that call as a shell line: the comment in single quotes.
func SacctmgrLine(r *Result) string {
	return "sacctmgr -i modify job where jobid=" + shellQuote(r.JobID) + " set AdminComment=" + shellQuote(r.AdminComment)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteText prints the result for people: one line per GPU and the job's total.
func WriteText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "gpuwatt job end: job %s on %s, %s (%s to %s)\n", r.JobID, r.Host, energy.FmtDur(r.SpanS), r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339))
	for _, g := range r.GPUs {
		if !g.OK() {
			fmt.Fprintf(w, "  GPU %d %s: no energy figure\n", g.Index, g.UUID)
			continue
		}
		fmt.Fprintf(w, "  GPU %d %s: %s (95 %%: %.1f to %.1f J), %.1f W mean, from %s\n", g.Index, g.UUID, energy.FmtPM(g.EnergyJ, g.HalfWidthJ()), g.LowJ, g.HighJ, g.MeanPowerW, g.Source)
	}
	fmt.Fprintf(w, "  job: %.1f J (95 %%: %.1f to %.1f J)\n", r.EnergyJ, r.LowJ, r.HighJ)
	writeHostText(w, r.HostEnergy)
	if r.Incomplete {
		fmt.Fprintf(w, "  incomplete: %s\n", r.Reason)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", wn.Message)
	}
	for _, g := range r.GPUs {
		for _, wn := range g.Warnings {
			fmt.Fprintf(w, "  warning (GPU %d): %s\n", g.Index, wn.Message)
		}
	}
}
