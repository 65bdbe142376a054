package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/promtext"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/webconfig"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

// DefaultListen is --listen's default: every interface, port 9402 (dcgm-exporter has 9400).
const DefaultListen = ":9402"

// DefaultPoll is the poll interval of serve's lean default (--poll lean) for a GPU without
// a working driver buffer of samples, whose corrected power comes from a polled power
// channel (power.instant, power.usage): every channel read every 100 ms, the energy
// counter by its own rule (sensor.Options.CPUShare).
const DefaultPoll = 100 * time.Millisecond

// LeanPoll is how often serve's lean default (--poll lean) reads a GPU whose driver buffer
// of samples answers (an H100's, an H200's power.samples): the buffer itself (119 samples of
// 20 ms on an H200, so a read a second loses none, and every read returns all new samples)
// and every other channel but the energy counter, whose readings are gauges only (the
// other power channels, clocks, temperatures, clock events, limits): a gauge is at most a
// second old, once a second being what Update works the figures out at and more than any
// scrape asks. At 100 ms these reads woke each GPU's lane ten times a second, the largest
// part of serve's CPU beyond measure's (issue 35).
const LeanPoll = time.Second

// SlowShare is the Sampler's SlowShare under serve: a channel whose call takes more than
// 100 µs (an H200's clock.sm, throttle.reasons, temp.gpu: 0.35-1.5 ms) is read at most every
// (its call's time / 0.2 %), like the energy counter, however short --poll is.
const SlowShare = sensor.DefaultSlowShare

// Options of serve.
type Options struct {
	// Listen is the address /metrics is served on (host:port); DefaultListen when empty.
	Listen string
	// GPUs are the indexes to watch; nil: all.
	GPUs []int
	// DCGMNames also exposes DCGM_FI_DEV_POWER_USAGE (W) and
	// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ) with dcgm-exporter's labels.
	DCGMNames bool
	// Poll is the Sampler's polling; nil, or Lean set: serve's lean default (a GPU whose
	// driver buffer answers read every LeanPoll, the counter by CPUShare; one without, every
	// DefaultPoll). Anything else polls every channel of every GPU as it says.
	Poll *sensor.Options
	// Hostname labels every GPU; os.Hostname() when empty.
	Hostname string
	// Update is how often the derived figures (corrected power, energy, idle, the
	// per-process split, up) are worked out; 1 s when 0.
	Update time.Duration
	// Keep is how much of the recent readings of a GPU's corrected channel is kept (the
	// ring the corrected power is worked out from); 8 s when 0.
	Keep time.Duration
	// Version and Revision label gpuwatt_build_info.
	Version, Revision string
	// WebConfigFile is the web configuration (TLS, basic auth) in the Prometheus
	// exporter-toolkit's format, as Prometheus's own exporters read it (--web.config.file;
	// internal/webconfig); empty: plain HTTP.
	WebConfigFile string
	// Logger receives the web server's messages (a web configuration file that no longer
	// reads, series left out of /metrics); none when nil.
	Logger *slog.Logger
	// Workloads names the pod and container of each process of the per-process split;
	// nil: none are named.
	Workloads Workloads
	// HostRoot is the powercap tree of the host's RAPL counters (default
	// /sys/class/powercap; the sim's own where its config models a host), exposed as
	// gpuwatt_cpu_energy_joules_total; NoHost reads none.
	HostRoot string
	NoHost   bool
}

// Workloads says which pod and container a process using a GPU runs in
// (workload.Resolver: the cgroup path and the kubelet's pod-resources API).
type Workloads interface {
	Lookup(gpuUUID string, pid int) workload.Workload
}

// UnixPrefix marks a --listen address that is a unix socket's path.
const UnixPrefix = "unix:"

// ParseGPUs parses --gpu: "all" (nil) or a comma-separated list of indexes.
func ParseGPUs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 {
			return nil, status.Inputf("--gpu %q: want all or a comma-separated list of GPU indexes such as 0,2", s)
		}
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// Validate checks the options without opening anything but the web configuration file.
func (o Options) Validate() error {
	if err := ValidateListen(o.listen()); err != nil {
		return err
	}
	if o.WebConfigFile != "" {
		if _, err := webconfig.Load(o.WebConfigFile); err != nil {
			return status.Inputf("--web.config.file %s: %v", o.WebConfigFile, err)
		}
	}
	if o.Update < 0 || o.Keep < 0 {
		return status.Inputf("update and keep must not be negative")
	}
	if o.Poll != nil {
		if err := sensor.CheckCounterEvery(o.Poll.CounterEvery); err != nil {
			return status.Inputf("--counter-every %v", err)
		}
	}
	return nil
}

