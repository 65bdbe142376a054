package energy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Query is the energy of one span of a recorded trace, as `gpuwatt energy` asks for it:
// the estimator's figure (Region) with the chosen channel's model inversion beside it. The
// zero value of each field is its default.
type Query struct {
	// Trace is the trace's path: a gpuwatt trace directory or CSV, any CSV whose header
	// names t_s and power_w, or an nvidia-smi log.
	Trace string
	// GPU is the GPU's index; AnyGPU: the first GPU of the trace that has readings.
	GPU int
	// From and To bound the span on the trace's t_s axis (nil: the channel's first or last
	// reading); Region instead names a span the trace's marks bracket: NAME or NAME#K.
	From, To *time.Duration
	Region   string
	// Channel is the power channel (default: the best present, correct.PickChannel).
	Channel string
	// Sensor is the channel's sensor model (nil: auto, a guess from the names).
	Sensor *correct.Spec
	// Method forces a method (Counter, CalibratedRing, Inversion); "" picks as Region does.
	Method Method
	// Idle is the idle power to subtract for the energy above idle (nil: the trace's own
	// baseline, else the lowest decile of its power).
	Idle *units.Power
	// Series, where set, is a CSV file to write the channel's corrected power over the
	// span to (WriteSeriesCSV).
	Series string
	// Recorded is where the trace was recorded: on the sim (sim, sim:PRESET or a config),
	// an auto Sensor takes each channel's model as that sim configures it.
	Recorded device.Spec
}

// AnyGPU asks a Query for the first GPU of the trace.
const AnyGPU = -1

// Validate checks the query without reading the trace. Bad input is a status.InputError
// (or the device's UsageError), naming it.
func (q Query) Validate() error {
	if err := q.Recorded.Validate(); err != nil {
		return err
	}
	switch {
	case q.Trace == "":
		return status.Inputf("no trace")
	case q.Region != "" && (q.From != nil || q.To != nil):
		return status.Inputf("--region %s with --from or --to: give one or the other", q.Region)
	case q.From != nil && q.To != nil && *q.From >= *q.To:
		return status.Inputf("--from %s is not before --to %s: want a region of positive length", *q.From, *q.To)
	case q.GPU < AnyGPU:
		return status.Inputf("--gpu %d: want a GPU index >= 0", q.GPU)
	}
	return nil
}

