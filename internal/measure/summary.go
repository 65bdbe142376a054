package measure

import (
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

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
	// Status: whether the recording was cut short, and why; run-wide warnings (each GPU's
	// are in its summary).
	status.Status
	StartS          float64         `json:"start_s"` // the command's run on the trace's t_s axis
	EndS            float64         `json:"end_s"`
	DurationS       float64         `json:"duration_s"`
	BaselineS       float64         `json:"baseline_s"` // idle recording used for the idle power
	RecordingS      float64         `json:"recording_s"`
	SamplerCPUShare float64         `json:"sampler_cpu_share"` // CPU seconds per second of recording
	Poll            trace.Poll      `json:"poll"`
	GPUs            []GPUSummary    `json:"gpus"`
	Unavailable     []trace.Missing `json:"unavailable_channels,omitempty"`
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
	for _, g := range m.GPUs {
		s.GPUs = append(s.GPUs, region.Summarize(tr, g, r.Start, r.End, b0, r.Start, region.Options{What: "the command", IdleLevel: correct.IdleAtRest, ChannelIntervals: true, EnergyCache: &energy.Cache{}}))
	}
	return s
}

// ReasonNames renders a clock-event mask as names.
func ReasonNames(mask uint64) string { return region.ReasonNames(mask) }

func fmtDur(sec float64) string { return energy.FmtDur(sec) }
