package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

const sensorSynopsis = "[--device ...] [--gpu N] [--out DIR] [--json] [--quick]"

// sensor is `gpuwatt sensor`: characterise every power channel of a GPU and write
// sensor.json (internal/sensorchar does the work).
func (a *App) sensor(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("sensor", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	quick := fs.Bool("quick", false, "shorter phases (about 25 s of GPU time)")
	if code, ok := a.parseFlags(fs, args, sensorSynopsis); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("sensor", fmt.Errorf("unexpected argument %q: gpuwatt sensor %s", fs.Arg(0), sensorSynopsis))
	}
	opt := sensorchar.Options{Quick: *quick, GPU: sh.gpu}
	r, code := a.start("sensor", sh, opt.Validate)
	if r == nil {
		return code
	}
	defer r.close()
	rep, err := opt.Run(ctx, r.env)
	r.done()
	var cut *sensorchar.Cut
	if errors.As(err, &cut) && ctx.Err() != nil {
		// Interrupted: what was recorded is kept (the trace, marked incomplete); there is
		// nothing to analyse.
		why := status.Interrupted(ctx) + " before every phase was recorded"
		cut.Trace.Meta.Incomplete, cut.Trace.Meta.IncompleteWhy = true, why
		kept := "nothing analysed (the recording is kept with --out)"
		if sh.out != "" {
			werr := writeFiles(sh.out, nil, nil, outFile{"trace.csv and trace.json", func(dir string) error {
				return a.saveTrace(dir, cut.Trace, r.env.System, "sensor", args)
			}})
			if werr != nil {
				fmt.Fprintf(a.Stderr, "gpuwatt sensor: --out %s: %v\n", sh.out, werr)
			} else {
				kept = "the recording is kept in " + filepath.Join(sh.out, "trace.csv") + ", not analysed"
			}
		}
		fmt.Fprintf(a.Stderr, "gpuwatt sensor: %s: %s\n", why, kept)
		return interruptedCode(ctx)
	}
	if errors.Is(err, status.ErrInput) {
		return a.exitFor("sensor", err)
	}
	if err != nil {
		return a.fail("sensor", err)
	}
	write := func(dir string) error { return a.writeSensor(dir, rep, r.env.System, args) }
	if code := a.output("sensor", sh, write, rep, rep.WriteText); code != ExitOK {
		return code
	}
	return ExitOK
}

func (a *App) writeSensor(dir string, rep *sensorchar.Result, sys gpu.System, args []string) error {
	tr := rep.Trace()
	var st status.Status
	return writeFiles(dir, &st, []outFile{
		{"trace.csv and trace.json", func(dir string) error { return a.saveTrace(dir, tr, sys, "sensor", args) }},
		{"sensor.json", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "sensor.json"), func(w io.Writer) error { return correct.WriteProfile(w, rep.Profile()) })
		}},
		{"report.html", func(dir string) error { return rep.Page().WriteFile(filepath.Join(dir, "report.html")) }},
	}, outFile{"results.json", func(dir string) error {
		rep.Incomplete, rep.Reason = st.Incomplete, st.Reason
		return report.WriteJSON(filepath.Join(dir, "results.json"), rep)
	}})
}
