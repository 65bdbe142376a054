package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

const measureSynopsis = "[flags] -- CMD [ARGS...]"

func (a *App) measure(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withRealAuto|withOut|withJSON|withQuiet, "")
	gpus := fs.String("gpu", "all", "GPUs to record: all, or indices such as 0,2")
	chans := fs.String("channels", measure.DefaultChannels, "channels to record: default (the driver's sample ring and energy counter, clocks, temperature, throttle reasons; a board's other power channels only where it has no ring: docs/sampling.md), all, or names and globs such as default,power.usage")
	gpuCPU := fs.Bool("gpu-cpu", false, "give the Sampler's CPU per GPU (each polling lane on an OS thread of its own, which costs a little CPU itself)")
	poll := fs.String("poll", "lean", "lean (adaptive, with clocks, temperature and throttle reasons read at most every 250 ms), adaptive (learn each channel's update period, poll at a period/8), lock (adaptive, phase-locked where updates keep time), max (busy-poll), or an interval such as 5ms")
	counterEvery := fs.String("counter-every", "default", "read the energy counter every DURATION, such as 100ms (10ms to 1m), for a denser anchor on loads locked to the sensors' sampling; each call busy-waits 3.4-6.3 ms of CPU on an H200, so 100ms costs 3.5-6 % of a core (docs/sampling.md); default: at most 0.2 % of a core (~every 2-10 s on an H200)")
	baseline := fs.Duration("baseline", time.Second, "idle recording before the command (gives the idle power)")
	tail := fs.Duration("tail", time.Second, "recording after the command (shows the sensors settle)")
	marksPath := fs.String("marks", "", "the file the command appends region markers to, named to it by $GPUWATT_MARKS (lines begin NAME and end NAME, docs/markers.md); default: a new temporary file, kept as marks.txt in --out")
	waitChildren := fs.Bool("wait-children", false, "after the command exits, wait for the processes it started that run on (its process group) and measure them too; without it they are named in a warning")
	simLoad := fs.String("sim-load", "preset", "on the sim device: what it draws while the command runs, which it cannot see: preset (its command_load_w), idle (a command that launches no sim work), or a power in W")
	raplRoot := fs.String("rapl-root", "", "powercap tree of the host's RAPL counters (CPU packages, DRAM), recorded as cpu.* channels; default /sys/class/powercap (the sim's own where --sim-config has \"host\"); none: record no host counters")
	if code, ok := a.parseFlags(fs, args, measureSynopsis); !ok {
		return code
	}
	sl, err := measure.ParseSimLoad(*simLoad)
	if err != nil {
		return a.usageError("measure", err)
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("measure", err)
	}
	popt.HangTimeout = a.HangTimeout
	if popt.CounterEvery, err = sensor.ParseCounterEvery(*counterEvery); err != nil {
		return a.usageError("measure", err)
	}
	gpuIdx, err := parseIndices(*gpus)
	if err != nil {
		return a.usageError("measure", err)
	}
	var patterns []string
	if *chans != "all" && *chans != "" {
		patterns = strings.Split(*chans, ",")
	}
	cmd := fs.Args()
	opt := measure.Options{
		GPUs: gpuIdx, Channels: patterns, GPUCPU: *gpuCPU, Poll: popt, Baseline: *baseline, Tail: *tail,
		Runner: a.Runner, Command: cmd, SimLoad: sl,
		Version: a.versionString(), Host: a.host(), CommandLine: append([]string{"gpuwatt", "measure"}, args...),
		HostRoot: *raplRoot, NoHost: *raplRoot == "none",
	}
	if opt.Runner == nil {
		opt.Runner = measure.ExecRunner{} // checked by Validate; replaced below
	}
	if err := opt.Validate(); err != nil {
		return a.usageError("measure", err)
	}
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force); err != nil {
			return a.usageError("measure", err)
		}
	}
	if *marksPath != "" {
		if err := checkMarks(*marksPath); err != nil {
			return a.usageError("measure", err)
		}
	}
	if a.Runner == nil {
		er := measure.ExecRunner{Stdin: a.Stdin, Stdout: a.Stdout, Stderr: a.Stderr, WaitChildren: *waitChildren}
		if err := er.Check(cmd); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt measure: %v\n", err)
			return commandExit(err)
		}
		path, cleanup, err := marksFile(*marksPath)
		if err != nil {
			return a.usageError("measure", err)
		}
		defer cleanup()
		opt.Marks = path
		er.Env = []string{marks.EnvVar + "=" + path}
		if sh.json {
			// stdout carries the JSON summary: the command's output goes to stderr.
			er.Stdout = a.Stderr
		}
		opt.Runner = er
	}
	clk := clock.Clock(clock.NewReal())
	if a.NewClock != nil {
		clk = a.NewClock()
	}
	sys, err := a.openSystem("measure", sh.dev, clk)
	if err != nil {
		return a.exitFor("measure", err)
	}
	defer sys.Close()
	if !sh.quiet && a.interactive() {
		fmt.Fprintf(a.Stderr, "gpuwatt measure: recording %s (poll %s), %s baseline, then running %s\n", sys.Name(), popt, *baseline, strings.Join(cmd, " "))
	}
	res, runErr := opt.Run(ctx, device.Env{System: sys, Clock: clk})
	if res == nil {
		return a.exitFor("measure", runErr)
	}
	sum := measure.Summarize(res, cmd, *baseline)
	code := res.ExitCode
	if runErr != nil && ctx.Err() == nil {
		fmt.Fprintf(a.Stderr, "gpuwatt measure: %v\n", runErr)
		if c := commandExit(runErr); c != ExitFailure {
			code = c
		} else if code == 0 {
			code = ExitFailure
		}
	}
	if sh.out != "" {
		if err := writeMeasureFiles(sh.out, res, sum, opt.Marks); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt measure: --out %s: %v\n", sh.out, err)
			if code == 0 {
				code = ExitFailure
			}
		}
	}
	if sh.json {
		if err := report.WriteJSONTo(a.Stdout, sum); err != nil {
			return a.fail("measure", err)
		}
	} else {
		measure.WriteText(a.Stderr, sum)
	}
	if ctx.Err() != nil {
		// Cut short: the command's own code (it was sent the same signal) gives way to the
		// signal's, so a script can tell an interrupted measurement from a finished one.
		code = interruptedCode(ctx)
	}
	return code
}

