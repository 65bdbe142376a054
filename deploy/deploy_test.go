// Package deploy holds the tests of what deploy/ ships that Go can check: every PromQL
// expression of the Grafana dashboard against a real Prometheus holding serve's series, and
// the gpuwatt arguments of the DaemonSet, the systemd unit and the container image accepted
// by `gpuwatt serve`. deploy/ci-check.sh checks the rest with the ecosystem's tools (helm lint
// and template, a strict schema check, systemd-analyze).
package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cli"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/serve"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

// tool returns the path of a Prometheus tool, or skips (fails where .ci/run installed it and
// set GPUWATT_REQUIRE_PROMETHEUS), as internal/serve's tests do.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("GPUWATT_REQUIRE_PROMETHEUS") != "" {
			t.Fatalf("%s is not on PATH and GPUWATT_REQUIRE_PROMETHEUS is set", name)
		}
		t.Skipf("%s is not on PATH (Debian: apt-get install prometheus)", name)
	}
	return p
}

type dashboard struct {
	Panels []struct {
		Title   string
		Targets []struct{ Expr string }
	}
	Templating struct {
		List []struct {
			Name       string
			Definition string
		}
	}
}

// grafanaVars are the dashboard's variables as the test sets them: its ranges short enough
// for a few seconds of scrapes every 250 ms, every instance.
var grafanaVars = strings.NewReplacer("$__rate_interval", "3s", "$__range", "8s", "$__interval", "1s", "$instance", ".*")

// names the pods of the sim's scripted processes.
type pods map[int]workload.Workload

func (p pods) Lookup(_ string, pid int) workload.Workload { return p[pid] }

// TestDashboardQueries: a real Prometheus scrapes a real serve (two sim H100s, processes in
// pods) every 250 ms; every expression of deploy/grafana/gpuwatt-dashboard.json, with the
// dashboard's variables set, passes `promtool check rules` (its syntax, as a recording rule)
// and returns at least one series through `promtool query instant` against that Prometheus;
// the instance variable's label_values() query names a metric serve has.
func TestDashboardQueries(t *testing.T) {
	testkit.Slow(t) // 24 s: a real Prometheus
	promtool := tool(t, "promtool")
	prom := tool(t, "prometheus")
	b, err := os.ReadFile(filepath.Join("grafana", "gpuwatt-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	type query struct{ panel, expr string }
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{p.Title, grafanaVars.Replace(tg.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(v.Definition); m != nil {
			qs = append(qs, query{"variable " + v.Name, "count by (" + m[2] + ") (" + m[1] + ")"})
		} else if v.Definition != "" {
			t.Errorf("variable %s: %q is not a label_values(metric, label) query", v.Name, v.Definition)
		}
	}
	if len(qs) < 15 {
		t.Fatalf("%d expressions in the dashboard", len(qs))
	}

	// Every expression as a recording rule: promtool checks its syntax.
	dir := t.TempDir()
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range qs {
		fmt.Fprintf(&rules, "      - record: gpuwatt:dashboard_%d\n        expr: %q\n", i, q.expr)
	}
	rf := filepath.Join(dir, "rules.yml")
	os.WriteFile(rf, []byte(rules.String()), 0o644)
	if out, err := exec.Command(promtool, "check", "rules", rf).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}

	// serve on two sim H100s with two processes in pods and one on the host, on a real clock.
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	cfg.GPUs = 2
	cfg.Processes = []sim.Process{
		{PID: 101, Comm: "train", T: 0, Duration: time.Hour, SMUtil: 60, Power: 240},
		{PID: 202, Comm: "infer", T: 0, Duration: time.Hour, SMUtil: 30, Power: 120},
	}
	clk := clock.NewReal()
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wl := pods{101: {Namespace: "ml", Pod: "train-0", Container: "trainer", ContainerID: "c1"}}
	s, err := serve.New(ctx, sys, clk, serve.Options{Update: 250 * time.Millisecond, Version: "test", Workloads: wl})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := serve.Listen(serve.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, nil) }()
	defer func() {
		cancel()
		<-done
	}()

	webAddr := freeAddr(t)
	conf := fmt.Sprintf("global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: gpuwatt\n    static_configs:\n      - targets: ['%s']\n", ln.Addr())
	os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+webAddr)
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
	// Wait for 8 s of scrapes that carry the corrected power and the processes' energy
	// (the split begins after the first update), 30 s at most.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n := count(api, `count_over_time(gpuwatt_process_gpu_energy_joules_total{pod="train-0"}[9s])`); n >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not gather 8 s of serve's scrapes in 30 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, q := range qs {
		out, err := exec.Command(promtool, "query", "instant", api, q.expr).CombinedOutput()
		lines := strings.Count(strings.TrimSpace(string(out)), "\n") + 1
		if err != nil || len(strings.TrimSpace(string(out))) == 0 {
			t.Errorf("%s: promtool query instant %s: %v, %d series\n%s", q.panel, q.expr, err, 0, out)
			continue
		}
		t.Logf("%s: %s: %d series", q.panel, q.expr, lines)
	}
}

