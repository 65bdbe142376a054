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

	"gpuwatt/internal/atomicfile"
	"gpuwatt/internal/clock"
	"gpuwatt/internal/device"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/kernels"
	"gpuwatt/internal/loop"
	"gpuwatt/internal/micro"
	"gpuwatt/internal/report"
	"gpuwatt/internal/sensor"
	"gpuwatt/internal/trace"
)

func (a *App) micro(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("micro", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	list := fs.Bool("list", false, "list the suite's kernels and exit")
	only := fs.String("only", "", "run only these kernels: names or globs, comma-separated (int32.*,dram.copy)")
	minUpdates := fs.Int("min-updates", 50, "sensor updates each measurement must span")
	warmup := fs.Duration("warmup", time.Second, "back-to-back launches before each measurement")
	poll := fs.String("poll", "adaptive", "Sampler poll mode (see gpuwatt measure --help)")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--list] [--only K1,K2] [--out DIR] [--json]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("micro", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("micro", err)
	}
	if *list {
		ds, err := kernels.Default(kernels.SuiteOpts{})
		if err != nil {
			return a.fail("micro", err)
		}
		for _, d := range ds {
			what := string(d.Measured)
			if what == "" {
				for l := range d.Bytes {
					what = string(l)
				}
			}
			fmt.Fprintf(a.Stdout, "%-18s %-15s %s\n", d.Name, d.Group, what)
		}
		return ExitOK
	}
	opt := micro.Options{Loop: loop.Options{Warmup: *warmup, MinUpdates: *minUpdates}, GPU: sh.gpu, Poll: popt}
	if *only != "" {
		opt.Only = strings.Split(*only, ",")
	}
	if err := opt.Validate(); err != nil {
		return a.usageError("micro", err)
	}
	if sh.out != "" {
		if err := checkWritable(sh.out); err != nil {
			return a.usageError("micro", fmt.Errorf("--out %s: %v", sh.out, err))
		}
	}
	sys, clk, err := a.openForKernels("micro", sh.dev)
	if err != nil {
		return a.exitFor("micro", err)
	}
	defer sys.Close()
	env := device.Env{System: sys, Clock: clk}
	var done func()
	env.Progress, done = a.newProgress("micro", sh.quiet)
	rep, tr, runErr := opt.Run(ctx, env)
	done()
	if errors.Is(runErr, micro.ErrInput) {
		return a.usageError("micro", errors.New(strings.TrimPrefix(runErr.Error(), micro.ErrInput.Error()+": ")))
	}
	if rep == nil {
		return a.fail("micro", runErr)
	}
	if sh.out != "" {
		if err := a.writeMicro(sh.out, rep, tr, sys, args); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt micro: --out %s: %v\n", sh.out, err)
			return ExitFailure
		}
	}
	if sh.json {
		if err := report.WriteJSONTo(a.Stdout, rep); err != nil {
			return a.fail("micro", err)
		}
	} else {
		micro.WriteText(a.Stdout, rep)
	}
	switch {
	case ctx.Err() != nil:
		return 130
	case len(rep.Failed) > 0:
		fmt.Fprintf(a.Stderr, "gpuwatt micro: %d kernel(s) could not be measured: %s\n", len(rep.Failed), strings.Join(rep.Failed, ", "))
		return ExitFailure
	case runErr != nil:
		fmt.Fprintf(a.Stderr, "gpuwatt micro: %v\n", runErr)
		return ExitFailure
	}
	return ExitOK
}

func (a *App) writeMicro(dir string, rep *micro.Report, tr *trace.Trace, sys gpu.System, args []string) error {
	tr.Meta.Version, tr.Meta.Host, tr.Meta.Device = a.versionString(), a.host(), sys.Name()
	tr.Meta.Simulated = sys.Simulated()
	tr.Meta.DriverVersion, tr.Meta.NVMLVersion = sys.DriverVersion(), sys.NVMLVersion()
	tr.Meta.Command = append([]string{"gpuwatt", "micro"}, args...)
	tr.Meta.Incomplete, tr.Meta.IncompleteWhy = rep.Incomplete, rep.Reason
	if err := trace.Save(dir, tr); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "results.json"), rep); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "results.csv"), func(w io.Writer) error { return micro.WriteCSV(w, rep) }); err != nil {
		return err
	}
	return micro.Page(rep).WriteFile(filepath.Join(dir, "report.html"))
}

// openForKernels opens the GPUs for gpuwatt's own workloads: a real clock for a real GPU,
// a virtual one (instant, deterministic) for the sim device.
func (a *App) openForKernels(verb string, df deviceFlags) (gpu.System, clock.Clock, error) {
	o := device.Options{VirtualSim: true, NVMLPaths: a.NVMLPaths, Notice: a.Stderr, Verb: verb}
	if a.NewClock != nil {
		o.Clock = a.NewClock()
	}
	op, err := device.Open(df.spec(), o)
	if err != nil {
		return nil, nil, err
	}
	return op.System, op.Clock, nil
}
