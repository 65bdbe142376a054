package otlpexport_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport/otlptest"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// TestPushReachesReceiver: one Push is one OTLP/HTTP protobuf request, decoded by a receiver
// in the test (otlptest, its own decoder): hw.energy a monotonic cumulative sum in J,
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
	prev, prevNs, startNs := 0.0, uint64(0), uint64(0)
	for i, r := range reqs {
		for _, p := range otlptest.Points(r) {
			if p.Metric != "hw.energy" {
				continue
			}
			if p.Value <= prev {
				t.Errorf("push %d: hw.energy %g after %g", i, p.Value, prev)
			}
			// A cumulative sum's start stays the exporter's start; each push has its time.
			if startNs == 0 {
				startNs = p.StartNs
			}
			if p.StartNs != startNs || p.Ns <= prevNs || p.Ns < p.StartNs {
				t.Errorf("push %d: start %d (first %d), time %d after %d", i, p.StartNs, startNs, p.Ns, prevNs)
			}
			prev, prevNs = p.Value, p.Ns
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

// TestResourceFromEnv: OpenTelemetry's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME are
// applied last, so a site's own attributes override gpuwatt's (docs/otlp.md); values are
// percent-decoded and an item without '=' is skipped, as the SDK did.
func TestResourceFromEnv(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=node-override, deployment.environment = prod,noequals,site=a%2Cb")
	t.Setenv("OTEL_SERVICE_NAME", "gpuwatt-site")
	rcv := otlptest.Start(t)
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Host: "node7"}, []otlpexport.GPU{{Index: 0, EnergyJ: 1, Source: "counter"}}); err != nil {
		t.Fatal(err)
	}
	res := otlptest.Resource(rcv.Requests()[0])
	for k, want := range map[string]string{"host.name": "node-override", "deployment.environment": "prod", "service.name": "gpuwatt-site", "site": "a,b"} {
		if res[k] != want {
			t.Errorf("resource %s = %q, want %q (%v)", k, res[k], want, res)
		}
	}
	if len(res) != 4 {
		t.Errorf("resource %v, want 4 attributes", res)
	}
}

var oneGPU = []otlpexport.GPU{{Index: 0, UUID: "GPU-r", EnergyJ: 1, Source: "counter"}}

// TestRetries: a collector that answers 503 (with Retry-After: 0) twice, then takes the
// request, gets it on the third attempt; a 400 is not tried again; a 429 whose Retry-After
// is beyond the push's timeout ends the push at once.
func TestRetries(t *testing.T) {
	rcv := otlptest.Start(t)
	rcv.FailNext(http.StatusServiceUnavailable, 2, "0")
	t0 := time.Now()
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL}, oneGPU); err != nil {
		t.Fatal(err)
	}
	if rcv.Failed() != 2 || len(rcv.Requests()) != 1 {
		t.Errorf("%d failed, %d taken: want 2 and 1", rcv.Failed(), len(rcv.Requests()))
	}
	// Two waits of the backoff, 500 ms then 750 ms, each ±50 %.
	if d := time.Since(t0); d < 600*time.Millisecond {
		t.Errorf("three attempts in %v: no backoff between them", d)
	}

	bad := otlptest.Start(t)
	bad.FailNext(http.StatusBadRequest, 5, "")
	err := otlpexport.Push(context.Background(), otlpexport.Options{URL: bad.URL}, oneGPU)
	if err == nil || bad.Failed() != 1 || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "failing as told") {
		t.Errorf("400: %d attempts, err %v; want 1 and an error with the status and the answer", bad.Failed(), err)
	}

	slow := otlptest.Start(t)
	slow.FailNext(http.StatusTooManyRequests, 5, "3600")
	t0 = time.Now()
	err = otlpexport.Push(context.Background(), otlpexport.Options{URL: slow.URL}, oneGPU)
	if err == nil || slow.Failed() != 1 || time.Since(t0) > 5*time.Second {
		t.Errorf("429 with Retry-After 3600: %d attempts in %v, err %v", slow.Failed(), time.Since(t0), err)
	}
}

// TestPartialSuccess: a collector that takes the request but says it rejected points makes
// the push an error naming them, as the SDK did.
func TestPartialSuccess(t *testing.T) {
	rcv := otlptest.Start(t)
	inner := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 2)
	inner = protowire.AppendString(protowire.AppendTag(inner, 2, protowire.BytesType), "unit not allowed")
	rcv.Answer(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner))
	err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL}, oneGPU)
	if err == nil || !strings.Contains(err.Error(), "unit not allowed") || !strings.Contains(err.Error(), "2 metric data points rejected") {
		t.Errorf("partial success: %v", err)
	}
}

