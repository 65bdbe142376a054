package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/report"
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
	q := energy.Query{Trace: *path, GPU: energy.AnyGPU, Region: *regionS, Channel: *channel, Series: *seriesPath, Recorded: sh.dev.spec()}
	var err error
	if q.From, err = parseTime("--from", *fromS); err != nil {
		return a.usageError("energy", err)
	}
	if q.To, err = parseTime("--to", *toS); err != nil {
		return a.usageError("energy", err)
	}
	if q.Method, err = energy.ParseMethod(*methodS); err != nil {
		return bad("--method %v", err)
	}
	sp, err := correct.ParseSpec(*spec)
	if err != nil {
		return bad("--sensor: %v", err)
	}
	q.Sensor = &sp
	if *idleS != "" {
		w, err := parseWatts(*idleS)
		if err != nil {
			return bad("--idle %s: %v", *idleS, err)
		}
		p := units.Power(w)
		q.Idle = &p
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "gpu" {
			q.GPU = *gpu
		}
	})
	if *gpu < 0 {
		return bad("--gpu %d: want a GPU index >= 0", *gpu)
	}
	if err := q.Validate(); err != nil {
		return a.exitFor("energy", err)
	}
	// A trace's readings hold no pointers: a collection at energyGCPercent of growth costs
	// little and keeps the peak heap near what is live (docs/robustness.md); GOGC wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(energyGCPercent))
	}
	rep, err := q.Run(ctx)
	if err != nil {
		return a.exitFor("energy", err)
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
