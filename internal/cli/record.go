package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
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
	socket := fs.String("socket", "", "serve the protocol on this unix socket (made mode 0600) instead of stdin and stdout, one program at a time, each its own recording, until SIGTERM or Ctrl-C (Python: gpuwatt.Monitor(connect=PATH)); default: stdin and stdout")
	if code, ok := a.parseFlags(fs, args, "[flags]  (JSON lines on stdin and stdout; started by the Python package, docs/python.md)"); !ok {
		return code
	}
	if *socket != "" && sh.out != "" {
		return a.usageError("record", errors.New("--out with --socket: each program's recording would overwrite the last; save it from the program (gpuwatt.Monitor(out=...) starts a recorder of its own)"))
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
	opt := record.Options{GPUs: gpuIdx, Poll: popt, Out: sh.out, HostRoot: *raplRoot, NoHost: *raplRoot == "none", Version: a.versionString(), Host: a.host(),
		CommandLine: append([]string{"gpuwatt", "record"}, args...)}
	env := device.Env{System: sys, Clock: clk}
	if *socket != "" {
		return a.recordSocket(ctx, opt, env, *socket)
	}
	go watchParent(ctx, cancel)
	if err := opt.Serve(ctx, env, a.Stdin, a.Stdout); err != nil {
		return a.exitFor("record", err)
	}
	return ExitOK
}

// recordSocket serves the protocol on a unix socket, one connection at a time (each a
// recording of its own: its windows, its close), until ctx ends; the socket file is then
// removed. A program that disconnects ends its recording as EOF on stdin does.
func (a *App) recordSocket(ctx context.Context, opt record.Options, env device.Env, path string) int {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return a.usageError("record", fmt.Errorf("--socket %s: exists and is not a socket; name a new path", path))
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return a.usageError("record", fmt.Errorf("--socket %s: a recorder already listens there", path))
		}
		os.Remove(path) // a socket left by a recorder that was killed
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return a.usageError("record", fmt.Errorf("--socket %s: %v", path, err))
	}
	defer ln.Close() // removes the socket file
	if err := os.Chmod(path, 0o600); err != nil {
		return a.fail("record", fmt.Errorf("--socket %s: %v", path, err))
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	fmt.Fprintf(a.Stderr, "gpuwatt record: serving on %s\n", path)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ExitOK
			}
			return a.fail("record", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		if err := opt.Serve(cctx, env, conn, conn); err != nil {
			fmt.Fprintf(a.Stderr, "gpuwatt record: a session ended: %v\n", err)
		}
		cancel()
		conn.Close()
	}
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
