package webconfig

import (
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
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// pki is a CA, a server certificate for 127.0.0.1 and a client certificate for
// scraper.example signed by it, as PEM files in dir.
type pki struct {
	dir               string
	caFile            string
	certFile, keyFile string
	client            tls.Certificate
	pool              *x509.CertPool
	serverSerial      *big.Int
	caKey             *ecdsa.PrivateKey
	caCert            *x509.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	var err error
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.caCert, _ = x509.ParseCertificate(caDER)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.caCert)
	p.certFile, p.keyFile = p.issue(t, "server", 2)
	cf, kf := p.issue(t, "client", 3)
	if p.client, err = tls.LoadX509KeyPair(cf, kf); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue writes a certificate (serial) and key signed by the CA: for 127.0.0.1 (server) or
// scraper.example (client).
func (p *pki) issue(t *testing.T, name string, serial int64) (certFile, keyFile string) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	if name == "client" {
		tmpl.DNSNames, tmpl.ExtKeyUsage = []string{"scraper.example"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.IPAddresses, tmpl.ExtKeyUsage = []net.IP{net.ParseIP("127.0.0.1")}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &k.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kb)
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeConf(t *testing.T, dir, text string) string {
	t.Helper()
	f := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func hash(t *testing.T, pass string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// TestLoadRefuses: every key that is not in the format (misspelt, at any depth) is an
// error naming it; so are a password that is not a bcrypt hash, a certificate without its
// key, a file that is a FIFO (at once, never waiting on it), a client CA without a
// client_auth_type asking for certificates, unknown values of the enumerations, and
// headers outside the allowed set.
func TestLoadRefuses(t *testing.T) {
	p := newPKI(t)
	fifo := filepath.Join(p.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsOK := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", p.certFile, p.keyFile)
	for _, tc := range []struct{ conf, want string }{
		{"basic_auth_user:\n  a: b\n", "basic_auth_user"},
		{"tls_server_config:\n  cert_fil: x\n", "cert_fil"},
		{tlsOK + "  min_versoin: TLS12\n", "min_versoin"},
		{"http_server_config:\n  http3: true\n", "http3"},
		{"rate_limit:\n  burts: 3\n", "burts"},
		{"basic_auth_users:\n  alice: plain\n", "alice"},
		{"tls_server_config:\n  cert_file: " + p.certFile + "\n", "missing one of key or key_file"},
		{"tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.pem\n", "/nonexistent.pem"},
		{"tls_server_config:\n  cert_file: " + fifo + "\n  key_file: " + p.keyFile + "\n", "a FIFO"},
		{tlsOK + "  client_ca_file: " + fifo + "\n  client_auth_type: RequireAndVerifyClientCert\n", "a FIFO"},
		{tlsOK + "  client_ca_file: " + p.caFile + "\n", "client CAs are given without a client_auth_type"},
		{tlsOK + "  client_auth_type: Sometimes\n", `client_auth_type "Sometimes"`},
		{tlsOK + "  min_version: TLS14\n", `"TLS14"`},
		{tlsOK + "  cipher_suites: [TLS_RSA_WITH_NOTHING]\n", "TLS_RSA_WITH_NOTHING"},
		{tlsOK + "  curve_preferences: [P256]\n", `"P256"`},
		{"http_server_config:\n  headers:\n    X-Powered-By: gpuwatt\n", "X-Powered-By"},
		{"http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "X-Frame-Options"},
		{"rate_limit:\n  interval: -1s\n", "negative"},
		{"tls_server_config: [1, 2]\n", "line 1: cannot unmarshal"},
	} {
		_, err := Load(writeConf(t, p.dir, tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.conf, err, tc.want)
		}
	}
	if _, err := Load(fifo); !errors.Is(err, infile.ErrNotRegular) {
		t.Errorf("the configuration a FIFO: %v", err)
	}
}

// TestLoadAccepts: the documented keys, relative file names taken from the
// configuration's folder, and the exporter-toolkit's defaults (TLS 1.2 to 1.3, HTTP/2).
func TestLoadAccepts(t *testing.T) {
	p := newPKI(t)
	c, err := Load(writeConf(t, p.dir, "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_ca_file: ca.pem\n  client_auth_type: VerifyClientCertIfGiven\n"+
		"  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: true\n  client_allowed_sans: [scraper.example]\n"+
		"http_server_config:\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=31536000\n"+
		"basic_auth_users:\n  alice: "+hash(t, "x")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS.CertFile != p.certFile || c.TLS.ClientCAFile != p.caFile || c.TLS.MinVersion != tls.VersionTLS12 || c.TLS.MaxVersion != tls.VersionTLS13 || !c.HTTP.HTTP2 {
		t.Errorf("%+v", c)
	}
	cfg, err := c.TLS.serverConfig()
	if err != nil || cfg.ClientAuth != tls.VerifyClientCertIfGiven || len(cfg.CipherSuites) != 1 || len(cfg.CurvePreferences) != 2 || cfg.VerifyPeerCertificate == nil {
		t.Errorf("%v %+v", err, cfg)
	}
	if c, err := Load(writeConf(t, p.dir, "")); err != nil || c.TLS.enabled() {
		t.Errorf("an empty file: %v", err)
	}
}

// served runs Serve on loopback with the configuration at conf; it stops at the test's end.
func served(t *testing.T, conf string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Proto)
	}), ErrorLog: log.New(io.Discard, "", 0)} // the refused handshakes are the point
	done := make(chan error, 1)
	go func() { done <- Serve(ln, hs, conf, nil) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func get(t *testing.T, c *http.Client, url, user, pass string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestBasicAuth (plain HTTP, no TLS in the file): the right password gets through; no
// password, a wrong one and an unknown user get 401 with WWW-Authenticate: Basic; the
// configured headers are on every answer; a password changed in the file counts from the
// next request, without a restart; a file that no longer reads is a 500.
func TestBasicAuth(t *testing.T) {
	dir := t.TempDir()
	conf := writeConf(t, dir, "basic_auth_users:\n  alice: "+hash(t, "s3cret")+"\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
	url := "http://" + served(t, conf) + "/"
	c := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		user, pass string
		code       int
	}{
		{"alice", "s3cret", 200}, {"alice", "s3cret", 200}, {"", "", 401}, {"alice", "wrong", 401}, {"bob", "s3cret", 401}, {"bob", "fakepassword", 401},
	} {
		code, h, body := get(t, c, url, tc.user, tc.pass)
		if code != tc.code || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s/%s: %d %v %q, want %d", tc.user, tc.pass, code, h, body, tc.code)
		}
		if code == 401 && h.Get("WWW-Authenticate") != "Basic" {
			t.Errorf("%s/%s: 401 without WWW-Authenticate: Basic (%v)", tc.user, tc.pass, h)
		}
	}
	writeConf(t, dir, "basic_auth_users:\n  alice: "+hash(t, "n3w")+"\n")
	if code, _, _ := get(t, c, url, "alice", "s3cret"); code != 401 {
		t.Errorf("the old password after the change: %d", code)
	}
	if code, _, _ := get(t, c, url, "alice", "n3w"); code != 200 {
		t.Errorf("the new password after the change: %d", code)
	}
	writeConf(t, dir, "basic_auth_users: [\n")
	if code, _, _ := get(t, c, url, "alice", "n3w"); code != 500 {
		t.Errorf("a file that no longer reads: %d, want 500", code)
	}
}

// TestTLS: the certificate is served (and a renewed one taken up at the next connection);
// RequireAndVerifyClientCert refuses a client without a certificate and takes one signed
// by client_ca_file; client_allowed_sans refuses a certificate without one of them;
// min_version TLS13 refuses a TLS 1.2 client; http2: false answers HTTP/1.1 where a client
// offers h2, which it gets by default.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	base := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", p.certFile, p.keyFile)
	client := func(cert *tls.Certificate, maxVersion uint16) *http.Client {
		cfg := &tls.Config{RootCAs: p.pool, MaxVersion: maxVersion}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	}

	dir := t.TempDir()
	conf := writeConf(t, dir, base)
	addr := served(t, conf)
	if code, _, body := get(t, client(nil, 0), "https://"+addr+"/", "", ""); code != 200 || body != "hello HTTP/2.0" {
		t.Errorf("TLS: %d %q, want 200 over HTTP/2", code, body)
	}
	if code, _, body := get(t, &http.Client{Timeout: 5 * time.Second}, "http://"+addr+"/", "", ""); code == 200 {
		t.Errorf("plain HTTP to the TLS port: %d %q", code, body)
	}
	// A renewed certificate (another serial) is served from the next connection on.
	cf, kf := p.issue(t, "server", 99)
	os.Rename(cf, p.certFile)
	os.Rename(kf, p.keyFile)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.pool})
	if err != nil {
		t.Fatal(err)
	}
	if s := conn.ConnectionState().PeerCertificates[0].SerialNumber; s.Int64() != 99 {
		t.Errorf("after renewal the server's certificate has serial %v, want 99", s)
	}
	conn.Close()

	mtls := writeConf(t, t.TempDir(), base+"  client_ca_file: "+p.caFile+"\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n"+"http_server_config:\n  http2: false\n")
	addr = served(t, mtls)
	if code, _, body := get(t, client(&p.client, 0), "https://"+addr+"/", "", ""); code != 200 || body != "hello HTTP/1.1" {
		t.Errorf("with a client certificate: %d %q, want 200 over HTTP/1.1", code, body)
	}
	if code, _, body := get(t, client(nil, 0), "https://"+addr+"/", "", ""); code != 0 {
		t.Errorf("without a client certificate: %d %q, want the handshake refused", code, body)
	}
	if code, _, body := get(t, client(&p.client, tls.VersionTLS12), "https://"+addr+"/", "", ""); code != 0 {
		t.Errorf("TLS 1.2 against min_version TLS13: %d %q, want the handshake refused", code, body)
	}

	for _, tc := range []struct {
		sans string
		code int
	}{{"[scraper.example]", 200}, {"[other.example]", 0}} {
		addr = served(t, writeConf(t, t.TempDir(), base+"  client_ca_file: "+p.caFile+"\n  client_auth_type: RequireAndVerifyClientCert\n  client_allowed_sans: "+tc.sans+"\n"))
		if code, _, body := get(t, client(&p.client, 0), "https://"+addr+"/", "", ""); code != tc.code {
			t.Errorf("client_allowed_sans %s: %d %q, want %d", tc.sans, code, body, tc.code)
		}
	}
}

// TestRateLimit: burst 2, one more an hour: the third request at once is 429.
func TestRateLimit(t *testing.T) {
	addr := served(t, writeConf(t, t.TempDir(), "rate_limit:\n  burst: 2\n  interval: 1h\n"))
	c := &http.Client{Timeout: 5 * time.Second}
	var codes []int
	for range 3 {
		code, _, _ := get(t, c, "http://"+addr+"/", "", "")
		codes = append(codes, code)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("codes %v, want [200 200 429]", codes)
	}
	l := &limiter{burst: 1, every: time.Second, tokens: 1}
	t0 := time.Unix(0, 0)
	if !l.allow(t0) || l.allow(t0.Add(500*time.Millisecond)) || !l.allow(t0.Add(1600*time.Millisecond)) {
		t.Error("limiter: want a request, then none for a second, then one")
	}
}
