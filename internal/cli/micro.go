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

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/micro/sass"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func (a *App) micro(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("micro", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	list := fs.Bool("list", false, "list the suite's kernels and exit")
	only := fs.String("only", "", "run only these kernels: names or globs, comma-separated (int32.*,dram.copy); default: the whole suite")
	minUpdates := fs.Int("min-updates", 50, "sensor updates each measurement must span")
	warmup := fs.Duration("warmup", time.Second, "back-to-back launches before each measurement")
	poll := fs.String("poll", "adaptive", "Sampler poll mode (see gpuwatt measure --help)")
	operands := fs.String("operands", "", "operand patterns of the arithmetic classes that have them: zeros,const,random or all (default random)")
	ptxDir := fs.String("ptx", "", "write each kernel's PTX and kernels.json (the counts per launch and per loop iteration) to `DIR` for the default device (or --cc), and exit")
	cc := fs.String("cc", "", "with --ptx: the compute capability to generate for (default 9.0)")
	check := fs.String("check", "", "check the SASS dumps and Nsight Compute tables that bench/gpu/micro_verify.sh recorded in `DIR` against gpuwatt's counts (markdown, or --json), and exit: 1 if a check fails (default: none, the suite runs)")
	if code, ok := a.parseFlags(fs, args, "[--device ...] [--gpu N] [--list] [--only K1,K2] [--operands zeros,const,random] [--out DIR] [--json] | --ptx DIR"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("micro", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("micro", err)
	}
	popt.HangTimeout = a.HangTimeout
	if *check != "" {
		return a.microCheck(*check, sh.json)
	}
	var pats []kernels.Operands
	if *operands != "" {
		if pats, err = kernels.ParseOperands(*operands); err != nil {
			return a.usageError("micro", fmt.Errorf("--operands: %v", err))
		}
	}
	if *ptxDir != "" {
		var names []string
		if *only != "" {
			names = strings.Split(*only, ",")
		}
		if err := micro.WritePTX(*ptxDir, kernels.SuiteOpts{Device: kernels.Device{CC: *cc}, Operands: pats}, names); err != nil {
			if errors.Is(err, status.ErrInput) {
				return a.usageError("micro", err)
			}
			return a.fail("micro", err)
		}
		return ExitOK
	}
	if *list {
		ds, err := kernels.Default(kernels.SuiteOpts{Operands: pats})
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
	opt := micro.Options{Loop: loop.Options{Warmup: *warmup, MinUpdates: *minUpdates}, GPU: sh.gpu, Poll: popt, Operands: pats}
	if *only != "" {
		opt.Only = strings.Split(*only, ",")
	}
	r, code := a.start("micro", sh, opt.Validate)
	if r == nil {
		return code
	}
	defer r.close()
	rep, tr, runErr := opt.Run(ctx, r.env)
	r.done()
	if rep == nil { // bad input (exit 2) or a failure (exit 1)
		return a.exitFor("micro", runErr)
	}
	write := func(dir string) error { return a.writeMicro(dir, rep, tr, r.env.System, args) }
	text := func(w io.Writer) error { micro.WriteText(w, rep); return nil }
	if code := a.output("micro", sh, write, rep, text); code != ExitOK {
		return code
	}
	return a.suiteExit(ctx, "micro", rep.Failed, runErr)
}

// microCheck is micro --check DIR.
func (a *App) microCheck(dir string, asJSON bool) int {
	rep, err := sass.CheckDir(dir)
	if err != nil {
		return a.usageError("micro", fmt.Errorf("--check %s: %v", dir, err))
	}
	if asJSON {
		err = report.WriteJSONTo(a.Stdout, rep)
	} else {
		err = sass.WriteMarkdown(a.Stdout, rep)
	}
	if err != nil {
		return a.fail("micro", err)
	}
	bad := 0
	for _, x := range rep.SASS {
		if !x.OK {
			bad++
		}
	}
	for _, x := range rep.NCU {
		if !x.OK {
			bad++
		}
	}
	if bad > 0 {
		fmt.Fprintf(a.Stderr, "gpuwatt micro: --check %s: %d check(s) failed\n", dir, bad)
		return ExitFailure
	}
	return ExitOK
}

func (a *App) writeMicro(dir string, rep *micro.Result, tr *trace.Trace, sys gpu.System, args []string) error {
	tr.Meta.Incomplete, tr.Meta.IncompleteWhy = rep.Incomplete, rep.Reason
	return writeFiles(dir, &rep.Status, []outFile{
		{"trace.csv and trace.json", func(dir string) error { return a.saveTrace(dir, tr, sys, "micro", args) }},
		{"results.csv", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "results.csv"), func(w io.Writer) error { return micro.WriteCSV(w, rep) })
		}},
		{"report.html", func(dir string) error { return micro.Page(rep).WriteFile(filepath.Join(dir, "report.html")) }},
	}, outFile{"results.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "results.json"), rep) }})
}

