package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/workload"
)

func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// TestHealth: /health is 503 naming each GPU that has no reading yet, 200 "ok" once every
// GPU has one, and 503 again naming the GPU whose driver calls all fail (with the driver's
// words), while the other GPU goes on.
func TestHealth(t *testing.T) {
	v := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(v, simConfig(t, "h100", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	devs := sys.Devices()
	w := wrapSys{sys, []gpu.Device{&failing{devs[0], v, 5 * time.Second}, devs[1]}}
	s, err := New(context.Background(), w, v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()

	// The moment before the first reading: on a virtual clock the Sampler has read once
	// by the time New returns, so the test empties what it read.
	for _, g := range s.gpus {
		g.mu.Lock()
		clear(g.latest)
		g.mu.Unlock()
	}
	code, body := get(t, h, "/health")
	t.Logf("before any reading: %d %q", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "gpu 0 ("+devs[0].Info().UUID+"): no reading yet") ||
		!strings.Contains(body, "gpu 1 ("+devs[1].Info().UUID+"): no reading yet") {
		t.Errorf("before any reading: %d %q, want 503 naming both GPUs", code, body)
	}

	runTo(s, v, 3*time.Second)
	code, body = get(t, h, "/health")
	t.Logf("both GPUs read: %d %q", code, body)
	if code != http.StatusOK || body != "ok\n" {
		t.Errorf("both GPUs read: %d %q, want 200 ok", code, body)
	}

	runTo(s, v, 8*time.Second)
	code, body = get(t, h, "/health")
	t.Logf("GPU 0 lost: %d %q", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "gpu 0 ("+devs[0].Info().UUID+"): down: ") ||
		!strings.Contains(body, "GPU is lost") || strings.Contains(body, "gpu 1") {
		t.Errorf("GPU 0 lost: %d %q, want 503 naming GPU 0 alone and the driver's error", code, body)
	}
}

// TestInfoMetrics: gpuwatt_build_info carries the version given and the toolchain;
// gpuwatt_gpu_info each GPU's model, uuid, bus id, the driver's version and the device
// (sim:h200, simulated="true"); gpuwatt_gpu_power_limit_watts the preset's limits.
func TestInfoMetrics(t *testing.T) {
	cfg := simConfig(t, "h200", 2)
	s, v, sys := virtualServer(t, cfg, Options{Version: "v1.2.3", Revision: "abc1234", Hostname: "node-7"})
	runTo(s, v, 2*time.Second)
	text := scrape(t, s)
	want := []string{
		fmt.Sprintf(`gpuwatt_build_info{goarch="%s",goos="%s",goversion="%s",revision="abc1234",version="v1.2.3"} 1`, runtime.GOARCH, runtime.GOOS, runtime.Version()),
	}
	for _, d := range sys.Devices() {
		in := d.Info()
		want = append(want,
			fmt.Sprintf(`gpuwatt_gpu_info{device="sim:h200",driver_version="sim",gpu="%d",hostname="node-7",model="%s",pci_bus_id="%s",simulated="true",uuid="%s"} 1`,
				in.Index, in.Name, strings.ToLower(in.PCIBusID), in.UUID),
			fmt.Sprintf(`gpuwatt_gpu_power_limit_watts{gpu="%d",limit="enforced",uuid="%s"} %g`, in.Index, in.UUID, float64(cfg.PowerLimit)))
		if cfg.DefaultPowerLimit > 0 {
			want = append(want, fmt.Sprintf(`gpuwatt_gpu_power_limit_watts{gpu="%d",limit="default",uuid="%s"} %g`, in.Index, in.UUID, float64(cfg.DefaultPowerLimit)))
		}
	}
	if cfg.PowerLimit != 700 {
		t.Errorf("the h200 preset's power limit is %v, the test expects 700 W", cfg.PowerLimit)
	}
	for _, w := range want {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "_info") || strings.Contains(l, "limit") {
				t.Log(l)
			}
		}
	}
}

// fakeWorkloads names the workload of each pid, and records the lookups.
type fakeWorkloads struct {
	byPID map[int]workload.Workload
	asked []string
}

func (f *fakeWorkloads) Lookup(uuid string, pid int) workload.Workload {
	f.asked = append(f.asked, fmt.Sprintf("%s/%d", uuid, pid))
	return f.byPID[pid]
}

// TestProcessWorkloadLabels: each process's energy carries the pod, namespace, container
// and container id its workload lookup gave; each process is looked up once, with its
// GPU's uuid; a process outside any pod has the labels empty.
func TestProcessWorkloadLabels(t *testing.T) {
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Processes = []sim.Process{
		{PID: 101, Comm: "train", T: time.Second, Duration: 10 * time.Second, SMUtil: 60, Power: 240},
		{PID: 202, Comm: "host", T: time.Second, Duration: 10 * time.Second, SMUtil: 30, Power: 120},
	}
	f := &fakeWorkloads{byPID: map[int]workload.Workload{
		101: {Namespace: "ml", Pod: "train-0", Container: "trainer", PodUID: "u", ContainerID: "c0ffee"},
	}}
	s, v, sys := virtualServer(t, cfg, Options{Workloads: f})
	runTo(s, v, 8*time.Second)
	text := scrape(t, s)
	uuid := sys.Devices()[0].Info().UUID
	for _, w := range []string{
		`gpuwatt_process_gpu_energy_joules_total{comm="train",container="trainer",container_id="c0ffee",gpu="0",namespace="ml",pid="101",pod="train-0"} `,
		`gpuwatt_process_gpu_energy_joules_total{comm="host",container="",container_id="",gpu="0",namespace="",pid="202",pod=""} `,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if len(f.asked) != 2 || !strings.HasPrefix(f.asked[0], uuid+"/") {
		t.Errorf("lookups %v, want one per process with GPU %s", f.asked, uuid)
	}
}

// TestListenUnix: --listen unix:PATH serves /metrics and /health on a unix socket; a socket
// left by a serve that died is replaced, a socket another serve answers on and a path that
// is not a socket are bad input; the socket is removed when serve ends.
func TestListenUnix(t *testing.T) {
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "gpuwatt.sock")

	// A stale socket: bound, then left without a listener.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	s, v, _ := virtualServer(t, simConfig(t, "h100", 1), Options{})
	runTo(s, v, 2*time.Second)
	ln, err := Listen(Options{Listen: "unix:" + path})
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, nil) }()

	if _, err := Listen(Options{Listen: "unix:" + path}); !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), "another process answers") {
		t.Errorf("a second serve on the socket: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Listen(Options{Listen: "unix:" + file}); !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a plain file: %v", err)
	}
	if err := ValidateListen("unix:"); !errors.Is(err, status.ErrInput) {
		t.Errorf("unix: without a path: %v", err)
	}

	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	for _, p := range []string{"/health", "/metrics"} {
		resp, err := c.Get("http://gpuwatt" + p)
		if err != nil {
			t.Fatalf("GET %s over the socket: %v", p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || (p == "/metrics" && !strings.Contains(string(b), "gpuwatt_gpu_energy_joules_total")) {
			t.Errorf("GET %s over the socket: %d %.80q", p, resp.StatusCode, b)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left after serve ended: %v", err)
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuwatt test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestWebConfigTLSBasicAuth: with an exporter-toolkit web configuration (TLS and a bcrypt
// basic-auth user), /metrics and /health answer over TLS to the user's password alone: 401
// without or with a wrong one, and plain HTTP gets no metrics. A configuration that does not
// parse is bad input, named, before anything is served.
func TestWebConfigTLSBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "web.yml")
	os.WriteFile(conf, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n", certFile, keyFile, hash)), 0o600)

	s, v, _ := virtualServer(t, simConfig(t, "h100", 1), Options{WebConfigFile: conf})
	runTo(s, v, 2*time.Second)
	ln, err := Listen(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(scheme, path, user, pass string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+ln.Addr().String()+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		scheme, path, user, pass string
		code                     int
	}{
		{"https", "/metrics", "prometheus", "s3cret", 200},
		{"https", "/health", "prometheus", "s3cret", 200},
		{"https", "/metrics", "", "", 401},
		{"https", "/metrics", "prometheus", "wrong", 401},
		{"https", "/metrics", "other", "s3cret", 401},
	} {
		code, body := do(tc.scheme, tc.path, tc.user, tc.pass)
		if code != tc.code || (code == 200 && tc.path == "/metrics" && !strings.Contains(body, "gpuwatt_build_info")) {
			t.Errorf("%s %s as %q/%q: %d %.80q, want %d", tc.scheme, tc.path, tc.user, tc.pass, code, body, tc.code)
		}
	}
	if code, body := do("http", "/metrics", "prometheus", "s3cret"); code == 200 || strings.Contains(body, "gpuwatt_") {
		t.Errorf("plain HTTP to the TLS port: %d %.80q", code, body)
	}

	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.pem\n"), 0o600)
	for _, f := range []string{bad, filepath.Join(dir, "absent.yml")} {
		err := Options{WebConfigFile: f}.Validate()
		if !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), f) {
			t.Errorf("web config %s: %v, want bad input naming it", f, err)
		}
	}
}
