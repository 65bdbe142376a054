package cli

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/record"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
)

// record serves the Python package's line protocol on stdin and stdout (docs/python.md):
// the program that started it begins and ends windows and gets their energies.
func (a *App) record(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withOut, "")
	gpus := fs.String("gpu", "all", "GPUs to record: all, or indices such as 0,2")
	poll := fs.String("poll", "lean", "as measure's --poll")
	raplRoot := fs.String("rapl-root", "", "powercap tree for the host's RAPL counters (default /sys/class/powercap; the sim's own where --sim-config models a host); none: record no host counters")
	if code, ok := a.parseFlags(fs, args, "[flags]  (JSON lines on stdin and stdout; started by the Python package, docs/python.md)"); !ok {
		return code
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("record", err)
	}
	popt.HangTimeout = a.HangTimeout
	gpuIdx, err := parseIndices(*gpus)
	if err != nil {
		return a.usageError("record", err)
	}
	if sh.out != "" {
		if err := checkOut(sh.out, sh.force); err != nil {
			return a.usageError("record", err)
		}
	}
	clk := clock.Clock(clock.NewReal())
	if a.NewClock != nil {
		clk = a.NewClock()
	}
	sys, err := a.openSystem("record", sh.dev, clk)
	if err != nil {
		return a.exitFor("record", err)
	}
	defer sys.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go watchParent(ctx, cancel)
	opt := record.Options{GPUs: gpuIdx, Poll: popt, Out: sh.out, HostRoot: *raplRoot, NoHost: *raplRoot == "none", Version: a.versionString(), Host: a.host(),
		CommandLine: append([]string{"gpuwatt", "record"}, args...)}
	if err := opt.Serve(ctx, device.Env{System: sys, Clock: clk}, a.Stdin, a.Stdout); err != nil {
		return a.exitFor("record", err)
	}
	return ExitOK
}

// watchParent ends the recording when the process that started the recorder is gone (it
// is re-parented): a program killed with SIGKILL leaves no recorder behind even where a
// child of it (a forked data-loader worker) still holds the pipe open, so that no end of
// input comes.
func watchParent(ctx context.Context, cancel func()) {
	ppid := os.Getppid()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				cancel()
				return
			}
		}
	}
}