// Run answers the query: Validate, load the trace, resolve the span, the GPU, the channel
// and its model, and ask the estimator; with Series, write the corrected power series.
func (q Query) Run(ctx context.Context) (Report, error) {
	if err := q.Validate(); err != nil {
		return Report{}, err
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	simSensors, err := q.simSensors()
	if err != nil {
		return Report{}, err
	}
	// Compact: the readings by channel, 16 bytes each (docs/robustness.md).
	tr, err := trace.LoadCompact(q.Trace)
	if err != nil {
		var pe *trace.ParseError
		if errors.As(err, &pe) {
			return Report{}, status.Inputf("--trace: %v", err)
		}
		return Report{}, status.Inputf("--trace %s: %v", q.Trace, unwrapPath(err))
	}
	from, to := q.From, q.To
	if q.Region != "" {
		a, b, err := RegionSpan(tr, q.Region)
		if err != nil {
			return Report{}, status.Inputf("--region %v", err)
		}
		from, to = &a, &b
	}
	g, err := PickGPU(tr, q.GPU)
	if err != nil {
		return Report{}, status.Inputf("%v", err)
	}
	opt := correct.Options{}
	if q.Idle != nil {
		opt.Idle, opt.IdleSet = *q.Idle, true
	} else if b, ok := correct.TraceBaseline(tr, g); ok {
		// The trace's own idle baseline, on whichever channel (issue 20).
		opt.Baseline = b
	}
	name, sp, err := q.channel(tr, g, simSensors)
	if err != nil {
		return Report{}, err
	}
	if meta, ok := tr.Channel(g, name); ok && meta.Stats != nil && meta.Stats.UpdatePeriod > 0 {
		opt.Period = time.Duration(math.Round(meta.Stats.UpdatePeriod * 1e9))
	}
	// The inversion is set up once, over the whole trace: its span gives the default
	// region, and the estimator takes it from the cache.
	// A channel named in the query gives its own figure (issue 28).
	eo := Options{What: "the region", Channel: name, Sensor: &sp, Correct: opt, Invert: true, Method: q.Method, Named: q.Channel != "", Cache: &Cache{}}
	ser, _, err := Prepared(tr, g, eo)
	if err != nil {
		return Report{}, status.Inputf("--sensor: %v", err)
	}
	lo, hi := ser.Span()
	a, b := lo, hi
	if from != nil {
		a = *from
	}
	if to != nil {
		b = *to
	}
	if a >= b {
		return Report{}, status.Inputf("the region %s to %s is empty (the readings of %s describe %s to %s)", fmtT(a), fmtT(b), name, fmtT(lo), fmtT(hi))
	}
	// The one estimator: the counter, the calibrated ring or the model inversion of the
	// channel, in that order; the channel's inversion is shown beside it.
	est := Region(tr, g, a, b, eo)
	if q.Method != "" && est.Method != q.Method {
		msg := "cannot be had here"
		for _, w := range est.Warnings {
			if w.Code == CodeNoFigure {
				msg = w.Message
			}
		}
		return Report{}, status.Inputf("--method %s: %s", methodFlag(q.Method), msg)
	}
	if est.Inversion == nil || est.Inversion.Covered == 0 {
		return Report{}, status.Inputf("the region %s to %s lies outside the readings of %s (%s to %s)", fmtT(a), fmtT(b), name, fmtT(lo), fmtT(hi))
	}
	rep := NewReport(q.Trace, tr, g, name, *est.Choice, *est.Inversion, est)
	// What the reader found wrong with the trace but read anyway (rows out of order, a
	// daylight-saving change in an nvidia-smi log) comes first.
	rep.Warnings = append(slices.Clone(tr.Warnings), rep.Warnings...)
	if q.Series != "" {
		if rep.Series, err = q.writeSeries(tr, g, a, b, name, sp, opt, eo.Cache); err != nil {
			return Report{}, err
		}
	}
	return rep, nil
}

// simSensors is the sim's configuration of each channel where the trace was recorded on
// the sim and the Sensor is auto (nil otherwise).
func (q Query) simSensors() (map[string]sim.SensorConfig, error) {
	kind, preset, err := q.Recorded.Parse()
	if err != nil {
		return nil, err
	}
	if kind != device.Sim || (q.Sensor != nil && !q.Sensor.Auto()) {
		return nil, nil
	}
	cfg, err := q.Recorded.SimConfigFor(preset)
	if err != nil {
		return nil, err
	}
	return cfg.Sensors, nil
}

// channel is the power channel of GPU g to invert, and its model: the one asked for (else
// the best present), a power channel of the trace; the model the Sensor names, or the
// sim's own where the trace was recorded on the sim.
func (q Query) channel(tr *trace.Trace, g int, simSensors map[string]sim.SensorConfig) (string, correct.Spec, error) {
	sp, _ := correct.ParseSpec("auto")
	if q.Sensor != nil {
		sp = *q.Sensor
	}
	name := q.Channel
	if name == "" {
		n, err := correct.PickChannel(tr, g)
		if err != nil {
			return "", sp, status.Inputf("%v", err)
		}
		name = n
	}
	switch {
	case !slices.Contains(tr.Keys(), trace.Key{GPU: g, Name: name}):
		return "", sp, status.Inputf("--channel %s: GPU %d has no such channel in %s (power channels: %s)", name, g, q.Trace, strings.Join(correct.PowerChannels(tr, g), ", "))
	case !correct.IsPower(tr, g, name):
		return "", sp, status.Inputf("--channel %s: not a power channel (power channels: %s)", name, strings.Join(correct.PowerChannels(tr, g), ", "))
	}
	meta, ok := tr.Channel(g, name)
	if !ok {
		meta = trace.Channel{GPU: g, Name: name}
	}
	if _, err := sp.Resolve(tr, meta); err != nil {
		return "", sp, status.Inputf("--sensor: %v", err)
	}
	if simSensors == nil {
		return name, sp, nil
	}
	sc, ok := simSensors[name]
	if !ok || sc.Unsupported {
		return "", sp, status.Inputf("--device %s: the sim has no channel %s (its model cannot stand for the sensor)", q.Recorded.Device, name)
	}
	sp = correct.ModelSpec(sc.Model, fmt.Sprintf("--device %s: the model the sim configures for %s", q.Recorded.Device, name))
	if _, err := sp.Resolve(tr, meta); err != nil {
		return "", sp, status.Inputf("--device %s: %v", q.Recorded.Device, err)
	}
	return name, sp, nil
}

// writeSeries writes the channel's corrected power over [from, to] to q.Series.
func (q Query) writeSeries(tr *trace.Trace, g int, from, to time.Duration, name string, sp correct.Spec, opt correct.Options, cache *Cache) (*SeriesFile, error) {
	ser, err := PowerSeries(tr, g, from, to, 0, Options{Channel: name, Sensor: &sp, Correct: opt, Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("--series: %v", err)
	}
	if err := atomicfile.Write(q.Series, func(w io.Writer) error { return WriteSeriesCSV(w, ser) }); err != nil {
		return nil, fmt.Errorf("--series %s: %v", q.Series, err)
	}
	return &SeriesFile{File: q.Series, Channel: ser.Channel, Model: ser.Model, StepS: ser.StepS, Bins: len(ser.Points)}, nil
}

// methodFlag is a method as --method names it.
func methodFlag(m Method) string {
	if m == CalibratedRing {
		return "calibrated"
	}
	return string(m)
}

// PickGPU returns the GPU to measure: the one asked for, or for AnyGPU the first GPU of
// the trace that has readings (0 for a plain CSV).
func PickGPU(tr *trace.Trace, want int) (int, error) {
	seen := map[int]bool{}
	first := -1
	for _, k := range tr.Keys() {
		g := k.GPU
		if !seen[g] {
			seen[g] = true
			if first < 0 || g < first {
				first = g
			}
		}
	}
	switch {
	case first < 0:
		return 0, errors.New("--trace: the trace holds no readings")
	case want != AnyGPU && !seen[want]:
		var have []int
		for g := range seen {
			have = append(have, g)
		}
		slices.Sort(have)
		return 0, fmt.Errorf("--gpu %d: no such GPU in the trace (it has %s)", want, strings.Trim(fmt.Sprint(have), "[]"))
	case want != AnyGPU:
		return want, nil
	}
	return first, nil
}

// RegionSpan finds the region spec ("NAME" or "NAME#K") among the trace's marks.
func RegionSpan(tr *trace.Trace, spec string) (from, to time.Duration, err error) {
	name, k := spec, 0
	if n, ks, ok := strings.Cut(spec, "#"); ok {
		i, err := strconv.Atoi(ks)
		if err != nil || i < 1 {
			return 0, 0, fmt.Errorf("%s: want NAME or NAME#K with K from 1", spec)
		}
		name, k = n, i
	}
	spans, _ := marks.Pair(marks.FromTrace(tr.Meta.Marks))
	var match []marks.Span
	names := map[string]int{}
	var order []string
	for _, s := range spans {
		if names[s.Name] == 0 {
			order = append(order, s.Name)
		}
		names[s.Name]++
		if s.Name == name {
			match = append(match, s)
		}
	}
	switch {
	case len(spans) == 0:
		return 0, 0, fmt.Errorf("%s: the trace has no regions (no begin/end marks in its trace.json)", spec)
	case len(match) == 0:
		var have []string
		for _, n := range order {
			have = append(have, fmt.Sprintf("%s (%d)", n, names[n]))
		}
		return 0, 0, fmt.Errorf("%s: no such region; the trace's regions: %s", spec, strings.Join(have, ", "))
	case k == 0 && len(match) > 1:
		return 0, 0, fmt.Errorf("%s: %d regions of that name: say %s#1 ... %s#%d", spec, len(match), name, name, len(match))
	case k > len(match):
		return 0, 0, fmt.Errorf("%s: only %d regions of that name", spec, len(match))
	}
	if k == 0 {
		k = 1
	}
	return match[k-1].Start, match[k-1].End, nil
}

// fmtT formats a time on the trace's axis in seconds: "2.5 s".
func fmtT(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + " s"
}

// unwrapPath is an *os.PathError's own error (the path is named already).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
