// Package measure runs a command while a Sampler records the chosen GPUs and turns the
// trace into a perf-stat-like summary: duration, energy from the counter and from every
// power channel, idle-subtracted energy, power, clocks, throttling and warnings.
package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/trace"
)

// Runner runs the measured command.
type Runner interface {
	// Run runs argv to completion (or until ctx is done, when it stops it and still
	// returns its exit code) and returns the exit code.
	Run(ctx context.Context, argv []string) (int, error)
}

// ExecRunner runs a real process with the given standard streams.
type ExecRunner struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Grace is how long a command has to exit after SIGINT before it is killed (default 5 s).
	Grace time.Duration
}

// ErrInput marks errors caused by the caller's selection (a GPU or channel that does not
// exist): bad input, not a failed measurement.
var ErrInput = errors.New("bad input")

// ErrCommandNotFound is returned (wrapped) when the command cannot be started.
var ErrCommandNotFound = errors.New("command not found")

// Check reports whether argv[0] can be run, before any measuring starts.
func (r ExecRunner) Check(argv []string) error {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("%w: %s", ErrCommandNotFound, err)
	}
	return nil
}

// Run implements Runner. Cancelling ctx sends the command SIGINT, then SIGKILL after Grace.
func (r ExecRunner) Run(ctx context.Context, argv []string) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.Stdin, r.Stdout, r.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = r.Grace
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	err := cmd.Run()
	if cmd.ProcessState == nil {
		if ctx.Err() != nil {
			return 130, ctx.Err() // interrupted before the command could start
		}
		return 127, fmt.Errorf("%w: %v", ErrCommandNotFound, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return cmd.ProcessState.ExitCode(), nil
}

// Config is one measurement.
type Config struct {
	System   gpu.System
	GPUs     []int    // indices into System.Devices(); empty means all
	Channels []string // glob patterns on channel names ("power.*"); empty means all
	Poll     sensor.Options
	Baseline time.Duration // idle recording before the command
	Tail     time.Duration // recording after it
	Clock    clock.Clock
	Runner   Runner
	Command  []string
	// Meta fields the caller knows: version, host, gpuwatt's own command line.
	Version     string
	Host        string
	CommandLine []string
}

// Result is what Run measured.
type Result struct {
	Trace      *trace.Trace
	ExitCode   int
	Start, End time.Duration // the command's run on the trace's axis
	Devices    []gpu.Device
}

// SelectDevices returns the devices with the given indices (all when idx is empty).
func SelectDevices(sys gpu.System, idx []int) ([]gpu.Device, error) {
	all := sys.Devices()
	if len(idx) == 0 {
		if len(all) == 0 {
			return nil, fmt.Errorf("%w: no GPU found", ErrInput)
		}
		return all, nil
	}
	var out []gpu.Device
	for _, i := range idx {
		if i < 0 || i >= len(all) {
			return nil, fmt.Errorf("%w: --gpu %d: no such GPU (found %d: 0..%d)", ErrInput, i, len(all), len(all)-1)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// MatchChannel reports whether a channel name matches one of the glob patterns (or there
// are none).
func MatchChannel(name string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok || p == name || p == "all" {
			return true
		}
	}
	return false
}

// Run records a baseline, runs the command, records the tail, and returns the trace. When
// ctx is cancelled (Ctrl-C) the command is stopped and whatever was recorded is returned,
// marked incomplete, together with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	devs, err := SelectDevices(cfg.System, cfg.GPUs)
	if err != nil {
		return nil, err
	}
	var sensors []sensor.Sensor
	for _, d := range devs {
		for _, s := range d.Sensors() {
			if MatchChannel(s.Channel().Name, cfg.Channels) {
				sensors = append(sensors, s)
			}
		}
	}
	if len(sensors) == 0 {
		return nil, fmt.Errorf("%w: --channels %s: matches no channel", ErrInput, strings.Join(cfg.Channels, ","))
	}
	clk := cfg.Clock
	smp := sensor.New(clk, sensors, cfg.Poll)
	if err := smp.Start(ctx); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	res := &Result{Devices: devs}
	var runErr error
	incomplete := ""
	marks := []trace.Mark{}
	mark := func(name string, t time.Duration) { marks = append(marks, trace.Mark{T: t.Seconds(), Name: name}) }

	if err := clk.Sleep(ctx, cfg.Baseline); err != nil {
		incomplete = "interrupted during the baseline"
		runErr = err
	} else {
		smp.Poke() // a reading of every channel, the energy counter above all, right at the start
		res.Start = clk.Now()
		mark("cmd.start", res.Start)
		notify(devs, func(o gpu.CommandObserver) { o.CommandStarted(res.Start) })
		res.ExitCode, runErr = cfg.Runner.Run(ctx, cfg.Command)
		res.End = clk.Now()
		notify(devs, func(o gpu.CommandObserver) { o.CommandEnded(res.End) })
		mark("cmd.end", res.End)
		smp.Poke()
		switch {
		case ctx.Err() != nil:
			incomplete = "interrupted while the command ran"
			runErr = ctx.Err()
		case runErr != nil:
			incomplete = "the command could not be run"
		default:
			if err := clk.Sleep(ctx, max(cfg.Tail, counterGuard(smp, devs))); err != nil {
				incomplete = "interrupted during the tail"
				runErr = err
			}
		}
	}
	chans, samples := smp.Stop()
	_, end := smp.Span()
	meta := trace.Meta{
		Format:        trace.Format,
		Version:       cfg.Version,
		Host:          cfg.Host,
		Device:        cfg.System.Name(),
		Simulated:     cfg.System.Simulated(),
		DriverVersion: cfg.System.DriverVersion(),
		NVMLVersion:   cfg.System.NVMLVersion(),
		Command:       cfg.CommandLine,
		Start:         clk.Epoch(),
		Duration:      end.Seconds(),
		Poll:          trace.Poll{Mode: cfg.Poll.String()},
		Channels:      chans,
		Unavailable:   smp.Unavailable(),
		Marks:         marks,
		Incomplete:    incomplete != "",
		IncompleteWhy: incomplete,
		VirtualClock:  clock.IsVirtual(clk),
	}
	if !meta.VirtualClock {
		// On a virtual clock the CPU time measures the simulation, not the polling.
		meta.SamplerCPUSecs = smp.CPUTime().Seconds()
	}
	if cfg.Poll.Mode == sensor.Fixed {
		meta.Poll = trace.Poll{Mode: "fixed", Interval: cfg.Poll.Interval.Seconds()}
	}
	for _, d := range devs {
		meta.GPUs = append(meta.GPUs, d.Info())
	}
	if res.End == 0 && res.Start == 0 {
		res.Start, res.End = end, end
	}
	res.Trace = &trace.Trace{Meta: meta, Samples: samples}
	return res, runErr
}

// counterGuard is how long to keep recording after the command so that every energy
// counter has published an update after its end (1.5 update periods, at most 1 s): the
// counter's energy over the command is interpolated between readings on both sides of it.
// Without it, --tail 0 left the counter without a reading after the end.
func counterGuard(smp *sensor.Sampler, devs []gpu.Device) time.Duration {
	var g time.Duration
	for _, ch := range smp.Channels() {
		if ch.Cumulative {
			g = max(g, smp.UpdatePeriod(ch.GPU, ch.Name)*3/2)
		}
	}
	return min(g, time.Second)
}

func notify(devs []gpu.Device, f func(gpu.CommandObserver)) {
	for _, d := range devs {
		if o, ok := d.(gpu.CommandObserver); ok {
			f(o)
		}
	}
}