// output writes a verb's files to --out (write), then its result to stdout: asJSON with
// --json, else the text. A failure is told on stderr and gives the exit code; a file that
// could not be written does not keep the result from stdout.
func (a *App) output(verb string, sh shared, write func(dir string) error, asJSON any, text func(io.Writer) error) int {
	code := ExitOK
	if sh.out != "" {
		if err := write(sh.out); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt %s: --out %s: %v\n", verb, sh.out, err)
			code = ExitFailure
		}
	}
	var err error
	if sh.json {
		err = report.WriteJSONTo(a.Stdout, asJSON)
	} else {
		err = text(a.Stdout)
	}
	if err != nil {
		return a.fail(verb, err)
	}
	return code
}

// suiteExit is the exit code of a run of many kernels: 128+N when signal N interrupted it, 1 when a
// kernel could not be measured or the run stopped part-way (told on stderr), else 0.
func (a *App) suiteExit(ctx context.Context, verb string, failed []string, runErr error) int {
	switch {
	case ctx.Err() != nil:
		return interruptedCode(ctx)
	case len(failed) > 0:
		fmt.Fprintf(a.Stderr, "gpuwatt %s: %d kernel(s) could not be measured: %s\n", verb, len(failed), strings.Join(failed, ", "))
		return ExitFailure
	case runErr != nil:
		fmt.Fprintf(a.Stderr, "gpuwatt %s: %v\n", verb, runErr)
		return ExitFailure
	}
	return ExitOK
}

// saveTrace stamps a verb's trace with gpuwatt's version, the host, the device and the
// command line, and saves it (trace.csv and trace.json) in dir.
func (a *App) saveTrace(dir string, tr *trace.Trace, sys gpu.System, verb string, args []string) error {
	tr.Meta.Version, tr.Meta.Host, tr.Meta.Device = a.versionString(), a.host(), sys.Name()
	tr.Meta.Simulated = sys.Simulated()
	tr.Meta.DriverVersion, tr.Meta.NVMLVersion = sys.DriverVersion(), sys.NVMLVersion()
	tr.Meta.Command = append([]string{"gpuwatt", verb}, args...)
	return trace.Save(dir, tr)
}

// run is a verb that runs gpuwatt's own workloads, once started: env for its Run (the
// opened system, its clock, the progress renderer); done ends the progress line, close
// closes the system.
type run struct {
	env   device.Env
	done  func()
	close func() error
}

// start checks a verb's options (validate, may be nil) and its --out directory, opens the
// device for gpuwatt's own workloads and starts the progress renderer. On failure it has
// printed why and returns nil and the exit code.
func (a *App) start(verb string, sh shared, validate func() error) (*run, int) {
	if validate != nil {
		if err := validate(); err != nil {
			return nil, a.usageError(verb, err)
		}
	}
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force || sh.resume); err != nil {
			return nil, a.usageError(verb, err)
		}
	}
	sys, clk, err := a.openForKernels(verb, sh.dev)
	if err != nil {
		return nil, a.exitFor(verb, err)
	}
	r := &run{env: device.Env{System: sys, Clock: clk}, close: sys.Close}
	r.env.Progress, r.done = a.newProgress(verb, sh.quiet)
	return r, ExitOK
}

// openForKernels opens the GPUs for gpuwatt's own workloads: a real clock for a real GPU,
// a virtual one (instant, deterministic) for the sim device.
func (a *App) openForKernels(verb string, df deviceFlags) (gpu.System, clock.Clock, error) {
	o := device.Options{VirtualSim: true, NVMLPaths: a.NVMLPaths, AMDSMIPaths: a.AMDSMIPaths, Notice: a.Stderr, Verb: verb}
	if a.NewClock != nil {
		o.Clock = a.NewClock()
	}
	op, err := device.Open(df.spec(), o)
	if err != nil {
		return nil, nil, err
	}
	if a.WrapSystem != nil {
		return a.WrapSystem(op.System), op.Clock, nil
	}
	return op.System, op.Clock, nil
}
