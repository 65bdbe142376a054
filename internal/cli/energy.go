package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

const energySynopsis = "--trace FILE [--from T1] [--to T2 | --region NAME[#K]] [--sensor SPEC] [--channel NAME] [--method M] [--gpu N] [--idle W] [--series FILE.csv] [--json]"

// energy is `gpuwatt energy`: the energy of a region of a recorded trace from the one
// estimator (internal/energy: counter, calibrated ring, or the sensor's model inverted).
// energyGCPercent is the garbage collector's target while `energy` runs (see there).
const energyGCPercent = 25

func (a *App) energy(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("energy", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withJSON, "")
	fs.Lookup("device").Usage = "where the trace was recorded: with sim, sim:PRESET or --sim-config, --sensor auto takes each channel's model as that sim configures it (not a guess from the board's name); auto and nvml leave the model to --sensor (" + device.DeviceHelp + ")"
	path := fs.String("trace", "", "the trace: a gpuwatt trace directory or CSV, any CSV whose header names t_s and power_w, or an nvidia-smi log (required)")
	fromS := fs.String("from", "", "start of the region on the trace's t_s axis, with a unit (3.2s, 3200ms); default: the first reading")
	toS := fs.String("to", "", "end of the region, with a unit; default: the last reading")
	regionS := fs.String("region", "", "a region the trace's marks bracket (begin NAME / end NAME, written through $GPUWATT_MARKS or the Go library): NAME, or NAME#K for its K-th instance; instead of --from and --to; default: none, --from and --to or the whole trace")
	spec := fs.String("sensor", "auto", "the sensor's model: auto (a guess from the trace), none, rc:tau=0.84s, boxcar:window=1s, boxcar:window=25ms,period=100ms, or a sensor.json file")
	channel := fs.String("channel", "", "the power channel (default: the best present of "+strings.Join(correct.BoardChannels, ", ")+")")
	methodS := fs.String("method", "auto", "where the figure comes from: auto (the energy counter, else the best channel calibrated to it, else --channel's model inverted), counter, calibrated, or inversion (--channel's sensor model inverted, for comparing a channel with the counter)")
	gpu := fs.Int("gpu", 0, "the GPU (default: the first in the trace)")
	seriesPath := fs.String("series", "", "write the channel's corrected power over the region to this CSV (t_s, power_w, low_w, high_w: one row per update period, its sensor model undone, with the 95 % band of each bin's energy); default: none, no series is written")
	idleS := fs.String("idle", "", "the idle power to subtract for the energy above idle, in W (default: the trace's own baseline where it records one, else the lowest decile of its power)")
	if code, ok := a.parseFlags(fs, args, energySynopsis); !ok {
		return code
	}
	bad := func(f string, v ...any) int { return a.usageError("energy", fmt.Errorf(f, v...)) }
	if fs.NArg() > 0 {
		return bad("unexpected argument %q: gpuwatt energy %s", fs.Arg(0), energySynopsis)
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("energy", err)
	}
	if *path == "" {
		return bad("no trace: gpuwatt energy %s", energySynopsis)
	}
	// An output never overwrites an input (issue 29: --series naming the trace destroyed it).
	if err := overwritesInput("--series", *seriesPath, append(traceFiles(*path), *spec, sh.dev.simConfig)...); err != nil {
		return bad("%v", err)
	}
	from, haveFrom, err := parseTime("--from", *fromS)
	if err != nil {
		return a.usageError("energy", err)
	}
	to, haveTo, err := parseTime("--to", *toS)
	if err != nil {
		return a.usageError("energy", err)
	}
	if *regionS != "" && (haveFrom || haveTo) {
		return bad("--region %s with --from or --to: give one or the other", *regionS)
	}
	if haveFrom && haveTo && from >= to {
		return bad("--from %s is not before --to %s: want a region of positive length", *fromS, *toS)
	}
	method, err := energy.ParseMethod(*methodS)
	if err != nil {
		return bad("--method %v", err)
	}
	sp, err := correct.ParseSpec(*spec)
	if err != nil {
		return bad("--sensor: %v", err)
	}
	// --device names where the trace was recorded: on the sim (sim, sim:PRESET or
	// --sim-config), --sensor auto takes the channel's model as that sim configures it
	// instead of a guess from the board's name. auto and nvml open nothing here.
	devKind, devPreset, err := sh.dev.spec().Parse()
	if err != nil {
		return a.exitFor("energy", err)
	}
	var simSensors map[string]sim.SensorConfig
	if devKind == device.Sim && *spec == "auto" {
		cfg, err := sh.dev.spec().SimConfigFor(devPreset)
		if err != nil {
			return a.exitFor("energy", err)
		}
		simSensors = cfg.Sensors
	}
	opt := correct.Options{}
	if *idleS != "" {
		w, err := parseWatts(*idleS)
		if err != nil {
			return bad("--idle %s: %v", *idleS, err)
		}
		opt.Idle, opt.IdleSet = units.Power(w), true
	}
	gpuSet := false
	fs.Visit(func(f *flag.Flag) { gpuSet = gpuSet || f.Name == "gpu" })
	if *gpu < 0 {
		return bad("--gpu %d: want a GPU index >= 0", *gpu)
	}

	// A trace's readings and the inversion's arrays hold no pointers, so a collection
	// costs little: the collector runs when the heap has grown by energyGCPercent of what
	// was live, not by Go's default 100 %, and the peak heap stays near what is live
	// (docs/robustness.md). A GOGC the user set is left as it is.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(energyGCPercent))
	}
	// Compact: the readings by channel, 16 bytes each (docs/robustness.md).
	tr, err := trace.LoadCompact(*path)
	if err != nil {
		var pe *trace.ParseError
		if errors.As(err, &pe) {
			return bad("--trace: %v", err)
		}
		return bad("--trace %s: %v", *path, unwrapPath(err))
	}
	if *regionS != "" {
		if from, to, err = regionSpan(tr, *regionS); err != nil {
			return bad("--region %v", err)
		}
		haveFrom, haveTo = true, true
	}
	g, err := pickGPU(tr, *gpu, gpuSet)
	if err != nil {
		return a.usageError("energy", err)
	}
	if b, ok := correct.TraceBaseline(tr, g); ok && !opt.IdleSet {
		// The trace's own idle baseline, on whichever channel (issue 20).
		opt.Baseline = b
	}
	name := *channel
	if name == "" {
		if name, err = correct.PickChannel(tr, g); err != nil {
			return a.usageError("energy", err)
		}
	}
	has := false
	for _, k := range tr.Keys() {
		has = has || k == trace.Key{GPU: g, Name: name}
	}
	switch {
	case !has:
		return bad("--channel %s: GPU %d has no such channel in %s (power channels: %s)", name, g, *path, strings.Join(correct.PowerChannels(tr, g), ", "))
	case !correct.IsPower(tr, g, name):
		return bad("--channel %s: not a power channel (power channels: %s)", name, strings.Join(correct.PowerChannels(tr, g), ", "))
	}
	meta, ok := tr.Channel(g, name)
	if !ok {
		meta = trace.Channel{GPU: g, Name: name}
	}
	if _, err := sp.Resolve(tr, meta); err != nil {
		return bad("--sensor: %v", err)
	}
	if simSensors != nil {
		sc, ok := simSensors[name]
		if !ok || sc.Unsupported {
			return bad("--device %s: the sim has no channel %s (its model cannot stand for the sensor)", sh.dev.device, name)
		}
		sp = correct.ModelSpec(sc.Model, fmt.Sprintf("--device %s: the model the sim configures for %s", sh.dev.device, name))
		if _, err := sp.Resolve(tr, meta); err != nil {
			return bad("--device %s: %v", sh.dev.device, err)
		}
	}
	if meta.Stats != nil && meta.Stats.UpdatePeriod > 0 {
		opt.Period = time.Duration(math.Round(meta.Stats.UpdatePeriod * 1e9))
	}
	// The inversion is set up once, over the whole trace: its span gives the default
	// region, and the estimator takes it from the cache.
	// A channel named on the command line gives its own figure (issue 28).
	eo := energy.Options{What: "the region", Channel: name, Sensor: &sp, Correct: opt, Invert: true, Method: method, Named: *channel != "", Cache: &energy.Cache{}}
	ser, _, err := energy.Prepared(tr, g, eo)
	if err != nil {
		return bad("--sensor: %v", err)
	}
	lo, hi := ser.Span()
	if !haveFrom {
		from = lo
	}
	if !haveTo {
		to = hi
	}
	if from >= to {
		return bad("the region %s to %s is empty (the readings of %s describe %s to %s)", fmtT(from), fmtT(to), name, fmtT(lo), fmtT(hi))
	}
	// The one estimator: the counter, the calibrated ring or the model inversion of the
	// channel, in that order; the channel's inversion is shown beside it.
	est := energy.Region(tr, g, from, to, eo)
	if method != "" && est.Method != method {
		msg := "cannot be had here"
		for _, w := range est.Warnings {
			if w.Code == energy.CodeNoFigure {
				msg = w.Message
			}
		}
		return bad("--method %s: %s", *methodS, msg)
	}
	if est.Inversion == nil || est.Inversion.Covered == 0 {
		return bad("the region %s to %s lies outside the readings of %s (%s to %s)", fmtT(from), fmtT(to), name, fmtT(lo), fmtT(hi))
	}
	rep := energy.NewReport(*path, tr, g, name, *est.Choice, *est.Inversion, est)
	// What the reader found wrong with the trace but read anyway (rows out of order, a
	// daylight-saving change in an nvidia-smi log) comes first.
	rep.Warnings = append(slices.Clone(tr.Warnings), rep.Warnings...)
	if *seriesPath != "" {
		ser, err := energy.PowerSeries(tr, g, from, to, 0, energy.Options{Channel: name, Sensor: &sp, Correct: opt, Cache: eo.Cache})
		if err != nil {
			return a.fail("energy", fmt.Errorf("--series: %v", err))
		}
		if err := atomicfile.Write(*seriesPath, func(w io.Writer) error { return energy.WriteSeriesCSV(w, ser) }); err != nil {
			return a.fail("energy", fmt.Errorf("--series %s: %v", *seriesPath, err))
		}
		rep.Series = &energy.SeriesFile{File: *seriesPath, Channel: ser.Channel, Model: ser.Model, StepS: ser.StepS, Bins: len(ser.Points)}
	}
	if sh.json {
		err = report.WriteJSONTo(a.Stdout, rep)
	} else {
		err = energy.WriteText(a.Stdout, rep)
	}
	if err != nil {
		return a.fail("energy", err)
	}
	return ExitOK
}

