// Package otlpexport pushes gpuwatt's per-GPU energy and power to an OpenTelemetry
// collector over OTLP/HTTP (protobuf: the request encoded here with protowire, in
// encode.go, and posted with net/http, in post.go: the OpenTelemetry Go SDK it replaces
// brought gRPC into the build, and with it and k8s.io/kubelet gone a cold compile of the
// tests takes 57-115 s less CPU, results/dev-vm/2026-11-28-test-timing-4-deps), named by
// OpenTelemetry's hardware semantic conventions (docs/otlp.md):
//
//   - hw.energy (counter, J): the GPU's energy, cumulative from the exporter's start (serve)
//     or over the job (job end);
//   - hw.power (gauge, W): its corrected power (serve), or the job's mean power (job end);
//   - gpuwatt.hw.energy.low and gpuwatt.hw.energy.high (gauges, J): hw.energy's 95 %
//     interval on the board's scale, where the figure has one.
//
// Every point carries hw.id (the GPU's UUID), hw.type "gpu", hw.name and hw.model (the
// board's name), hw.vendor, gpuwatt.gpu.uuid, gpuwatt.gpu.index, gpuwatt.energy.source
// (where the energy figure comes from) and gpuwatt.energy.corrected (whether a sensor
// correction gave it). The resource carries service.name "gpuwatt", service.version and
// host.name (the conventions put the host on the resource, not on the points), plus what
// the caller adds; OTEL_RESOURCE_ATTRIBUTES overrides them.
package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// Metric and attribute names (OpenTelemetry semantic conventions for hardware, and
// gpuwatt's own under gpuwatt.*).
const (
	MetricEnergy     = "hw.energy"
	MetricPower      = "hw.power"
	MetricEnergyLow  = "gpuwatt.hw.energy.low"
	MetricEnergyHigh = "gpuwatt.hw.energy.high"

	AttrID        = "hw.id"
	AttrType      = "hw.type"
	AttrName      = "hw.name"
	AttrModel     = "hw.model"
	AttrVendor    = "hw.vendor"
	AttrUUID      = "gpuwatt.gpu.uuid"
	AttrIndex     = "gpuwatt.gpu.index"
	AttrSource    = "gpuwatt.energy.source"
	AttrCorrected = "gpuwatt.energy.corrected"

	// DefaultPath is appended to a URL without a path (as OTEL_EXPORTER_OTLP_ENDPOINT is).
	DefaultPath = "/v1/metrics"
	// DefaultTimeout bounds one push (retries included).
	DefaultTimeout = 10 * time.Second
)

// GPU is one GPU's figures at the moment of a push.
type GPU struct {
	Index int
	UUID  string // hw.id (else "gpu<Index>")
	Model string // hw.name and hw.model ("NVIDIA H200")
	// Vendor is hw.vendor; "" takes the model's first word where it is a known vendor.
	Vendor string
	// EnergyJ is hw.energy: monotonic over the exporter's life. EnergyLowJ and EnergyHighJ
	// are its 95 % interval; HasInterval says there is one.
	EnergyJ                 float64
	EnergyLowJ, EnergyHighJ float64
	HasInterval             bool
	// Source says where EnergyJ comes from ("counter", "calibrated_ring", "inversion",
	// "corrected", "counter_begin_end"); Corrected whether a sensor correction gave it.
	Source    string
	Corrected bool
	// PowerW is hw.power; HasPower says there is one.
	PowerW   float64
	HasPower bool
}

// Options of New.
type Options struct {
	// URL is the collector's OTLP/HTTP endpoint: http://HOST:4318 (DefaultPath appended
	// where the URL has no path) or the full URL of the metrics endpoint; https for TLS.
	URL string
	// Interval is how often to push (serve); 0: only at Shutdown.
	Interval time.Duration
	// Timeout bounds one push, retries included (default DefaultTimeout).
	Timeout time.Duration
	// Host, Version: host.name and service.version on the resource.
	Host, Version string
	// Resource holds more resource attributes (job end: gpuwatt.job.id, ...).
	Resource map[string]string
}

// Exporter pushes the GPUs' figures.
type Exporter struct {
	endpoint string // as given (Endpoint redacts it)
	post     poster
	resource []Attr
	start    time.Time // every point's start time: the exporter's start
	src      func() []GPU

	pushMu sync.Mutex // one push at a time: the periodic one and Shutdown's
	stop   context.CancelFunc
	done   chan struct{} // closed when the periodic loop has ended
	closed atomic.Bool
}

// ParseURL checks an --otlp value and returns the endpoint URL the exporter posts to. A bad
// value is an error wrapping status.ErrInput, naming it.
func ParseURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "", status.Inputf("--otlp %q: want the collector's OTLP/HTTP URL, such as http://collector:4318 (or its full /v1/metrics URL)", Redact(s))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", status.Inputf("--otlp %q: port %s: want a number from 1 to 65535", u.Redacted(), p)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", status.Inputf("--otlp %q: a query or fragment has no meaning here", u.Redacted())
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultPath
	}
	return u.String(), nil
}

// Redact is a URL with its password, where it has one, replaced by xxxxx (url.URL.Redacted),
// for every message and log: a URL that does not parse has whatever lies between // and @
// replaced.
func Redact(s string) string {
	if u, err := url.Parse(strings.TrimSpace(s)); err == nil {
		return u.Redacted()
	}
	if i := strings.Index(s, "//"); i >= 0 {
		if j := strings.LastIndex(s[i:], "@"); j > 0 {
			return s[:i+2] + "xxxxx" + s[i+j:]
		}
	}
	return s
}