// TestAnswerBounded: a collector whose answer is longer than the 4 MiB the SDK reads makes
// the push an error that says so and names the collector; the read stops at the bound.
func TestAnswerBounded(t *testing.T) {
	rcv := otlptest.Start(t)
	rcv.Answer(bytes.Repeat([]byte{0}, 4<<20+1))
	err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL}, oneGPU)
	if !errors.Is(err, infile.ErrTooLarge) || !strings.Contains(err.Error(), rcv.URL) {
		t.Errorf("a 4 MiB + 1 answer: %v", err)
	}
	rcv.Answer(nil)
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL}, oneGPU); err != nil {
		t.Errorf("an empty answer: %v", err)
	}
}

// TestHeadersAndGzipFromEnv: OTEL_EXPORTER_OTLP_HEADERS (percent-decoded; an item without
// '=' or with a key that is not a header name skipped) and OTEL_EXPORTER_OTLP_COMPRESSION
// =gzip apply; the METRICS_ variables win over them.
func TestHeadersAndGzipFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=not-this")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "api-key=se%20cret, x-tenant=t1,bad key=1,novalue")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	rcv := otlptest.Start(t)
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Version: "v9"}, oneGPU); err != nil {
		t.Fatal(err)
	}
	h := rcv.Headers()[0]
	for k, want := range map[string]string{"Api-Key": "se cret", "X-Tenant": "t1", "Content-Encoding": "gzip", "Content-Type": "application/x-protobuf"} {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q (%v)", k, h.Get(k), want, h)
		}
	}
	if h.Get("Bad key") != "" || !strings.HasPrefix(h.Get("User-Agent"), "gpuwatt/v9") {
		t.Errorf("headers %v", h)
	}
	if pts := otlptest.Points(rcv.Requests()[0]); len(pts) != 1 || pts[0].Value != 1 {
		t.Errorf("gzipped request decoded to %+v", pts)
	}
}

// TestTLSFromEnv: an https collector whose certificate no system CA signed is reached with
// OTEL_EXPORTER_OTLP_CERTIFICATE naming its CA, and refused without; a certificate file
// that is not there is an error naming it.
func TestTLSFromEnv(t *testing.T) {
	rcv := otlptest.StartTLS(t)
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "")
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL, Timeout: 2 * time.Second}, oneGPU); err == nil {
		t.Error("an unknown CA was trusted")
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, rcv.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	if err := otlpexport.Push(context.Background(), otlpexport.Options{URL: rcv.URL}, oneGPU); err != nil {
		t.Fatal(err)
	}
	if len(rcv.Requests()) != 1 {
		t.Errorf("%d requests over TLS", len(rcv.Requests()))
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca+".absent")
	if _, err := otlpexport.New(context.Background(), otlpexport.Options{URL: rcv.URL}, func() []otlpexport.GPU { return nil }); err == nil || !strings.Contains(err.Error(), "ca.pem.absent") {
		t.Errorf("an absent CA file: %v", err)
	}
	// A FIFO named as the CA is refused, not read: a read from it would wait for a writer.
	fifo := filepath.Join(t.TempDir(), "ca.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", fifo)
	done := make(chan error, 1)
	go func() {
		_, err := otlpexport.New(context.Background(), otlpexport.Options{URL: rcv.URL}, func() []otlpexport.GPU { return nil })
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "ca.fifo") || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("a FIFO as the CA file: %v; want an error naming it", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("New hung reading a FIFO named as the CA file")
	}
}

// TestCredentialsNotSent: a user and password in the URL are not sent (the SDK kept only
// the URL's host and path; headers come from OTEL_EXPORTER_OTLP_HEADERS), and a second
// Shutdown is an error, not a second push.
func TestCredentialsNotSent(t *testing.T) {
	rcv := otlptest.Start(t)
	u := strings.Replace(rcv.URL, "http://", "http://alice:s3cret@", 1)
	e, err := otlpexport.New(context.Background(), otlpexport.Options{URL: u}, func() []otlpexport.GPU { return oneGPU })
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := rcv.Headers()[0].Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent", a)
	}
	if err := e.Shutdown(context.Background()); err == nil || len(rcv.Requests()) != 1 {
		t.Errorf("second Shutdown: %v, %d requests", err, len(rcv.Requests()))
	}
}
