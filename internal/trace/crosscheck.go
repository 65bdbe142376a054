package trace

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Warning codes of the cross-checks a trace gets when it is read.
const (
	CodeDuplicateTime status.Code = "duplicate_time"   // readings of one channel share a time with different values
	CodeCounterJump   status.Code = "counter_jump"     // the energy counter rises faster than any board draws: not used
	CodeCounterStuck  status.Code = "counter_stuck"    // the energy counter holds still while the power channels draw
	CodeTruncatedRow  status.Code = "truncated_row"    // the last row has no line break: cut short, dropped
	CodeNoGPUColumn   status.Code = "gpus_by_position" // an nvidia-smi log of several GPUs without an index column
)

// crossCheck looks at what was read before any figure is made from it, and keeps what
// cannot be trusted from making one: readings of a channel that share a time with
// different values are named (the later is the one a figure keeps); an energy counter that
// rises faster than any board can draw (MaxBoardPowerW, or three times the highest power
// any channel of its GPU read, plus 100 W) is removed from the trace, named in
// Meta.Unavailable and in a warning, so the figures come from the power channels (a jump
// gave 16x the truth with a ±1 % interval); a counter that stays still while the power
// channels draw is named.
//
// The channels are looked at by GPU and name, so that the warnings come in one order
// whatever the rows' order: Keys' order of first reading is the file's in a compact read and
// the time-sorted one in a full read of rows out of order, which put Read's and
// ReadCompact's warnings in different orders (FuzzReadCompact).
func (tr *Trace) crossCheck() {
	keys := tr.Keys()
	slices.SortFunc(keys, func(a, b Key) int {
		if a.GPU != b.GPU {
			return a.GPU - b.GPU
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, k := range keys {
		r := tr.Readings(k.GPU, k.Name)
		if w, ok := duplicateTimes(k, r); ok {
			tr.Warnings = append(tr.Warnings, w)
		}
	}
	for _, k := range keys {
		if k.Name != ChEnergyTotal {
			continue
		}
		maxW := tr.maxPower(k.GPU)
		r := tr.Readings(k.GPU, k.Name)
		if why, ok := counterJump(r, maxW); ok {
			tr.dropChannel(k)
			tr.Meta.Unavailable = append(tr.Meta.Unavailable, Missing{GPU: k.GPU, Name: k.Name, Reason: why})
			tr.Warnings = append(tr.Warnings, status.Warning{Code: CodeCounterJump, Subject: fmt.Sprintf("gpu%d/%s", k.GPU, k.Name),
				Message: why + ": the counter is not used; the figures come from the power channels"})
			continue
		}
		if why, ok := counterStuck(r, tr, k.GPU); ok {
			tr.Warnings = append(tr.Warnings, status.Warning{Code: CodeCounterStuck, Subject: fmt.Sprintf("gpu%d/%s", k.GPU, k.Name), Message: why})
		}
	}
}

// duplicateTimes names readings of one channel at the same time with different values.
func duplicateTimes(k Key, r Readings) (status.Warning, bool) {
	n, first := 0, time.Duration(-1)
	for i := 1; i < len(r.T); i++ {
		if r.T[i] == r.T[i-1] && r.V[i] != r.V[i-1] {
			if n == 0 {
				first = r.T[i]
			}
			n++
		}
	}
	if n == 0 {
		return status.Warning{}, false
	}
	return status.Warning{Code: CodeDuplicateTime, Subject: fmt.Sprintf("gpu%d/%s", k.GPU, k.Name), Value: float64(n), Unit: "readings",
		Message: fmt.Sprintf("%d reading(s) share their time with another of a different value (the first at t = %.6f s): two sources written as one channel (several GPUs without their index?); the figures use the later of each pair", n, first.Seconds())}, true
}

// maxPower is the highest reading of any power channel of gpu (0 where none).
func (tr *Trace) maxPower(gpu int) float64 {
	m := 0.0
	for _, k := range tr.Keys() {
		if k.GPU != gpu || QuantityOf(k.Name) != QPower || k.Name == ChPowerLimit {
			continue
		}
		for _, v := range tr.Readings(gpu, k.Name).V {
			m = max(m, v)
		}
	}
	return m
}

// counterJump finds a rise of the counter faster than a board draws: beyond
// MaxBoardPowerW, or beyond three times the highest power read (maxW) plus 100 W.
func counterJump(r Readings, maxW float64) (string, bool) {
	limit := float64(MaxBoardPowerW)
	if maxW > 0 {
		limit = min(limit, 3*maxW+100)
	}
	for i := 1; i < len(r.T); i++ {
		dt := (r.T[i] - r.T[i-1]).Seconds()
		de := r.V[i] - r.V[i-1]
		if de <= 0 {
			continue // held, or reset (counted as a reset where it is used)
		}
		// A rise within one update at 0 s apart: at least a millisecond's worth.
		if p := de / max(dt, 1e-3); p > limit && de > 10 {
			return fmt.Sprintf("the energy counter rises by %.1f J in %.3f s at t = %.3f s: %.0f W, beyond what the board draws (%.0f W at most: %s)",
				de, dt, r.T[i].Seconds(), p, limit, jumpBasis(maxW)), true
		}
	}
	return "", false
}

func jumpBasis(maxW float64) string {
	if maxW > 0 && 3*maxW+100 < MaxBoardPowerW {
		return fmt.Sprintf("3 x the highest power read, %.0f W, + 100 W", maxW)
	}
	return fmt.Sprintf("any board's %d W", MaxBoardPowerW)
}

// counterStuck finds a counter that holds one value for over 10 s, and over 20 of its
// readings, while the GPU's best power channel averages over 20 W over that time.
func counterStuck(r Readings, tr *Trace, gpu int) (string, bool) {
	var pw Readings
	for _, name := range PowerPreference {
		if p := tr.Readings(gpu, name); len(p.T) >= 2 {
			pw = p
			break
		}
	}
	if len(pw.T) < 2 {
		return "", false
	}
	start := 0
	for i := 1; i <= len(r.T); i++ {
		if i < len(r.T) && r.V[i] == r.V[start] {
			continue
		}
		if held := r.T[i-1] - r.T[start]; held > 10*time.Second && i-start > 20 {
			in := IntegrateReadings(pw, r.T[start], r.T[i-1])
			if in.Covered > 0 && float64(in.Mean) > 20 {
				return fmt.Sprintf("the energy counter holds %.1f J for %.1f s (from t = %.1f s) while the power channels read %.0f W on average: a counter that does not count; the figures over that time do not hold", r.V[start], held.Seconds(), r.T[start].Seconds(), float64(in.Mean)), true
			}
		}
		start = i
	}
	return "", false
}

// dropChannel removes channel k's readings (and its description) from the trace.
func (tr *Trace) dropChannel(k Key) {
	if tr.cols != nil {
		tr.cols = slices.DeleteFunc(tr.cols, func(c *column) bool { return c.key == k })
	} else {
		tr.Samples = slices.DeleteFunc(tr.Samples, func(s Sample) bool { return s.GPU == k.GPU && s.Channel == k.Name })
	}
	tr.Meta.Channels = slices.DeleteFunc(tr.Meta.Channels, func(c Channel) bool { return c.GPU == k.GPU && c.Name == k.Name })
}

// checkQuantities refuses a sidecar whose channel's quantity contradicts its name
// (power.* described as a frequency, clock.* as a power: a clock's Hz integrated as W
// gave 251 kW) or whose readings lie beyond its quantity's range.
func (tr *Trace) checkQuantities() error {
	for i, c := range tr.Meta.Channels {
		named := QuantityOf(c.Name)
		if c.Quantity != "" && named != "" && c.Quantity != named {
			return &ParseError{Msg: fmt.Sprintf("field \"channels[%d].quantity\" is %q for channel %s: expected %q, as its name says", i, c.Quantity, c.Name, named)}
		}
		if u := c.Unit; u != "" && c.Quantity != "" && quantityOfUnit(u) != "" && quantityOfUnit(u) != c.Quantity {
			return &ParseError{Msg: fmt.Sprintf("field \"channels[%d].unit\" is %q for channel %s of quantity %s: expected %q", i, u, c.Name, c.Quantity, c.Quantity.Unit())}
		}
		q := channelQuantity(c)
		for _, v := range tr.Readings(c.GPU, c.Name).V {
			if msg := checkValue(q, v); msg != "" && !math.IsNaN(v) {
				return &ParseError{Msg: fmt.Sprintf("channel %s (GPU %d, %s by its sidecar): a reading %g %s", c.Name, c.GPU, q, v, msg)}
			}
		}
	}
	return nil
}
