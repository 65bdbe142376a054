package profile

import (
	"fmt"
	"math"
	"sort"
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
		var err error
		if rec, err = reconstruct(r); err != nil {
			return nil, err
		}
	}
	if len(rec.Runs) == 0 {
		return nil, status.Inputf("the profile's record holds no runs")
	}
	sens := rec.Sensor
	if m != nil {
		p := sens.Period
		sens = *m
		if sens.Period <= 0 {
			sens.Period = p
		}
	}
	opt := MeasureOptions{Runs: len(rec.Runs), Sensor: sens, Poll: seconds(rec.PollS), MinEdges: rec.MinEdges, Seed: rec.Seed, Random: rec.Random}
	opt = opt.withDefaults(rec.Buffered)
	opt.buffered = rec.Buffered
	if err := opt.check(); err != nil {
		return nil, err
	}
	runs := make([]run, len(rec.Runs))
	for i, x := range rec.Runs {
		runs[i] = run{seconds(x.StartS), seconds(x.EndS)}
		if runs[i].end < runs[i].start || i > 0 && runs[i].start < runs[i-1].start {
			return nil, status.Inputf("the record's run %d ends before it starts, or starts before the run before it", i+1)
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
	if rec.Reconstructed != "" {
		res.Warnf(CodeReconstructed, "%s", rec.Reconstructed)
		if r.Grid != nil && res.Grid != nil { // as the driver stamped them, not as recovered
			g := *r.Grid
			res.Grid = &g
		}
	}
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
	res.Warnings = append(append([]status.Warning{}, pre...), res.Warnings...)
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

// reconstruct recovers the runs and updates of an offline profile on a buffered channel
// from its readings alone (profile.json written before the record was kept: each reading's
// phase to its run, its value, the model's delay, the samples' grid). A reading's sample
// instant lies on the grid, so each run's start is known modulo the grid's period P from
// its readings' phases; between runs it moves by the previous run's length plus a wait in
// [T, T + P) (Run: the next start is placed on the grid at least T after the previous
// end), which picks one of the candidates P apart. Each reading's own phase is as
// recorded; only the phases to earlier runs (a lag's tail) rest on the recovered spacing.
// The model's intervals are not in such a file: pass them (--sensor-profile).
func reconstruct(r *Result) (*Record, error) {
	if !strings.HasPrefix(r.Method, "offline") || r.Grid == nil || len(r.Points) == 0 {
		return nil, status.Inputf("the profile holds no record of its runs and readings (written before gpuwatt kept them), and its runs can be recovered only for an offline profile on a buffered channel with a sample grid (this one: %s, grid %v)", r.Method, r.Grid != nil)
	}
	m, err := sensormodel.Parse(r.Model)
	if err != nil {
		return nil, status.Inputf("model %q: %v", r.Model, err)
	}
	P := r.Grid.PeriodS
	T := m.Period.Seconds()
	tex := r.KernelS
	D := r.DelayS
	if P <= 0 || T <= 0 || tex <= 0 {
		return nil, status.Inputf("grid period %g s, update period %g s, kernel %g s: cannot recover the runs", P, T, tex)
	}
	// each run's readings: a = phase + D, the sample instant less the run's start
	byRun := map[int][]Point{}
	last := 0
	for _, p := range r.Points {
		byRun[p.Run] = append(byRun[p.Run], p)
		last = max(last, p.Run)
	}
	mod := func(x float64) float64 { return x - P*math.Floor(x/P) }
	rec := &Record{Sensor: m, Buffered: true, PollS: r.PollS, MinEdges: 12, Seed: 1}
	start, prev := 0.0, -1
	var lastA float64 // the previous run's last reading: its sample instant less that run's start
	ambiguous, missing, inconsistent := 0, 0, 0
	for run := 1; run <= last; run++ {
		ps := byRun[run]
		if len(ps) == 0 {
			missing++ // placed with the next run that has readings
			continue
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].PhaseS < ps[j].PhaseS })
		c := mod(-(ps[0].PhaseS + D)) // start ≡ c (mod P), the grid's origin at 0
		for _, p := range ps[1:] {
			if d := math.Abs(mod(-(p.PhaseS+D)-c+P/2) - P/2); d > 1e-6 {
				inconsistent++
				break
			}
		}
		if prev < 0 {
			start = c
		} else {
			// Every grid instant is a sample, tied to the run in which it falls: this
			// run's first reading is the sample after the previous one's last (a run
			// between them without a reading of its own included).
			k := float64(run - prev)
			gap := lastA + P - (ps[0].PhaseS + D)
			if gap < k*(tex+T)-2e-3 || gap > k*(tex+T+P)+2e-3 {
				// a sample missing: the spacing is the previous run's length plus a
				// wait in [T, T + P), which picks one of the candidates P apart
				lo := k*(tex+T) + (k-1)*P/2 - 5e-5
				gap = lo + mod(c-start-lo)
				ambiguous++
			}
			// runs without readings: placed evenly between their neighbours
			for j := 1; j < run-prev; j++ {
				t := start + gap*float64(j)/k
				rec.Runs = append(rec.Runs, RunRecord{StartS: t, EndS: t + tex})
			}
			start += gap
		}
		prev = run
		lastA = ps[len(ps)-1].PhaseS + D
		rec.Runs = append(rec.Runs, RunRecord{StartS: start, EndS: start + tex})
		for _, p := range ps {
			rec.Updates = append(rec.Updates, UpdateRecord{TS: start + p.PhaseS + D, PowerW: p.PowerW})
		}
	}
	sort.Slice(rec.Updates, func(i, j int) bool { return rec.Updates[i].TS < rec.Updates[j].TS })
	rec.Reconstructed = fmt.Sprintf("runs recovered from the readings' phases on the %.4g ms grid (profile.json kept no record of them): %d runs, each placed one grid period after the run before's last sample except %d (a sample missing: placed by the wait's range, their spacing to the run before may be off by one grid period); %d without readings placed evenly between their neighbours; %d whose readings disagree on the run's start; updates not tied to a run are not in the file; the model's intervals are not either unless given", P*1e3, len(rec.Runs), ambiguous, missing, inconsistent)
	return rec, nil
}
