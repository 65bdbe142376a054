package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/serve"
)

// serve is `gpuwatt serve`: /metrics for Prometheus until SIGINT or SIGTERM, which end it
// cleanly (exit 0): serving is what it was asked to do, and there is nothing to write.
func (a *App) serve(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withQuiet, "")
	listen := fs.String("listen", serve.DefaultListen, "address to serve /metrics on, HOST:PORT or :PORT")
	gpus := fs.String("gpu", "all", "the GPUs to watch: all, or a comma-separated list of indexes (0,2)")
	dcgm := fs.Bool("dcgm-names", false, "also expose DCGM_FI_DEV_POWER_USAGE (W) and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ) with dcgm-exporter's labels")
	poll := fs.String("poll", serve.DefaultPoll.String(), "how often each channel is read: an interval such as 100ms, or adaptive (learn each channel's update period; more CPU)")
	if code, ok := a.parseFlags(fs, args, "[--device auto|nvml|sim[:PRESET]] [--listen ADDR] [--gpu all|LIST] [--dcgm-names] [--poll D]"); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("serve", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("serve", err)
	}
	popt, err := sensor.ParsePoll(*poll)
	if err != nil {
		return a.usageError("serve", err)
	}
	idx, err := serve.ParseGPUs(*gpus)
	if err != nil {
		return a.exitFor("serve", err)
	}
	opt := serve.Options{Listen: *listen, GPUs: idx, DCGMNames: *dcgm, Poll: &popt, Hostname: a.Host}
	if err := opt.Validate(); err != nil {
		return a.exitFor("serve", err)
	}
	// The port first: one in use is bad input, said before any GPU is opened.
	ln, err := serve.Listen(opt)
	if err != nil {
		return a.exitFor("serve", err)
	}
	defer ln.Close()
	clk := clock.Clock(clock.NewReal())
	if a.NewClock != nil {
		clk = a.NewClock()
	}
	sys, err := a.openSystem("serve", sh.dev, clk)
	if err != nil {
		return a.exitFor("serve", err)
	}
	defer sys.Close()
	srv, err := serve.New(ctx, sys, clk, opt)
	if err != nil {
		return a.exitFor("serve", err)
	}
	if !sh.quiet {
		fmt.Fprintf(a.Stderr, "gpuwatt serve: %s, %d GPU(s), poll %s: metrics at http://%s/metrics\n", sys.Name(), len(srv.Snapshot()), popt, ln.Addr())
	}
	if err := srv.Run(ctx, ln, nil); err != nil {
		return a.fail("serve", err)
	}
	return ExitOK
}
