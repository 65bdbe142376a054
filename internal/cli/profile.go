package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"gpuwatt/internal/correct"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/kernels"
	"gpuwatt/internal/loop"
	"gpuwatt/internal/profile"
	"gpuwatt/internal/report"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/sensormodel"
	"gpuwatt/internal/trace"
)

// modeler is implemented by the sim device: the true model of each channel.
type modeler interface {
	Model(name string) (sensormodel.Model, bool)
}

func (a *App) profile(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	kname := fs.String("kernel", "5ms", "a kernel of the micro suite (gpuwatt micro --list), or a duration: an fp32.fma kernel that long")
	runs := fs.Int("runs", 0, "kernel runs (default: 1000 on a buffered channel such as power.samples, else 400)")
	channel := fs.String("channel", "", "power channel to read (default: the one with the finest resolution that works: power.samples, else power.instant, else power.usage)")
	online := fs.Bool("online", false, "the online variant: sync to sensor updates, one reading per run")
	period := fs.Duration("period", 0, "the channel's update period T (default: learned by the Sampler)")
	window := fs.Duration("window", -1, "the channel's averaging window W (default: the sensor profile, else the sim's model, else the board's known model)")
	delay := fs.Duration("delay", -1, "how long before an update its window ends (default: as --window)")
	tau := fs.Duration("tau", -1, "the first-order lag in front of the window, 0 for none (default: as --window)")
	sensorProfile := fs.String("sensor-profile", "", "the channel's model: a sensor.json from gpuwatt sensor, or boxcar:window=25ms,period=100ms (flags --period, --window, --delay override it)")
	pollEvery := fs.Duration("poll", 0, "poll interval of the channel while profiling (default 100µs; a buffered channel 50ms)")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--kernel NAME|DURATION] [--runs N] [--channel NAME] [--sensor-profile FILE|MODEL] [--online] [--out DIR] [--json]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("profile", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	switch {
	case *runs < 0:
		return a.usageError("profile", fmt.Errorf("--runs %d: want at least 1", *runs))
	case *period < 0:
		return a.usageError("profile", fmt.Errorf("--period %s: want a positive duration", *period))
	case *pollEvery < 0:
		return a.usageError("profile", fmt.Errorf("--poll %s: want a positive duration", *pollEvery))
	}
	var spec *correct.Spec
	if *sensorProfile != "" {
		sp, err := correct.ParseSpec(*sensorProfile)
		if err != nil {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: %v", err))
		}
		spec = &sp
	}
	launch, kernelErr := parseKernelSpec(*kname)
	if kernelErr != nil {
		return a.usageError("profile", kernelErr)
	}
	if sh.out != "" {
		if err := checkWritable(sh.out); err != nil {
			return a.usageError("profile", fmt.Errorf("--out %s: %v", sh.out, err))
		}
	}
	sys, dev, clk, code, ok := a.openGPU("profile", sh.dev, sh.gpu)
	if !ok {
		return code
	}
	defer sys.Close()
	sn, why, err := pickChannel(dev, *channel)
	if err != nil {
		return a.usageError("profile", err)
	}
	var given *sensormodel.Model
	var givenFrom string
	if spec != nil {
		c, err := spec.Resolve(nil, sn.Channel())
		if err != nil {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: %v", err))
		}
		if c.Model.Kind() == sensormodel.None {
			return a.usageError("profile", fmt.Errorf("--sensor-profile: channel %s has no model (none): the profile needs a boxcar, an RC lag or both", sn.Channel().Name))
		}
		given, givenFrom = &c.Model, "--sensor-profile "+*sensorProfile
	}
	exec, ok := dev.(gpu.Executor)
	if !ok {
		return a.fail("profile", fmt.Errorf("GPU %d cannot run kernels", sh.gpu))
	}
	props := exec.Props()
	if props.SMs == 0 {
		if _, err := exec.Prepare(kernels.Descriptor{}); err != nil {
			return a.fail("profile", err)
		}
	}
	kdev := kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}
	var desc kernels.Descriptor
	if launch > 0 {
		if desc, err = kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kdev, LaunchTime: launch}); err != nil {
			return a.fail("profile", err)
		}
	} else {
		suite, err := kernels.Default(kernels.SuiteOpts{Device: kdev})
		if err != nil {
			return a.fail("profile", err)
		}
		ds, err := kernels.ByName(suite, *kname)
		if err != nil || len(ds) != 1 {
			return a.usageError("profile", fmt.Errorf("--kernel %q: want one kernel of the micro suite (gpuwatt micro --list) or a duration such as 5ms", *kname))
		}
		desc = ds[0]
	}
	k, err := exec.Prepare(desc)
	if err != nil {
		return a.fail("profile", err)
	}
	defer k.Close()
	name := sn.Channel().Name

	m, err := loop.Start(ctx, clk, []gpu.Device{dev}, sensor.Options{})
	if err != nil {
		return a.fail("profile", err)
	}
	progress := !sh.quiet && a.interactive()
	if progress {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: long back-to-back runs of %s\n", desc.Name)
	}
	me, err := m.Measure(ctx, dev.Info().Index, k, desc.Name, loop.Options{})
	if err != nil {
		m.Stop()
		if ctx.Err() != nil {
			return 130
		}
		return a.fail("profile", err)
	}
	var sens sensormodel.Model
	var warn []string
	sens.Period = *period
	if sens.Period == 0 && given != nil {
		sens.Period = given.Period
	}
	if sens.Period == 0 {
		sens.Period = m.Sampler().UpdatePeriod(dev.Info().Index, name)
	}
	// The long runs' Sampler stops here: it must not read the channel while the profile
	// does (a buffered channel hands each sample to one reader only).
	_, stopErr := m.Stop()
	// The channel's model: the sensor profile, else the sim's own model, else the board's
	// known model (correct.Auto: measured boards, Yang et al.), else W = T.
	var base sensormodel.Model
	modelFrom := ""
	if md, ok := dev.(modeler); ok && given == nil {
		if model, ok := md.Model(name); ok {
			base = model.Shape()
			modelFrom = "the sim's own model of " + name
		}
	}
	switch {
	case given != nil:
		base, modelFrom = *given, givenFrom
	case modelFrom == "":
		m, why := correct.Auto(name, dev.Info().Name)
		if m.Kind() == sensormodel.None {
			m = sensormodel.Model{Window: sens.Period}
			why = fmt.Sprintf("no model is known for %s: its window is taken as the update period (pass --sensor-profile from gpuwatt sensor, or --window)", name)
		}
		base, modelFrom = m, "a guess, not measured on this board: "+why
		warn = append(warn, fmt.Sprintf("the model of %s is %s; run gpuwatt sensor and pass --sensor-profile sensor.json to use this board's own", name, modelFrom))
	}
	if sens.Period == 0 && base.Period > 0 {
		sens.Period = base.Period
	}
	sens.Window, sens.Tau, sens.Delay = base.Window, base.Tau, base.Delay
	if *window >= 0 {
		sens.Window = *window
	}
	if *tau >= 0 {
		sens.Tau = *tau
	}
	if *delay >= 0 {
		sens.Delay = *delay
	}
	if me.PerLaunch > 0 && sens.Tau.Seconds() > 20*me.PerLaunch {
		warn = append(warn, fmt.Sprintf("the lag of %s (tau %s) is far longer than the kernel: the profile will be coarse or noisy", name, sens.Tau))
	}
	nRuns := *runs
	if nRuns == 0 {
		nRuns = 400
		if sn.Channel().Buffered {
			nRuns = 1000
		}
	}
	opt := profile.Options{Runs: nRuns, Sensor: sens, Poll: *pollEvery}
	if progress {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: channel %s (%s); model %s (%s); %d runs\n", name, why, profile.ModelName(sens), modelFrom, nRuns)
	}
	t0 := time.Now()
	opt.Progress = func(i, n int) {
		if progress && (i%50 == 0 || i == n) {
			fmt.Fprintf(a.Stderr, "gpuwatt profile: run %d/%d (%s elapsed)\n", i, n, time.Since(t0).Round(time.Second))
		}
	}
	run := profile.Run
	if *online {
		run = profile.RunOnline
	}
	res, perr := run(ctx, clk, sn, k, desc.Name, opt)
	if stopErr != nil && perr == nil {
		perr = stopErr
	}
	if res == nil {
		if ctx.Err() != nil {
			return 130
		}
		if errors.Is(perr, profile.ErrInput) {
			return a.usageError("profile", errors.New(strings.TrimPrefix(perr.Error(), profile.ErrInput.Error()+": ")))
		}
		return a.fail("profile", perr)
	}
	res.Device, res.Simulated = sys.Name(), sys.Simulated()
	res.ChannelWhy = fmt.Sprintf("%s: %s; model from %s", name, why, modelFrom)
	res.Warnings = append(warn, res.Warnings...)
	if me.Launches > 0 {
		res.SetLongRun(profile.LongRun{Launches: me.Launches, SecondsPerLaunch: me.PerLaunch,
			EnergyPerLaunchJ: me.Region.EnergyJ / float64(me.Launches), Source: me.Region.EnergySource})
	}
	if sh.out != "" {
		if err := writeProfile(sh.out, res); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt profile: --out %s: %v\n", sh.out, err)
			return ExitFailure
		}
	}
	if sh.json {
		err = report.WriteJSONTo(a.Stdout, res)
	} else {
		err = profile.WriteText(a.Stdout, res)
	}
	if err != nil {
		return a.fail("profile", err)
	}
	if ctx.Err() != nil {
		return 130
	}
	if len(res.Profile) == 0 {
		fmt.Fprintf(a.Stderr, "gpuwatt profile: no profile could be computed (the warnings say why)\n")
		return ExitFailure
	}
	return ExitOK
}