// parseTime reads a time on a trace's axis: a duration with a unit ("3.2s", "3200ms",
// "-0.1s"). "" means not given.
func parseTime(flagName, s string) (time.Duration, bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	want := fmt.Errorf("%s %s: want a time on the trace's t_s axis with a unit, such as 3.2s or 3200ms", flagName, s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, false, fmt.Errorf("%s %s: a bare number; want a time with a unit, such as %ss or %sms", flagName, s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, want
	}
	return d, true, nil
}

// parseWatts reads a power in watts: "52.5" or "52.5W".
func parseWatts(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "W"), "w"))
	w, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
		return 0, errors.New("want a power in watts >= 0, such as 52.5 or 52.5W")
	}
	return w, nil
}

// pickGPU returns the GPU to measure: the one asked for, or by default the first GPU of
// the trace that has readings (0 for a plain CSV).
func pickGPU(tr *trace.Trace, want int, set bool) (int, error) {
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
	case set && !seen[want]:
		var have []int
		for g := range seen {
			have = append(have, g)
		}
		slices.Sort(have)
		return 0, fmt.Errorf("--gpu %d: no such GPU in the trace (it has %s)", want, strings.Trim(fmt.Sprint(have), "[]"))
	case set:
		return want, nil
	}
	return first, nil
}

// fmtT formats a time on the trace's axis in seconds: "2.5 s".
func fmtT(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + " s"
}

// regionSpan finds the region spec ("NAME" or "NAME#K") among the trace's marks.
func regionSpan(tr *trace.Trace, spec string) (from, to time.Duration, err error) {
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
