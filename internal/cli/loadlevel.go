package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel/gpufft"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

const loadlevelSynopsis = "[--device ...] [--preset serve|seed] [--workload auto|gemm|fft] [--variant auto|gpu|cufft|cublas|cpu] [--size 64,512] [--batch N] [--contexts 1,2,4] [--levels default|ssj|100,50] [--spec] [--runs N] [--ptd HOST:PORT] [--out DIR] [--json]"

// loadlevel is `gpuwatt loadlevel`: flags to loadlevel.Options; the policy (variant, users,
// power sources) is loadlevel's.
func (a *App) loadlevel(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("loadlevel", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "")
	d := loadlevel.DefaultOptions()
	preset := fs.String("preset", "", "a named workload: serve (the default on a GPU: a batch of 256 tokens of 4096 features through 8 dense layers, TF32 GEMMs through cuBLAS; loads the GPU) or seed (the seed paper's transactions: one 64-point FFT each; on a modern GPU bound by the host's round trip, and labelled so)")
	workload := fs.String("workload", "auto", "gemm (dense layers through cuBLAS), fft, or auto: gemm on a real GPU, fft elsewhere")
	variant := fs.String("variant", "auto", "workload variant: gpu (gpuwatt's own FFT in PTX), cufft (NVIDIA's cuFFT, loaded at run time), cublas (the gemm workload), cpu (Go FFT across goroutines), or auto: the workload's GPU variant on a real NVIDIA GPU, else cpu. The sim device runs no FFT kernels: there the cpu variant runs, on the virtual clock, and its transactions drive the sim device's power, which is read through the sim's sensors")
	sizes := fs.String("size", "auto", "FFT points per transaction (a power of two from 64 to 4194304), or the gemm's width (features); a list sweeps (64,512,4096); auto: 64 for fft, 4096 for gemm")
	fs.IntVar(&d.Batch, "batch", 0, "FFTs per transaction, or the gemm's rows (tokens) per transaction; 0: 1 for fft, 256 for gemm")
	fs.IntVar(&d.Layers, "layers", 0, "gemm: dense layers per transaction (0: 8)")
	fs.StringVar(&d.Math, "math", "", "gemm: tf32 (TF32 tensor cores, the default) or fp32")
	contexts := fs.String("contexts", "auto", fmt.Sprintf("users (host goroutines submitting transactions); a list sweeps (1,2,4,8); auto: %d for the GPU variants (the H200's run-to-run CV was lowest there), the host's cores for cpu", loadlevel.DefaultGPUUsers))
	levels := fs.String("levels", "default", "target loads in %: default (100,75,50,25), ssj (100..10 step 10) or a list; active idle always follows")
	specIv := fs.Bool("spec", false, "SPECpower interval lengths: 30 s warm-up, 3 calibrations, 30 s pre, 240 s recording, 30 s post, 240 s active idle")
	q := d.Intervals
	warmup := fs.Duration("warmup", q.Warmup, "warm-up length")
	cals := fs.Int("calibrations", q.Calibrations, "calibration intervals (the 100 % rate is the mean of all but the first; at least 2)")
	pre := fs.Duration("pre", q.Pre, "pre-measurement period of each interval")
	rec := fs.Duration("record", q.Record, "recording period of each interval")
	post := fs.Duration("post", q.Post, "post-measurement period of each interval")
	idle := fs.Duration("idle", q.Idle, "recording period of active idle")
	fs.IntVar(&d.Runs, "runs", d.Runs, "runs of each configuration (run-to-run CV with 2 or more)")
	fs.StringVar(&d.PTD, "ptd", "", "PTDaemon host:port of an external power analyzer (default: none, no wall power)")
	fs.StringVar(&d.RAPLRoot, "rapl-root", d.RAPLRoot, "powercap tree for CPU package power (RAPL), used when readable")
	clk := fs.String("clock", "auto", "auto: the device's (real on a GPU, virtual on the sim: instant, deterministic, modelled transaction times); virtual (the sim device); real (on the sim: the cpu variant in real time on the host's cores, power from RAPL or PTD only)")
	fs.Float64Var(&d.NsPerOp, "ns-per-op", d.NsPerOp, "virtual clock: modelled nanoseconds per n·log2(n) of an FFT")
	fs.Float64Var(&d.VerifyFraction, "verify-fraction", d.VerifyFraction, "fraction of results checked in the background against the float64 reference")
	fs.Float64Var(&d.Tolerance, "tolerance", d.Tolerance, "verification tolerance: max error over max magnitude")
	loadTol := fs.Float64("load-tolerance", 100*d.LoadTolerance, "allowed deviation of a level's actual load from its target, in percentage points")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "random seed (inputs, delays, verification picks)")
	if code, ok := a.parseFlags(fs, args, loadlevelSynopsis); !ok {
		return code
	}
	bad := func(err error) int { return a.usageError("loadlevel", err) }
	if fs.NArg() > 0 {
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	d.Workload, d.Variant, d.GPU, d.LoadTolerance = *workload, *variant, sh.gpu, *loadTol/100
	var err error
	switch *preset {
	case "":
	case loadlevel.PresetSeed:
		d.Preset, d.Workload, d.Sizes, d.Batch = *preset, loadlevel.WorkloadFFT, []int{64}, 1
	case loadlevel.PresetServe:
		d.Preset, d.Workload = *preset, loadlevel.WorkloadGEMM
	default:
		return bad(fmt.Errorf("--preset %q: want serve or seed", *preset))
	}
	if *sizes != "auto" {
		if d.Sizes, err = loadlevel.ParseInts(*sizes); err != nil {
			return bad(fmt.Errorf("--size %v", err))
		}
	}
	if *contexts != "auto" {
		if d.Contexts, err = loadlevel.ParseInts(*contexts); err != nil {
			return bad(fmt.Errorf("--contexts %v", err))
		}
	}
	if d.Levels, err = loadlevel.ParseLevels(*levels); err != nil {
		return bad(fmt.Errorf("--levels: %v", err))
	}
	d.Intervals = loadlevel.Intervals{Warmup: *warmup, Calibrations: *cals, Pre: *pre, Record: *rec, Post: *post, Idle: *idle}
	if *specIv {
		d.Intervals = loadlevel.SpecIntervals()
	}
	if err := d.Validate(); err != nil {
		return bad(err)
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("loadlevel", err)
	}
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force); err != nil {
			return bad(err)
		}
	}
	o := device.Options{VirtualSim: true, NVMLPaths: a.NVMLPaths, AMDSMIPaths: a.AMDSMIPaths, Notice: a.Stderr, Verb: "loadlevel"}
	spec := sh.dev.spec()
	switch *clk {
	case "auto":
		if a.NewClock != nil {
			o.Clock = a.NewClock()
		}
	case "virtual":
		if k, _, _ := spec.Parse(); k == device.NVML {
			return bad(fmt.Errorf("--clock virtual runs on the sim device, not --device %s", spec.Device))
		}
		if k, _, _ := spec.Parse(); k == device.Auto {
			spec.Device = "sim"
		}
		if a.NewClock != nil {
			o.Clock = a.NewClock()
		}
	case "real":
		o.Clock = clock.NewReal()
		if a.NewClock != nil {
			o.Clock = a.NewClock()
		}
	default:
		return bad(fmt.Errorf("--clock %q: want auto, virtual or real", *clk))
	}
	op, err := device.Open(spec, o)
	if err != nil {
		return a.exitFor("loadlevel", err)
	}
	defer op.System.Close()
	d.OpenGPU = openGPUFFT
	env := device.Env{System: op.System, Clock: op.Clock}
	var done func()
	env.Progress, done = a.newProgress("loadlevel", sh.quiet)
	rep, runErr := d.Run(ctx, env)
	done()
	if rep == nil { // bad input (exit 2) or a failure (exit 1)
		return a.exitFor("loadlevel", runErr)
	}
	if sh.out != "" {
		sub := fmt.Sprintf("gpuwatt %s · %s · %s", a.versionString(), a.host(), "gpuwatt loadlevel "+strings.Join(args, " "))
		err := writeFiles(sh.out, &rep.Status, []outFile{
			{"report.html", func(dir string) error { return rep.Page(sub).WriteFile(filepath.Join(dir, "report.html")) }},
		}, outFile{"results.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "results.json"), rep) }})
		if err != nil {
			return a.fail("loadlevel", fmt.Errorf("--out %s: %v", sh.out, err))
		}
	}
	if sh.json {
		if err := report.WriteJSONTo(a.Stdout, rep); err != nil {
			return a.fail("loadlevel", err)
		}
	} else {
		writeLoadlevelText(a, rep)
	}
	switch {
	case errors.Is(runErr, context.Canceled) || ctx.Err() != nil:
		return interruptedCode(ctx)
	case runErr != nil:
		return a.fail("loadlevel", runErr)
	case !rep.Valid:
		for _, cr := range rep.Configs {
			for _, r := range cr.Runs {
				for _, why := range r.Invalid {
					fmt.Fprintf(a.Stderr, "gpuwatt loadlevel: INVALID (%s, %d contexts): %s\n", r.Workload, cr.Contexts, why)
				}
			}
		}
		return ExitFailure
	}
	return ExitOK
}

// openGPUFFT opens the GPU variants' runtime (gpufft) for loadlevel.
func openGPUFFT(uuid string) (loadlevel.GPURuntime, error) {
	rt, err := gpufft.Open(gpufft.Options{UUID: uuid})
	if err != nil {
		return nil, err
	}
	return gpuFFT{rt}, nil
}

type gpuFFT struct{ *gpufft.Runtime }

func (g gpuFFT) NewTx(w loadlevel.Work) (loadlevel.Transaction, error) {
	if w.Workload == loadlevel.WorkloadGEMM {
		tx, err := g.Runtime.NewGemm(w.Size, w.Batch, w.Layers, w.Math)
		if err != nil {
			return nil, err
		}
		return tx, nil
	}
	tx, err := g.Runtime.NewTx(w.Variant, w.Size, w.Batch)
	if err != nil {
		return nil, err
	}
	return tx, nil
}

func (g gpuFFT) Check(variant string) error {
	switch variant {
	case gpufft.CuFFT:
		_, err := g.CuFFT()
		return err
	case gpufft.CuBLAS:
		_, err := g.CuBLAS()
		return err
	}
	return nil
}

func writeLoadlevelText(a *App, rep *loadlevel.Result) {
	w := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, cr := range rep.Configs {
		for i, r := range cr.Runs {
			fmt.Fprintf(a.Stdout, "%s, %d contexts, run %d: calibrated %.4g tx/s, power from %s\n", r.Workload, cr.Contexts, i+1, r.CalibratedRate, orDash(r.PowerSource))
			var others []string
			if len(r.PowerSources) > 1 {
				others = r.PowerSources[1:]
			}
			extra := ""
			for k := range others {
				extra += fmt.Sprintf("W[%d]\t", k+2)
			}
			host := r.HostPowerSource != ""
			if host {
				extra += "GPU W\thost W\tsum W\t"
			}
			fmt.Fprintln(w, "level\ttarget\tactual\ttx/s\tpower W\t± W\ttx/J\ttemp C\tvalid\t"+extra)
			for _, l := range r.Levels {
				ex := ""
				for _, o := range others {
					if v, ok := l.Power[o]; ok {
						ex += fmt.Sprintf("%.1f\t", v)
					} else {
						ex += "-\t"
					}
				}
				if host {
					ex += fmt.Sprintf("%s\t%s\t%s\t", wOrDash(l.GPUPowerW), wOrDash(l.HostPowerW), wOrDash(l.TotalPowerW))
				}
				pw, tj := fmt.Sprintf("%.1f", l.PowerW), fmt.Sprintf("%.4g", l.TxPerJ)
				if l.PowerUnavailable != "" {
					pw, tj = "unavailable", "unavailable"
				}
				pm := "-"
				if l.PowerHighW > l.PowerLowW && l.PowerLowW > 0 {
					pm = fmt.Sprintf("%.1f", (l.PowerHighW-l.PowerLowW)/2)
				}
				temp := "-"
				if l.TemperatureC != nil {
					temp = fmt.Sprintf("%.0f", l.TemperatureC.Max)
				}
				if l.ActiveIdle {
					fmt.Fprintf(w, "active idle\t-\t-\t0\t%s\t%s\t-\t%s\t\t%s\n", pw, pm, temp, ex)
					continue
				}
				fmt.Fprintf(w, "%s\t%.0f %%\t%.2f %%\t%.4g\t%s\t%s\t%s\t%s\t%v\t%s\n", fmt.Sprintf("level %.0f %%", 100*l.TargetLoad), 100*l.TargetLoad, 100*l.ActualLoad, l.TxPerS, pw, pm, tj, temp, l.Valid, ex)
			}
			w.Flush()
			for k, o := range others {
				fmt.Fprintf(a.Stdout, "W[%d]: %s\n", k+2, o)
			}
			switch {
			case host:
				fmt.Fprintf(a.Stdout, "host power from %s; sum W = GPU + host\n", r.HostPowerSource)
			case r.HostPowerUnavailable != "":
				fmt.Fprintf(a.Stdout, "host power: cannot be read (%s)\n", r.HostPowerUnavailable)
			}
			if r.ScoreUnavailable == "" && len(r.Levels) > 1 {
				if r.LevelsResolved {
					fmt.Fprintf(a.Stdout, "levels resolved: power rises with load, adjacent levels more than %d × their uncertainty apart\n", loadlevel.ResolveFactor)
				} else {
					fmt.Fprintf(a.Stdout, "levels NOT resolved: the workload does not resolve the levels (%s)\n", r.ResolveNote)
				}
			}
			fmt.Fprintf(a.Stdout, "overall score %s; verified %d results; valid %v\n\n", loadlevel.Score(r), r.Verified, r.Valid)
		}
		noPower := len(cr.Runs) > 0 && cr.Runs[0].PowerSource == ""
		for _, c := range cr.CV {
			name := fmt.Sprintf("%.0f %%", 100*c.TargetLoad)
			if c.ActiveIdle {
				name = "active idle"
			}
			pcv := fmt.Sprintf("%.2f %%", 100*c.PowerCV)
			if noPower {
				pcv = "unavailable"
			}
			fmt.Fprintf(a.Stdout, "CV %s: tx/s %.2f %%, power %s\n", name, 100*c.TxCV, pcv)
		}
	}
	for _, s := range status.Group(rep.Warnings, 0) {
		fmt.Fprintf(a.Stdout, "warning: %s\n", s)
	}
}

func wOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
