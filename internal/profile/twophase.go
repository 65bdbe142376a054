package profile

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu"
)

// A two-phase kernel (issue 13's known shape): an fp32.fma kernel of one length launched
// back to back with a DRAM-streaming kernel (dram.read) of another, in the same stream, as
// one run. `--kernel 4ms+4ms`. Each phase's steady power is measured apart, over long
// back-to-back runs of that phase alone, and the profile is checked against it.

// TwoPhaseNames are the kernels of the two phases.
var TwoPhaseNames = [2]string{"fp32.fma", "dram.read"}

// ParseTwoPhase reads a --kernel of the form "A+B" (two durations: the FMA phase, then the
// memory phase); ok is false where s is not of that form.
func ParseTwoPhase(s string) (a, b time.Duration, ok bool, err error) {
	l, r, found := strings.Cut(strings.TrimSpace(s), "+")
	if !found {
		return 0, 0, false, nil
	}
	a, e1 := time.ParseDuration(strings.TrimSpace(l))
	b, e2 := time.ParseDuration(strings.TrimSpace(r))
	if e1 != nil || e2 != nil || a < 100*time.Microsecond || b < 100*time.Microsecond || a+b > 10*time.Second {
		return 0, 0, true, fmt.Errorf("--kernel %q: a two-phase kernel is two durations of at least 100us, together at most 10s, such as 4ms+4ms (FMA, then memory streaming)", s)
	}
	return a, b, true, nil
}

// chain runs two kernels back to back as one run and records where the first ended.
type chain struct {
	a, b gpu.Kernel
	mu   sync.Mutex
	// sums of the first phase's end and the second's start since the run's start, s
	endA, startB float64
	runs         int
	// the last run's
	lastA, lastB time.Duration
}

func (c *chain) Run(n int) (start, end time.Duration, err error) {
	if n < 1 {
		return 0, 0, errors.New("run: n must be at least 1")
	}
	for i := 0; i < n; i++ {
		sa, ea, err := c.a.Run(1)
		if err != nil {
			return 0, 0, err
		}
		sb, eb, err := c.b.Run(1)
		if err != nil {
			return 0, 0, err
		}
		if i == 0 {
			start = sa
		}
		end = eb
		c.mu.Lock()
		c.endA += (ea - sa).Seconds()
		c.startB += (sb - sa).Seconds()
		c.runs++
		c.lastA, c.lastB = ea-sa, sb-sa
		c.mu.Unlock()
	}
	return start, end, nil
}

// last implements phased: the first phase's end and the second's start in the last run.
func (c *chain) last() (endA, startB time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastA, c.lastB
}

func (c *chain) Close() error { return errors.Join(c.a.Close(), c.b.Close()) }

// reset forgets the boundaries recorded so far (those of the long runs).
func (c *chain) reset() {
	c.mu.Lock()
	c.endA, c.startB, c.runs = 0, 0, 0
	c.mu.Unlock()
}

// boundary is the mean end of the first phase and start of the second since the run's start.
func (c *chain) boundary() (endA, startB float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == 0 {
		return 0, 0
	}
	return c.endA / float64(c.runs), c.startB / float64(c.runs)
}

// Phase is one phase of a two-phase kernel, checked against its steady power.
type Phase struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"` // since the kernel's start (mean over the runs)
	EndS   float64 `json:"end_s"`
	// SteadyW is the phase's power in steady state: long back-to-back runs of this phase's
	// kernel alone, on the profiled channel (SteadySource says which figure).
	SteadyW      float64 `json:"steady_w"`
	SteadySource string  `json:"steady_source"`
	// ProfileW is the profile's mean over the phase's interior: the bins that lie wholly
	// within the phase less half the resolution and the placement at each edge; Bins counts
	// them (0: the phase is shorter than that, not resolved). BandW is the mean of those
	// bins' 95 % half-widths.
	ProfileW float64 `json:"profile_w"`
	BandW    float64 `json:"band_w"`
	Bins     int     `json:"bins"`
	// Diff is (ProfileW − SteadyW) / SteadyW; Resolved: interior bins exist and |Diff| <= 5 %.
	Diff     float64 `json:"diff"`
	Resolved bool    `json:"resolved"`
}