// ValidateListen checks that addr is host:port with a port number, or unix:PATH.
func ValidateListen(addr string) error {
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		if path == "" {
			return status.Inputf("--listen %q: want unix:PATH, the path of a unix socket", addr)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return status.Inputf("--listen %q: want HOST:PORT or :PORT (%v)", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return status.Inputf("--listen %q: the port must be a number from 0 to 65535", addr)
	}
	_ = host
	return nil
}

func (o Options) listen() string {
	if o.Listen == "" {
		return DefaultListen
	}
	return o.Listen
}

// lean reports whether o asks for serve's lean default polling (Options.Poll).
func (o Options) lean() bool { return o.Poll == nil || o.Poll.Lean }

func (o Options) withDefaults() Options {
	if o.lean() {
		p := sensor.Options{Mode: sensor.Fixed, Interval: DefaultPoll}
		if o.Poll != nil {
			p.SlowShare, p.CPUShare, p.HangTimeout, p.CounterEvery = o.Poll.SlowShare, o.Poll.CPUShare, o.Poll.HangTimeout, o.Poll.CounterEvery
		}
		o.Poll = &p
	}
	if o.Poll.SlowShare == 0 {
		p := *o.Poll
		p.SlowShare = SlowShare
		o.Poll = &p
	}
	if o.Update <= 0 {
		o.Update = time.Second
	}
	if o.Keep <= 0 {
		o.Keep = 8 * time.Second
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	return o
}

// Listen opens the listener of o.Listen. An address in use or that cannot be bound is
// status.ErrInput (exit 2 on the command line), naming the address.
func Listen(o Options) (net.Listener, error) {
	addr := o.listen()
	if err := ValidateListen(addr); err != nil {
		return nil, err
	}
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		return listenUnix(path)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, status.Inputf("--listen %s: %v", addr, err)
	}
	return ln, nil
}

// listenUnix listens on the unix socket path. A socket left there by a serve that did not
// end cleanly (nothing answers on it) is replaced; a file that is not a socket, or a socket
// another process answers on, is bad input.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, status.Inputf("--listen unix:%s: the path exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, status.Inputf("--listen unix:%s: another process answers on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, status.Inputf("--listen unix:%s: %v", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, status.Inputf("--listen unix:%s: %v", path, err)
	}
	return ln, nil
}

// Server samples the watched GPUs and answers /metrics. It implements snapshot.Source.
type Server struct {
	opt     Options
	sys     gpu.System
	clk     clock.Clock
	sampler *sensor.Sampler
	gpus    []*gpuState
	byIdx   map[int]*gpuState
	sys0    sysInfo
	cpu0    time.Duration
	started time.Duration

	mu        sync.Mutex // guards the derived figures in gpus and lastStats
	lastStats map[statKey]trace.ChannelStats
	cpuSec    float64

	// The host's RAPL counters: each domain's first and latest reading (J), and why there
	// are none (HostUnavailable).
	hostMu    sync.Mutex
	hostFirst map[string]float64
	hostLast  map[string]float64
	hostWhy   string
}

// HostUnavailable says in one line why the host's RAPL counters are not served ("" when
// they are).
func (s *Server) HostUnavailable() string { return s.hostWhy }

var _ snapshot.Source = (*Server)(nil)

type statKey struct {
	gpu  int
	name string
}

// New opens a Sampler on the watched GPUs of sys (on clk) and starts it. Close stops it.
func New(ctx context.Context, sys gpu.System, clk clock.Clock, o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	lean := o.lean()
	o = o.withDefaults()
	devs := sys.Devices()
	var watch []gpu.Device
	if o.GPUs == nil {
		watch = devs
	} else {
		for _, i := range o.GPUs {
			if i >= len(devs) {
				return nil, status.Inputf("--gpu %d: no such GPU (found %d)", i, len(devs))
			}
			watch = append(watch, devs[i])
		}
	}
	if len(watch) == 0 {
		return nil, errors.New("no GPU to watch")
	}
	s := &Server{opt: o, sys: sys, clk: clk, byIdx: map[int]*gpuState{}, lastStats: map[statKey]trace.ChannelStats{}}
	var sensors []sensor.Sensor
	for _, d := range watch {
		g := newGPUState(d, o)
		g.workloads = o.Workloads
		s.gpus = append(s.gpus, g)
		s.byIdx[g.info.Index] = g
		ss := d.Sensors()
		if lean {
			ss = leanSensors(ss)
		}
		sensors = append(sensors, ss...)
	}
	s.hostFirst, s.hostLast = map[string]float64{}, map[string]float64{}
	if o.NoHost {
		s.hostWhy = "not asked for"
	} else if hs, err := device.HostSensors(sys, o.HostRoot); err != nil {
		s.hostWhy = err.Error()
	} else {
		pace := max(o.Poll.Interval, time.Second) // a scrape's resolution, for ~5 µs a read
		for _, h := range hs {
			sensors = append(sensors, sensor.Pace(h, pace))
		}
	}
	s.sampler = sensor.New(clk, sensors, *o.Poll)
	s.sampler.SetSink(s.sink)
	if err := s.sampler.Start(ctx); err != nil {
		return nil, err
	}
	s.started = clk.Now()
	s.cpu0 = sensor.ProcessCPU()
	for _, g := range s.gpus {
		g.setChannels(s.sampler.Channels(), s.sampler.Unavailable())
	}
	s.sys0 = sysInfo{driver: sys.DriverVersion(), device: sys.Name(), simulated: sys.Simulated()}
	s.Update()
	return s, nil
}