// commandExit is the exit code for a command that could not be run: 127 not found, 126
// found but not executable (as a shell gives), else 1.
func commandExit(err error) int {
	switch {
	case errors.Is(err, measure.ErrCommandNotFound):
		return ExitNotFound
	case errors.Is(err, measure.ErrNotExecutable):
		return ExitNotExecutable
	}
	return ExitFailure
}

// writeMeasureFiles writes trace.csv, trace.json, summary.json and report.html, and the
// marks file as read (marks.txt) where there was one.
func writeMeasureFiles(dir string, res *measure.Result, sum *measure.Summary, marksPath string) error {
	files := []outFile{
		{"trace.csv and trace.json", func(dir string) error { return trace.Save(dir, res.Trace) }},
		{"report.html", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "report.html"), measure.Page(res.Trace, sum).Render)
		}},
	}
	if marksPath != "" && res.MarksRead {
		// What the tail read, not the path again: the command may have put a symlink, a
		// FIFO or /dev/zero there (reading it whole lost summary.json).
		files = append(files, outFile{"marks.txt", func(dir string) error {
			return atomicfile.WriteBytes(filepath.Join(dir, "marks.txt"), res.MarksRaw)
		}})
	}
	return writeFiles(dir, &sum.Status, files, outFile{"summary.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "summary.json"), sum) }})
}

// checkMarks refuses a --marks path that is there and neither a regular file nor a FIFO
// (a device or a socket can block or never end).
func checkMarks(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil // created when the command starts
	case st.IsDir():
		return fmt.Errorf("--marks %s: a directory; want a file", path)
	case !st.Mode().IsRegular() && st.Mode()&fs.ModeNamedPipe == 0:
		return fmt.Errorf("--marks %s: %s, not a regular file or a FIFO (it can block or never end)", path, infile.Kind(st.Mode()))
	}
	return nil
}

// marksFile is the marks file for the command: the --marks path (kept), else a new
// temporary file, removed by cleanup.
func marksFile(path string) (string, func(), error) {
	if path != "" {
		if err := checkMarks(path); err != nil {
			return "", nil, err
		}
		return path, func() {}, nil
	}
	f, err := os.CreateTemp("", "gpuwatt-marks-*.txt")
	if err != nil {
		return "", nil, fmt.Errorf("cannot create the marks file: %v", err)
	}
	f.Close()
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// checkOut checks --out before anything is measured, without creating it (an early error
// must not leave an empty directory behind; the writers create it): dir, or the nearest
// directory above it that exists, must take a file; an existing dir that holds files is
// refused unless --force says to write into it (or the verb resumes from it).
func checkOut(dir string, force bool) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("--out %s: not a directory", dir)
	case err == nil:
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("--out %s: cannot read the directory: %v", dir, unwrapPath(err))
		}
		if len(ents) > 0 && !force {
			return fmt.Errorf("--out %s: the directory is not empty (it holds %s); use another directory, or --force to write into it", dir, ents[0].Name())
		}
		return probeWrite(dir, dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out %s: cannot create the directory: %v", dir, unwrapPath(err))
	}
	parent := dir
	for {
		next := filepath.Dir(parent)
		if next == parent {
			return fmt.Errorf("--out %s: no existing directory above it", dir)
		}
		parent = next
		st, err := os.Stat(parent)
		if err == nil && st.IsDir() {
			return probeWrite(dir, parent)
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--out %s: cannot create the directory: %s is not a directory", dir, parent)
		}
	}
}

// makeOut creates --out when there is something to write into it.
func makeOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the directory: %v", unwrapPath(err))
	}
	return nil
}

// probeWrite proves a file can be created in the existing directory at (for --out dir).
func probeWrite(dir, at string) error {
	f, err := os.CreateTemp(at, ".gpuwatt-probe-*")
	if err != nil {
		what := "cannot write there"
		if at != dir {
			what = "cannot create the directory"
		}
		return fmt.Errorf("--out %s: %s: %v", dir, what, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseIndices parses "all" or "0,2".
func parseIndices(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 {
			return nil, fmt.Errorf("--gpu %q: want all, or GPU indices such as 0,2", s)
		}
		out = append(out, i)
	}
	return out, nil
}
