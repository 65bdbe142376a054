package otlpexport

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// The OpenTelemetry SDK's environment variables that gpuwatt honours, read as the SDK read
// them (go.opentelemetry.io/otel/sdk/resource and otlpmetrichttp v1.47.0), so a site's
// settings keep working. --otlp gives the endpoint, so OTEL_EXPORTER_OTLP_ENDPOINT has no
// effect, nor OTEL_EXPORTER_OTLP_TIMEOUT (Options.Timeout); hw.energy is always cumulative
// (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE is not read).
const (
	envResource    = "OTEL_RESOURCE_ATTRIBUTES"
	envServiceName = "OTEL_SERVICE_NAME"
	envPrefix      = "OTEL_EXPORTER_OTLP_"
)

// resourceAttrs is the push's resource, sorted by key: service.name "gpuwatt",
// service.version, host.name and o.Resource, then OTEL_RESOURCE_ATTRIBUTES
// (key=value,...; values percent-decoded; an item without '=' skipped) and
// OTEL_SERVICE_NAME, which override.
func resourceAttrs(o Options, getenv func(string) string) []Attr {
	m := map[string]string{"service.name": "gpuwatt"}
	if o.Version != "" {
		m["service.version"] = o.Version
	}
	if o.Host != "" {
		m["host.name"] = o.Host
	}
	for k, v := range o.Resource {
		m[k] = v
	}
	for _, item := range strings.Split(strings.TrimSpace(getenv(envResource)), ",") {
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		v = strings.TrimSpace(v)
		if dec, err := url.PathUnescape(v); err == nil {
			v = dec
		}
		m[k] = v
	}
	if s := strings.TrimSpace(getenv(envServiceName)); s != "" {
		m["service.name"] = s
	}
	out := make([]Attr, 0, len(m))
	for k, v := range m {
		out = append(out, Attr{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// exporterEnv reads OTEL_EXPORTER_OTLP_NAME, where OTEL_EXPORTER_OTLP_METRICS_NAME, when
// set, wins (the SDK's order).
func exporterEnv(getenv func(string) string, name string) string {
	if v := strings.TrimSpace(getenv(envPrefix + "METRICS_" + name)); v != "" {
		return v
	}
	return strings.TrimSpace(getenv(envPrefix + name))
}

// envHeaders are the headers of OTEL_EXPORTER_OTLP_(METRICS_)HEADERS: key=value,...,
// values percent-decoded; an item without '=', with a key that is not an HTTP token, or
// whose value does not decode, is skipped, as the SDK skipped it.
func envHeaders(getenv func(string) string) map[string]string {
	s := exporterEnv(getenv, "HEADERS")
	if s == "" {
		return nil
	}
	h := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || !isToken(k) {
			continue
		}
		dec, err := url.PathUnescape(v)
		if err != nil {
			continue
		}
		h[k] = strings.TrimSpace(dec)
	}
	return h
}

// isToken says whether s is an HTTP header name (RFC 9110's token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// envGzip: OTEL_EXPORTER_OTLP_(METRICS_)COMPRESSION=gzip compresses the body.
func envGzip(getenv func(string) string) bool {
	return exporterEnv(getenv, "COMPRESSION") == "gzip"
}

// maxPEM bounds the read of a certificate or key file.
const maxPEM = 1 << 20

// envTLS is the TLS configuration of OTEL_EXPORTER_OTLP_(METRICS_)CERTIFICATE (the CA to
// trust) and CLIENT_CERTIFICATE with CLIENT_KEY (mutual TLS); nil where none is set. A file
// that cannot be read or parsed is an error naming it (the SDK logged it and went on
// without).
func envTLS(getenv func(string) string) (*tls.Config, error) {
	ca := exporterEnv(getenv, "CERTIFICATE")
	cert, key := exporterEnv(getenv, "CLIENT_CERTIFICATE"), exporterEnv(getenv, "CLIENT_KEY")
	if ca == "" && (cert == "" || key == "") {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := readPEM(ca)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%sCERTIFICATE %s: no PEM certificate in it", envPrefix, ca)
		}
		cfg.RootCAs = pool
	}
	if cert != "" && key != "" {
		cb, err := readPEM(cert)
		if err != nil {
			return nil, err
		}
		kb, err := readPEM(key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cb, kb)
		if err != nil {
			return nil, fmt.Errorf("%sCLIENT_CERTIFICATE %s and CLIENT_KEY %s: %w", envPrefix, cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func readPEM(path string) ([]byte, error) {
	// infile refuses a FIFO or device (a read from one can block for ever) and bounds the read.
	b, err := infile.ReadFile(path, maxPEM)
	if err != nil {
		return nil, fmt.Errorf("OTLP TLS file: %w", err)
	}
	return b, nil
}
