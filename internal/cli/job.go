package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/job"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

const jobSynopsis = "begin|end [flags]   (in a Slurm prolog and epilog: docs/slurm.md)"

func (a *App) job(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return a.usageError("job", errors.New("want a subcommand: gpuwatt job begin (prolog) or gpuwatt job end (epilog); see docs/slurm.md"))
	}
	switch args[0] {
	case "begin":
		return a.jobBegin(ctx, args[1:])
	case "end":
		return a.jobEnd(ctx, args[1:])
	case "record":
		return a.jobRecord(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		// begin's flags (with --device), then end's.
		code := a.jobBegin(ctx, []string{"--help"})
		fmt.Fprintln(a.Stdout)
		a.jobEnd(ctx, []string{"--help"})
		return code
	}
	if strings.HasPrefix(args[0], "-") {
		// Flags before a subcommand: say what is wrong with them, else that one is missing.
		fs := flag.NewFlagSet("job", flag.ContinueOnError)
		var sh shared
		sh.register(fs, withRealAuto, "")
		var jf jobFlags
		jf.register(fs)
		if code, ok := a.parseFlags(fs, args, jobSynopsis); !ok {
			return code
		}
		if err := sh.dev.spec().Validate(); err != nil {
			return a.exitFor("job", err)
		}
		return a.usageError("job", errors.New("want a subcommand first: gpuwatt job begin [flags] or gpuwatt job end [flags]"))
	}
	return a.usageError("job", fmt.Errorf("unknown subcommand %q: want begin or end", args[0]))
}

// jobFlags are what begin and end share: the job's id and directory.
type jobFlags struct {
	id, dir string
	quiet   bool
}

func (j *jobFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&j.id, "job", "", "the job's id (default: $SLURM_JOB_ID)")
	fs.StringVar(&j.dir, "dir", job.DefaultDir, "the directory under which each job gets a directory named by its id (begin.json, the recorder's trace, job.json)")
	fs.BoolVar(&j.quiet, "quiet", false, quietHelp)
}

// jobDir is the job's id and its directory (absolute: the recorder is found by it).
func (j *jobFlags) jobDir(getenv func(string) string) (string, string, error) {
	id := j.id
	if id == "" {
		id = getenv("SLURM_JOB_ID")
	}
	if id == "" {
		return "", "", status.Inputf("no job id: SLURM_JOB_ID is not set (run in a Slurm prolog or epilog, or give --job ID)")
	}
	if err := job.CheckJobID(id); err != nil {
		return "", "", err
	}
	if j.dir == "" {
		return "", "", status.Inputf("--dir: empty")
	}
	dir, err := filepath.Abs(filepath.Join(j.dir, id))
	if err != nil {
		return "", "", status.Inputf("--dir %s: %v", j.dir, err)
	}
	return id, dir, nil
}

func jobUser(getenv func(string) string) string {
	if u := getenv("SLURM_JOB_USER"); u != "" {
		return u
	}
	return getenv("USER")
}

// getenv is App.Getenv, else os.Getenv.
func (a *App) getenv(k string) string {
	if a.Getenv != nil {
		return a.Getenv(k)
	}
	return os.Getenv(k)
}

// self is the command line that runs gpuwatt again (the recorder).
func (a *App) self() ([]string, error) {
	if len(a.Self) > 0 {
		return a.Self, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find gpuwatt's own executable to start the recorder: %w", err)
	}
	return []string{exe}, nil
}

