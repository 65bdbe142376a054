package otlpexport

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuwatt/gpuwatt/internal/otlpexport/otlptest"
	"github.com/gpuwatt/gpuwatt/internal/pbwire"
)

// sdkFile is the body of the request the OpenTelemetry Go SDK (sdk/metric and
// otlpmetrichttp v1.47.0, which otlpexport used before 2026-11-28) posted for goldenGPUs
// and goldenOptions with no OTEL_* variable set; sdk-v1.47.0.txt is its text form. It was
// recorded once, by the SDK, and is never rewritten.
const sdkFile = "testdata/sdk-v1.47.0.pb"

var goldenGPUs = []GPU{
	{Index: 0, UUID: "GPU-aaaa", Model: "NVIDIA H200", EnergyJ: 1234.5, EnergyLowJ: 1230, EnergyHighJ: 1239, HasInterval: true,
		Source: "counter", PowerW: 411.5, HasPower: true},
	{Index: 1, UUID: "GPU-bbbb", Model: "NVIDIA H200", EnergyJ: 99.25, Source: "inversion", Corrected: true},
}

var goldenOptions = Options{Host: "node7", Version: "v9", Resource: map[string]string{"gpuwatt.job.id": "42"}}

func noEnv(string) string { return "" }

// TestEncodingMatchesSDK: the request encoded here is the SDK's, byte for byte, once every
// point's timestamps are set alike in both (the SDK takes its own clock at each instrument).
func TestEncodingMatchesSDK(t *testing.T) {
	sdk, err := os.ReadFile(sdkFile)
	if err != nil {
		t.Fatal(err)
	}
	const start, now = 1795873252700000000, 1795873252701000000
	n, err := setPointTimes(sdk, start, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("%d data points in %s, want 5", n, sdkFile)
	}
	ours := encodeRequest(resourceAttrs(goldenOptions, noEnv), scopeName, metrics(goldenGPUs), time.Unix(0, start), time.Unix(0, now))
	if !bytes.Equal(ours, sdk) {
		i := 0
		for i < len(ours) && i < len(sdk) && ours[i] == sdk[i] {
			i++
		}
		t.Errorf("%d bytes, the SDK's %d; first difference at byte %d", len(ours), len(sdk), i)
	}
}

// TestSDKTimes: the SDK's points start at the exporter's start (one instant per metric,
// before the push) and are stamped at the push, as encodeRequest's are.
func TestSDKTimes(t *testing.T) {
	sdk, err := os.ReadFile(sdkFile)
	if err != nil {
		t.Fatal(err)
	}
	req, err := otlptest.Decode(sdk)
	if err != nil {
		t.Fatal(err)
	}
	pts := otlptest.Points(req)
	if len(pts) != 5 {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		if p.StartNs == 0 || p.StartNs > p.Ns || p.Ns-p.StartNs > uint64(time.Second) {
			t.Errorf("%s: start %d, time %d", p.Metric, p.StartNs, p.Ns)
		}
	}
}

// setPointTimes sets the start and time of every NumberDataPoint of an encoded request in
// place (they are fixed64: same length), and counts the points.
func setPointTimes(req []byte, start, now uint64) (int, error) {
	points := 0
	var walk func(msg []byte, depth int) error
	// The path to a point: request.resource_metrics(1) > scope_metrics(2) > metrics(2) >
	// gauge(5) or sum(7) > data_points(1).
	path := [][]protowire.Number{{fieldRequestResourceMetrics}, {fieldResourceMetricsScope}, {fieldScopeMetricsMetrics}, {fieldMetricGauge, fieldMetricSum}, {fieldGaugeDataPoints}}
	walk = func(msg []byte, depth int) error {
		if depth == len(path) {
			points++
			for len(msg) > 0 {
				num, typ, n := protowire.ConsumeTag(msg)
				if n < 0 {
					return protowire.ParseError(n)
				}
				msg = msg[n:]
				if typ == protowire.Fixed64Type && (num == fieldPointStart || num == fieldPointTime) {
					v := start
					if num == fieldPointTime {
						v = now
					}
					binary.LittleEndian.PutUint64(msg, v)
				}
				if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
					return protowire.ParseError(n)
				}
				msg = msg[n:]
			}
			return nil
		}
		return pbwire.Each(msg, func(f pbwire.Field) error {
			for _, want := range path[depth] {
				if f.Num == want && f.Type == protowire.BytesType {
					return walk(f.Bytes, depth+1) // f.Bytes is msg's own memory
				}
			}
			return nil
		})
	}
	return points, walk(req, 0)
}

