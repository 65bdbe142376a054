package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func (a *App) archline(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("archline", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	precs := fs.String("precision", "fp32,fp64", "precisions to sweep, comma-separated: fp32, fp64, and the tensor cores tc-bf16, tc-fp8 (wgmma: compute capability 9.0)")
	quick := fs.Bool("quick", false, "a smaller sweep: 6 intensities x 2 occupancies")
	minUpdates := fs.Int("min-updates", archline.DefaultLoop.MinUpdates, "sensor updates each point must span")
	minDur := fs.Duration("min-duration", archline.DefaultLoop.MinDuration, "shortest measurement of a point")
	warmup := fs.Duration("warmup", archline.DefaultLoop.Warmup, "back-to-back launches before each point")
	tol := fs.Float64("clock-tolerance", 0.02, "points whose median SM clock is more than this share below the top clock are not fitted")
	poll := fs.String("poll", "adaptive", "Sampler poll mode (see gpuwatt measure --help)")
	if code, ok := a.parseFlags(fs, args, "[--precision fp32,fp64] [--device sim|nvml|...] [--out DIR] [--json] [--quick]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("archline", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("archline", err)
	}
	popt.HangTimeout = a.HangTimeout
	var ps []kernels.Precision
	seen := map[kernels.Precision]bool{}
	for _, s := range strings.Split(*precs, ",") {
		p := kernels.Precision(strings.ToLower(strings.TrimSpace(s)))
		if p != kernels.FP32 && p != kernels.FP64 && !p.Tensor() {
			return a.usageError("archline", fmt.Errorf("--precision %q: want fp32, fp64, tc-bf16 or tc-fp8 (a comma-separated list)", *precs))
		}
		if !seen[p] {
			ps = append(ps, p)
			seen[p] = true
		}
	}
	if !(*tol > 0) {
		return a.usageError("archline", fmt.Errorf("--clock-tolerance %g: want a share between 0 and 1", *tol))
	}
	if *minUpdates < 1 || *minDur < 0 || *warmup < 0 {
		return a.usageError("archline", fmt.Errorf("--min-updates, --min-duration and --warmup: want positive values"))
	}
	opt := archline.Options{Precisions: ps, ClockTolerance: *tol, GPU: sh.gpu, Poll: popt,
		Loop: loop.Options{Warmup: *warmup, MinUpdates: *minUpdates, MinDuration: *minDur, MaxDuration: archline.DefaultLoop.MaxDuration}}
	if *warmup == 0 {
		opt.Loop.Warmup = -1
	}
	if *quick {
		opt.Intensities, opt.Occupancies, opt.TensorIntensities = archline.QuickIntensities, archline.QuickOccupancies, archline.QuickTensorIntensities
	}
	r, code := a.start("archline", sh, opt.Validate)
	if r == nil {
		return code
	}
	defer r.close()
	rep, tr, runErr := opt.Run(ctx, r.env)
	r.done()
	if rep == nil { // bad input (exit 2) or a failure (exit 1)
		return a.exitFor("archline", runErr)
	}
	write := func(dir string) error { return a.writeArchline(dir, rep, tr, r.env.System, args) }
	text := func(w io.Writer) error { archline.WriteText(w, rep); return nil }
	if code := a.output("archline", sh, write, rep.JSONResults(), text); code != ExitOK {
		return code
	}
	return a.suiteExit(ctx, "archline", rep.Failed, runErr)
}

func (a *App) writeArchline(dir string, rep *archline.Result, tr *trace.Trace, sys gpu.System, args []string) error {
	tr.Meta.Incomplete, tr.Meta.IncompleteWhy = rep.Incomplete, rep.Reason
	return writeFiles(dir, &rep.Status, []outFile{
		{"trace.csv and trace.json", func(dir string) error { return a.saveTrace(dir, tr, sys, "archline", args) }},
		{"report.html", func(dir string) error { return archline.Page(rep).WriteFile(filepath.Join(dir, "report.html")) }},
	}, outFile{"results.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "results.json"), rep) }})
}
