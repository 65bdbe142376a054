// Package measure runs a command while a Sampler records the chosen GPUs and turns the
// trace into a perf-stat-like summary: duration, energy from the counter and from every
// power channel, idle-subtracted energy, power, clocks, throttling and warnings.
package measure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
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
	// Env is added to gpuwatt's own environment for the command (GPUWATT_MARKS=...).
	Env []string
	// WaitChildren waits, after the command exits, for the processes it started that run
	// on (its process group), so their work is measured too (--wait-children).
	WaitChildren bool
}

// ErrCommandNotFound is returned (wrapped) when the command cannot be found (exit 127).
var ErrCommandNotFound = errors.New("command not found")

// ErrNotExecutable is returned (wrapped) when the command exists but cannot be run: not
// executable, or a directory (exit 126, as a shell gives).
var ErrNotExecutable = errors.New("command not executable")

// Killed is what Run returns, with the exit code 128+N a shell would give, when the
// command was ended by a signal: measure names the signal instead of a bare "exit 137".
type Killed struct{ Signal syscall.Signal }

func (k *Killed) Error() string { return "killed by " + SignalName(k.Signal) }

// Check reports whether argv[0] can be run, before any measuring starts.
func (r ExecRunner) Check(argv []string) error {
	if _, err := exec.LookPath(argv[0]); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			return fmt.Errorf("%w: %s", ErrNotExecutable, err)
		}
		return fmt.Errorf("%w: %s", ErrCommandNotFound, err)
	}
	return nil
}

// Run implements Runner. The command runs in a process group of its own (unless its stdin
// is a terminal): cancelling ctx sends the whole group the signal that ended gpuwatt
// (context.Cause holding an os.Signal: SIGINT, SIGTERM or SIGHUP; SIGINT otherwise), then
// SIGKILL after Grace, so a workload under `sh -c` or a launcher stops with it. Processes
// of the group still running when the command exits are returned as *Outlived (waited for
// with WaitChildren).
func (r ExecRunner) Run(ctx context.Context, argv []string) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.Stdin, r.Stdout, r.Stderr
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
	group := ownGroup(r.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	grace := r.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	sig := func() os.Signal {
		var s interface{ Signal() os.Signal }
		if errors.As(context.Cause(ctx), &s) {
			return s.Signal()
		}
		return os.Interrupt
	}
	var stopAt atomic.Int64 // when Cancel signalled the command (unix ns), 0 before
	cmd.Cancel = func() error {
		stopAt.Store(time.Now().UnixNano())
		return signalGroup(cmd.Process, group, sig())
	}
	cmd.WaitDelay = grace
	err := cmd.Run()
	if at := stopAt.Load(); group && cmd.ProcessState != nil && at != 0 {
		// Stopped: what is left of the group (a background worker that ignores SIGINT, as
		// a shell's do) gets the rest of the grace, then SIGKILL; Run returns when it is gone.
		endGroup(cmd.Process.Pid, time.Unix(0, at).Add(grace))
	}
	if cmd.ProcessState == nil {
		if ctx.Err() != nil {
			return 130, ctx.Err() // interrupted before the command could start
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			return 126, fmt.Errorf("%w: %v", ErrNotExecutable, err)
		}
		return 127, fmt.Errorf("%w: %v", ErrCommandNotFound, err)
	}
	code, err := cmd.ProcessState.ExitCode(), error(nil)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code, err = 128+int(ws.Signal()), &Killed{ws.Signal()}
	}
	if group {
		if left := groupMembers(cmd.Process.Pid); len(left) > 0 && err == nil {
			o := &Outlived{PIDs: left}
			if r.WaitChildren {
				t0 := time.Now()
				waitGroup(ctx, cmd.Process.Pid, sig, grace)
				o.Waited = max(time.Since(t0), time.Nanosecond)
			}
			err = o
		}
	}
	return code, err
}

// SignalName is a signal's name as kill -l gives it with the SIG prefix (SIGKILL), or
// "signal N".
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
	syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

