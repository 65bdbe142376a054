package serve

import (
	"compress/gzip"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenServer is a sim system exercising every family of /metrics: two H200s (one running
// two processes, one of them in a pod whose names need escaping), the host's RAPL counters,
// dcgm-exporter's names, a version string with a quote, a backslash and a newline.
func goldenServer(t *testing.T) *Server {
	cfg := simConfig(t, "h200", 2)
	cfg.Host = &sim.Host{Sockets: 2, PackageIdle: 60, PackageBusy: 90, DRAM: 8, MaxRangeUJ: 262143328850, EnergyUnitUJ: 61.035}
	cfg.Processes = []sim.Process{
		{PID: 101, Comm: "train", T: time.Second, Duration: 10 * time.Second, SMUtil: 60, Power: 240},
		{PID: 202, Comm: "host", T: 2 * time.Second, Duration: 10 * time.Second, SMUtil: 30, Power: 120},
	}
	f := &fakeWorkloads{byPID: map[int]workload.Workload{
		101: {Namespace: "ml", Pod: `train-"0"`, Container: "a\\b\nc", PodUID: "u", ContainerID: "c0ffee"},
	}}
	s, v, _ := virtualServer(t, cfg, Options{DCGMNames: true, Workloads: f, Hostname: "node-7", Version: "v1.2.3 \"rc\" \\ \nx", Revision: "abc1234"})
	runTo(s, v, 9*time.Second)
	return s
}

// TestMetricsGolden: /metrics on the sim is, byte for byte, testdata/metrics.golden (the
// exposition promhttp wrote before gpuwatt wrote it itself: every name, label, HELP text,
// value and the order of families and series). The toolchain's version, os and arch are
// replaced by placeholders.
func TestMetricsGolden(t *testing.T) {
	s := goldenServer(t)
	text := scrape(t, s)
	text = strings.ReplaceAll(text, `goversion="`+runtime.Version()+`"`, `goversion="GOVERSION"`)
	text = strings.ReplaceAll(text, `goos="`+runtime.GOOS+`",`, `goos="GOOS",`)
	text = strings.ReplaceAll(text, `goarch="`+runtime.GOARCH+`",`, `goarch="GOARCH",`)
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		gl, wl := strings.Split(text, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("/metrics differs from %s at line %d:\n got %q\nwant %q", golden, i+1, g, w)
			}
		}
	}
}

// TestMetricsHTTP: the Content-Type and Vary headers a scraper gets, gzip when it accepts
// it (the same text once unzipped), identity when it does not, and name[] selecting
// families, as promhttp served them.
func TestMetricsHTTP(t *testing.T) {
	s := goldenServer(t)
	plain := scrape(t, s)
	for _, tc := range []struct {
		accept, encoding string
		gz               bool
	}{
		{"", "", false},
		{"", "gzip", true},
		{"text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip, deflate", true},
		{"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", "identity", false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		if tc.encoding != "" {
			req.Header.Set("Accept-Encoding", tc.encoding)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%+v: %d", tc, rec.Code)
		}
		h := rec.Header()
		if got := h.Get("Content-Type"); got != "text/plain; version=0.0.4; charset=utf-8; escaping=underscores" {
			t.Errorf("%+v: Content-Type %q", tc, got)
		}
		if got := strings.Join(h.Values("Vary"), ","); got != "Accept,Accept-Encoding" {
			t.Errorf("%+v: Vary %q", tc, got)
		}
		body := rec.Body.Bytes()
		if tc.gz {
			if h.Get("Content-Encoding") != "gzip" {
				t.Fatalf("%+v: Content-Encoding %q, want gzip", tc, h.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		} else if h.Get("Content-Encoding") != "" {
			t.Errorf("%+v: Content-Encoding %q, want none", tc, h.Get("Content-Encoding"))
		}
		if g := stripCPU(string(body)); g != stripCPU(plain) {
			t.Errorf("%+v: body differs from the plain scrape", tc)
		}
	}
	_, sel := get(t, s.Handler(), "/metrics?name[]=gpuwatt_gpu_up&name[]=gpuwatt_build_info")
	var fams []string
	for _, l := range strings.Split(sel, "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			fams = append(fams, strings.Fields(f)[0])
		}
	}
	if strings.Join(fams, ",") != "gpuwatt_build_info,gpuwatt_gpu_up" {
		t.Errorf("name[] selection: families %v", fams)
	}
}

// stripCPU drops the process's CPU seconds, the one figure that changes between scrapes.
func stripCPU(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "gpuwatt_sampler_cpu_seconds_total ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCommNotUTF8: a process whose command name is not valid UTF-8 (Linux allows any
// bytes) is served with U+FFFD in its place, and every family after it still is
// (client_golang dropped the rest of the scrape after it, answering 200).
func TestCommNotUTF8(t *testing.T) {
	cfg := simConfig(t, "h100", 1)
	cfg.Processes = []sim.Process{{PID: 7, Comm: "tr\xffin", T: time.Second, Duration: 10 * time.Second, SMUtil: 60, Power: 240}}
	s, v, _ := virtualServer(t, cfg, Options{})
	runTo(s, v, 4*time.Second)
	text := scrape(t, s)
	for _, w := range []string{`comm="tr` + "\uFFFD" + `in"`, "gpuwatt_sampler_polls_total{", "gpuwatt_sampler_cpu_seconds_total "} {
		if !strings.Contains(text, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
}