func (a *App) jobBegin(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("job begin", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withRealAuto, "")
	var jf jobFlags
	jf.register(fs)
	gpus := fs.String("gpu", "", "the job's GPUs: indices (0,1) or UUIDs (GPU-…) (default: $SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES)")
	chans := fs.String("channels", strings.Join(job.RecordChannels, ","), "the channels the recorder records (names and globs; energy.total alone for jobs of days: docs/slurm.md)")
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for the recorder's first reading of every channel before returning anyway")
	raplRoot := fs.String("rapl-root", "", "powercap tree of the host's RAPL counters (CPU packages, DRAM), read by begin, the recorder (every 1 s) and end; default /sys/class/powercap (the sim's own where --sim-config has \"host\"); none: the GPUs alone")
	if code, ok := a.parseFlags(fs, args, "[--job ID] [--dir DIR] [--gpu LIST] [--device auto|nvml|sim[:PRESET]]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("job begin", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("job begin", err)
	}
	id, dir, err := jf.jobDir(a.getenv)
	if err != nil {
		return a.exitFor("job begin", err)
	}
	spec, from, err := job.GPUSpec(*gpus, a.Getenv)
	if err != nil {
		return a.exitFor("job begin", err)
	}
	for _, p := range strings.Split(*chans, ",") {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return a.usageError("job begin", fmt.Errorf("--channels %q: not a channel name or pattern", *chans))
		}
	}
	simConfig := sh.dev.simConfig
	if simConfig != "" {
		if abs, err := filepath.Abs(simConfig); err == nil {
			simConfig = abs
		}
	}
	start := time.Now()
	clk := clock.NewRealAt(start)
	sys, err := a.openSystem("job begin", sh.dev, clk)
	if err != nil {
		return a.exitFor("job begin", err)
	}
	devs, err := job.ResolveGPUs(spec, from, sys.Devices())
	if err != nil {
		sys.Close()
		return a.exitFor("job begin", err)
	}
	// One begin or end of a job at a time: the others wait, then find it begun.
	unlock, err := job.Lock(ctx, dir)
	if err != nil {
		sys.Close()
		return a.exitFor("job begin", err)
	}
	defer unlock()
	if _, err := os.Lstat(filepath.Join(dir, job.BeginFile)); err == nil {
		if pid, ok := job.LiveRecorder(dir); ok {
			sys.Close()
			return a.usageError("job begin", fmt.Errorf("job %s has already begun (%s exists; its recorder, pid %d, runs): end it first, or use another --dir", id, filepath.Join(dir, job.BeginFile), pid))
		}
		// Begun before and ended, or its recorder gone (a job Slurm requeued, an epilog
		// that never ran): keep that run's files aside and begin anew.
		old, err := job.SetAside(dir)
		if err != nil {
			sys.Close()
			return a.fail("job begin", err)
		}
		fmt.Fprintf(a.Stderr, "gpuwatt job begin: job %s was begun before (requeued, or its epilog never ran): that run's files moved to %s\n", id, old)
	}
	if err := job.MakeDir(dir); err != nil {
		sys.Close()
		return a.exitFor("job begin", err)
	}
	bg := &job.Begin{Format: job.BeginFormat, Job: job.Job{JobID: id, User: jobUser(a.getenv), Host: a.host(), Version: a.versionString(),
		Device: sys.Name(), Simulated: sys.Simulated(), Start: start.Round(0)}, GPUsFrom: from,
		DeviceSpec: sh.dev.device, SimConfig: simConfig, SystemGPUs: len(sys.Devices()), RAPLRoot: *raplRoot}
	var idx []string
	hs, hostWhy := jobHostSensors(sys, *raplRoot)
	host := job.HostEdge(ctx, hs, hostWhy, clk, func() {
		for _, d := range devs {
			info := d.Info()
			g := job.BeginGPU{Index: info.Index, UUID: info.UUID, Name: info.Name, PowerLimitW: info.PowerLimitW}
			if c, err := job.ReadCounter(d, clk); err == nil {
				g.Counter = c
			} else {
				g.CounterError = err.Error()
			}
			bg.GPUs = append(bg.GPUs, g)
			idx = append(idx, fmt.Sprint(info.Index))
		}
	})
	bg.HostReadings = &host
	sys.Close()
	self, err := a.self()
	code := ExitOK
	if err == nil {
		argv := append(append([]string{}, self...), "job", "record", "--dir", dir, "--origin", bg.Start.Format(time.RFC3339Nano),
			"--gpu", strings.Join(idx, ","), "--device", sh.dev.device, "--channels", *chans)
		if simConfig != "" {
			argv = append(argv, "--sim-config", simConfig)
		}
		if *raplRoot != "" {
			argv = append(argv, "--rapl-root", *raplRoot)
		}
		var exited <-chan error
		bg.RecorderPID, exited, err = job.Spawn(argv, dir)
		if err == nil {
			if ok, why := job.WaitReady(dir, exited, *wait); !ok && why != "" {
				err = errors.New(why)
			} else if !ok && !jf.quiet {
				fmt.Fprintf(a.Stderr, "gpuwatt job begin: job %s: the recorder (pid %d) has not read every channel within --wait %s; returning (it goes on)\n", id, bg.RecorderPID, *wait)
			}
		}
	}
	if err != nil {
		bg.RecorderError = err.Error()
		fmt.Fprintf(a.Stderr, "gpuwatt job begin: job %s: %v (job end will use the energy counters read now and at its end)\n", id, err)
		code = ExitFailure
	}
	if werr := report.WriteJSON(filepath.Join(dir, job.BeginFile), bg); werr != nil {
		return a.fail("job begin", fmt.Errorf("%s: %v", filepath.Join(dir, job.BeginFile), werr))
	}
	if code == ExitOK && !jf.quiet {
		fmt.Fprintf(a.Stderr, "gpuwatt job begin: job %s: GPUs %s (%s) recorded by pid %d into %s\n", id, strings.Join(idx, ","), from, bg.RecorderPID, dir)
	}
	return code
}

