// Package otlptest is an OTLP/HTTP metrics receiver for tests: an httptest server that
// decodes each request with the collector's own protobuf types
// (go.opentelemetry.io/proto/otlp) and keeps it, so a test checks what was pushed.
package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running receiver.
type Receiver struct {
	URL string // http://127.0.0.1:PORT

	mu    sync.Mutex
	reqs  []*colmetric.ExportMetricsServiceRequest
	paths []string
	fail  int
}

// Start starts a receiver, closed when the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Fail makes every later request fail with the HTTP status code (0: succeed again).
func (r *Receiver) Fail(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = code
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	fail := r.fail
	r.mu.Unlock()
	if fail != 0 {
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
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m := &colmetric.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(b, m); err != nil {
		http.Error(w, "not an ExportMetricsServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, m)
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	out, _ := proto.Marshal(&colmetric.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Requests are the requests received so far, in order.
func (r *Receiver) Requests() []*colmetric.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*colmetric.ExportMetricsServiceRequest(nil), r.reqs...)
}

// Paths are the URL paths the requests were posted to.
func (r *Receiver) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// Point is one number data point of a request, flattened.
type Point struct {
	Metric, Unit string
	Kind         string // "sum" or "gauge"
	Monotonic    bool
	Cumulative   bool
	Value        float64
	Attrs        map[string]string // every value as text
	StartNs, Ns  uint64
}

// Points flattens a request's number data points.
func Points(req *colmetric.ExportMetricsServiceRequest) []Point {
	var out []Point
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				var dps []*metricpb.NumberDataPoint
				p := Point{Metric: m.GetName(), Unit: m.GetUnit()}
				switch {
				case m.GetSum() != nil:
					s := m.GetSum()
					p.Kind, p.Monotonic = "sum", s.GetIsMonotonic()
					p.Cumulative = s.GetAggregationTemporality() == metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
					dps = s.GetDataPoints()
				case m.GetGauge() != nil:
					p.Kind, dps = "gauge", m.GetGauge().GetDataPoints()
				default:
					p.Kind = "other"
				}
				for _, dp := range dps {
					q := p
					switch v := dp.GetValue().(type) {
					case *metricpb.NumberDataPoint_AsDouble:
						q.Value = v.AsDouble
					case *metricpb.NumberDataPoint_AsInt:
						q.Value = float64(v.AsInt)
					}
					q.Attrs = kvs(dp.GetAttributes())
					q.StartNs, q.Ns = dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano()
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// Resource is the attributes of a request's (first) resource.
func Resource(req *colmetric.ExportMetricsServiceRequest) map[string]string {
	for _, rm := range req.GetResourceMetrics() {
		return kvs(rm.GetResource().GetAttributes())
	}
	return nil
}

func kvs(in []*common.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range in {
		v := kv.GetValue()
		var s string
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			s = x.StringValue
		case *common.AnyValue_IntValue:
			s = strconv.FormatInt(x.IntValue, 10)
		case *common.AnyValue_BoolValue:
			s = strconv.FormatBool(x.BoolValue)
		case *common.AnyValue_DoubleValue:
			s = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		default:
			s = fmt.Sprint(v)
		}
		out[kv.GetKey()] = s
	}
	return out
}
