package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/serve"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

// serve is `gpuwatt serve`: /metrics for Prometheus until SIGINT or SIGTERM, which end it
// cleanly (exit 0): serving is what it was asked to do, and there is nothing to write.
func (a *App) serve(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withRealAuto|withQuiet, "")
	listen := fs.String("listen", serve.DefaultListen, "address to serve /metrics on, HOST:PORT or :PORT")
	gpus := fs.String("gpu", "all", "the GPUs to watch: all, or a comma-separated list of indexes (0,2)")
	dcgm := fs.Bool("dcgm-names", false, "also expose DCGM_FI_DEV_POWER_USAGE (W) and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ) with dcgm-exporter's labels")
	otlpURL := fs.String("otlp", "", "also push hw.energy and hw.power to this OpenTelemetry collector (OTLP/HTTP, http://HOST:4318; docs/otlp.md) (default: none, nothing is pushed)")
	otlpEvery := fs.Duration("otlp-interval", 10*time.Second, "how often --otlp pushes")
	webConfig := fs.String("web.config.file", "", "TLS and basic auth for /metrics and /health: the Prometheus exporter-toolkit's web configuration file (docs/serve.md; default: none, plain HTTP)")
	podSocket := fs.String("pod-resources", workload.DefaultSocket, "the kubelet's pod-resources socket, to name the pod and container of each process (none there: names left empty; \"\": never asked)")
	procRoot := fs.String("proc-root", "/proc", "the proc file system the processes' cgroups are read from (their pod UIDs and container ids)")
	raplRoot := fs.String("rapl-root", "", "powercap tree of the host's RAPL counters, served as gpuwatt_cpu_energy_joules_total (default /sys/class/powercap; none: not read)")
	counterEvery := fs.String("counter-every", "default", "read the energy counter every DURATION, such as 100ms (10ms to 1m), not at most 0.2 % of a core: a finer gpuwatt_gpu_energy_joules_total, at 3.4-6.3 ms of CPU a call on an H200 (100ms: 3.5-6 % of a core; docs/sampling.md)")
	poll := fs.String("poll", "lean", "how often each channel is read: lean (a GPU whose driver buffer answers: the buffer and the gauges every 1s, the energy counter at most 0.2 % of a core; one without: every 100ms), an interval such as 100ms for every channel, or adaptive (learn each channel's update period; more CPU)")
	if code, ok := a.parseFlags(fs, args, "[--device auto|nvml|sim[:PRESET]] [--listen ADDR|unix:PATH] [--web.config.file FILE] [--gpu all|LIST] [--dcgm-names] [--poll D] [--counter-every D] [--pod-resources SOCKET] [--otlp URL [--otlp-interval D]]"); !ok {
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
	if popt.CounterEvery, err = sensor.ParseCounterEvery(*counterEvery); err != nil {
		return a.usageError("serve", err)
	}
	var pollOpt *sensor.Options // nil: serve's lean default
	if !popt.Lean || popt.CounterEvery > 0 {
		pollOpt = &popt
	}
	idx, err := serve.ParseGPUs(*gpus)
	if err != nil {
		return a.exitFor("serve", err)
	}
	if *otlpURL != "" {
		if _, err := otlpexport.ParseURL(*otlpURL); err != nil {
			return a.exitFor("serve", err)
		}
		if *otlpEvery <= 0 {
			return a.usageError("serve", fmt.Errorf("--otlp-interval %s: want a positive duration such as 10s", *otlpEvery))
		}
	}
	version, revision, _ := strings.Cut(a.versionString(), " ")
	opt := serve.Options{Listen: *listen, GPUs: idx, DCGMNames: *dcgm, Poll: pollOpt, Hostname: a.Host,
		Version: version, Revision: revision, WebConfigFile: *webConfig, HostRoot: *raplRoot, NoHost: *raplRoot == "none"}
	if !sh.quiet {
		opt.Logger = slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
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
	// The processes of the sim are scripted, not the host's: their pids name nothing in
	// /proc, so only a real device's processes are looked up.
	if !sys.Simulated() {
		wl := &workload.Resolver{ProcRoot: *procRoot, Socket: *podSocket}
		defer wl.Close()
		opt.Workloads = wl
	}
	srv, err := serve.New(ctx, sys, clk, opt)
	if err != nil {
		return a.exitFor("serve", err)
	}
	if !sh.quiet {
		fmt.Fprintf(a.Stderr, "gpuwatt serve: %s, %d GPU(s), poll %s: metrics at %s\n", sys.Name(), len(srv.Snapshot()), popt, metricsURL(ln, *webConfig))
		if why := srv.HostUnavailable(); why != "" && !sys.Simulated() && *raplRoot != "none" {
			fmt.Fprintf(a.Stderr, "gpuwatt serve: no gpuwatt_cpu_energy_joules_total: %s\n", why)
		}
	}
	if *otlpURL != "" {
		ex, err := otlpexport.New(ctx, otlpexport.Options{URL: *otlpURL, Interval: *otlpEvery, Host: a.host(), Version: a.versionString()},
			func() []otlpexport.GPU { return otlpexport.FromSnapshot(srv.Snapshot()) })
		if err != nil {
			srv.Close()
			return a.exitFor("serve", err)
		}
		defer func() {
			// The last push, bounded: SIGTERM must end serve within a second even when
			// the collector does not answer.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 600*time.Millisecond)
			defer cancel()
			if err := ex.Shutdown(sctx); err != nil && !sh.quiet {
				fmt.Fprintf(a.Stderr, "gpuwatt serve: the last push: %v\n", err)
			}
		}()
		if !sh.quiet {
			fmt.Fprintf(a.Stderr, "gpuwatt serve: pushing to %s every %s\n", ex.Endpoint(), *otlpEvery)
		}
	}
	if err := srv.Run(ctx, ln, nil); err != nil {
		return a.fail("serve", err)
	}
	return ExitOK
}

// metricsURL says where /metrics is: on the unix socket's path, or at the URL; with a web
// configuration, TLS and auth are as it says.
func metricsURL(ln net.Listener, webConfig string) string {
	where := "http://" + ln.Addr().String() + "/metrics"
	if ln.Addr().Network() == "unix" {
		where = "/metrics on the unix socket " + ln.Addr().String()
	}
	if webConfig != "" {
		where += " (TLS and auth as " + webConfig + " says)"
	}
	return where
}