// leanSensors paces the sensors of one GPU for serve's lean default: where its driver
// buffer (power.samples) answers a read, every channel but the energy counter is read every
// LeanPoll; the counter keeps the Sampler's rule (every DefaultPoll, no more often than
// CPUShare allows: every ~2.5 s on an H200). Where the buffer does not answer, the corrected
// power comes from a polled power channel, and every channel is read every DefaultPoll.
func leanSensors(ss []sensor.Sensor) []sensor.Sensor {
	ring := false
	for _, x := range ss {
		if x.Channel().Name == trace.ChPowerSamples {
			_, err := x.Read(nil) // one call (~0.7 ms on an H200); its samples are old anyway
			ring = err == nil
		}
	}
	if !ring {
		return ss
	}
	out := make([]sensor.Sensor, 0, len(ss))
	for _, x := range ss {
		if x.Channel().Cumulative {
			// The counter keeps its rule: read every second it would rise in steps in
			// phase with Update's, and the served energy would jump by two seconds' worth
			// now and then; a real board's (~5 ms a call) is capped by CPUShare anyway.
			out = append(out, x)
			continue
		}
		out = append(out, sensor.Pace(x, LeanPoll))
	}
	return out
}

// sink files a new sample with its GPU (Options.Sink: on the Sampler's goroutines).
func (s *Server) sink(x trace.Sample) {
	if x.GPU == trace.HostGPU {
		s.hostMu.Lock()
		if _, ok := s.hostFirst[x.Channel]; !ok {
			s.hostFirst[x.Channel] = x.Value
		}
		s.hostLast[x.Channel] = x.Value
		s.hostMu.Unlock()
		return
	}
	if g := s.byIdx[x.GPU]; g != nil {
		g.add(x, s.clk)
	}
}

// Update works out the derived figures (corrected power and energy, idle, the process
// split, up) from what was read so far. Run calls it every Options.Update; on a virtual
// clock call it from the goroutine that advances the clock.
func (s *Server) Update() {
	now := s.clk.Now()
	stats := s.sampler.Stats()
	for _, g := range s.gpus {
		g.readProcesses() // before the lock: a scrape never waits for the driver
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	per := map[int][]trace.Channel{}
	for _, ch := range stats {
		per[ch.GPU] = append(per[ch.GPU], ch)
	}
	for _, g := range s.gpus {
		g.update(now, per[g.info.Index], s.lastStats)
	}
	for _, ch := range stats {
		if ch.Stats != nil {
			s.lastStats[statKey{ch.GPU, ch.Name}] = *ch.Stats
		}
	}
	if !clock.IsVirtual(s.clk) {
		s.cpuSec = (sensor.ProcessCPU() - s.cpu0).Seconds()
	}
}

// HostEnergy is each host RAPL domain's energy since serve started (J), by channel name.
func (s *Server) HostEnergy() map[string]float64 {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	out := make(map[string]float64, len(s.hostLast))
	for k, v := range s.hostLast {
		out[k] = v - s.hostFirst[k]
	}
	return out
}

// Snapshot implements snapshot.Source.
func (s *Server) Snapshot() []snapshot.GPU {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]snapshot.GPU, 0, len(s.gpus))
	wall := s.clk.Epoch().Add(s.clk.Now())
	for _, g := range s.gpus {
		out = append(out, g.snapshot(s.opt.Hostname, wall, s.clk))
	}
	return out
}

// Handler serves /metrics, /health (and a short page at /).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promtext.Handler(s.metrics, s.opt.Logger))
	mux.HandleFunc("/health", s.healthHandler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "gpuwatt serve: metrics at /metrics, readiness at /health (docs/serve.md)\n")
	})
	return mux
}

// Close stops the sampling.
func (s *Server) Close() {
	s.sampler.Stop()
}

// Run serves /metrics on ln until ctx ends, then shuts the server down (at most 500 ms for
// scrapes under way) and stops the sampling. It returns nil on a clean end. tick, when
// non-nil, is called after every Update (the OTLP exporter pushes there).
func (s *Server) Run(ctx context.Context, ln net.Listener, tick func()) error {
	hs := &http.Server{Handler: s.Handler()}
	harden(hs)
	errc := make(chan error, 1)
	go func() { errc <- s.serveHTTP(hs, ln) }()
	t := time.NewTicker(s.opt.Update)
	defer t.Stop()
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-errc:
			break loop
		case <-t.C:
			s.Update()
			if tick != nil {
				tick()
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 500*time.Millisecond)
	defer cancel()
	_ = hs.Shutdown(sctx)
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// serveHTTP serves hs on ln, with TLS and basic auth where the web configuration file asks
// for them (read again at every connection and request, so renewed certificates are taken
// up without a restart).
func (s *Server) serveHTTP(hs *http.Server, ln net.Listener) error {
	if s.opt.WebConfigFile == "" {
		return hs.Serve(ln)
	}
	return webconfig.Serve(ln, hs, s.opt.WebConfigFile, s.opt.Logger)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
