package profile

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Reanalyse computes an offline profile again from its record (r.Record, kept in
// profile.json): with the model it was computed with (m nil) it is the same profile as the
// run gave; with another model m (this card's sensor.json, fitted later) it is the profile
// under that model, from the same readings. from says where m came from. The two-phase
// check and the long runs' comparison are made again against the figures r holds (the
// phases' steady powers, the long runs' energy per launch), which a re-analysis does not
// change.
func Reanalyse(r *Result, m *sensormodel.Model, from string) (*Result, error) {
	rec := r.Record
	if rec == nil {
		return nil, fmt.Errorf("%w: the profile holds no record of its runs and readings (an online profile, or one written before gpuwatt kept them): it cannot be computed again", status.ErrInput)
	}
	if len(rec.Runs) == 0 {
		return nil, fmt.Errorf("%w: the profile's record holds no runs", status.ErrInput)
	}
	sens := rec.Sensor
	if m != nil {
		p := sens.Period
		sens = *m
		if sens.Period <= 0 {
			sens.Period = p
		}
	}
	opt := RunOptions{Runs: len(rec.Runs), Sensor: sens, Poll: seconds(rec.PollS), MinEdges: rec.MinEdges, Seed: rec.Seed, Random: rec.Random}
	opt = opt.withDefaults(rec.Buffered)
	opt.buffered = rec.Buffered
	if err := opt.check(); err != nil {
		return nil, err
	}
	runs := make([]run, len(rec.Runs))
	for i, x := range rec.Runs {
		runs[i] = run{seconds(x.StartS), seconds(x.EndS)}
		if runs[i].end < runs[i].start || i > 0 && runs[i].start < runs[i-1].start {
			return nil, fmt.Errorf("%w: the record's run %d ends before it starts, or starts before the run before it", status.ErrInput, i+1)
		}
	}
	ups := make([]update, len(rec.Updates))
	for i, u := range rec.Updates {
		t := seconds(u.TS)
		ups[i] = update{T: t, Lo: t, Value: u.PowerW}
	}
	res := compute(r.Kernel, r.Channel, r.Method, opt, runs, ups)
	nrec := *rec
	nrec.Sensor = opt.Sensor
	res.Record = &nrec
	res.Device, res.Simulated = r.Device, r.Simulated
	res.ChannelWhy = r.ChannelWhy
	// What the run itself warned of before the analysis (a guessed model, a long lag)
	// stands where the model is the recorded one.
	var pre []status.Warning
	if m == nil {
		for _, w := range r.Warnings {
			if w.Code == CodeGuessedModel || w.Code == CodeLongLag {
				pre = append(pre, w)
			}
		}
	} else {
		if i := strings.Index(res.ChannelWhy, "; model from "); i >= 0 {
			res.ChannelWhy = res.ChannelWhy[:i]
		}
		res.ChannelWhy += "; model from " + from + " (re-analysed offline from the recorded runs)"
	}
	res.Warnings = append(pre, res.Warnings...)
	if r.Incomplete {
		res.MarkIncomplete(r.Reason)
	}
	if len(r.Phases) == 2 {
		ph := make([]Phase, 2)
		for i, p := range r.Phases {
			ph[i] = Phase{Name: p.Name, StartS: p.StartS, EndS: p.EndS, SteadyW: p.SteadyW, SteadySource: p.SteadySource}
		}
		ph[1].EndS = res.KernelS
		res.CheckPhases(ph)
	}
	if r.LongRun != nil {
		res.SetLongRun(*r.LongRun)
	}
	return res, nil
}

// seconds is s seconds as a Duration, to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
