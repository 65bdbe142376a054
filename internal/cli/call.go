package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/call"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// callVerb is `gpuwatt call -- CMD`: flags to call.Options, the command through
// call.StartProc (the line protocol of docs/call.md).
func (a *App) callVerb(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll|withRealAuto, "")
	var o call.Options
	var po call.ProcOptions
	target := fs.String("target", "2%", "stop when the 95 % interval of the energy per call above active idle is this tight: a percentage (1%) or a fraction (0.01)")
	fs.IntVar(&o.Calls, "calls", 0, "run exactly this many repetitions instead of stopping at --target (default 0: stop at --target)")
	fs.IntVar(&o.MinCalls, "min-calls", 0, "repetitions before the target is checked (default 30)")
	fs.IntVar(&o.MaxCalls, "max-calls", 0, "at most this many repetitions (default 3000)")
	fs.DurationVar(&o.MaxTime, "max-time", 0, "at most this long measuring (default 5m)")
	fs.IntVar(&o.Batch, "batch", 1, "calls back to back per repetition (the request is the line call N); the figures are per call")
	warmup := fs.Int("warmup", call.DefaultWarmup, "repetitions run back to back before the measurement, not measured (0: none, for a command that warms its call up itself)")
	fs.StringVar(&o.Channel, "channel", "", "the power channel to read the calls from (default: the best the board has, power.samples where it has it)")
	sensorFlag := fs.String("sensor", "", "the channel's sensor model: a sensor.json from gpuwatt sensor (recommended), or a model such as rc:tau=14ms,period=20ms (default: a guess from the board's name)")
	fs.DurationVar(&o.Lead, "lead", 0, "active idle recorded before the first call (default 2s)")
	fs.DurationVar(&o.Tail, "tail", 0, "active idle recorded after the last call (default 2s)")
	seed := fs.Uint64("seed", 1, "seed of the phases")
	fs.DurationVar(&o.CheckIdle, "check-idle", 0, "idle recorded at each check after the calls so far (after 0.4 s; default 600ms; -1s: none): the check then has the final figure's scale, and the gaps split the run into blocks whose spread is the run-to-run part")
	rrFloor := fs.String("run-to-run-floor", "auto", "the least run-to-run part of the interval: a percentage (2%) or a fraction; auto: the board's where its repeated runs were recorded (an H200: 2.15 %), else none; none: the run's blocks alone")
	fs.DurationVar(&po.ReadyTimeout, "ready-timeout", 0, "how long to wait for the command's ready line (default 10m)")
	fs.DurationVar(&po.CallTimeout, "call-timeout", 0, "how long to wait for each done line (default 1m)")
	fs.DurationVar(&po.ExitTimeout, "exit-timeout", 0, "how long to wait for the command to exit after the end of its stdin before it is killed (default 10s)")
	stdio := fs.Bool("stdio", false, "speak the protocol on gpuwatt's own stdin and stdout instead of a command's (the program that started gpuwatt runs the calls: the Python face); needs --out, where call.json is written")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--target 1%] [--calls N] [--batch N] [--sensor FILE|MODEL] [--out DIR] [--json] -- CMD [ARGS...] | --stdio --out DIR"); !ok {
		return code
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("call", err)
	}
	argv := fs.Args()
	switch {
	case *stdio && len(argv) > 0:
		return a.usageError("call", fmt.Errorf("--stdio with a command (%q): one or the other", argv[0]))
	case *stdio && (sh.out == "" || sh.json):
		return a.usageError("call", errors.New("--stdio needs --out DIR (stdout carries the protocol) and no --json"))
	case !*stdio && len(argv) == 0:
		return a.usageError("call", errors.New("no command: gpuwatt call [flags] -- CMD [ARGS...] (the command speaks the line protocol of docs/call.md)"))
	}
	o.Warmup = *warmup
	if *warmup == 0 {
		o.Warmup = -1 // call.Options: 0 is the default, -1 none
	}
	t, err := parseFraction(*target)
	if err != nil {
		return a.usageError("call", fmt.Errorf("--target %q: %v", *target, err))
	}
	o.Target, o.Seed = t, *seed
	switch f := strings.TrimSpace(*rrFloor); f {
	case "auto":
	case "none", "0", "0%":
		o.RunToRunFloor = -1
	default:
		if o.RunToRunFloor, err = parseFraction(f); err != nil {
			return a.usageError("call", fmt.Errorf("--run-to-run-floor %q: %v (or auto, none)", *rrFloor, err))
		}
	}
	if err := o.Validate(); err != nil {
		return a.usageError("call", err)
	}
	if *sensorFlag != "" {
		sp, err := correct.ParseSpec(*sensorFlag)
		if err != nil {
			return a.usageError("call", fmt.Errorf("--sensor: %v", err))
		}
		o.Sensor = &sp
	}
	if err := o.Validate(); err != nil {
		return a.usageError("call", err)
	}
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force); err != nil {
			return a.usageError("call", err)
		}
	}
	// The command runs in real time: a real clock, on the sim device too.
	var clk clock.Clock = clock.NewReal()
	if a.NewClock != nil {
		clk = a.NewClock()
	}
	sys, err := a.openSystem("call", sh.dev, clk)
	if err != nil {
		return a.exitFor("call", err)
	}
	defer sys.Close()
	po.Other, po.Stderr = a.Stderr, a.Stderr
	var proc *call.Proc
	name := "--stdio"
	if *stdio {
		stdout := a.Stdout
		a.Stdout = io.Discard // the text summary must not reach the protocol's pipe
		proc, err = call.Attach(ctx, a.Stdin, stdout, clk, po)
	} else {
		name = argv[0]
		proc, err = call.StartProc(ctx, argv, clk, po)
	}
	if err != nil {
		return a.usageError("call", fmt.Errorf("%s: %v", name, err))
	}
	prog, done := a.newProgress("call", sh.quiet)
	o.Progress = func(p call.Progress) {
		if prog != nil {
			prog(status.Event{Stage: "call", Step: fmt.Sprintf("%d calls", p.Calls), I: p.Calls, Detail: fmt.Sprintf("±%.2g %% (target ±%.2g %%)", 100*p.RelHalfWide, 100*p.Target)})
		}
	}
	res, runErr := call.Run(ctx, call.Env{Clock: clk, System: sys, GPU: sh.gpu}, proc.Func(), o)
	done()
	exitErr := proc.Close()
	if res == nil {
		if ctx.Err() != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt call: %s before a call was measured: nothing to write\n", status.Interrupted(ctx))
			return interruptedCode(ctx)
		}
		return a.fail("call", runErr)
	}
	if exitErr != nil {
		res.Warnings = append(res.Warnings, status.Warning{Code: "command_exit", Message: fmt.Sprintf("%s: %v", name, exitErr)})
	}
	if proc.Arrival > 0 {
		res.Warnings = append(res.Warnings, status.Warning{Code: "stamped_on_arrival", Message: fmt.Sprintf("%d of %d replies carried no T0 T1: their spans run from the request's write to the reply's arrival, which adds the round trip to each call's window", proc.Arrival, proc.Arrival+proc.Stamped)})
	}
	write := func(dir string) error { return writeCall(dir, res) }
	text := func(w io.Writer) error { return writeCallText(w, res) }
	if code := a.output("call", sh, write, res, text); code != ExitOK {
		return code
	}
	switch {
	case ctx.Err() != nil:
		return interruptedCode(ctx)
	case res.Incomplete:
		fmt.Fprintf(a.Stderr, "gpuwatt call: incomplete: %s\n", res.IncompleteReason)
		return ExitFailure
	}
	return ExitOK
}

