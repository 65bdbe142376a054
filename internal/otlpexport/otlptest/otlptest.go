// Package otlptest is an OTLP/HTTP metrics receiver for tests: an httptest server that
// decodes each request as an ExportMetricsServiceRequest (decode.go, field numbers from
// opentelemetry-proto, written independently of otlpexport's encoder) and keeps it, so a
// test checks what was pushed.
package otlptest

import (
	"compress/gzip"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// maxBody bounds the read of one request (decompressed).
const maxBody = 16 << 20

// Receiver is a running receiver.
type Receiver struct {
	URL string // http://127.0.0.1:PORT

	mu         sync.Mutex
	reqs       []*Request
	paths      []string
	headers    []http.Header
	fail       int
	failN      int // fail only the next failN requests, where > 0
	answer     []byte
	caPEM      []byte
	retryAfter string
	failed     int // requests failed as told
}

// Start starts a receiver, closed when the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// StartTLS starts a receiver on https with a certificate of its own, whose CA (PEM) is
// CAPEM.
func StartTLS(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return r
}

// CAPEM is the PEM certificate a client of a StartTLS receiver trusts.
func (r *Receiver) CAPEM() []byte { return r.caPEM }

// Fail makes every later request fail with the HTTP status code (0: succeed again).
func (r *Receiver) Fail(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail, r.failN = code, 0
}

// FailNext makes the next n requests fail with the HTTP status code and the header
// Retry-After: retryAfter where it is not "".
func (r *Receiver) FailNext(code, n int, retryAfter string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail, r.failN, r.retryAfter = code, n, retryAfter
}

// Answer makes every later successful request answered with body, an encoded
// ExportMetricsServiceResponse (nil: an empty one).
func (r *Receiver) Answer(body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = body
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	fail, answer, after := r.fail, r.answer, r.retryAfter
	if fail != 0 {
		r.failed++
		if r.failN > 0 {
			if r.failN--; r.failN == 0 {
				r.fail = 0
			}
		}
	}
	r.mu.Unlock()
	if fail != 0 {
		if after != "" {
			w.Header().Set("Retry-After", after)
		}
		http.Error(w, "failing as told", fail)
		return
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a POST of application/x-protobuf", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := infile.ReadAll(body, "request", maxBody)
	if err != nil {
		http.Error(w, "request unreadable or too large", http.StatusBadRequest)
		return
	}
	m, err := Decode(b)
	if err != nil {
		http.Error(w, "not an ExportMetricsServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, m)
	r.paths = append(r.paths, req.URL.Path)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(answer) // an empty ExportMetricsServiceResponse is no bytes
}

// Failed is the number of requests failed as told.
func (r *Receiver) Failed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Requests are the requests received so far, in order.
func (r *Receiver) Requests() []*Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Request(nil), r.reqs...)
}

// Paths are the URL paths the requests were posted to.
func (r *Receiver) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// Headers are the HTTP headers of the requests.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Point is one number data point of a request, flattened.
type Point struct {
	Metric, Unit string
	Kind         string // "sum", "gauge" or "other"
	Monotonic    bool
	Cumulative   bool
	Value        float64
	Attrs        map[string]string // every value as text
	StartNs, Ns  uint64
}

// Points flattens a request's number data points.
func Points(req *Request) []Point {
	var out []Point
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				p := Point{Metric: m.Name, Unit: m.Unit, Kind: m.Kind, Monotonic: m.Monotonic,
					Cumulative: m.Temporality == TemporalityCumulative}
				for _, dp := range m.Points {
					q := p
					q.Value, q.StartNs, q.Ns = dp.Value, dp.StartNs, dp.Ns
					q.Attrs = textMap(dp.Attrs)
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// Resource is the attributes of a request's (first) resource.
func Resource(req *Request) map[string]string {
	for _, rm := range req.ResourceMetrics {
		return textMap(rm.Resource)
	}
	return nil
}

func textMap(kvs []KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Text
	}
	return out
}