// parseKernelSpec returns the launch time of a --kernel given as a duration, or 0 for a name.
func parseKernelSpec(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("--kernel: want a kernel of the micro suite or a duration such as 5ms")
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '.' || c == '-' {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > 10*time.Second {
			return 0, fmt.Errorf("--kernel %q: want a duration such as 5ms (at most 10s) or a kernel name", s)
		}
		return d, nil
	}
	return 0, nil
}

// channelRank is the default order of the board power channels for a profile, finest
// first, with why.
var channelRank = []struct{ name, why string }{
	{trace.ChPowerSamples, "the driver's buffer of timestamped samples every 20 ms (every instant seen, the finest resolution per run)"},
	{trace.ChPowerInstant, "updates every ~100 ms (power.samples is not available)"},
	{trace.ChPowerUsage, "a 1 s average every ~100 ms, the coarsest (neither power.samples nor power.instant is available)"},
}

// pickChannel returns the power channel to profile: the one named, or the working board
// channel with the finest resolution (channelRank), and why.
func pickChannel(dev gpu.Device, name string) (sensor.Sensor, string, error) {
	var names []string
	var byName = map[string]sensor.Sensor{}
	for _, s := range dev.Sensors() {
		ch := s.Channel()
		if ch.Quantity != trace.QPower || ch.Setting || ch.Cumulative {
			continue
		}
		if _, err := s.Read(nil); err != nil {
			continue
		}
		names = append(names, ch.Name)
		byName[ch.Name] = s
	}
	if name == "" {
		for _, r := range channelRank {
			if s, ok := byName[r.name]; ok {
				return s, "chosen by default: " + r.why, nil
			}
		}
		if len(names) == 0 {
			return nil, "", fmt.Errorf("GPU %d has no working power channel", dev.Info().Index)
		}
		return byName[names[0]], "the first working power channel", nil
	}
	if s, ok := byName[name]; ok {
		return s, "named by --channel", nil
	}
	return nil, "", fmt.Errorf("--channel %q: want a working power channel of GPU %d (%s)", name, dev.Info().Index, strings.Join(names, ", "))
}

func writeProfile(dir string, res *profile.Result) error {
	if err := report.WriteJSON(filepath.Join(dir, "profile.json"), res); err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(dir, "profile.csv"), func(w io.Writer) error { return profile.WriteCSV(w, res) }); err != nil {
		return err
	}
	return profile.Page(res).WriteFile(filepath.Join(dir, "report.html"))
}
