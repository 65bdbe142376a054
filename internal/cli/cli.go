// Package cli is gpuwatt's command line: the verb table, flags, exit codes and progress
// output. It wires the feature packages together and computes nothing itself.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// Exit codes.
const (
	ExitOK            = 0
	ExitFailure       = 1   // the work could not be done (driver error, I/O error)
	ExitUsage         = 2   // bad input: unknown verb or flag, bad value, unwritable --out
	ExitNotExecutable = 126 // measure's command exists but cannot be run
	ExitNotFound      = 127 // measure's command does not exist
	// A run cut short by signal N exits 128+N: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
)

// App holds what the verbs need from the outside world, so tests can replace it: the clock
// and command runner for `measure`, and the way devices are opened.
type App struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// NewClock returns the clock for a recording; nil means a real clock.
	NewClock func() clock.Clock
	// Runner runs measure's command; nil means a real process.
	Runner measure.Runner
	// NVMLPaths overrides where libnvidia-ml is looked for (tests point it at nothing).
	NVMLPaths []string
	// AMDSMIPaths overrides where libamd_smi is looked for (tests point it at nothing or at
	// the fake).
	AMDSMIPaths []string
	// Host overrides the host name written into metadata.
	Host string
	// Version overrides the version string (golden tests pin it).
	Version string
	// Interactive forces progress output on or off; nil means "when stderr is a terminal".
	Interactive *bool
	// WrapSystem, if set, wraps every opened system: the fault-injection tests make its
	// sensors or kernels fail part-way through a run (a GPU lost, a launch that fails).
	WrapSystem func(gpu.System) gpu.System
	// HangTimeout, if set, replaces sensor.DefaultHangTimeout in measure, micro and archline (the fault tests
	// shorten the wait for a driver call that hangs).
	HangTimeout time.Duration
	// Self is the command line that runs gpuwatt again (job begin's recorder); nil means
	// this executable (tests re-run their own binary as gpuwatt).
	Self []string
	// Getenv, if set, replaces os.Getenv for job's Slurm variables (SLURM_JOB_ID,
	// SLURM_JOB_USER, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES; "" is unset): the job tests run
	// side by side, each with its own job's environment.
	Getenv func(string) string
}

type verb struct {
	name, summary string
	run           func(a *App, ctx context.Context, args []string) int
}

var verbs []verb

func init() {
	verbs = []verb{
		{"devices", "list every GPU and every power channel, and whether it works", (*App).devices},
		{"measure", "run a command while recording every GPU power channel; print energy and power", (*App).measure},
		{"micro", "the MIPP microbenchmark suite: throughput, power and energy per instruction class and memory level", (*App).micro},
		{"archline", "the energy roofline: fit eps_flop, eps_mem and pi0 over an intensity x occupancy sweep; archline and powerline", (*App).archline},
		{"energy", "the energy of a region of a recorded trace, with the sensor's lag or window corrected", (*App).energy},
		{"profile", "the high-resolution power profile of a short kernel from a low-resolution sensor (Lang-Rünger)", (*App).profile},
		{"call", "the energy of one call of your own code (a command that runs it on request), to a per cent: repetition at phases spread over the sensor's cycle", (*App).callVerb},
		{"sensor", "characterise every power channel: update period, window, lag, delay; sensor.json and the anomaly tests", (*App).sensor},
		{"loadlevel", "energy efficiency under transactional load at SPEC Power load levels (GEMM transactions; FFT with --workload fft)", (*App).loadlevel},
		{"characterize", "the energy datasheet of a GPU in one command: sensors, micro, archline, load levels; report.html", (*App).characterize},
		{"job", "a batch job's GPU energy: job begin in a Slurm prolog, job end in its epilog (job.json, the sacctmgr AdminComment line, --otlp)", (*App).job},
		{"record", "serve the Python package: record the GPUs, and give each window a program begins and ends its energy (JSON lines on stdin/stdout, docs/python.md)", (*App).record},
		{"serve", "serve /metrics for Prometheus without end: corrected power and energy per GPU and per process", (*App).serve},
		{"report", "re-render report.html from the results.json of characterize; several DIRs side by side", (*App).report},
		{"version", "print gpuwatt's version", (*App).version},
	}
}

// Main runs gpuwatt with args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &App{Stdout: stdout, Stderr: stderr, Stdin: os.Stdin}
	return a.Main(ctx, args)
}

// Main runs gpuwatt on a configured App.
func (a *App) Main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.usage(a.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			return a.Main(ctx, []string{args[1], "--help"})
		}
		a.usage(a.Stdout)
		return ExitOK
	case "-version", "--version":
		return a.version(ctx, nil)
	}
	for _, v := range verbs {
		if v.name == args[0] {
			return v.run(a, ctx, args[1:])
		}
	}
	return a.usageError("", fmt.Errorf("unknown verb %q (verbs: %s)", args[0], verbNames()))
}

