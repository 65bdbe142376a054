package otlptest

import (
	"os"
	"testing"
)

// TestDecodeSDK: the request the OpenTelemetry Go SDK posted (otlpexport's testdata,
// recorded from the SDK before gpuwatt dropped it) decodes to its text form's figures.
func TestDecodeSDK(t *testing.T) {
	b, err := os.ReadFile("../testdata/sdk-v1.47.0.pb")
	if err != nil {
		t.Fatal(err)
	}
	req, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceMetrics) != 1 || len(req.ResourceMetrics[0].ScopeMetrics) != 1 {
		t.Fatalf("%+v", req)
	}
	sm := req.ResourceMetrics[0].ScopeMetrics[0]
	if sm.Name != "github.com/gpuwatt/gpuwatt" || len(sm.Metrics) != 4 {
		t.Fatalf("scope %+v", sm)
	}
	energy := sm.Metrics[0]
	if energy.Name != "hw.energy" || energy.Kind != "sum" || !energy.Monotonic || energy.Temporality != TemporalityCumulative ||
		len(energy.Points) != 2 || energy.Points[0].Value != 1234.5 || energy.Points[1].Value != 99.25 {
		t.Errorf("hw.energy %+v", energy)
	}
	if a := energy.Points[0].Attrs; len(a) != 9 || a[0] != (KeyValue{Key: "gpuwatt.energy.corrected", Kind: "bool", Text: "false"}) ||
		a[2] != (KeyValue{Key: "gpuwatt.gpu.index", Kind: "int", Text: "0"}) {
		t.Errorf("attributes %+v", a)
	}
	if p := sm.Metrics[1]; p.Name != "hw.power" || p.Kind != "gauge" || p.Unit != "W" || p.Points[0].Value != 411.5 {
		t.Errorf("hw.power %+v", p)
	}
	if r := Resource(req); len(r) != 4 || r["service.name"] != "gpuwatt" || r["gpuwatt.job.id"] != "42" {
		t.Errorf("resource %v", r)
	}
	for n := 1; n < len(b); n += 97 {
		if _, err := Decode(b[:n]); err == nil {
			t.Errorf("the request cut at %d bytes decoded", n)
		}
	}
}

func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("../testdata/sdk-v1.47.0.pb"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Decode(b)
	})
}
