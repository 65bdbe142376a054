package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
	"github.com/gpuwatt/gpuwatt/internal/otlpexport/otlptest"
)

// TestServeBadListen: a port in use, an address that is not one, and a GPU that is not
// there are bad input: exit 2 with one line naming it, before anything is served.
func TestServeBadListen(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--listen", busy}, "--listen " + busy + ": "},
		{[]string{"--listen", "nonsense"}, `--listen "nonsense": want HOST:PORT or :PORT`},
		{[]string{"--listen", "127.0.0.1:99999"}, "the port must be a number from 0 to 65535"},
		{[]string{"--listen", "127.0.0.1:0", "--gpu", "3"}, "--gpu 3: no such GPU (found 1)"},
		{[]string{"--listen", "127.0.0.1:0", "--gpu", "x"}, `--gpu "x": want all or a comma-separated list`},
		{[]string{"--listen", "127.0.0.1:0", "--poll", "soon"}, `--poll "soon"`},
		{[]string{"--listen", "127.0.0.1:0", "--counter-every", "5ms"}, "--counter-every 5ms: shorter than 10ms"},
		{[]string{"--listen", "127.0.0.1:0", "--counter-every", "often"}, `--counter-every "often": want default or a duration`},
		{[]string{"--listen", "127.0.0.1:0", "--otlp", "collector:4318"}, `--otlp "collector:4318": want the collector's OTLP/HTTP URL`},
		{[]string{"--listen", "unix:"}, `--listen "unix:": want unix:PATH`},
		{[]string{"--listen", "127.0.0.1:0", "--web.config.file", "/nonexistent/web.yml"}, "--web.config.file /nonexistent/web.yml: "},
	} {
		a, _, stderr, _ := testApp(t)
		code := a.Main(context.Background(), append([]string{"serve", "--device", "sim", "--quiet"}, tc.args...))
		if code != ExitUsage || !strings.Contains(stderr.String(), tc.says) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr, tc.says)
		}
	}
}

