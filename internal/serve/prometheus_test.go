package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// TestPrometheusScrapes runs a real Prometheus server (Debian's prometheus package; the
// test skips, saying so, where it is not installed, and fails where .ci/run installed it
// and set GPUWATT_REQUIRE_PROMETHEUS) scraping serve on loopback every 250 ms, serve on a
// sim board (real clock) drawing 350 W. Through Prometheus's query API, rate() of the
// energy counter over 5 s matches avg_over_time() of the power gauges (corrected and
// power.samples) over the same 5 s within 2 × (poll + counter period) / 5 s + 2 % = 10 %:
// each counter value is up to a poll interval and a counter period older than its scrape,
// and the sim's counter and power channel carry board errors of their own (1.3 % apart).
func TestPrometheusScrapes(t *testing.T) {
	testkit.Slow(t) // 11 s: a real Prometheus
	prom := prometheusTool(t, "prometheus")
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Load = []sim.LoadStep{{T: 0, Power: 350}}
	clk := clock.NewReal()
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(ctx, sys, clk, Options{Listen: "127.0.0.1:0", Update: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	dir := t.TempDir()
	webAddr := freeAddr(t)
	conf := fmt.Sprintf("global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: gpuwatt\n    static_configs:\n      - targets: ['%s']\n", ln.Addr())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+webAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		w := make(chan struct{})
		go func() { cmd.Wait(); close(w) }()
		select {
		case <-w:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-w
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus's log:\n%s", b)
		}
	}()
	api := "http://" + webAddr
	query := func(q string) (float64, bool) {
		t.Helper()
		resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if json.Unmarshal(b, &r) != nil || r.Status != "success" || len(r.Data.Result) != 1 {
			return 0, false
		}
		v, err := strconv.ParseFloat(fmt.Sprint(r.Data.Result[0].Value[1]), 64)
		return v, err == nil
	}
	// Wait until the scrapes that carry the corrected power (it needs a second of readings
	// first) cover more than the 5 s window (rate() divides by the window, whatever part
	// of it the series covers), 25 s at most.
	deadline := time.Now().Add(25 * time.Second)
	for {
		if n, ok := query(`count_over_time(gpuwatt_gpu_power_watts{channel="corrected"}[6s])`); ok && n >= 23 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not gather 6 s of scrapes in 25 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	rate, ok := query(`rate(gpuwatt_gpu_energy_joules_total[5s])`)
	if !ok {
		t.Fatal("no rate of the energy counter")
	}
	n, _ := query(`count_over_time(gpuwatt_gpu_energy_joules_total[5s])`)
	for _, ch := range []string{"corrected", "power.samples"} {
		p, ok := query(`avg_over_time(gpuwatt_gpu_power_watts{channel="` + ch + `"}[5s])`)
		if !ok {
			t.Fatalf("no power gauge %s", ch)
		}
		tol := 2*0.2/5 + 0.02
		t.Logf("rate(gpuwatt_gpu_energy_joules_total[5s]) = %.1f W (%0.f scrapes); avg_over_time(%s) = %.1f W: %+.2f %% (tolerance %.0f %%)", rate, n, ch, p, 100*(rate/p-1), 100*tol)
		if math.Abs(rate/p-1) > tol {
			t.Errorf("rate of the energy counter %.1f W, %s gauge %.1f W", rate, ch, p)
		}
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
