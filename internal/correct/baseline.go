package correct

import (
	"fmt"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// The two idle levels, named alike in every verb and output (gpu.Idle).
const (
	// IdleAtRest is the board with no CUDA context open, long after any load (76–81 W on
	// the H200s measured): what `gpuwatt measure`'s baseline sees before the command.
	IdleAtRest = "idle at rest"
	// ActiveIdle is the board with a CUDA context open and nothing running (~120 W on the
	// H200): what the verbs that run gpuwatt's own kernels record as their idle.
	ActiveIdle = "active idle"
)

// Baseline is a stretch of a trace recorded idle on purpose: its mean power is the trace's
// own idle level. The zero Baseline is none.
type Baseline struct {
	From, To time.Duration
	// Level is IdleAtRest or ActiveIdle: which idle the stretch was recorded at.
	Level string
	// What says where the stretch lies, for people: "before the command".
	What string
}

// Set reports whether b is a baseline (of positive length).
func (b Baseline) Set() bool { return b.To > b.From }

// Describe is b for people: "the trace's baseline (0 s to 1 s, before the command)".
func (b Baseline) Describe() string {
	return fmt.Sprintf("the trace's baseline (%s to %s, %s)", units.FormatInstant(b.From.Seconds()), units.FormatInstant(b.To.Seconds()), b.What)
}

// TraceBaseline finds the idle baseline that a gpuwatt trace of GPU gpu records, from its
// marks: `measure`'s (from the start of the recording to the command's start: idle at
// rest, since the command's CUDA context is not open yet), the idle recording of micro,
// archline and characterize (gpuN.idle.start to gpuN.idle.end) and of sensor
// (idle.start to idle.end), both with gpuwatt's own context open: active idle. false where
// the trace has none (foreign formats, a baseline of 0 s).
func TraceBaseline(tr *trace.Trace, gpu int) (Baseline, bool) {
	at := map[string]time.Duration{}
	for _, m := range tr.Meta.Marks {
		if _, ok := at[m.Name]; !ok {
			at[m.Name] = time.Duration(m.T * float64(time.Second))
		}
	}
	start, haveReadings := tr.FirstReading(gpu)
	pick := func(from, to time.Duration, level, what string) (Baseline, bool) {
		b := Baseline{From: from, To: to, Level: level, What: what}
		return b, b.Set()
	}
	if s, ok := at[fmt.Sprintf("gpu%d.idle.start", gpu)]; ok {
		if e, ok := at[fmt.Sprintf("gpu%d.idle.end", gpu)]; ok {
			return pick(s, e, ActiveIdle, "before gpuwatt's kernels")
		}
	}
	if s, ok := at["idle.start"]; ok {
		if e, ok := at["idle.end"]; ok {
			return pick(s, e, ActiveIdle, "before the sensor's steps")
		}
	}
	if c, ok := at["cmd.start"]; ok && haveReadings {
		return pick(max(start, 0), c, IdleAtRest, "before the command")
	}
	return Baseline{}, false
}
