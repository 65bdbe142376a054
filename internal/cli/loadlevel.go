package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/device"
	"gpuwatt/internal/gpu"
	"gpuwatt/internal/loadlevel"
	"gpuwatt/internal/loadlevel/gpufft"
	"gpuwatt/internal/ptd"
	"gpuwatt/internal/report"
)

func (a *App) loadlevel(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("loadlevel", flag.ContinueOnError)
	variant := fs.String("variant", "auto", "workload variant: gpu (gpuwatt's own FFT in PTX), cufft (NVIDIA's cuFFT, loaded at run time), cpu (Go FFT across goroutines), or auto: gpu where an NVIDIA GPU is present, else cpu")
	gpuIndex := fs.Int("gpu", 0, "index of the GPU (as NVML numbers them) that runs the GPU variants and whose board power is measured")
	sizes := fs.String("size", "64", "FFT points per transaction, a power of two from 64 to 4096; a list sweeps (64,512,4096)")
	contexts := fs.String("contexts", "auto", "users (host goroutines submitting transactions); a list sweeps (1,2,4,8); auto: 8 for the GPU variants (the H200's run-to-run CV was lowest there), the host's cores for cpu")
	levels := fs.String("levels", "default", "target loads in %: default (100,75,50,25), ssj (100..10 step 10) or a list; active idle always follows")
	spec := fs.Bool("spec", false, "SPECpower interval lengths: 30 s warm-up, 3 calibrations, 30 s pre, 240 s recording, 30 s post, 240 s active idle")
	q := loadlevel.QuickIntervals()
	warmup := fs.Duration("warmup", q.Warmup, "warm-up length")
	cals := fs.Int("calibrations", q.Calibrations, "calibration intervals (the 100 % rate is the mean of all but the first; at least 2)")
	pre := fs.Duration("pre", q.Pre, "pre-measurement period of each interval")
	rec := fs.Duration("record", q.Record, "recording period of each interval")
	post := fs.Duration("post", q.Post, "post-measurement period of each interval")
	idle := fs.Duration("idle", q.Idle, "recording period of active idle")
	runs := fs.Int("runs", 1, "runs of each configuration (run-to-run CV with 2 or more)")
	ptdAddr := fs.String("ptd", "", "PTDaemon host:port of an external power analyzer")
	raplRoot := fs.String("rapl-root", "/sys/class/powercap", "powercap tree for CPU package power (RAPL), used when readable")
	clk := fs.String("clock", "real", "real, or virtual (deterministic and instant: modelled transaction times and a modelled power)")
	nsPerOp := fs.Float64("ns-per-op", 100, "virtual clock: modelled nanoseconds per n·log2(n) of an FFT")
	verifyFrac := fs.Float64("verify-fraction", 0.01, "fraction of results checked in the background against the float64 reference")
	tol := fs.Float64("tolerance", loadlevel.DefaultTolerance, "verification tolerance: max error over max magnitude")
	loadTol := fs.Float64("load-tolerance", 2, "allowed deviation of a level's actual load from its target, in percentage points")
	seed := fs.Uint64("seed", 1, "random seed (inputs, delays, verification picks)")
	out := fs.String("out", "", "directory for results.json and report.html")
	asJSON := fs.Bool("json", false, "print results.json to stdout instead of the table")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if code, ok := a.parseFlags(fs, args, "[--variant auto|gpu|cufft|cpu] [--size 64,512] [--contexts 1,2,4] [--levels default|ssj|100,50] [--spec] [--runs N] [--ptd HOST:PORT] [--out DIR] [--json]"); !ok {
		return code
	}
	bad := func(err error) int { return a.usageError("loadlevel", err) }
	if fs.NArg() > 0 {
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	switch *variant {
	case "auto", "cpu", gpufft.Own, gpufft.CuFFT:
	default:
		return bad(fmt.Errorf("--variant %q: want auto, gpu, cufft or cpu", *variant))
	}
	if *gpuIndex < 0 {
		return bad(fmt.Errorf("--gpu %d: want a GPU index from 0", *gpuIndex))
	}
	szs, err := loadlevel.ParseInts(*sizes)
	if err != nil {
		return bad(fmt.Errorf("--size %v", err))
	}
	for _, n := range szs {
		if err := loadlevel.CheckFFTSize(n); err != nil {
			return bad(fmt.Errorf("--size: %v", err))
		}
	}
	var ctxs []int
	if *contexts != "auto" {
		var err error
		if ctxs, err = loadlevel.ParseInts(*contexts); err != nil {
			return bad(fmt.Errorf("--contexts %v", err))
		}
	}
	lv, err := loadlevel.ParseLevels(*levels)
	if err != nil {
		return bad(fmt.Errorf("--levels: %v", err))
	}
	iv := loadlevel.Intervals{Warmup: *warmup, Calibrations: *cals, Pre: *pre, Record: *rec, Post: *post, Idle: *idle}
	if *spec {
		iv = loadlevel.SpecIntervals()
	}
	switch {
	case iv.Calibrations < 2:
		return bad(fmt.Errorf("--calibrations %d: want at least 2", iv.Calibrations))
	case iv.Record <= 0 || iv.Idle <= 0:
		return bad(fmt.Errorf("--record and --idle must be positive"))
	case iv.Pre < 0 || iv.Post < 0 || iv.Warmup < 0:
		return bad(fmt.Errorf("--warmup, --pre and --post must not be negative"))
	case *runs < 1:
		return bad(fmt.Errorf("--runs %d: want at least 1", *runs))
	case !(*verifyFrac >= 0 && *verifyFrac <= 1):
		return bad(fmt.Errorf("--verify-fraction %g: want a fraction in [0, 1]", *verifyFrac))
	case !(*tol > 0) || !(*loadTol > 0) || !(*nsPerOp > 0):
		return bad(fmt.Errorf("--tolerance, --load-tolerance and --ns-per-op must be positive"))
	}
	if *out != "" {
		if err := checkWritable(*out); err != nil {
			return bad(fmt.Errorf("--out %s: %v", *out, err))
		}
	}
	var c clock.Clock
	switch *clk {
	case "real":
		c = clock.NewReal()
		if a.NewClock != nil {
			c = a.NewClock()
		}
	case "virtual":
		c = clock.NewVirtual(time.Time{})
	default:
		return bad(fmt.Errorf("--clock %q: want real or virtual", *clk))
	}
	gpuVariant := *variant == gpufft.Own || *variant == gpufft.CuFFT
	if gpuVariant && clock.IsVirtual(c) {
		return bad(fmt.Errorf("--variant %s runs on a real GPU: it needs --clock real", *variant))
	}
	// A real NVIDIA GPU (NVML sees it): its board power is measured, and it runs the GPU
	// variants (the default where there is one).
	var dev gpu.Device
	var noGPU error
	if !clock.IsVirtual(c) {
		op, err := device.Open(device.Spec{Device: "nvml"}, device.Options{Clock: c, NVMLPaths: a.NVMLPaths})
		if err == nil {
			sys := op.System
			defer sys.Close()
			if devs := sys.Devices(); *gpuIndex < len(devs) {
				dev = devs[*gpuIndex]
			} else {
				return bad(fmt.Errorf("--gpu %d: the driver sees %d GPUs", *gpuIndex, len(devs)))
			}
		} else {
			noGPU = err
		}
	} else {
		noGPU = errors.New("the virtual clock runs no GPU")
	}
	if *variant == "auto" {
		*variant = "cpu"
		if dev != nil {
			*variant = gpufft.Own
			gpuVariant = true
		}
	}
	if ctxs == nil {
		ctxs = []int{runtime.GOMAXPROCS(0)}
		if gpuVariant {
			ctxs = []int{8}
		}
	}
	var rt *gpufft.Runtime
	deviceName := ""
	if gpuVariant {
		if dev == nil {
			return a.fail("loadlevel", fmt.Errorf("--variant %s: no NVIDIA GPU: %v", *variant, noGPU))
		}
		var err error
		if rt, err = gpufft.Open(gpufft.Options{UUID: dev.Info().UUID}); err != nil {
			return a.fail("loadlevel", fmt.Errorf("--variant %s: %v", *variant, err))
		}
		defer rt.Close()
		deviceName = rt.Name()
		if *variant == gpufft.CuFFT {
			if _, err := rt.CuFFT(); err != nil {
				return a.fail("loadlevel", fmt.Errorf("--variant cufft: %v", err))
			}
		}
	}
	var meters []loadlevel.Meter
	var warnings []string
	if *ptdAddr != "" {
		pc, err := ptd.Dial(ctx, *ptdAddr, 10*time.Second)
		if err != nil {
			return a.fail("loadlevel", fmt.Errorf("--ptd %s: %v", *ptdAddr, err))
		}
		defer pc.Close()
		if id, err := pc.Identify(); err == nil {
			warnings = append(warnings, "PTDaemon: "+id)
		}
		meters = append(meters, &loadlevel.PTDMeter{C: pc})
	}
	if clock.IsVirtual(c) {
		meters = append(meters, loadlevel.ModelMeter{Idle: 50, PerBusyUser: 20})
		warnings = append(warnings, "virtual clock: transaction times and power are modelled (50 W + 20 W per busy user), not measured")
	} else {
		// After PTD (the wall), the device the variant runs on, then the other.
		var gm, rm loadlevel.Meter
		if dev != nil {
			gm = &loadlevel.GPUMeter{Dev: dev, Clock: c}
		}
		r, rerr := loadlevel.OpenRAPL(*raplRoot, c)
		if rerr == nil {
			rm = r
		}
		order := []loadlevel.Meter{rm, gm}
		if gpuVariant {
			order = []loadlevel.Meter{gm, rm}
		}
		for _, m := range order {
			if m != nil {
				meters = append(meters, m)
			}
		}
		if len(meters) == 0 {
			warnings = append(warnings, "no power source: "+rerr.Error()+"; no NVIDIA GPU: "+noGPU.Error())
		}
	}
	progress := !*quiet && a.interactive()
	sw := loadlevel.Sweep{Sizes: szs, Contexts: ctxs, Runs: *runs, Variant: *variant, Device: deviceName,
		Base: loadlevel.Config{Levels: lv, Intervals: iv, Clock: c, Meters: meters, Seed: *seed,
			VerifyFraction: *verifyFrac, Tolerance: *tol, LoadTolerance: *loadTol / 100},
		NewTx: func(n int) (loadlevel.Transaction, error) {
			if rt != nil {
				return rt.NewTx(*variant, n)
			}
			f, err := loadlevel.NewFFT(n)
			if f != nil {
				f.NsPerOp = *nsPerOp
			}
			return f, err
		}}
	if *verifyFrac == 0 {
		sw.Base.VerifyFraction = -1
	}
	if progress {
		sw.Base.Progress = func(label string) { fmt.Fprintf(a.Stderr, "gpuwatt loadlevel: %s\n", label) }
	}
	rep, runErr := loadlevel.RunSweep(ctx, sw)
	if rep == nil {
		return a.fail("loadlevel", runErr)
	}
	rep.Warnings = append(warnings, rep.Warnings...)
	if *out != "" {
		sub := fmt.Sprintf("gpuwatt %s · %s · %s", a.versionString(), a.host(), "gpuwatt loadlevel "+strings.Join(args, " "))
		if err := report.WriteJSON(filepath.Join(*out, "results.json"), rep); err != nil {
			return a.fail("loadlevel", err)
		}
		if err := rep.Page(sub).WriteFile(filepath.Join(*out, "report.html")); err != nil {
			return a.fail("loadlevel", err)
		}
	}
	if *asJSON {
		if err := report.WriteJSONTo(a.Stdout, rep); err != nil {
			return a.fail("loadlevel", err)
		}
	} else {
		writeLoadlevelText(a, rep)
	}
	switch {
	case errors.Is(runErr, context.Canceled) || ctx.Err() != nil:
		return 130
	case runErr != nil:
		return a.fail("loadlevel", runErr)
	case !rep.Valid:
		for _, cr := range rep.Configs {
			for _, r := range cr.Runs {
				for _, why := range r.Invalid {
					fmt.Fprintf(a.Stderr, "gpuwatt loadlevel: INVALID (fft-%d, %d contexts): %s\n", cr.Size, cr.Contexts, why)
				}
			}
		}
		return ExitFailure
	}
	return ExitOK
}

func writeLoadlevelText(a *App, rep *loadlevel.Report) {
	w := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, cr := range rep.Configs {
		for i, r := range cr.Runs {
			fmt.Fprintf(a.Stdout, "fft-%d (%s), %d contexts, run %d: calibrated %.4g tx/s, power from %s\n", cr.Size, rep.Variant, cr.Contexts, i+1, r.CalibratedRate, orDash(r.PowerSource))
			var others []string
			if len(r.PowerSources) > 1 {
				others = r.PowerSources[1:]
			}
			extra := ""
			for k := range others {
				extra += fmt.Sprintf("W[%d]\t", k+2)
			}
			fmt.Fprintln(w, "level\ttarget\tactual\ttx/s\tpower W\ttx/J\tvalid\t"+extra)
			for _, l := range r.Levels {
				ex := ""
				for _, o := range others {
					if v, ok := l.Power[o]; ok {
						ex += fmt.Sprintf("%.1f\t", v)
					} else {
						ex += "-\t"
					}
				}
				if l.ActiveIdle {
					fmt.Fprintf(w, "active idle\t-\t-\t0\t%.1f\t-\t\t%s\n", l.PowerW, ex)
					continue
				}
				fmt.Fprintf(w, "%s\t%.0f %%\t%.2f %%\t%.4g\t%.1f\t%.4g\t%v\t%s\n", l.Label, 100*l.TargetLoad, 100*l.ActualLoad, l.TxPerS, l.PowerW, l.TxPerJ, l.Valid, ex)
			}
			w.Flush()
			for k, o := range others {
				fmt.Fprintf(a.Stdout, "W[%d]: %s\n", k+2, o)
			}
			fmt.Fprintf(a.Stdout, "overall score %.4g tx/J; verified %d results; valid %v\n\n", r.OverallScore, r.Verified, r.Valid)
		}
		for _, c := range cr.CV {
			name := fmt.Sprintf("%.0f %%", 100*c.TargetLoad)
			if c.ActiveIdle {
				name = "active idle"
			}
			fmt.Fprintf(a.Stdout, "CV %s: tx/s %.2f %%, power %.2f %%\n", name, 100*c.TxCV, 100*c.PowerCV)
		}
	}
	for _, s := range rep.Warnings {
		fmt.Fprintf(a.Stdout, "warning: %s\n", s)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
