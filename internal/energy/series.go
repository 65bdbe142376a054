package energy

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// The corrected power series (issue 13; seed 003's Fig. 7): the channel's readings with its
// sensor model undone, as a curve with its 95 % band. Each point is the energy of one bin
// of the region through the same inversion and uncertainty budget as `energy`'s own
// figure (Region with Method Inversion: the readings' noise, the model's parameter
// intervals re-inverted at their ends, the edges, the coverage, gaps and sparse readings),
// divided by the bin's length. The bins are the channel's update period long (a shorter
// bin holds no reading of its own), at most MaxSeriesPoints over the region.

// MaxSeriesPoints caps the bins of a series (longer regions get longer bins).
const MaxSeriesPoints = 2000

// SeriesPoint is one bin [StartS, EndS) of the corrected power series, on the trace's
// t_s axis: its mean power and 95 % band (relative to the board's scale: the board's gain
// error is not in it). Partial: a part of the bin's uncertainty could not be computed,
// the band is a floor.
type SeriesPoint struct {
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	PowerW  float64 `json:"power_w"`
	LowW    float64 `json:"low_w"`
	HighW   float64 `json:"high_w"`
	Partial bool    `json:"partial,omitempty"`
}

// Series is the corrected power series of one channel over a region.
type Series struct {
	Channel string        `json:"channel"`
	Model   string        `json:"model"`
	StepS   float64       `json:"step_s"`
	Points  []SeriesPoint `json:"points"`
}

// PowerSeries is the corrected power series of GPU gpu over [from, to] of tr, on the
// channel o.Channel (default: the best present) through its model o.Sensor. step is the
// bins' length (0: the channel's update period, at least (to − from)/MaxSeriesPoints).
// An error says why there is none.
func PowerSeries(tr *trace.Trace, gpu int, from, to, step time.Duration, o Options) (Series, error) {
	if to <= from {
		return Series{}, fmt.Errorf("%w: the region %s to %s is empty", status.ErrInput, fmtDur(from), fmtDur(to))
	}
	if o.Cache == nil {
		o.Cache = &Cache{}
	}
	// The first bin's estimate settles the channel and its period.
	probe := Estimate{From: from, To: to}
	probe.invert(tr, gpu, o, "the region", func(status.Code, string, string, ...any) {})
	if probe.Method != Inversion || probe.Inversion == nil {
		return Series{}, fmt.Errorf("no power channel's model could be inverted over the region %s to %s", fmtDur(from), fmtDur(to))
	}
	o.Channel = probe.Channel
	if step <= 0 {
		step = probe.Inversion.Period
	}
	step = max(step, (to-from)/MaxSeriesPoints, time.Millisecond)
	out := Series{Channel: probe.Channel, Model: probe.Choice.Model.String(), StepS: step.Seconds(), Points: []SeriesPoint{}}
	for a := from; a < to; a += step {
		b := min(a+step, to)
		if b-a < step/2 && a > from {
			break // a last sliver shorter than half a bin: the bin before ends at to
		}
		est := Estimate{From: a, To: b}
		est.invert(tr, gpu, o, "the bin", func(status.Code, string, string, ...any) {})
		if est.Method != Inversion {
			continue
		}
		est.interval()
		d := (b - a).Seconds()
		out.Points = append(out.Points, SeriesPoint{StartS: a.Seconds(), EndS: b.Seconds(), PowerW: est.EnergyJ / d,
			LowW: est.LowJ / d, HighW: est.HighJ / d, Partial: est.Uncertainty.Partial})
	}
	if len(out.Points) == 0 {
		return out, fmt.Errorf("no bin of the region %s to %s could be inverted", fmtDur(from), fmtDur(to))
	}
	return out, nil
}

// SeriesHeader is the header of `energy --series FILE.csv`: t_s is the middle of a bin
// (the bins are Series.StepS long: t_s ± step/2), power_w its mean corrected power, low_w
// and high_w its 95 % band.
var SeriesHeader = []string{"t_s", "power_w", "low_w", "high_w"}

// WriteSeriesCSV writes the series, one row per bin at its middle.
func WriteSeriesCSV(w io.Writer, s Series) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 9, 64) }
	if err := cw.Write(SeriesHeader); err != nil {
		return err
	}
	for _, p := range s.Points {
		if err := cw.Write([]string{f((p.StartS + p.EndS) / 2), f(p.PowerW), f(p.LowW), f(p.HighW)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