// Options are one measurement: what to record and the command to run. The system and the
// clock come from the device.Env that Run is given.
type Options struct {
	GPUs []int // indices into the system's devices; empty means all
	// Channels are glob patterns on channel names ("power.*"), or DefaultChannels (the
	// lean set, SelectSensors); empty means all.
	Channels []string
	// GPUCPU keeps each of the Sampler's lanes on an OS thread of its own, so that the
	// summary can give the polling CPU per GPU (Options.ThreadCPU of internal/sensor). Off,
	// the summary gives the whole process's CPU alone, which is then lower.
	GPUCPU   bool
	Poll     sensor.Options
	Baseline time.Duration // idle recording before the command
	Tail     time.Duration // recording after it
	Runner   Runner
	Command  []string
	// Marks is the file the command appends region markers to (the caller tells the
	// command its path through GPUWATT_MARKS): created or emptied before the command
	// starts, read while it runs (internal/marks); "" reads none.
	Marks string
	// SimLoad is what the sim device draws while the command runs (ignored on real GPUs).
	SimLoad SimLoad
	// HostRoot is the powercap tree of the host's RAPL counters (default
	// /sys/class/powercap; the sim's own where its config models a host); NoHost records
	// none.
	HostRoot string
	NoHost   bool
	// Meta fields the caller knows: version, host, gpuwatt's own command line.
	Version     string
	Host        string
	CommandLine []string
}

// SimLoad is the sim device's charge for the measured command: the twin cannot see a real
// command's GPU work, so it draws a stated power while the command runs. The zero value is
// the preset's command_load_w; Idle draws nothing (a command that launches no sim work:
// without it, every region of such a command looks unsynchronised); W a power of its own.
type SimLoad struct {
	Idle bool
	W    units.Power
}

// ParseSimLoad parses --sim-load: "preset" (or ""), "idle", or a power in W ("300", "300W").
func ParseSimLoad(s string) (SimLoad, error) {
	v := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "w")
	switch v {
	case "", "preset":
		return SimLoad{}, nil
	case "idle":
		return SimLoad{Idle: true}, nil
	}
	w, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(w) || w <= 0 || w > trace.MaxBoardPowerW {
		return SimLoad{}, fmt.Errorf("--sim-load %q: want preset, idle or a power in W above 0 and at most %d", s, trace.MaxBoardPowerW)
	}
	return SimLoad{W: units.Power(w)}, nil
}

// commandCharger is the sim device's charge for a command (gpu/sim.Device).
type commandCharger interface {
	CommandLoad() units.Power
	SetCommandLoad(units.Power)
}

// chargeCommand applies o's SimLoad to the sim devices among devs and says what they draw
// while the command runs ("" on real GPUs); notifyOK is false where they draw nothing.
func (l SimLoad) chargeCommand(devs []gpu.Device) (stated string, notifyOK bool) {
	var ws []string
	for _, d := range devs {
		c, ok := d.(commandCharger)
		if !ok {
			continue
		}
		if l.W > 0 {
			c.SetCommandLoad(l.W)
		}
		ws = append(ws, fmt.Sprintf("GPU %d %s", d.Info().Index, c.CommandLoad()))
	}
	switch {
	case len(ws) == 0:
		return "", true
	case l.Idle:
		return "none: the sim device stayed idle while the command ran (--sim-load idle)", false
	case l.W > 0:
		return "the sim device drew " + strings.Join(ws, ", ") + " while the command ran (--sim-load)", true
	}
	return "the sim device drew " + strings.Join(ws, ", ") + " (its preset's command_load_w) while the command ran, whatever the command did on a GPU (--sim-load idle for a command that launches no sim work)", true
}

// Result is what Run measured.
type Result struct {
	Trace    *trace.Trace
	ExitCode int
	// Signal names the signal that ended the command ("SIGKILL"), if one did; ExitCode is
	// then 128 plus its number, as a shell gives.
	Signal     string
	Start, End time.Duration // the command's run on the trace's axis
	Devices    []gpu.Device
	// MarksRead says Options.Marks was read; Marks are its markers in time order (on the
	// trace's axis, also in the trace's marks as "begin NAME" and "end NAME") and
	// MarkWarnings what was wrong with its lines.
	MarksRead    bool
	Marks        []marks.Event
	MarkWarnings []status.Warning
	// Outlived names the processes the command started that ran on after it exited.
	Outlived *Outlived
	// MarksRaw is the marks file as read (at most marks.MaxBytes), kept as marks.txt.
	MarksRaw []byte
	// SimLoad says what the sim device drew while the command ran ("" on real GPUs).
	SimLoad string
	// HostUnavailable says in one line why the host's RAPL counters were not recorded.
	HostUnavailable string
	// SystemGPUs is how many GPUs the machine has (Devices are those recorded): a node
	// total needs them all.
	SystemGPUs int
}

// wantHost reports whether --channels asks for host channel name: by default, "all", or
// a pattern that matches it.
func wantHost(name string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if p = strings.TrimSpace(p); p == DefaultChannels || p == "all" {
			return true
		}
	}
	return MatchChannel(name, patterns)
}

