// Package otlpexport pushes gpuwatt's per-GPU energy and power to an OpenTelemetry
// collector over OTLP/HTTP (protobuf), through the official OpenTelemetry Go SDK, named by
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
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

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
	// Interval is how often to push (serve); 0: only when Flush or Shutdown is called.
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
	provider *sdkmetric.MeterProvider
	timeout  time.Duration
	endpoint string
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
// the first interval (or Flush, or Shutdown) and fails only on bad options.
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
	exp, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(endpoint),
		otlpmetrichttp.WithTimeout(timeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: timeout}),
	)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", Redact(endpoint), err)
	}
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	interval := o.Interval
	if interval <= 0 {
		interval = 100 * 365 * 24 * time.Hour // only Flush and Shutdown push
	}
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval), sdkmetric.WithTimeout(timeout))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	if err := register(mp.Meter("github.com/gpuwatt/gpuwatt"), src); err != nil {
		_ = mp.Shutdown(ctx)
		return nil, err
	}
	return &Exporter{provider: mp, timeout: timeout, endpoint: endpoint}, nil
}

// Endpoint is the URL the exporter posts to.
func (e *Exporter) Endpoint() string { return Redact(e.endpoint) }

// Shutdown pushes the GPUs' figures a last time and closes the exporter.
func (e *Exporter) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := e.provider.Shutdown(ctx); err != nil {
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

func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "gpuwatt")}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	if o.Host != "" {
		attrs = append(attrs, attribute.String("host.name", o.Host))
	}
	keys := make([]string, 0, len(o.Resource))
	for k := range o.Resource {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, attribute.String(k, o.Resource[k]))
	}
	// The user's OTEL_RESOURCE_ATTRIBUTES (and OTEL_SERVICE_NAME) come last: they override.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otlp resource: %w", err)
	}
	return res, nil
}

func register(m metric.Meter, src func() []GPU) error {
	energy, err := m.Float64ObservableCounter(MetricEnergy, metric.WithUnit("J"),
		metric.WithDescription("Energy consumed by the GPU (gpuwatt: from the board's counter where it has readings, else the corrected integral; gpuwatt.energy.source says which)"))
	if err != nil {
		return err
	}
	power, err := m.Float64ObservableGauge(MetricPower, metric.WithUnit("W"),
		metric.WithDescription("Power consumed by the GPU (gpuwatt: the corrected power; job end: the job's mean power)"))
	if err != nil {
		return err
	}
	low, err := m.Float64ObservableGauge(MetricEnergyLow, metric.WithUnit("J"),
		metric.WithDescription("Lower bound of hw.energy's 95 % interval on the board's scale"))
	if err != nil {
		return err
	}
	high, err := m.Float64ObservableGauge(MetricEnergyHigh, metric.WithUnit("J"),
		metric.WithDescription("Upper bound of hw.energy's 95 % interval on the board's scale"))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, g := range src() {
			set := metric.WithAttributeSet(Attributes(g))
			if finite(g.EnergyJ) {
				o.ObserveFloat64(energy, g.EnergyJ, set)
			}
			if g.HasPower && finite(g.PowerW) {
				o.ObserveFloat64(power, g.PowerW, set)
			}
			if g.HasInterval && finite(g.EnergyLowJ) && finite(g.EnergyHighJ) {
				o.ObserveFloat64(low, g.EnergyLowJ, set)
				o.ObserveFloat64(high, g.EnergyHighJ, set)
			}
		}
		return nil
	}, energy, power, low, high)
	return err
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Attributes are the attributes of a GPU's points.
func Attributes(g GPU) attribute.Set {
	id := g.UUID
	if id == "" {
		id = fmt.Sprintf("gpu%d", g.Index)
	}
	kv := []attribute.KeyValue{
		attribute.String(AttrID, id),
		attribute.String(AttrType, "gpu"),
		attribute.Int(AttrIndex, g.Index),
		attribute.String(AttrSource, g.Source),
		attribute.Bool(AttrCorrected, g.Corrected),
	}
	if g.UUID != "" {
		kv = append(kv, attribute.String(AttrUUID, g.UUID))
	}
	if g.Model != "" {
		kv = append(kv, attribute.String(AttrName, g.Model), attribute.String(AttrModel, g.Model))
	}
	if v := Vendor(g); v != "" {
		kv = append(kv, attribute.String(AttrVendor, v))
	}
	return attribute.NewSet(kv...)
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