// Transition is the step between the phases as the profile shows it.
type Transition struct {
	// AtS is the true boundary (the first phase's mean end, from the kernels' timing),
	// MidS where the profile crosses halfway between the phases' steady powers (taken at
	// the scale the profile shows them: its energy above the baseline against theirs),
	// WidthS its 10-90 % width. ResolutionS and PlacementS are the width and placement
	// stated for this step (its own height, against the fit's noise: the step test of the
	// profile's resolution, run on this shape); Within: WidthS at most ResolutionS and
	// |MidS − AtS| at most PlacementS plus half of ResolutionS.
	AtS         float64 `json:"at_s"`
	MidS        float64 `json:"mid_s"`
	WidthS      float64 `json:"width_s"`
	ResolutionS float64 `json:"resolution_s"`
	PlacementS  float64 `json:"placement_s"`
	Within      bool    `json:"within_resolution"`
}

// MaxPhaseDiff is how far a resolved phase's profile may lie from its steady power.
const MaxPhaseDiff = 0.05

// CheckPhases compares the profile with the phases' steady powers (SteadyW set) and places
// the transition; it sets r.Transition and each phase's profile figures.
func (r *Result) CheckPhases(ph []Phase) {
	if len(r.Profile) < 2 || len(ph) != 2 {
		r.Phases = ph
		return
	}
	edge := r.ResolutionS/2 + r.PlacementS
	for i := range ph {
		p := &ph[i]
		lo, hi := p.StartS+edge, p.EndS-edge
		var sum, band float64
		n := 0
		for _, b := range r.Profile {
			if b.StartS >= lo && b.EndS <= hi {
				sum += b.PowerW
				band += (b.HighW - b.LowW) / 2
				n++
			}
		}
		p.Bins = n
		if n > 0 {
			p.ProfileW, p.BandW = sum/float64(n), band/float64(n)
			if p.SteadyW > 0 {
				p.Diff = (p.ProfileW - p.SteadyW) / p.SteadyW
				p.Resolved = math.Abs(p.Diff) <= MaxPhaseDiff
			}
		}
	}
	r.Phases = ph
	if ph[0].SteadyW <= 0 || ph[1].SteadyW <= 0 {
		return
	}
	x := make([]float64, len(r.Profile))
	for j, b := range r.Profile {
		x[j] = b.PowerW
	}
	g := bins{a0: r.Profile[0].StartS, h: r.Profile[0].EndS - r.Profile[0].StartS, m: len(r.Profile)}
	// The levels: the steady powers at the scale the profile shows them (a model's error in
	// the lag scales the power above the baseline by about the ratio of the lags), from the
	// profile's energy above its baseline against theirs.
	b := r.BaselineW
	want := (ph[0].SteadyW-b)*(ph[0].EndS-ph[0].StartS) + (ph[1].SteadyW-b)*(ph[1].EndS-ph[1].StartS)
	scale := 1.0
	if want > 0 && r.EnergyAboveBaselineJ > 0 {
		scale = r.EnergyAboveBaselineJ / want
	}
	at := ph[0].EndS
	w, mid := stepWidth(x, g, b+scale*(ph[0].SteadyW-b), b+scale*(ph[1].SteadyW-b), at, ph[0].StartS, ph[1].EndS)
	t := &Transition{AtS: at, MidS: mid, WidthS: w, ResolutionS: r.ResolutionS, PlacementS: r.PlacementS}
	if st := r.stepper; st != nil {
		// this step's own height against the fit's noise
		s := st.measureTransition(ph[0].SteadyW-b, ph[1].SteadyW-b, at)
		t.ResolutionS, t.PlacementS = max(s.width, g.h), s.offset+st.shift
	}
	t.Within = w <= t.ResolutionS && math.Abs(mid-at) <= t.PlacementS+t.ResolutionS/2
	r.Transition = t
}
