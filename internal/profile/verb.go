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
	Online  bool          // the online variant (MeasureOnline)
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
	return nil, "", status.Inputf("--channel %q: want a working power channel of GPU %d (%s)", name, dev.Info().Index, strings.Join(names, ", "))
}

// Run measures the kernel's long-run energy, settles the channel's model (the sensor
// profile given, else the twin's own model on the sim, else the board's known model, else
// W = T) and profiles it. Errors wrapping status.ErrInput are bad input.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, status.Inputf("%v", err)
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
	given, defaulted, err := o.givenModel(sn)
	if err != nil {
		return nil, err
	}
	pk, err := o.prepare(exec)
	if err != nil {
		return nil, err
	}
	defer pk.k.Close()

	m, err := loop.Start(ctx, env.Clock, []gpu.Device{dev}, sensor.Options{})
	if err != nil {
		return nil, err
	}
	me, steady, err := longRuns(ctx, m, dev, pk, emit)
	if err != nil {
		m.Stop()
		return nil, err
	}
	period := o.Period
	if period == 0 && given != nil {
		period = given.Period
	}
	if period == 0 {
		period = m.Sampler().UpdatePeriod(dev.Info().Index, name)
	}
	// The long runs' Sampler stops here: it must not read the channel while the profile
	// does (a buffered channel hands each sample to one reader only).
	_, stopErr := m.Stop()
	phases := steadyPhases(steady, name) // their regions are filled by Stop
	base, modelFrom, warn := o.channelModel(dev, name, given, defaulted, period)
	sens := o.sensorModel(base, period)
	if me.PerLaunch > 0 && sens.Tau.Seconds() > 20*me.PerLaunch {
		warn = append(warn, status.Warnf(CodeLongLag, "the lag of %s (tau %s) is far longer than the kernel: the profile will be coarse or noisy", name, sens.Tau))
	}
	nRuns := o.runs(sn)
	ro := MeasureOptions{Runs: nRuns, Sensor: sens, Poll: o.Poll}
	emit(fmt.Sprintf("channel %s (%s); model %s (%s); %d runs", name, why, ModelName(sens), modelFrom, nRuns), 0, 0)
	ro.Progress = env.Progress
	run := Measure
	if o.Online {
		run = MeasureOnline
	}
	res, perr := run(ctx, env.Clock, sn, pk.k, pk.desc.Name, ro)
	if stopErr != nil && perr == nil {
		perr = stopErr
	}
	if res == nil {
		return nil, perr
	}
	res.Device, res.Simulated = env.System.Name(), env.System.Simulated()
	if pk.chain != nil {
		endA, startB := pk.chain.boundary()
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

// givenModel is the channel's model from --sensor-profile (nil without one), and what of
// it was defaulted.
func (o Options) givenModel(sn sensor.Sensor) (*sensormodel.Model, string, error) {
	if o.Sensor == nil {
		return nil, "", nil
	}
	c, err := o.Sensor.Resolve(nil, sn.Channel())
	if err != nil {
		return nil, "", status.Inputf("--sensor-profile: %v", err)
	}
	if c.Model.Kind() == sensormodel.None {
		return nil, "", status.Inputf("--sensor-profile: channel %s has no model (none): the profile needs a boxcar, an RC lag or both", sn.Channel().Name)
	}
	return &c.Model, c.Defaulted, nil
}

// profiled is the prepared kernel a profile runs: one kernel, or a two-phase chain of two.
type profiled struct {
	k      gpu.Kernel
	desc   kernels.Descriptor
	chain  *chain        // the two-phase kernel; nil for one kernel
	phases [2]gpu.Kernel // the chain's phases
}

// prepare generates and prepares --kernel: a two-phase chain (fp32 FMAs, then DRAM reads),
// an fp32.fma kernel of the given launch time, or a kernel of the micro suite by name.
func (o Options) prepare(exec gpu.Executor) (profiled, error) {
	var pk profiled
	props := exec.Props()
	kdev := kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}
	if pa, pb, two, _ := ParseTwoPhase(o.Kernel); two {
		return prepareTwoPhase(exec, kdev, pa, pb)
	}
	launch, _ := ParseKernel(o.Kernel)
	var err error
	if launch > 0 {
		pk.desc, err = kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kdev, LaunchTime: launch})
	} else {
		pk.desc, err = suiteKernel(kdev, o.Kernel)
	}
	if err != nil {
		return pk, err
	}
	pk.k, err = exec.Prepare(pk.desc)
	return pk, err
}

// suiteKernel is the micro suite's kernel named name.
func suiteKernel(kdev kernels.Device, name string) (kernels.Descriptor, error) {
	suite, err := kernels.Default(kernels.SuiteOpts{Device: kdev})
	if err != nil {
		return kernels.Descriptor{}, err
	}
	ds, err := kernels.ByName(suite, name)
	if err != nil || len(ds) != 1 {
		return kernels.Descriptor{}, status.Inputf("--kernel %q: want one kernel of the micro suite (gpuwatt micro --list) or a duration such as 5ms", name)
	}
	return ds[0], nil
}