// TestEncodeDecodes: what encodeRequest writes, otlptest's decoder (field numbers of its
// own) reads back: every kind of attribute value, a zero and a negative one, and a metric
// left out where it has no point; no metric at all leaves the scope out.
func TestEncodeDecodes(t *testing.T) {
	res := []Attr{{"a", "x"}, {"b", int64(-3)}, {"c", false}, {"d", int64(0)}, {"e", ""}}
	ms := []metricData{
		{name: "m.sum", unit: "J", sum: true, points: []point{{res, -0.5}, {nil, 1e300}}},
		{name: "m.empty", unit: "W"},
		{name: "m.gauge", description: "d", points: []point{{[]Attr{{"k", true}}, 0}}},
	}
	req, err := otlptest.Decode(encodeRequest(res, "s", ms, time.Unix(1, 0), time.Unix(2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	rm := req.ResourceMetrics[0]
	wantRes := []otlptest.KeyValue{{Key: "a", Kind: "string", Text: "x"}, {Key: "b", Kind: "int", Text: "-3"}, {Key: "c", Kind: "bool", Text: "false"}, {Key: "d", Kind: "int", Text: "0"}, {Key: "e", Kind: "string", Text: ""}}
	if len(rm.Resource) != len(wantRes) {
		t.Fatalf("resource %v", rm.Resource)
	}
	for i := range wantRes {
		if rm.Resource[i] != wantRes[i] {
			t.Errorf("resource[%d] = %+v, want %+v", i, rm.Resource[i], wantRes[i])
		}
	}
	sm := rm.ScopeMetrics[0]
	if sm.Name != "s" || len(sm.Metrics) != 2 || sm.Metrics[0].Name != "m.sum" || sm.Metrics[1].Name != "m.gauge" {
		t.Fatalf("scope %+v", sm)
	}
	sum, gauge := sm.Metrics[0], sm.Metrics[1]
	if sum.Kind != "sum" || !sum.Monotonic || sum.Temporality != otlptest.TemporalityCumulative || sum.Unit != "J" || len(sum.Points) != 2 {
		t.Errorf("sum %+v", sum)
	}
	if sum.Points[0].Value != -0.5 || sum.Points[1].Value != 1e300 || sum.Points[0].StartNs != 1e9 || sum.Points[0].Ns != 2e9 || len(sum.Points[1].Attrs) != 0 {
		t.Errorf("sum points %+v", sum.Points)
	}
	if gauge.Kind != "gauge" || gauge.Description != "d" || gauge.Points[0].Value != 0 || gauge.Points[0].Attrs[0] != (otlptest.KeyValue{Key: "k", Kind: "bool", Text: "true"}) {
		t.Errorf("gauge %+v", gauge)
	}
	req, err = otlptest.Decode(encodeRequest(res, "s", []metricData{{name: "m.empty"}}, time.Unix(1, 0), time.Unix(2, 0)))
	if err != nil || len(req.ResourceMetrics) != 1 || len(req.ResourceMetrics[0].ScopeMetrics) != 0 || len(req.ResourceMetrics[0].Resource) != 5 {
		t.Errorf("no points: %+v, %v", req, err)
	}
}

// TestPartialSuccessAnswer reads an ExportMetricsServiceResponse written by hand from the
// field numbers (partial_success = 1 { rejected_data_points = 1, error_message = 2 }).
func TestPartialSuccessAnswer(t *testing.T) {
	inner := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 3)
	inner = protowire.AppendString(protowire.AppendTag(inner, 2, protowire.BytesType), "bad unit")
	body := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner)
	if n, msg, err := partialSuccess(body); n != 3 || msg != "bad unit" || err != nil {
		t.Errorf("partialSuccess = %d %q %v", n, msg, err)
	}
	if n, msg, err := partialSuccess(nil); n != 0 || msg != "" || err != nil {
		t.Errorf("empty answer: %d %q %v", n, msg, err)
	}
	if _, _, err := partialSuccess([]byte{0x0a, 0x05, 0x08}); err == nil {
		t.Error("a truncated answer parsed")
	}
}