func verbNames() string {
	var n []string
	for _, v := range verbs {
		n = append(n, v.name)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func (a *App) usage(w io.Writer) {
	fmt.Fprintf(w, "gpuwatt: how much power and energy GPU code really uses, and why.\n\nUsage: gpuwatt VERB [flags] [args]\n\nVerbs:\n")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintf(w, "\nRun 'gpuwatt VERB --help' for a verb's flags. Without an NVIDIA driver, gpuwatt runs on the sim device.\n")
}

// usageError prints one line naming the problem and returns ExitUsage.
func (a *App) usageError(verb string, err error) int {
	prefix := "gpuwatt"
	if verb != "" {
		prefix += " " + verb
	}
	fmt.Fprintf(a.Stderr, "%s: %v\n", prefix, err)
	return ExitUsage
}

// fail prints one line and returns ExitFailure.
func (a *App) fail(verb string, err error) int {
	fmt.Fprintf(a.Stderr, "gpuwatt %s: %v\n", verb, err)
	return ExitFailure
}

// parseFlags parses a verb's flags. It returns (code, false) when the verb must stop:
// --help (exit 0) or a bad flag (a one-line message, exit 2).
func (a *App) parseFlags(fs *flag.FlagSet, args []string, synopsis string) (int, bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return a.flagError(fs, err, synopsis)
	}
	if fs.Name() != "measure" { // measure's arguments are a command with flags of its own
		if code, ok := a.parseInterleaved(fs, args, synopsis); !ok {
			return code, false
		}
	}
	if err := refuseNegative(fs); err != nil {
		return a.usageError(fs.Name(), err), false
	}
	return 0, true
}

// flagError answers a failed fs.Parse: the verb's help for --help (exit 0), else one line
// naming the bad flag (exit 2).
func (a *App) flagError(fs *flag.FlagSet, err error, synopsis string) (int, bool) {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(a.Stdout, "Usage: gpuwatt %s %s\n\nFlags:\n", fs.Name(), synopsis)
		fs.SetOutput(a.Stdout)
		fs.PrintDefaults()
		return ExitOK, false
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "flag provided but not defined: ") {
		msg = "unknown flag " + strings.TrimPrefix(msg, "flag provided but not defined: ")
	}
	return a.usageError(fs.Name(), fmt.Errorf("%s (see 'gpuwatt %s --help')", msg, fs.Name())), false
}

// parseInterleaved lets flags follow the positional arguments (gpuwatt report DIR --out F
// took --out and F as directories): the flag package stops at the first argument that is
// not a flag, so what follows is parsed again, up to a "--", after which all are arguments.
func (a *App) parseInterleaved(fs *flag.FlagSet, args []string, synopsis string) (int, bool) {
	var pos []string
	for {
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...) // an explicit end of the flags
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
		if err := fs.Parse(args); err != nil {
			return a.flagError(fs, err, synopsis)
		}
	}
	_ = fs.Parse(append([]string{"--"}, pos...)) // fs.Args() is now the arguments alone
	return 0, true
}

// refuseNegative refuses a negative value of any numeric flag given on the command line
// (a duration, count or share): --window -5ms was silently replaced by the default.
func refuseNegative(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		neg := false
		switch v := g.Get().(type) {
		case time.Duration:
			neg = v < 0
		case int:
			neg = v < 0
		case int64:
			neg = v < 0
		case float64:
			neg = v < 0
		}
		if neg {
			err = fmt.Errorf("--%s %s: must not be negative", f.Name, f.Value)
		}
	})
	return err
}

func (a *App) version(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	var sh shared
	sh.register(fs, 0, "")
	dv := fs.Lookup("device")
	dv.DefValue, dv.Usage = "", "also print the driver and NVML versions of this device: "+device.DeviceHelp+" (default: none, nothing is opened)"
	_ = dv.Value.Set("")
	if code, ok := a.parseFlags(fs, args, "[--device auto|nvml|sim[:PRESET]]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("version", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	fmt.Fprintf(a.Stdout, "gpuwatt %s\n", a.versionString())
	if sh.dev.device == "" && sh.dev.simConfig == "" {
		return ExitOK
	}
	op, err := device.Open(sh.dev.spec(), device.Options{NVMLPaths: a.NVMLPaths, AMDSMIPaths: a.AMDSMIPaths, Notice: a.Stderr, Verb: "version"})
	if err != nil {
		return a.exitFor("version", err)
	}
	defer op.System.Close()
	fmt.Fprintf(a.Stdout, "device %s: driver %s, NVML %s, %d GPUs\n", op.System.Name(), op.System.DriverVersion(), op.System.NVMLVersion(), len(op.System.Devices()))
	return ExitOK
}

// versionString is the module version, or the VCS revision of a development build.
func (a *App) versionString() string {
	if a.Version != "" {
		return a.Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + dirty
	}
	return v
}

func (a *App) host() string {
	if a.Host != "" {
		return a.Host
	}
	h, _ := os.Hostname()
	return h
}

func (a *App) interactive() bool {
	if a.Interactive != nil {
		return *a.Interactive
	}
	f, ok := a.Stderr.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// RecorderProcs is the GOMAXPROCS for a run of gpuwatt with args: at most 4 for the verbs
// that record for as long as a command, a job or a server runs (measure, job, record,
// serve), whose goroutines wake many times a second to do a few µs of work each: on a host
// of many cores the Go scheduler's idle processors spin looking for work at each wakeup,
// which cost measure about 2 % of a core on a 16-core H200 host
// (results/nvidia-h200/2026-11-28-cpu-probe). 0 leaves it as it is: other verbs, or
// GOMAXPROCS set in the environment.
func RecorderProcs(args []string, env func(string) string, cpus int) int {
	if len(args) == 0 || env("GOMAXPROCS") != "" {
		return 0
	}
	switch args[0] {
	case "measure", "job", "record", "serve":
		return min(cpus, 4)
	}
	return 0
}
