package profile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Options are one `gpuwatt profile`: the kernel, the channel and what is known of its
// sensor's model. Start from DefaultOptions.
type Options struct {
	Kernel  string        // a kernel of the micro suite, or a duration ("5ms"): an fp32.fma kernel that long
	GPU     int           // index in the opened system
	Runs    int           // kernel runs; 0: 1000 on a buffered channel, else 400
	Channel string        // power channel; "": the finest that works (ChannelRank)
	Online  bool          // the online variant (RunOnline)
	Period  time.Duration // the update period; 0: learned by the Sampler
	// Window, Delay and Tau override the model's; negative: from the model.
	Window, Delay, Tau time.Duration
	// Sensor is the channel's model from --sensor-profile (a sensor.json or a model);
	// SensorFrom says so in the result. nil: the sim's own model, else a guess.
	Sensor     *correct.Spec
	SensorFrom string
	Poll       time.Duration // poll interval while profiling; 0: the default
}

// DefaultOptions are the command line's defaults.
func DefaultOptions() Options {
	return Options{Kernel: "5ms", Window: -1, Delay: -1, Tau: -1}
}

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	switch {
	case o.Runs < 0:
		return fmt.Errorf("--runs %d: want at least 1", o.Runs)
	case o.Period < 0:
		return fmt.Errorf("--period %s: want a positive duration", o.Period)
	case o.Poll < 0:
		return fmt.Errorf("--poll %s: want a positive duration", o.Poll)
	case o.Poll > 0 && o.Poll < sensor.MinFixedInterval:
		return fmt.Errorf("--poll %s: shorter than the %s a poll interval can keep", o.Poll, sensor.MinFixedInterval)
	}
	if _, _, ok, err := ParseTwoPhase(o.Kernel); ok {
		return err
	}
	_, err := ParseKernel(o.Kernel)
	return err
}

