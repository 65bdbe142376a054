package energy

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Interval is an energy with its 95 % intervals: the numbers of a Figure, and of a sum of
// Figures (a job's GPUs, a command's boards). LowJ and HighJ are on the board's own scale
// (what repeats on this board, so figures of one board compare within them); AbsoluteLowJ
// and AbsoluteHighJ add the board's gain error (BoardGainError): the bounds of the true
// energy. Partial: a component of the interval could not be computed, so it is a floor.
type Interval struct {
	EnergyJ       float64 `json:"energy_j"`
	LowJ          float64 `json:"energy_low_j"`
	HighJ         float64 `json:"energy_high_j"`
	AbsoluteLowJ  float64 `json:"absolute_low_j"`
	AbsoluteHighJ float64 `json:"absolute_high_j"`
	Partial       bool    `json:"partial,omitempty"`
}

// IndependentSum is the sum of figures whose errors are independent (a job's GPUs): the
// energies added, each interval's half-widths (relative and absolute) in quadrature,
// partial where one is. Where the parts may share an error (the boards of one command
// share its edges), NodeTotal adds the bounds instead.
func IndependentSum(parts []Interval) Interval {
	var s Interval
	var rel, abs float64
	for _, p := range parts {
		s.EnergyJ += p.EnergyJ
		rel += math.Pow((p.HighJ-p.LowJ)/2, 2)
		abs += math.Pow((p.AbsoluteHighJ-p.AbsoluteLowJ)/2, 2)
		s.Partial = s.Partial || p.Partial
	}
	rel, abs = math.Sqrt(rel), math.Sqrt(abs)
	s.LowJ, s.HighJ = s.EnergyJ-rel, s.EnergyJ+rel
	s.AbsoluteLowJ, s.AbsoluteHighJ = s.EnergyJ-abs, s.EnergyJ+abs
	return s
}

// Per is the interval of one of n > 0 equal shares of the energy (per launch: n launches).
func (iv Interval) Per(n float64) Interval {
	return Interval{EnergyJ: iv.EnergyJ / n, LowJ: iv.LowJ / n, HighJ: iv.HighJ / n,
		AbsoluteLowJ: iv.AbsoluteLowJ / n, AbsoluteHighJ: iv.AbsoluteHighJ / n, Partial: iv.Partial}
}

// HalfWidthJ is the relative interval's half-width.
func (iv Interval) HalfWidthJ() float64 { return (iv.HighJ - iv.LowJ) / 2 }

// Figure is a measured energy: the one value every result that reports an energy embeds
// (its JSON is flat in theirs). Method says how it was found (counter, calibrated_ring,
// inversion, counter_interpolated, or a caller's own such as counter_begin_end), Channel
// from which channel's readings, Source says both for people ("power.samples (calibrated
// to energy.total)") and Note why this method. Uncertainty is the interval's budget: its
// components, each known or not.
type Figure struct {
	Interval
	Method      Method           `json:"method"`
	Channel     string           `json:"channel"`
	Source      string           `json:"source"`
	Note        string           `json:"note,omitempty"`
	Uncertainty Uncertainty      `json:"uncertainty"`
	Warnings    []status.Warning `json:"warnings"`
}

// OK says whether there is a figure (Method is set and not NoFigure).
func (f Figure) OK() bool { return f.Method != "" && f.Method != NoFigure }

// add appends a component to the budget (interval() then totals them).
func (f *Figure) add(c Component) {
	f.Uncertainty.Components = append(f.Uncertainty.Components, c)
}

// Finish sets the intervals and the Uncertainty's totals from its components: the known
// ones combined as independent (root sum of squares), an unknown one marking the interval
// partial; the board's gain error added apart for the absolute interval.
func (f *Figure) Finish() {
	u := &f.Uncertainty
	u.Partial = false
	for _, c := range u.Components {
		if !c.Known {
			u.Partial = true
		}
	}
	u.HalfWidthJ = knownHalfWidth(u.Components)
	u.GainErrorFraction = BoardGainError
	u.GainHalfWidthJ = BoardGainError * math.Abs(f.EnergyJ)
	abs := math.Hypot(u.HalfWidthJ, u.GainHalfWidthJ)
	u.AbsoluteLowJ, u.AbsoluteHighJ = f.EnergyJ-abs, f.EnergyJ+abs
	u.GainNote = fmt.Sprintf("the board's gain error, ±%.0f %% (NVML's documented accuracy; boards of one model differ as much): it cancels between figures of one board, so it is left out of the relative interval", 100*BoardGainError)
	f.LowJ, f.HighJ = f.EnergyJ-u.HalfWidthJ, f.EnergyJ+u.HalfWidthJ
	f.AbsoluteLowJ, f.AbsoluteHighJ, f.Partial = u.AbsoluteLowJ, u.AbsoluteHighJ, u.Partial
}

// knownHalfWidth is the half-width of the known components cs in quadrature (Finish's).
func knownHalfWidth(cs []Component) float64 {
	var ss float64
	for _, c := range cs {
		if c.Known {
			ss += c.HalfWidthJ * c.HalfWidthJ
		}
	}
	return math.Sqrt(ss)
}

// Scale is the figure of a share k > 0 of the energy (per launch: 1/launches): every
// energy and half-width × k, the rest as it is.
func (f Figure) Scale(k float64) Figure {
	f.Interval = Interval{EnergyJ: f.EnergyJ * k, LowJ: f.LowJ * k, HighJ: f.HighJ * k,
		AbsoluteLowJ: f.AbsoluteLowJ * k, AbsoluteHighJ: f.AbsoluteHighJ * k, Partial: f.Partial}
	u := f.Uncertainty
	u.HalfWidthJ *= k
	u.GainHalfWidthJ *= k
	u.AbsoluteLowJ *= k
	u.AbsoluteHighJ *= k
	u.Components = slices.Clone(u.Components)
	for i := range u.Components {
		u.Components[i].HalfWidthJ *= k
	}
	f.Uncertainty = u
	return f
}