// parseFraction reads "1%" or "0.01".
func parseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, errors.New("want a percentage such as 1% or a fraction such as 0.01")
	}
	if pct {
		v /= 100
	}
	if !(v > 0 && v < 1) {
		return 0, errors.New("want a width between 0 and 100 %")
	}
	return v, nil
}

// writeCall writes call.json and the recording (trace.csv, trace.json).
func writeCall(dir string, res *call.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "call.json"), res); err != nil {
		return err
	}
	if res.Trace != nil {
		return trace.Save(dir, res.Trace)
	}
	return nil
}

func writeCallText(w io.Writer, r *call.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gpuwatt call: %s, GPU %s\n", r.Device, r.GPUName)
	scale := "figures on its scale"
	if r.CounterScale != nil {
		scale = "figures on " + r.Scale + ": " + r.CounterScale.String()
	}
	fmt.Fprintf(&b, "channel    %s, %s (%s); %s\n", r.Channel, r.Model, r.ModelSource, scale)
	left := ""
	if r.LeftOut > 0 {
		left = fmt.Sprintf(" (%d left out: a reading missing in their window)", r.LeftOut)
	}
	fmt.Fprintf(&b, "calls      %d repetitions of %d call(s)%s; %s\n", r.Calls, r.Batch, left, r.Plan)
	fmt.Fprintf(&b, "time       %s per call\n", fig(r.TimeS, 1e3, "ms"))
	fmt.Fprintf(&b, "energy     %s per call above active idle (%.2f W: %s)\n", fig(r.ActiveJ, 1, "J"), r.ActiveIdleW.Value, r.Idle)
	fmt.Fprintf(&b, "           %s per call in all, over its own span\n", fig(r.EnergyJ, 1, "J"))
	fmt.Fprintf(&b, "absolute   [%.6g, %.6g] J above active idle with the board's ±5 %% gain error\n", r.ActiveJ.AbsLow, r.ActiveJ.AbsHigh)
	if rr := r.RunToRun; rr != nil {
		fmt.Fprintf(&b, "run to run ±%.4g J per call (±%.2g %%) in the interval: %s\n", rr.HalfWidthJ, 100*rr.HalfWidthJ/math.Abs(r.ActiveJ.Value), rr.Note)
	}
	reached := "reached"
	if !r.Reached {
		reached = "not reached"
	}
	fmt.Fprintf(&b, "target     ±%.2g %%: %s (±%.2g %%); %d repetitions needed by the spread\n", 100*r.Target, reached, 100*r.RelHalfWidth, r.CallsNeeded)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning    %s\n", w.Message)
	}
	if r.Incomplete {
		fmt.Fprintf(&b, "incomplete %s\n", r.IncompleteReason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fig(f call.Figure, scale float64, unit string) string {
	return fmt.Sprintf("%.6g %s ± %.2g %% [%.6g, %.6g]", f.Value*scale, unit, 100*f.Rel(), f.Low*scale, f.High*scale)
}