// New starts an exporter that reads the GPUs from src at each push. It sends nothing until
// the first interval (or Shutdown) and fails only on bad options.
func New(ctx context.Context, o Options, src func() []GPU) (*Exporter, error) {
	endpoint, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("otlpexport: no source of GPUs")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	post, err := newPoster(endpoint, timeout, o.Version, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", Redact(endpoint), err)
	}
	e := &Exporter{endpoint: endpoint, post: post, resource: resourceAttrs(o, os.Getenv), start: time.Now(), src: src,
		done: make(chan struct{})}
	if o.Interval <= 0 {
		close(e.done)
		e.stop = func() {}
		return e, nil
	}
	// The periodic pushes end with Shutdown, not with ctx: serve's last push follows the
	// cancellation of its context.
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop = stop
	go e.loop(loopCtx, o.Interval)
	return e, nil
}

// loop pushes every interval until stopped; a push that fails is logged, as the SDK's
// periodic reader logged it, and the next one is made on time.
func (e *Exporter) loop(ctx context.Context, interval time.Duration) {
	defer close(e.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, e.post.timeout)
		err := e.push(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Printf("otlp push to %s: %v", Redact(e.endpoint), err)
		}
	}
}

// push reads the GPUs and sends them as one request.
func (e *Exporter) push(ctx context.Context) error {
	e.pushMu.Lock()
	defer e.pushMu.Unlock()
	body := encodeRequest(e.resource, scopeName, metrics(e.src()), e.start, time.Now())
	return e.post.send(ctx, body)
}

// Endpoint is the URL the exporter posts to.
func (e *Exporter) Endpoint() string { return Redact(e.endpoint) }

// Shutdown stops the periodic pushes, pushes the GPUs' figures a last time and closes the
// exporter; a second call is an error.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e.closed.Swap(true) {
		return errors.New("otlp exporter: already shut down")
	}
	e.stop()
	<-e.done
	defer e.post.close()
	ctx, cancel := context.WithTimeout(ctx, e.post.timeout)
	defer cancel()
	if err := e.push(ctx); err != nil {
		return fmt.Errorf("otlp push to %s: %w", Redact(e.endpoint), err)
	}
	return nil
}

// Push sends gpus once, as one request, and closes: for a batch job's end.
func Push(ctx context.Context, o Options, gpus []GPU) error {
	o.Interval = 0
	e, err := New(ctx, o, func() []GPU { return gpus })
	if err != nil {
		return err
	}
	return e.Shutdown(ctx)
}

// scopeName is the instrumentation scope of every metric.
const scopeName = "github.com/gpuwatt/gpuwatt"

// Descriptions of the metrics.
const (
	descEnergy     = "Energy consumed by the GPU (gpuwatt: from the board's counter where it has readings, else the corrected integral; gpuwatt.energy.source says which)"
	descPower      = "Power consumed by the GPU (gpuwatt: the corrected power; job end: the job's mean power)"
	descEnergyLow  = "Lower bound of hw.energy's 95 % interval on the board's scale"
	descEnergyHigh = "Upper bound of hw.energy's 95 % interval on the board's scale"
)

// metrics are the four metrics of a push, each with the points of the GPUs that have a
// finite value for it, in the GPUs' order.
func metrics(gpus []GPU) []metricData {
	energy := metricData{name: MetricEnergy, description: descEnergy, unit: "J", sum: true}
	power := metricData{name: MetricPower, description: descPower, unit: "W"}
	low := metricData{name: MetricEnergyLow, description: descEnergyLow, unit: "J"}
	high := metricData{name: MetricEnergyHigh, description: descEnergyHigh, unit: "J"}
	for _, g := range gpus {
		attrs := Attributes(g)
		if finite(g.EnergyJ) {
			energy.points = append(energy.points, point{attrs, g.EnergyJ})
		}
		if g.HasPower && finite(g.PowerW) {
			power.points = append(power.points, point{attrs, g.PowerW})
		}
		if g.HasInterval && finite(g.EnergyLowJ) && finite(g.EnergyHighJ) {
			low.points = append(low.points, point{attrs, g.EnergyLowJ})
			high.points = append(high.points, point{attrs, g.EnergyHighJ})
		}
	}
	return []metricData{energy, power, low, high}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Attributes are the attributes of a GPU's points, sorted by key.
func Attributes(g GPU) []Attr {
	id := g.UUID
	if id == "" {
		id = fmt.Sprintf("gpu%d", g.Index)
	}
	kv := []Attr{
		{AttrID, id},
		{AttrType, "gpu"},
		{AttrIndex, int64(g.Index)},
		{AttrSource, g.Source},
		{AttrCorrected, g.Corrected},
	}
	if g.UUID != "" {
		kv = append(kv, Attr{AttrUUID, g.UUID})
	}
	if g.Model != "" {
		kv = append(kv, Attr{AttrName, g.Model}, Attr{AttrModel, g.Model})
	}
	if v := Vendor(g); v != "" {
		kv = append(kv, Attr{AttrVendor, v})
	}
	sort.Slice(kv, func(i, j int) bool { return kv[i].Key < kv[j].Key })
	return kv
}

// Vendor is g.Vendor, else the model's first word where it names a known GPU vendor.
func Vendor(g GPU) string {
	if g.Vendor != "" {
		return g.Vendor
	}
	first, _, _ := strings.Cut(strings.TrimSpace(g.Model), " ")
	switch strings.ToUpper(first) {
	case "NVIDIA", "TESLA", "QUADRO", "GEFORCE":
		return "NVIDIA"
	case "AMD":
		return "AMD"
	}
	return ""
}
