package cli

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
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
	sensorProfile := fs.String("sensor-profile", "", "the channel's model: a sensor.json from gpuwatt sensor, or boxcar:window=25ms,period=100ms (flags --period, --window, --delay override it); default: the sim's own model on the sim, else gpuwatt's built-in model of the card's channel where it has one")
	fs.DurationVar(&o.Poll, "poll", 0, "poll interval of the channel while profiling (default 100µs; a buffered channel 50ms)")
	from := fs.String("from", "", "compute the profile again offline from a profile directory's profile.json (or profile.json.gz, or that file), with the model it was computed with or the one --sensor-profile, --window, --tau, --delay give; runs nothing; default: none, the kernel is run and measured")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--kernel NAME|DURATION] [--runs N] [--channel NAME] [--sensor-profile FILE|MODEL] [--online] [--out DIR] [--json] | --from DIR [--sensor-profile FILE|MODEL] [--out DIR] [--json]"); !ok {
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
	if *from != "" {
		return a.profileFrom(*from, sh, o)
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
	if res.Incomplete {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: incomplete: %s\n", res.Reason)
		return ExitFailure
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

// profileFrom is `gpuwatt profile --from DIR`: the profile computed again from the runs and
// readings its profile.json records (profile.Reanalyse), with the recorded model or the
// one given; nothing is run.
func (a *App) profileFrom(from string, sh shared, o profile.Options) int {
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force || sh.resume); err != nil {
			return a.usageError("profile", err)
		}
	}
	old, err := readProfile(from)
	if err != nil {
		return a.usageError("profile", fmt.Errorf("--from %s: %v", from, err))
	}
	var m *sensormodel.Model
	src, defaulted := "", ""
	if o.Sensor != nil {
		c, err := o.Sensor.Resolve(nil, trace.Channel{Name: old.Channel})
		if err != nil {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: %v", err))
		}
		if c.Model.Kind() == sensormodel.None {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: channel %s has no model (none): the profile needs a boxcar, an RC lag or both", old.Channel))
		}
		m, src, defaulted = &c.Model, o.SensorFrom, c.Defaulted
	}
	if o.Window >= 0 || o.Tau >= 0 || o.Delay >= 0 || o.Period > 0 {
		if m == nil {
			if old.Record == nil {
				return a.usageError("profile", fmt.Errorf("--from %s: the profile holds no record of its runs and readings: it cannot be computed again", from))
			}
			c := old.Record.Sensor
			m, src = &c, "the recorded model"
		}
		var set []string
		if o.Window >= 0 {
			m.Window, m.CI.Window = o.Window, sensormodel.Interval{}
			set = append(set, "--window")
		}
		if o.Tau >= 0 {
			m.Tau, m.CI.Tau = o.Tau, sensormodel.Interval{}
			set = append(set, "--tau")
		}
		if o.Delay >= 0 {
			m.Delay, m.CI.Delay = o.Delay, sensormodel.Interval{}
			set = append(set, "--delay")
		}
		if o.Period > 0 {
			m.Period = o.Period
			set = append(set, "--period")
		}
		src += " with " + strings.Join(set, ", ")
	}
	res, err := profile.Reanalyse(old, m, src)
	if err != nil {
		if errors.Is(err, status.ErrInput) {
			return a.usageError("profile", fmt.Errorf("--from %s: %v", from, err))
		}
		return a.fail("profile", err)
	}
	if defaulted != "" {
		res.Warnings = append([]status.Warning{profile.DefaultedWarning(old.Channel, src, defaulted)}, res.Warnings...)
	}
	write := func(dir string) error { return writeProfile(dir, res) }
	text := func(w io.Writer) error { return profile.WriteText(w, res) }
	if code := a.output("profile", sh, write, res, text); code != ExitOK {
		return code
	}
	if len(res.Profile) == 0 {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: no profile could be computed (the warnings say why)\n")
		return ExitFailure
	}
	return ExitOK
}

// readProfile reads a profile.json: the file named, or DIR/profile.json, or
// DIR/profile.json.gz (as results/ keeps them).
func readProfile(path string) (*profile.Result, error) {
	name := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		name = filepath.Join(path, "profile.json")
		if _, err := os.Stat(name); err != nil {
			if _, err2 := os.Stat(name + ".gz"); err2 == nil {
				name += ".gz"
			}
		}
	}
	f, err := infile.Open(name, false)
	if err != nil {
		return nil, unwrapPathErr(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		defer zr.Close()
		r = zr
	}
	var res profile.Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("%s: not a profile.json: %v", name, err)
	}
	if res.Format != profile.Format {
		return nil, fmt.Errorf("%s: format %q, want %q", name, res.Format, profile.Format)
	}
	return &res, nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