// prepareTwoPhase prepares the two-phase kernel: fp32 FMAs for pa, then DRAM reads for pb.
func prepareTwoPhase(exec gpu.Executor, kdev kernels.Device, pa, pb time.Duration) (profiled, error) {
	var pk profiled
	da, err := kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kdev, LaunchTime: pa})
	if err != nil {
		return pk, err
	}
	db, err := kernels.DRAMRead(kernels.Opts{Device: kdev, LaunchTime: pb, Bytes: 256 << 20})
	if err != nil {
		return pk, err
	}
	for i, d := range []kernels.Descriptor{da, db} {
		if pk.phases[i], err = exec.Prepare(d); err != nil {
			if i == 1 {
				pk.phases[0].Close()
			}
			return pk, err
		}
	}
	pk.chain = &chain{a: pk.phases[0], b: pk.phases[1]}
	pk.k = pk.chain
	pk.desc.Name = fmt.Sprintf("two-phase %s %s + %s %s", da.Name, pa, db.Name, pb)
	return pk, nil
}

// longRuns measures the kernel's long back-to-back runs and, for a two-phase kernel, each
// phase's alone (their steady power, on the profiled channel).
func longRuns(ctx context.Context, m *loop.Meter, dev gpu.Device, pk profiled, emit func(string, int, int)) (*loop.Measurement, []*loop.Measurement, error) {
	emit("long back-to-back runs of "+pk.desc.Name, 0, 0)
	me, err := m.Measure(ctx, dev.Info().Index, pk.k, pk.desc.Name, loop.Options{})
	if err != nil {
		return nil, nil, err
	}
	if pk.chain == nil {
		return me, nil, nil
	}
	var steady []*loop.Measurement
	for i, k := range pk.phases {
		emit("steady state of "+TwoPhaseNames[i]+" alone", i+1, 2)
		mp, err := m.Measure(ctx, dev.Info().Index, k, TwoPhaseNames[i], loop.Options{})
		if err != nil {
			return nil, nil, err
		}
		steady = append(steady, mp)
	}
	pk.chain.reset()
	return me, steady, nil
}

// steadyPhases are the two phases' steady powers: each one's mean on the profiled channel
// name, else its region's mean power.
func steadyPhases(steady []*loop.Measurement, name string) []Phase {
	var phases []Phase
	for i, mp := range steady {
		p := Phase{Name: TwoPhaseNames[i], SteadyW: mp.Region.MeanPowerW, SteadySource: "mean power of the long runs (" + mp.Region.EnergySource + ")"}
		for _, c := range mp.Region.Channels {
			if c.Channel == name && c.MeanPowerW > 0 {
				p.SteadyW, p.SteadySource = c.MeanPowerW, fmt.Sprintf("mean of %s over %d back-to-back launches (%.3g ms each)", name, mp.Launches, mp.PerLaunch*1e3)
			}
		}
		phases = append(phases, p)
	}
	return phases
}

// channelModel is the channel's model and where it comes from: the sensor profile, else
// the twin's own model, else the board's known model (correct.Auto: measured boards, Yang
// et al.), else W = T (period), with a warning where it is guessed.
func (o Options) channelModel(dev gpu.Device, name string, given *sensormodel.Model, defaulted string, period time.Duration) (sensormodel.Model, string, []status.Warning) {
	if given != nil {
		var warn []status.Warning
		if defaulted != "" {
			warn = append(warn, DefaultedWarning(name, o.SensorFrom, defaulted))
		}
		return *given, o.SensorFrom, warn
	}
	if tr, ok := dev.(gpu.Truth); ok {
		if model, ok := tr.Model(name); ok {
			return model.Shape(), "the sim's own model of " + name, nil
		}
	}
	m, why := correct.Auto(name, dev.Info().Name)
	if m.Kind() == sensormodel.None {
		m = sensormodel.Model{Window: period}
		why = fmt.Sprintf("no model is known for %s: its window is taken as the update period (pass --sensor-profile from gpuwatt sensor, or --window)", name)
	}
	from := "a guess, not measured on this board: " + why
	return m, from, []status.Warning{status.Warnf(CodeGuessedModel, "the model of %s is %s; run gpuwatt sensor and pass --sensor-profile sensor.json to use this board's own", name, from)}
}

// sensorModel is the model the profile inverts: base's values and intervals, the period
// learned (else base's), and --window, --tau and --delay where set (a flag's value has no
// interval).
func (o Options) sensorModel(base sensormodel.Model, period time.Duration) sensormodel.Model {
	sens := sensormodel.Model{Period: period}
	if sens.Period == 0 && base.Period > 0 {
		sens.Period = base.Period
	}
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
	return sens
}

// runs is --runs, else 1000 on a buffered channel (every sample kept), 400 elsewhere.
func (o Options) runs(sn sensor.Sensor) int {
	switch {
	case o.Runs > 0:
		return o.Runs
	case sn.Channel().Buffered:
		return 1000
	}
	return 400
}