// jobRecord is the recorder begin starts (not for people: `gpuwatt job record` is not listed).
func (a *App) jobRecord(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("job record", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withRealAuto, "")
	dir := fs.String("dir", "", "the job's directory")
	origin := fs.String("origin", "", "the job's time origin (RFC 3339)")
	gpus := fs.String("gpu", "", "GPU indices")
	chans := fs.String("channels", strings.Join(job.RecordChannels, ","), "channels to record")
	raplRoot := fs.String("rapl-root", "", "powercap tree of the host's RAPL counters; none: not read")
	if code, ok := a.parseFlags(fs, args, "--dir DIR --origin TIME --gpu LIST (started by gpuwatt job begin)"); !ok {
		return code
	}
	t0, err := time.Parse(time.RFC3339Nano, *origin)
	if err != nil || *dir == "" || *gpus == "" {
		return a.usageError("job record", errors.New("want --dir, --origin TIME (RFC 3339) and --gpu: the recorder is started by gpuwatt job begin"))
	}
	clk := clock.NewRealAt(t0)
	sys, err := a.openSystem("job record", sh.dev, clk)
	if err != nil {
		return a.exitFor("job record", err)
	}
	defer sys.Close()
	devs, err := job.ResolveGPUs(*gpus, "--gpu", sys.Devices())
	if err != nil {
		return a.exitFor("job record", err)
	}
	rec := job.Recorder{Dir: *dir, GPUs: devs, Channels: strings.Split(*chans, ","), RAPLRoot: *raplRoot, NoHost: *raplRoot == "none", Log: a.Stderr, Poll: sensor.Options{HangTimeout: a.HangTimeout}, Version: a.versionString(), Host: a.host(),
		Command: append([]string{"gpuwatt", "job", "record"}, args...)}
	if err := rec.Run(ctx, device.Env{System: sys, Clock: clk}); err != nil {
		return a.fail("job record", err)
	}
	return ExitOK
}

