package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gpuwatt/internal/atomicfile"
	"gpuwatt/internal/correct"
	"gpuwatt/internal/device"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/report"
	"gpuwatt/internal/sensorchar"
	"gpuwatt/internal/trace"
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
	if sh.gpu < 0 {
		return a.usageError("sensor", fmt.Errorf("--gpu %d: want a GPU index >= 0", sh.gpu))
	}
	if sh.out != "" {
		if err := checkWritable(sh.out); err != nil {
			return a.usageError("sensor", fmt.Errorf("--out %s: %v", sh.out, err))
		}
	}
	sys, clk, err := a.openForKernels("sensor", sh.dev)
	if err != nil {
		return a.exitFor("sensor", err)
	}
	defer sys.Close()
	opt := sensorchar.Options{Quick: *quick, GPU: sh.gpu}
	env := device.Env{System: sys, Clock: clk}
	var done func()
	env.Progress, done = a.newProgress("sensor", sh.quiet)
	rep, err := opt.Run(ctx, env)
	done()
	if errors.Is(err, sensorchar.ErrInput) {
		return a.usageError("sensor", errors.New(strings.TrimPrefix(err.Error(), sensorchar.ErrInput.Error()+": ")))
	}
	if err != nil {
		return a.fail("sensor", err)
	}
	if sh.out != "" {
		if err := a.writeSensor(sh.out, rep, sys, args); err != nil {
			return a.fail("sensor", fmt.Errorf("--out %s: %v", sh.out, err))
		}
	}
	if sh.json {
		err = report.WriteJSONTo(a.Stdout, rep)
	} else {
		err = rep.WriteText(a.Stdout)
	}
	if err != nil {
		return a.fail("sensor", err)
	}
	return ExitOK
}

func (a *App) writeSensor(dir string, rep *sensorchar.Report, sys gpu.System, args []string) error {
	tr := rep.Trace()
	tr.Meta.Version, tr.Meta.Host, tr.Meta.Device = a.versionString(), a.host(), sys.Name()
	tr.Meta.Simulated = sys.Simulated()
	tr.Meta.DriverVersion, tr.Meta.NVMLVersion = sys.DriverVersion(), sys.NVMLVersion()
	tr.Meta.Command = append([]string{"gpuwatt", "sensor"}, args...)
	if err := trace.Save(dir, tr); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "sensor.json"), func(w io.Writer) error { return correct.WriteProfile(w, rep.Profile()) }); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "results.json"), rep); err != nil {
		return err
	}
	return rep.Page().WriteFile(filepath.Join(dir, "report.html"))
}
