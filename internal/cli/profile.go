package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// modeler is implemented by the sim device: the true model of each channel.
// profile is `gpuwatt profile`: flags to profile.Options; the policy (channel, which
// sensor model wins, offline or online) is profile's.
func (a *App) profile(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	o := profile.DefaultOptions()
	fs.StringVar(&o.Kernel, "kernel", o.Kernel, "a kernel of the micro suite (gpuwatt micro --list), a duration (an fp32.fma kernel that long), or two durations A+B such as 4ms+4ms: a two-phase kernel, fp32.fma for A then dram.read for B, each phase's steady power measured apart and the profile checked against it")
	fs.IntVar(&o.Runs, "runs", 0, "kernel runs (default: 1000 on a buffered channel such as power.samples, else 400)")
	fs.StringVar(&o.Channel, "channel", "", "power channel to read (default: the one with the finest resolution that works: power.samples, else power.instant, else power.usage)")
	fs.BoolVar(&o.Online, "online", false, "the online variant: sync to sensor updates, one reading per run")
	fs.DurationVar(&o.Period, "period", 0, "the channel's update period T (default: learned by the Sampler)")
	fs.DurationVar(&o.Window, "window", -1, "the channel's averaging window W (default: the sensor profile, else the sim's model, else the board's known model)")
	fs.DurationVar(&o.Delay, "delay", -1, "how long before an update its window ends (default: as --window)")
	fs.DurationVar(&o.Tau, "tau", -1, "the first-order lag in front of the window, 0 for none (default: as --window)")
	sensorProfile := fs.String("sensor-profile", "", "the channel's model: a sensor.json from gpuwatt sensor, or boxcar:window=25ms,period=100ms (flags --period, --window, --delay override it)")
	fs.DurationVar(&o.Poll, "poll", 0, "poll interval of the channel while profiling (default 100µs; a buffered channel 50ms)")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--kernel NAME|DURATION] [--runs N] [--channel NAME] [--sensor-profile FILE|MODEL] [--online] [--out DIR] [--json]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("profile", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	o.GPU = sh.gpu
	if *sensorProfile != "" {
		sp, err := correct.ParseSpec(*sensorProfile)
		if err != nil {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: %v", err))
		}
		o.Sensor, o.SensorFrom = &sp, "--sensor-profile "+*sensorProfile
	}
	r, code := a.start("profile", sh, o.Validate)
	if r == nil {
		return code
	}
	defer r.close()
	res, perr := o.Run(ctx, r.env)
	r.done()
	if res == nil {
		if ctx.Err() != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt profile: %s before a run was profiled: nothing to write\n", status.Interrupted(ctx))
			return interruptedCode(ctx)
		}
		if errors.Is(perr, status.ErrInput) {
			return a.exitFor("profile", perr)
		}
		return a.fail("profile", perr)
	}
	write := func(dir string) error { return writeProfile(dir, res) }
	text := func(w io.Writer) error { return profile.WriteText(w, res) }
	if code := a.output("profile", sh, write, res, text); code != ExitOK {
		return code
	}
	if ctx.Err() != nil {
		return interruptedCode(ctx)
	}
	if len(res.Profile) == 0 {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: no profile could be computed (the warnings say why)\n")
		return ExitFailure
	}
	return ExitOK
}

func writeProfile(dir string, res *profile.Result) error {
	return writeFiles(dir, &res.Status, []outFile{
		{"profile.csv", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "profile.csv"), func(w io.Writer) error { return profile.WriteCSV(w, res) })
		}},
		{"report.html", func(dir string) error { return profile.Page(res).WriteFile(filepath.Join(dir, "report.html")) }},
	}, outFile{"profile.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "profile.json"), res) }})
}