// ParseKernel returns the launch time of a --kernel given as a duration, or 0 for a name.
func ParseKernel(s string) (time.Duration, error) {
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

// ChannelRank is the default order of the board power channels for a profile, finest
// first, with why.
var ChannelRank = []struct{ Name, Why string }{
	{trace.ChPowerSamples, "the driver's buffer of timestamped samples every 20 ms (every instant seen, the finest resolution per run)"},
	{trace.ChPowerInstant, "updates every ~100 ms (power.samples is not available)"},
	{trace.ChPowerUsage, "a 1 s average every ~100 ms, the coarsest (neither power.samples nor power.instant is available)"},
}

// PickChannel returns the power channel to profile: the one named, or the working board
// channel with the finest resolution (ChannelRank), and why.
func PickChannel(dev gpu.Device, name string) (sensor.Sensor, string, error) {
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
		for _, r := range ChannelRank {
			if s, ok := byName[r.Name]; ok {
				return s, "chosen by default: " + r.Why, nil
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
	return nil, "", fmt.Errorf("%w: --channel %q: want a working power channel of GPU %d (%s)", status.ErrInput, name, dev.Info().Index, strings.Join(names, ", "))
}

// Run measures the kernel's long-run energy, settles the channel's model (the sensor
// profile given, else the twin's own model on the sim, else the board's known model, else
// W = T) and profiles it. Errors wrapping status.ErrInput are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", status.ErrInput, err)
	}
	dev, exec, err := env.KernelGPU(o.GPU)
	if err != nil {
		return nil, err
	}
	emit := func(step string, i, n int) {
		env.Progress.Emit(status.Event{Stage: "profile", Step: step, I: i, N: n})
	}
	sn, why, err := PickChannel(dev, o.Channel)
	if err != nil {
		return nil, err
	}
	name := sn.Channel().Name
	var given *sensormodel.Model
	defaulted := ""
	if o.Sensor != nil {
		c, err := o.Sensor.Resolve(nil, sn.Channel())
		if err != nil {
			return nil, fmt.Errorf("%w: --sensor-profile: %v", status.ErrInput, err)
		}
		if c.Model.Kind() == sensormodel.None {
			return nil, fmt.Errorf("%w: --sensor-profile: channel %s has no model (none): the profile needs a boxcar, an RC lag or both", status.ErrInput, name)
		}
		given, defaulted = &c.Model, c.Defaulted
	}
	props := exec.Props()
	kdev := kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}
	launch, _ := ParseKernel(o.Kernel)
	pa, pb, two, _ := ParseTwoPhase(o.Kernel)
	var desc kernels.Descriptor
	var phaseK [2]gpu.Kernel
	var ch *chain
	if two {
		da, err := kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kdev, LaunchTime: pa})
		if err != nil {
			return nil, err
		}
		db, err := kernels.DRAMRead(kernels.Opts{Device: kdev, LaunchTime: pb, Bytes: 256 << 20})
		if err != nil {
			return nil, err
		}
		for i, d := range []kernels.Descriptor{da, db} {
			if phaseK[i], err = exec.Prepare(d); err != nil {
				if i == 1 {
					phaseK[0].Close()
				}
				return nil, err
			}
		}
		ch = &chain{a: phaseK[0], b: phaseK[1]}
		desc.Name = fmt.Sprintf("two-phase %s %s + %s %s", da.Name, pa, db.Name, pb)
	} else if launch > 0 {
		if desc, err = kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kdev, LaunchTime: launch}); err != nil {
			return nil, err
		}
	} else {
		suite, err := kernels.Default(kernels.SuiteOpts{Device: kdev})
		if err != nil {
			return nil, err
		}
		ds, err := kernels.ByName(suite, o.Kernel)
		if err != nil || len(ds) != 1 {
			return nil, fmt.Errorf("%w: --kernel %q: want one kernel of the micro suite (gpuwatt micro --list) or a duration such as 5ms", status.ErrInput, o.Kernel)
		}
		desc = ds[0]
	}
	var k gpu.Kernel = ch
	if ch == nil {
		if k, err = exec.Prepare(desc); err != nil {
			return nil, err
		}
	}
	defer k.Close()

	m, err := loop.Start(ctx, env.Clock, []gpu.Device{dev}, sensor.Options{})
	if err != nil {
		return nil, err
	}
	emit("long back-to-back runs of "+desc.Name, 0, 0)
	me, err := m.Measure(ctx, dev.Info().Index, k, desc.Name, loop.Options{})
	if err != nil {
		m.Stop()
		return nil, err
	}
	// A two-phase kernel: each phase's steady power, from long back-to-back runs of it alone
	// on the profiled channel.
	var steady []*loop.Measurement
	if ch != nil {
		for i, pk := range phaseK {
			emit("steady state of "+TwoPhaseNames[i]+" alone", i+1, 2)
			mp, err := m.Measure(ctx, dev.Info().Index, pk, TwoPhaseNames[i], loop.Options{})
			if err != nil {
				m.Stop()
				return nil, err
			}
			steady = append(steady, mp)
		}
		ch.reset()
	}
	var sens sensormodel.Model
	var warn []status.Warning
	sens.Period = o.Period
	if sens.Period == 0 && given != nil {
		sens.Period = given.Period
	}
	if sens.Period == 0 {
		sens.Period = m.Sampler().UpdatePeriod(dev.Info().Index, name)
	}
	// The long runs' Sampler stops here: it must not read the channel while the profile
	// does (a buffered channel hands each sample to one reader only).
	_, stopErr := m.Stop()
	var phases []Phase
	for i, mp := range steady { // their regions are filled by Stop
		p := Phase{Name: TwoPhaseNames[i], SteadyW: mp.Region.MeanPowerW, SteadySource: "mean power of the long runs (" + mp.Region.EnergySource + ")"}
		for _, c := range mp.Region.Channels {
			if c.Channel == name && c.MeanPowerW > 0 {
				p.SteadyW, p.SteadySource = c.MeanPowerW, fmt.Sprintf("mean of %s over %d back-to-back launches (%.3g ms each)", name, mp.Launches, mp.PerLaunch*1e3)
			}
		}
		phases = append(phases, p)
	}
	// The channel's model: the sensor profile, else the twin's own model, else the board's
	// known model (correct.Auto: measured boards, Yang et al.), else W = T.
	var base sensormodel.Model
	modelFrom := ""
	if tr, ok := dev.(gpu.Truth); ok && given == nil {
		if model, ok := tr.Model(name); ok {
			base = model.Shape()
			modelFrom = "the sim's own model of " + name
		}
	}
	switch {
	case given != nil:
		base, modelFrom = *given, o.SensorFrom
		if defaulted != "" {
			warn = append(warn, DefaultedWarning(name, o.SensorFrom, defaulted))
		}
	case modelFrom == "":
		m, why := correct.Auto(name, dev.Info().Name)
		if m.Kind() == sensormodel.None {
			m = sensormodel.Model{Window: sens.Period}
			why = fmt.Sprintf("no model is known for %s: its window is taken as the update period (pass --sensor-profile from gpuwatt sensor, or --window)", name)
		}
		base, modelFrom = m, "a guess, not measured on this board: "+why
		warn = append(warn, status.Warnf(CodeGuessedModel, "the model of %s is %s; run gpuwatt sensor and pass --sensor-profile sensor.json to use this board's own", name, modelFrom))
	}
	if sens.Period == 0 && base.Period > 0 {
		sens.Period = base.Period
	}
	// The model's values and their intervals; a parameter set by a flag has none.
	sens.Window, sens.Tau, sens.Delay, sens.CI = base.Window, base.Tau, base.Delay, base.CI
	if o.Window >= 0 {
		sens.Window, sens.CI.Window = o.Window, sensormodel.Interval{}
	}
	if o.Tau >= 0 {
		sens.Tau, sens.CI.Tau = o.Tau, sensormodel.Interval{}
	}
	if o.Delay >= 0 {
		sens.Delay, sens.CI.Delay = o.Delay, sensormodel.Interval{}
	}
	if me.PerLaunch > 0 && sens.Tau.Seconds() > 20*me.PerLaunch {
		warn = append(warn, status.Warnf(CodeLongLag, "the lag of %s (tau %s) is far longer than the kernel: the profile will be coarse or noisy", name, sens.Tau))
	}
	nRuns := o.Runs
	if nRuns == 0 {
		nRuns = 400
		if sn.Channel().Buffered {
			nRuns = 1000
		}
	}
	ro := RunOptions{Runs: nRuns, Sensor: sens, Poll: o.Poll}
	emit(fmt.Sprintf("channel %s (%s); model %s (%s); %d runs", name, why, ModelName(sens), modelFrom, nRuns), 0, 0)
	ro.Progress = env.Progress
	run := Run
	if o.Online {
		run = RunOnline
	}
	res, perr := run(ctx, env.Clock, sn, k, desc.Name, ro)
	if stopErr != nil && perr == nil {
		perr = stopErr
	}
	if res == nil {
		return nil, perr
	}
	res.Device, res.Simulated = env.System.Name(), env.System.Simulated()
	if ch != nil {
		endA, startB := ch.boundary()
		phases[0].StartS, phases[0].EndS = 0, endA
		phases[1].StartS, phases[1].EndS = startB, res.KernelS
		res.CheckPhases(phases)
	}
	res.ChannelWhy = fmt.Sprintf("%s: %s; model from %s", name, why, modelFrom)
	res.Warnings = append(append([]status.Warning{}, warn...), res.Warnings...)
	if me.Launches > 0 {
		res.SetLongRun(LongRun{Launches: me.Launches, SecondsPerLaunch: me.PerLaunch,
			EnergyPerLaunchJ: me.Region.EnergyJ / float64(me.Launches), Source: me.Region.EnergySource})
	}
	return res, perr
}