func (a *App) jobEnd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("job end", flag.ContinueOnError)
	var jf jobFlags
	jf.register(fs)
	otlp := fs.String("otlp", "", "also push each GPU's energy to this OpenTelemetry collector (OTLP/HTTP, e.g. http://collector:4318; docs/otlp.md) (default: none, nothing is pushed)")
	sacct := fs.Bool("sacctmgr", false, "run the sacctmgr line that stores the job's energy in its AdminComment (else it is printed)")
	asJSON := fs.Bool("json", false, "print job.json to stdout instead of the sacctmgr line")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Second, "how long the recorder has to save its trace after SIGTERM before it is killed")
	if code, ok := a.parseFlags(fs, args, "[--job ID] [--dir DIR] [--otlp URL] [--sacctmgr] [--json]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("job end", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *otlp != "" {
		if _, err := otlpexport.ParseURL(*otlp); err != nil {
			return a.exitFor("job end", err)
		}
	}
	if *sacct {
		if _, err := exec.LookPath("sacctmgr"); err != nil {
			return a.usageError("job end", fmt.Errorf("--sacctmgr: sacctmgr is not on PATH (%v); leave --sacctmgr out to print the line instead", err))
		}
	}
	id, dir, err := jf.jobDir(a.getenv)
	if err != nil {
		return a.exitFor("job end", err)
	}
	unlock, err := job.Lock(ctx, dir)
	if err != nil {
		return a.exitFor("job end", err)
	}
	defer unlock()
	bg, err := job.ReadBegin(dir)
	if err != nil {
		return a.exitFor("job end", err)
	}
	if _, err := os.Stat(filepath.Join(dir, job.JobFile)); err == nil {
		return a.usageError("job end", fmt.Errorf("job %s has already ended: %s exists (remove it to compute the job's energy again)", id, filepath.Join(dir, job.JobFile)))
	}
	// End's own readings of the counters, before the recorder stops: on begin's axis.
	clk := clock.NewRealAt(bg.Start)
	end := map[int]*job.Counter{}
	endT := clk.Now()
	sys, err := a.openSystem("job end", deviceFlags{device: bg.DeviceSpec, simConfig: bg.SimConfig, realOnly: true}, clk)
	var endWarn []status.Warning
	var endHost *job.HostReadings
	if err != nil {
		endWarn = append(endWarn, status.Warnf(job.CodeNoCounter, "end could not open the device to read the counters: %v", err))
	} else {
		byIdx := map[int]gpu.Device{}
		for _, d := range sys.Devices() {
			byIdx[d.Info().Index] = d
		}
		hs, hostWhy := jobHostSensors(sys, bg.RAPLRoot)
		h := job.HostEdge(ctx, hs, hostWhy, clk, func() {
			for _, g := range bg.GPUs {
				if d, ok := byIdx[g.Index]; ok && d.Info().UUID == g.UUID {
					if c, err := job.ReadCounter(d, clk); err == nil {
						end[g.Index] = c
					}
				}
			}
			endT = clk.Now()
		})
		endHost = &h
		sys.Close()
	}
	why := ""
	if bg.RecorderError != "" {
		why = "the recorder did not start: " + bg.RecorderError
	} else {
		why = job.Stop(dir, *stopTimeout)
	}
	var tr *trace.Trace
	if why == "" {
		tr, err = trace.Load(dir)
		if err != nil {
			why = fmt.Sprintf("its trace cannot be read: %v", err)
			tr = nil
		}
	}
	res := job.Compute(bg, end, endHost, endT, tr, why)
	res.Warnings = append(res.Warnings, endWarn...)
	if err := report.WriteJSON(filepath.Join(dir, job.JobFile), res); err != nil {
		return a.fail("job end", fmt.Errorf("%s: %v", filepath.Join(dir, job.JobFile), err))
	}
	code := ExitOK
	if !jf.quiet {
		job.WriteText(a.Stderr, res)
	}
	if *asJSON {
		if err := report.WriteJSONTo(a.Stdout, res); err != nil {
			return a.fail("job end", err)
		}
	} else {
		fmt.Fprintln(a.Stdout, job.SacctmgrLine(res))
	}
	if *sacct {
		cmd := exec.CommandContext(ctx, "sacctmgr", job.SacctmgrArgs(res)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt job end: sacctmgr: %v: %s\n", err, strings.TrimSpace(string(out)))
			code = ExitFailure
		}
	}
	if *otlp != "" {
		var gs []otlpexport.GPU
		for _, g := range res.GPUs {
			if !g.OK() {
				continue
			}
			gs = append(gs, otlpexport.GPU{Index: g.Index, UUID: g.UUID, Model: g.Name, EnergyJ: g.EnergyJ, EnergyLowJ: g.LowJ, EnergyHighJ: g.HighJ,
				HasInterval: true, Source: string(g.Method), Corrected: g.Corrected, PowerW: g.MeanPowerW, HasPower: res.SpanS > 0})
		}
		err := otlpexport.Push(ctx, otlpexport.Options{URL: *otlp, Host: res.Host, Version: a.versionString(), Resource: map[string]string{
			"gpuwatt.job.id": res.JobID, "gpuwatt.job.user": res.User,
			"gpuwatt.job.start": res.Start.UTC().Format(time.RFC3339Nano), "gpuwatt.job.end": res.End.UTC().Format(time.RFC3339Nano),
		}}, gs)
		if err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt job end: %v\n", err)
			code = ExitFailure
		}
	}
	return code
}

// jobHostSensors are the host's RAPL counters a job reads (root as begin's --rapl-root), or
// the one line saying why there are none.
func jobHostSensors(sys gpu.System, root string) ([]sensor.Sensor, string) {
	if root == "none" {
		return nil, "not asked for (job begin --rapl-root none)"
	}
	hs, err := device.HostSensors(sys, root)
	if err != nil {
		return nil, err.Error()
	}
	return hs, ""
}
