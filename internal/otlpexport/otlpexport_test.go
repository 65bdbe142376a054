package otlpexport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport/otlptest"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// TestPushReachesReceiver: one Push is one OTLP/HTTP protobuf request, decoded by a receiver
// in the test with the collector's own types: hw.energy a monotonic cumulative sum in J,
// hw.power a gauge in W, the interval as two gauges in J, each point with the hardware
// conventions' attributes and gpuwatt's, the resource with service.name, version and host.
func TestPushReachesReceiver(t *testing.T) {
	rcv := otlptest.Start(t)
	gpus := []otlpexport.GPU{
		{Index: 0, UUID: "GPU-aaaa", Model: "NVIDIA H200", EnergyJ: 1234.5, EnergyLowJ: 1230, EnergyHighJ: 1239, HasInterval: true,
			Source: "counter", PowerW: 411.5, HasPower: true},
		{Index: 1, UUID: "GPU-bbbb", Model: "NVIDIA H200", EnergyJ: 99.25, Source: "inversion", Corrected: true},
	}
	err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Host: "node7", Version: "v9",
		Resource: map[string]string{"gpuwatt.job.id": "42"}}, gpus)
	if err != nil {
		t.Fatal(err)
	}
	reqs := rcv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if rcv.Paths()[0] != otlpexport.DefaultPath {
		t.Errorf("posted to %s, want %s", rcv.Paths()[0], otlpexport.DefaultPath)
	}
	pts := otlptest.Points(reqs[0])
	res := otlptest.Resource(reqs[0])
	for k, want := range map[string]string{"service.name": "gpuwatt", "service.version": "v9", "host.name": "node7", "gpuwatt.job.id": "42"} {
		if res[k] != want {
			t.Errorf("resource %s = %q, want %q (resource %v)", k, res[k], want, res)
		}
	}
	find := func(name, uuid string) *otlptest.Point {
		for i := range pts {
			if pts[i].Metric == name && pts[i].Attrs[otlpexport.AttrUUID] == uuid {
				return &pts[i]
			}
		}
		return nil
	}
	type want struct {
		metric, uuid, unit, kind string
		value                    float64
	}
	for _, w := range []want{
		{"hw.energy", "GPU-aaaa", "J", "sum", 1234.5},
		{"hw.power", "GPU-aaaa", "W", "gauge", 411.5},
		{"gpuwatt.hw.energy.low", "GPU-aaaa", "J", "gauge", 1230},
		{"gpuwatt.hw.energy.high", "GPU-aaaa", "J", "gauge", 1239},
		{"hw.energy", "GPU-bbbb", "J", "sum", 99.25},
	} {
		p := find(w.metric, w.uuid)
		if p == nil {
			t.Errorf("%s of %s: not pushed", w.metric, w.uuid)
			continue
		}
		if p.Unit != w.unit || p.Kind != w.kind || p.Value != w.value {
			t.Errorf("%s of %s: %s %g %s, want %s %g %s", w.metric, w.uuid, p.Kind, p.Value, p.Unit, w.kind, w.value, w.unit)
		}
		if w.kind == "sum" && (!p.Monotonic || !p.Cumulative) {
			t.Errorf("%s: monotonic %v cumulative %v, want a monotonic cumulative sum", w.metric, p.Monotonic, p.Cumulative)
		}
	}
	for _, name := range []string{"hw.power", "gpuwatt.hw.energy.low"} {
		if find(name, "GPU-bbbb") != nil {
			t.Errorf("%s pushed for a GPU without one", name)
		}
	}
	a := find("hw.energy", "GPU-aaaa").Attrs
	for k, v := range map[string]string{"hw.id": "GPU-aaaa", "hw.type": "gpu", "hw.name": "NVIDIA H200", "hw.model": "NVIDIA H200",
		"hw.vendor": "NVIDIA", "gpuwatt.gpu.index": "0", "gpuwatt.energy.source": "counter", "gpuwatt.energy.corrected": "false"} {
		if a[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	if b := find("hw.energy", "GPU-bbbb").Attrs; b["gpuwatt.energy.corrected"] != "true" || b["gpuwatt.gpu.index"] != "1" {
		t.Errorf("GPU 1 attributes %v", b)
	}
	if len(pts) != 5 {
		t.Errorf("%d points, want 5: %+v", len(pts), pts)
	}
}

// TestPeriodicPush: with an interval the exporter pushes by itself and reads the source at
// every push (serve's use), and the counter's value follows the source.
func TestPeriodicPush(t *testing.T) {
	rcv := otlptest.Start(t)
	e := 10.0
	src := func() []otlpexport.GPU {
		e += 5
		return []otlpexport.GPU{{Index: 0, UUID: "GPU-cccc", Model: "NVIDIA H100", EnergyJ: e, Source: "counter"}}
	}
	ex, err := otlpexport.New(context.Background(), otlpexport.Options{URL: rcv.URL + "/custom/path", Interval: 50 * time.Millisecond}, src)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rcv.Requests()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := ex.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := rcv.Requests()
	if len(reqs) < 3 {
		t.Fatalf("%d requests, want at least 2 periodic and the last", len(reqs))
	}
	if p := rcv.Paths()[0]; p != "/custom/path" {
		t.Errorf("posted to %s, want the URL's own path", p)
	}
	prev := 0.0
	for i, r := range reqs {
		for _, p := range otlptest.Points(r) {
			if p.Metric != "hw.energy" {
				continue
			}
			if p.Value <= prev {
				t.Errorf("push %d: hw.energy %g after %g", i, p.Value, prev)
			}
			prev = p.Value
		}
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{"", "collector:4318", "ftp://x/", "http://", "http:///v1/metrics", "http://h:4318/v1/metrics?x=1"} {
		_, err := otlpexport.ParseURL(u)
		if !errors.Is(err, status.ErrInput) {
			t.Errorf("%q: %v, want a bad-input error", u, err)
		}
	}
	for in, want := range map[string]string{"http://c:4318": "http://c:4318/v1/metrics", "https://c/": "https://c/v1/metrics", "http://c:4318/otlp/v1/metrics": "http://c:4318/otlp/v1/metrics"} {
		if got, err := otlpexport.ParseURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}

// TestUnreachable: a collector that answers 500 (or is gone) makes the push fail, naming
// the endpoint, within the timeout.
func TestUnreachable(t *testing.T) {
	rcv := otlptest.Start(t)
	rcv.Fail(500)
	t0 := time.Now()
	err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Timeout: 1500 * time.Millisecond},
		[]otlpexport.GPU{{Index: 0, EnergyJ: 1, Source: "counter"}})
	if err == nil {
		t.Fatal("no error from a collector that answers 500")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %v with a 1.5 s timeout", d)
	}
	t.Log(err)
}

// TestFromSnapshot: serve's snapshot maps onto the pushed GPUs: a GPU that is down is
// left out, the corrected integral is marked corrected, the corrected power is hw.power.
func TestFromSnapshot(t *testing.T) {
	got := otlpexport.FromSnapshot([]snapshot.GPU{
		{Index: 0, UUID: "GPU-a", Model: "NVIDIA H200", Up: true, EnergyJ: 10, EnergySource: snapshot.SourceCounter, CorrectedW: 300, HasCorrected: true},
		{Index: 1, UUID: "GPU-b", Model: "NVIDIA H200", Up: false, EnergyJ: 5, EnergySource: snapshot.SourceCounter},
		{Index: 2, UUID: "GPU-c", Model: "NVIDIA K20", Up: true, EnergyJ: 7, EnergySource: snapshot.SourceCorrected},
	})
	want := []otlpexport.GPU{
		{Index: 0, UUID: "GPU-a", Model: "NVIDIA H200", EnergyJ: 10, Source: "counter", PowerW: 300, HasPower: true},
		{Index: 2, UUID: "GPU-c", Model: "NVIDIA K20", EnergyJ: 7, Source: "corrected", Corrected: true},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("GPU %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestResourceFromEnv: the SDK's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME are applied
// last, so a site's own attributes override gpuwatt's (docs/otlp.md).
func TestResourceFromEnv(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=node-override,deployment.environment=prod")
	t.Setenv("OTEL_SERVICE_NAME", "gpuwatt-site")
	rcv := otlptest.Start(t)
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Host: "node7"}, []otlpexport.GPU{{Index: 0, EnergyJ: 1, Source: "counter"}}); err != nil {
		t.Fatal(err)
	}
	res := otlptest.Resource(rcv.Requests()[0])
	for k, want := range map[string]string{"host.name": "node-override", "deployment.environment": "prod", "service.name": "gpuwatt-site"} {
		if res[k] != want {
			t.Errorf("resource %s = %q, want %q (%v)", k, res[k], want, res)
		}
	}
}