// TestServeProcess runs `gpuwatt serve --device sim --listen 127.0.0.1:0` as a real process
// (this test binary re-run as gpuwatt) on a sim board drawing 300 W: /metrics passes
// `promtool check metrics`; between two scrapes about 4 s apart the energy counter grows at
// the power gauge's rate; SIGTERM ends it with exit 0 within 1 s.
//
// The rate's timing: serve works out the energy figure once a second (Options.Update) from
// the counter's latest reading, up to a poll interval and a counter period (0.2 s) older.
// A scrape at a chosen time shows a figure up to 1.2 s old, and on a loaded machine (load
// 6-12 on 2 cores) the rate between two such scrapes 4 s apart was off by 20 % (the
// tolerance assumed 0.2 s). So each of the two scrapes is the first to show a new figure
// (scrapes every 20 ms until the figure changes): that figure was worked out between the
// previous scrape's request and this answer (the window, measured), from a reading up to
// 0.2 s before; the tolerance is those times over the span, and the boards' errors.
func TestServeProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("GPUWATT_SERVE_HELPER") == "1" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv("GPUWATT_ARGS")), &args); err != nil {
			os.Exit(99)
		}
		ctx, stop := SignalContext(context.Background())
		code := Main(ctx, args, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	cfg := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(cfg, []byte(`{"preset": "h100", "load": [{"t_s": 0, "power_w": 300}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"serve", "--device", "sim", "--sim-config", cfg, "--listen", "127.0.0.1:0"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeProcess$")
	cmd.Env = append(os.Environ(), "GPUWATT_SERVE_HELPER=1", "GPUWATT_ARGS="+string(args))
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var stderr bytes.Buffer
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`http://([^/]+)/metrics`)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/metrics"
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not say where it listens in 20 s")
	}
	get := func() (string, time.Time) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), time.Now()
	}
	const energySel = "gpuwatt_gpu_energy_joules_total{"
	// fresh scrapes every 20 ms until the energy figure differs from the one in m, and returns
	// the first scrape that shows the new one, when it was answered, and the window: from the
	// request of the scrape before it (which still showed the old figure) to that answer.
	fresh := func(m string, sent time.Time) (string, time.Time, time.Duration) {
		t.Helper()
		old := metric(t, m, energySel)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
			req := time.Now()
			m2, at := get()
			if metric(t, m2, energySel) != old {
				return m2, at, at.Sub(sent)
			}
			sent = req
		}
		t.Fatalf("the energy figure stayed %v for 10 s", old)
		return "", time.Time{}, 0
	}
	// The first corrected figure needs a second of the buffer's readings past the
	// inversion's tail, and an update: ~3 s at the lean default's one read a second.
	sent := time.Now()
	m1, _ := get()
	for end := time.Now().Add(10 * time.Second); !strings.Contains(m1, `gpuwatt_gpu_power_watts{channel="corrected"`) && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		sent = time.Now()
		m1, _ = get()
	}
	m1, t1, w1 := fresh(m1, sent)
	time.Sleep(3800 * time.Millisecond)
	sent = time.Now()
	m2, _ := get()
	m2, t2, w2 := fresh(m2, sent)
	if resp, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/health"); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("GET /health: %d %q", resp.StatusCode, b)
		if resp.StatusCode != http.StatusOK || string(b) != "ok\n" {
			t.Errorf("GET /health: %d %q, want 200 ok", resp.StatusCode, b)
		}
	}
	for _, want := range []string{"gpuwatt_build_info{", `gpuwatt_gpu_info{device="sim:h100",driver_version="sim"`} {
		if !strings.Contains(m2, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	if p, err := exec.LookPath("promtool"); err == nil {
		c := exec.Command(p, "check", "metrics")
		c.Stdin = strings.NewReader(m2)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else if os.Getenv("GPUWATT_REQUIRE_PROMETHEUS") != "" {
		t.Errorf("promtool is not on PATH and GPUWATT_REQUIRE_PROMETHEUS is set")
	} else {
		t.Logf("promtool is not on PATH: the exposition is not checked with it")
	}
	e1, e2 := metric(t, m1, energySel), metric(t, m2, energySel)
	span := t2.Sub(t1).Seconds()
	rate := (e2 - e1) / span
	for _, ch := range []string{"corrected", "power.samples"} {
		sel := `gpuwatt_gpu_power_watts{channel="` + ch + `"`
		p := (metric(t, m1, sel) + metric(t, m2, sel)) / 2
		// Each figure describes the board at a time up to its window and 0.2 s (its reading's
		// age) before its scrape's answer: the span is off by at most the larger of the two,
		// and the counter's and the power channel's board errors add 2 % (the sim's h100:
		// 1.3 %).
		tol := (max(w1, w2).Seconds()+0.2)/span + 0.02
		t.Logf("energy counter %.1f -> %.1f J over %.2f s (windows %v, %v): %.1f W; %s %.1f W (%+.1f %%, tolerance %.1f %%)", e1, e2, span, w1.Round(time.Millisecond), w2.Round(time.Millisecond), rate, ch, p, 100*(rate/p-1), 100*tol)
		if math.Abs(rate/p-1) > tol {
			t.Errorf("the counter grew at %.1f W between two scrapes, %s reads %.1f W", rate, ch, p)
		}
	}

	t0 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("serve did not end 5 s after SIGTERM: %s", stderr.String())
	}
	took := time.Since(t0)
	if code := cmd.ProcessState.ExitCode(); code != 0 || took > time.Second {
		t.Errorf("SIGTERM: exit %d after %s, want exit 0 within 1 s: %s", code, took, stderr.String())
	}
	t.Logf("SIGTERM: exit %d after %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
}

// metric returns the value of the first line of an exposition that starts with prefix.
func metric(t testing.TB, text, prefix string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in\n%s", prefix, text)
	return 0
}

// testServeOTLP: serve --otlp pushes each GPU's energy (hw.energy, growing, from the
// board's counter) and corrected power (hw.power) to a collector (a receiver decoding the
// collector's own protobuf types) every --otlp-interval, and once more when it ends.
func testServeOTLP(t *testing.T) {
	rcv := otlptest.Start(t)
	a, _, stderr, _ := testApp(t)
	a.NewClock = nil // a real clock: serve runs in wall time
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- a.Main(ctx, []string{"serve", "--device", "sim:h200", "--listen", "127.0.0.1:0", "--otlp", rcv.URL, "--otlp-interval", "700ms"})
	}()
	// Three pushes, and one with the corrected power (it needs a second of the buffer's
	// readings past the inversion's tail: ~3 s at the lean default's one read a second).
	pushedPower := func() bool {
		for _, req := range rcv.Requests() {
			for _, p := range otlptest.Points(req) {
				if p.Metric == otlpexport.MetricPower && p.Value > 0 {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(15 * time.Second)
	for (len(rcv.Requests()) < 3 || !pushedPower()) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	n := len(rcv.Requests())
	cancel()
	if c := <-code; c != ExitOK {
		t.Fatalf("exit %d: %s", c, stderr)
	}
	reqs := rcv.Requests()
	if n < 3 || len(reqs) <= n {
		t.Fatalf("%d pushes while serving and %d in all; want 3 or more, and a last one at the end: %s", n, len(reqs), stderr)
	}
	var energy []float64
	power := 0.0
	for _, req := range reqs {
		for _, p := range otlptest.Points(req) {
			switch p.Metric {
			case otlpexport.MetricEnergy:
				if p.Attrs[otlpexport.AttrSource] != "counter" || !p.Monotonic {
					t.Errorf("hw.energy: source %q, monotonic %v", p.Attrs[otlpexport.AttrSource], p.Monotonic)
				}
				energy = append(energy, p.Value)
			case otlpexport.MetricPower:
				power = p.Value
			}
		}
	}
	if len(energy) < 3 || energy[len(energy)-1] <= energy[0] {
		t.Errorf("hw.energy pushed %v: want it growing", energy)
	}
	if power < 50 || power > 200 {
		t.Errorf("hw.power %.1f W: want the idle sim h200's corrected power (~80-120 W)", power)
	}
	if r := otlptest.Resource(reqs[0]); r["host.name"] != "testhost" {
		t.Errorf("resource %v: want host.name testhost", r)
	}
}

// TestServeNeverLogsTheOTLPPassword runs serve as a real process pushing to a collector
// that fails every push (a password in the --otlp URL; serve logged it with the endpoint):
// nothing it writes, its start line, the push errors or the last push's, holds the
// password; the start line names the user with xxxxx.
func TestServeNeverLogsTheOTLPPassword(t *testing.T) {
	t.Parallel()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer refuse.Close()
	u := strings.Replace(refuse.URL, "http://", "http://alice:s3cret@", 1)
	args, _ := json.Marshal([]string{"serve", "--device", "sim", "--listen", "127.0.0.1:0", "--otlp", u, "--otlp-interval", "200ms"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeProcess$")
	cmd.Env = append(os.Environ(), "GPUWATT_SERVE_HELPER=1", "GPUWATT_ARGS="+string(args))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // several pushes, each refused
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("serve did not end 10 s after SIGTERM:\n%s", out.String())
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("serve wrote the password:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "alice:xxxxx@") {
		t.Errorf("serve did not name the endpoint:\n%s", out.String())
	}
}