// SelectDevices returns the devices with the given indices (all when idx is empty).
func SelectDevices(sys gpu.System, idx []int) ([]gpu.Device, error) {
	all := sys.Devices()
	if len(idx) == 0 {
		if len(all) == 0 {
			return nil, status.Inputf("no GPU found")
		}
		return all, nil
	}
	var out []gpu.Device
	for _, i := range idx {
		if i < 0 || i >= len(all) {
			return nil, status.Inputf("--gpu %d: no such GPU (found %d: 0..%d)", i, len(all), len(all)-1)
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

// Validate checks the options without measuring anything; its errors name the flag.
func (o Options) Validate() error {
	bad := fmt.Errorf
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return bad("no command to measure: gpuwatt measure [flags] -- CMD [ARGS...]")
	case o.Baseline < 0:
		return bad("--baseline %s: must not be negative", o.Baseline)
	case o.Tail < 0:
		return bad("--tail %s: must not be negative", o.Tail)
	case o.Runner == nil:
		return errors.New("measure: no runner for the command")
	}
	if err := sensor.CheckCounterEvery(o.Poll.CounterEvery); err != nil {
		return bad("--counter-every %v", err)
	}
	seen := map[int]bool{}
	for _, i := range o.GPUs {
		if i < 0 {
			return bad("--gpu %d: want a GPU index >= 0", i)
		}
		if seen[i] {
			return bad("--gpu: GPU %d is named twice", i)
		}
		seen[i] = true
	}
	for _, p := range o.Channels {
		if _, err := path.Match(p, ""); err != nil {
			return bad("--channels %q: not a valid pattern: %v", p, err)
		}
	}
	return nil
}

// Run records a baseline, runs the command, records the tail, and returns the trace, on
// env.System and env.Clock. When ctx is cancelled (Ctrl-C) the command is stopped and
// whatever was recorded is returned, marked incomplete, together with ctx's error.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, status.Inputf("%v", err)
	}
	if env.System == nil || env.Clock == nil {
		return nil, errors.New("measure: no device")
	}
	devs, err := SelectDevices(env.System, o.GPUs)
	if err != nil {
		return nil, err
	}
	var all []sensor.Sensor
	for _, d := range devs {
		all = append(all, d.Sensors()...)
	}
	sensors := SelectSensors(all, o.Channels)
	if len(sensors) == 0 {
		return nil, status.Inputf("--channels %s: matches no channel", strings.Join(o.Channels, ","))
	}
	hostWhy := ""
	if o.NoHost {
		hostWhy = "not asked for (--rapl-root none)"
	} else if hs, err := device.HostSensors(env.System, o.HostRoot); err != nil {
		hostWhy = err.Error()
	} else {
		for _, h := range hs {
			if wantHost(h.Channel().Name, o.Channels) {
				sensors = append(sensors, h)
			}
		}
	}
	clk := env.Clock
	popt := o.Poll
	// The Sampler's CPU per GPU, in the summary, only where asked: a lane on an OS thread
	// of its own costs a handoff at every wakeup (docs/sampling.md).
	popt.ThreadCPU = o.GPUCPU
	if popt.SlowShare == 0 {
		popt.SlowShare = sensor.DefaultSlowShare
	}
	smp := sensor.New(clk, sensors, popt)
	if err := smp.Start(ctx); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	res := &Result{Devices: devs, SystemGPUs: len(env.System.Devices()), HostUnavailable: hostWhy}
	var runErr error
	incomplete := ""
	cmdMarks := []trace.Mark{}
	mark := func(name string, t time.Duration) {
		cmdMarks = append(cmdMarks, trace.Mark{T: t.Seconds(), Name: name})
	}

	if err := clk.Sleep(ctx, o.Baseline); err != nil {
		incomplete = interrupted(ctx, "during the baseline")
		runErr = err
	} else {
		smp.Poke() // a reading of every channel, the energy counter above all, right at the start
		res.Start = clk.Now()
		mark("cmd.start", res.Start)
		stated, charge := o.SimLoad.chargeCommand(devs)
		res.SimLoad = stated
		if charge {
			notify(devs, func(o gpu.CommandObserver) { o.CommandStarted(res.Start) })
		}
		var tail *marks.Tail
		var toAxis func(float64) time.Duration
		if o.Marks != "" {
			var err error
			if tail, err = marks.OpenTail(ctx, o.Marks, clk); err != nil {
				res.MarkWarnings = append(res.MarkWarnings, status.Warnf(marks.CodeBadLine, "%v: no region markers were read", err))
			}
			toAxis = marks.Origin(clk)
		}
		res.ExitCode, runErr = o.Runner.Run(ctx, o.Command)
		if tail != nil {
			lines, err := tail.Stop()
			res.MarksRaw = tail.Raw()
			if err != nil {
				res.MarkWarnings = append(res.MarkWarnings, status.Warnf(marks.CodeBadLine, "%v: markers after the error were not read", err))
			}
			evs, ws := marks.ParseLines(lines, toAxis)
			res.MarksRead, res.Marks = true, evs
			res.MarkWarnings = append(res.MarkWarnings, ws...)
		}
		var killed *Killed
		if errors.As(runErr, &killed) {
			res.Signal, runErr = SignalName(killed.Signal), nil // it ran: its end is its outcome
		}
		var outlived *Outlived
		if errors.As(runErr, &outlived) {
			res.Outlived, runErr = outlived, nil // it ran; the summary says what ran on
		}
		res.End = clk.Now()
		notify(devs, func(o gpu.CommandObserver) { o.CommandEnded(res.End) })
		mark("cmd.end", res.End)
		smp.Poke()
		switch {
		case ctx.Err() != nil:
			incomplete = interrupted(ctx, "while the command ran")
			runErr = ctx.Err()
		case runErr != nil:
			incomplete = "the command could not be run"
		default:
			if err := clk.Sleep(ctx, max(o.Tail, counterGuard(smp, devs))); err != nil {
				incomplete = interrupted(ctx, "during the tail")
				runErr = err
			}
		}
	}
	chans, samples := smp.Stop()
	if hung := smp.Hung(); len(hung) > 0 {
		// A driver call that never returned: the run ends anyway, with what was read
		// before it, marked incomplete, and fails unless something else did first.
		why := "a driver call hangs: " + strings.Join(hung, "; ")
		if incomplete != "" {
			incomplete += "; " + why
		} else {
			incomplete = why
		}
		if runErr == nil {
			runErr = errors.New("the recording is incomplete: " + why)
		}
	}
	_, end := smp.Span()
	if res.MarksRead {
		var ws []status.Warning
		res.Marks, ws = marks.Within(res.Marks, 0, end)
		res.MarkWarnings = append(res.MarkWarnings, ws...)
	}
	meta := trace.Meta{
		Format:        trace.Format,
		Version:       o.Version,
		Host:          o.Host,
		Device:        env.System.Name(),
		Simulated:     env.System.Simulated(),
		DriverVersion: env.System.DriverVersion(),
		NVMLVersion:   env.System.NVMLVersion(),
		Command:       o.CommandLine,
		Start:         clk.Epoch(),
		Duration:      end.Seconds(),
		Poll:          trace.Poll{Mode: o.Poll.String()},
		Channels:      chans,
		Unavailable:   smp.Unavailable(),
		Marks:         cmdMarks,
		Incomplete:    incomplete != "",
		IncompleteWhy: incomplete,
		VirtualClock:  clock.IsVirtual(clk),
	}
	if !meta.VirtualClock {
		// On a virtual clock the CPU time measures the simulation, not the polling.
		meta.SamplerCPUSecs = smp.CPUTime().Seconds()
	}
	if o.Poll.Mode == sensor.Fixed {
		meta.Poll = trace.Poll{Mode: "fixed", Interval: o.Poll.Interval.Seconds()}
	}
	meta.Poll.CounterEvery = o.Poll.CounterEvery.Seconds()
	perGPU := smp.GPUCPUTime()
	for _, d := range devs {
		g := d.Info()
		if c, ok := perGPU[g.Index]; ok && !meta.VirtualClock {
			g.SamplerCPUSecs = c.Seconds()
		}
		meta.GPUs = append(meta.GPUs, g)
	}
	for _, e := range res.Marks {
		verb := "end "
		if e.Begin {
			verb = "begin "
		}
		meta.Marks = append(meta.Marks, trace.Mark{T: e.T.Seconds(), Name: verb + e.Name})
	}
	slices.SortStableFunc(meta.Marks, func(a, b trace.Mark) int { return cmp.Compare(a.T, b.T) })
	if res.End == 0 && res.Start == 0 {
		res.Start, res.End = end, end
	}
	res.Trace = &trace.Trace{Meta: meta, Samples: samples}
	res.Trace.RoundToStored() // the summary's figures are those of the saved trace
	return res, runErr
}

// interrupted is the reason a run cut short at where is incomplete: "interrupted by
// SIGTERM while the command ran" where a signal ended it (the context's cause says which),
// else "interrupted while ...".
func interrupted(ctx context.Context, where string) string {
	return status.Interrupted(ctx) + " " + where
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