// count returns the value of a one-series instant query, 0 where there is none.
func count(api, q string) float64 {
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Data struct {
			Result []struct{ Value [2]any }
		}
	}
	if json.Unmarshal(b, &r) != nil || len(r.Data.Result) != 1 {
		return 0
	}
	var v float64
	fmt.Sscan(fmt.Sprint(r.Data.Result[0].Value[1]), &v)
	return v
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// manifestArgs reads the args list of the gpuwatt container in a Kubernetes manifest (the
// lines "- x" under "args:").
func manifestArgs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var args []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "args:":
			in = true
		case in && strings.HasPrefix(l, "- "):
			args = append(args, strings.TrimPrefix(l, "- "))
		case in:
			in = false
		}
	}
	return args
}

// TestShippedServeArgs: the arguments the DaemonSet, the systemd unit and the container image
// give `gpuwatt serve` are accepted by it: each runs serve (on the sim device, on a loopback
// port, the rest as shipped) until it answers /health with 200, then ends with exit 0.
func TestShippedServeArgs(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("systemd", "gpuwatt.service"))
	if err != nil {
		t.Fatal(err)
	}
	exec := regexp.MustCompile(`(?m)^ExecStart=\S+ (.*)$`).FindSubmatch(unit)
	docker, err := os.ReadFile(filepath.Join("container", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindSubmatch(docker)
	if exec == nil || cmdLine == nil {
		t.Fatalf("no ExecStart in the unit or CMD in the Dockerfile")
	}
	var dockerArgs []string
	if err := json.Unmarshal(cmdLine[1], &dockerArgs); err != nil {
		t.Fatalf("Dockerfile CMD: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"DaemonSet", manifestArgs(t, filepath.Join("kubernetes", "gpuwatt.yaml"))},
		{"systemd unit", strings.Fields(string(exec[1]))},
		{"Dockerfile", dockerArgs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.args) < 2 || tc.args[0] != "serve" {
				t.Fatalf("args %q: not gpuwatt serve", tc.args)
			}
			args := []string{"serve"}
			sawDevice := false
			for _, a := range tc.args[1:] {
				switch {
				case strings.HasPrefix(a, "--device="):
					a, sawDevice = "--device=sim:h100", true
				case strings.HasPrefix(a, "--listen="):
					a = "--listen=127.0.0.1:0"
				case strings.HasPrefix(a, "--pod-resources="):
					a = "--pod-resources=" + filepath.Join(t.TempDir(), "absent.sock")
				}
				args = append(args, a)
			}
			if !sawDevice {
				t.Fatalf("args %q do not name the device", tc.args)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			code := make(chan int, 1)
			go func() {
				code <- cli.Main(ctx, args, io.Discard, pw)
				pw.Close()
			}()
			addr := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(pr)
				re := regexp.MustCompile(`http://([^/]+)/metrics`)
				for sc.Scan() {
					if m := re.FindStringSubmatch(sc.Text()); m != nil {
						addr <- m[1]
					}
				}
			}()
			var a string
			select {
			case a = <-addr:
			case c := <-code:
				t.Fatalf("gpuwatt %s: exit %d before serving", strings.Join(args, " "), c)
			case <-time.After(20 * time.Second):
				t.Fatalf("gpuwatt %s: did not say where it listens in 20 s", strings.Join(args, " "))
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := http.Get("http://" + a + "/health")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("gpuwatt %s: /health not 200 in 10 s", strings.Join(args, " "))
				}
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
			if c := <-code; c != 0 {
				t.Errorf("gpuwatt %s: exit %d", strings.Join(args, " "), c)
			}
			t.Logf("gpuwatt %s: /health 200, exit 0 (shipped: %s)", strings.Join(args, " "), strings.Join(tc.args, " "))
		})
	}
}
