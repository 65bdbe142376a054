// Package webconfig reads the web configuration file of `gpuwatt serve --web.config.file`
// (TLS, basic auth, response headers, a rate limit) in the format of the Prometheus
// exporter-toolkit (v0.20's web-configuration.md), the file node_exporter and Prometheus
// read, and serves an http.Server by it. The file is decoded strictly: a key that is not
// in the format, or a misspelt one, is an error naming it (and its line), never ignored.
// It is read again at every request (auth, headers) and every TLS handshake (certificates,
// client CAs), so a renewed certificate or a changed password is taken up without a
// restart, as the exporter-toolkit did.
package webconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// FileLimit bounds the configuration file and the certificate, key and CA files it names.
const FileLimit = 1 << 20

// Config is the file's content.
type Config struct {
	TLS       TLS               `yaml:"tls_server_config"`
	HTTP      HTTP              `yaml:"http_server_config"`
	RateLimit RateLimit         `yaml:"rate_limit"`
	Users     map[string]string `yaml:"basic_auth_users"` // user: bcrypt hash of the password
}

// TLS is tls_server_config. Files are named relative to the configuration file's folder.
type TLS struct {
	CertFile          string     `yaml:"cert_file"`
	KeyFile           string     `yaml:"key_file"`
	Cert              string     `yaml:"cert"` // the certificate's PEM itself
	Key               string     `yaml:"key"`  // the key's PEM itself
	ClientCAFile      string     `yaml:"client_ca_file"`
	ClientCA          string     `yaml:"client_ca"` // the client CAs' PEM itself
	ClientAuthType    string     `yaml:"client_auth_type"`
	ClientAllowedSANs []string   `yaml:"client_allowed_sans"`
	CipherSuites      []cipher   `yaml:"cipher_suites"`
	CurvePreferences  []curve    `yaml:"curve_preferences"`
	MinVersion        tlsVersion `yaml:"min_version"`
	MaxVersion        tlsVersion `yaml:"max_version"`
	PreferServer      bool       `yaml:"prefer_server_cipher_suites"` // accepted, no effect since Go 1.17 (as the toolkit)
}

// HTTP is http_server_config.
type HTTP struct {
	HTTP2   bool              `yaml:"http2"`
	Headers map[string]string `yaml:"headers"`
}

// RateLimit is rate_limit: at most Burst requests at once, one more every Interval.
type RateLimit struct {
	Burst    int           `yaml:"burst"`
	Interval time.Duration `yaml:"interval"`
}

// enabled reports whether the file asks for TLS at all (any of its keys that say so).
func (t *TLS) enabled() bool {
	return t.CertFile != "" || t.Cert != "" || t.KeyFile != "" || t.Key != "" || t.ClientCAFile != "" || t.ClientCA != "" || t.ClientAuthType != ""
}

// Read reads and decodes the file at path strictly, with the exporter-toolkit's defaults
// (TLS 1.2 to 1.3, HTTP/2 on), and checks the headers; relative file names are made
// relative to path's folder. It does not open the files the configuration names (Load
// does).
func Read(path string) (*Config, error) {
	b, err := infile.ReadFile(path, FileLimit)
	if err != nil {
		return nil, err
	}
	c := &Config{
		TLS:  TLS{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTP: HTTP{HTTP2: true},
	}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, err
	}
	if err := checkHeaders(c.HTTP.Headers); err != nil {
		return nil, err
	}
	if c.RateLimit.Interval < 0 || c.RateLimit.Burst < 0 {
		return nil, errors.New("rate_limit: burst and interval must not be negative")
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return c, nil
}

// Load reads the file at path and checks all of it as serving would: every password a
// bcrypt hash, the certificate and key loading as a pair, the client CAs and
// client_auth_type consistent.
func Load(path string) (*Config, error) {
	c, err := Read(path)
	if err != nil {
		return nil, err
	}
	for u, h := range c.Users {
		if _, err := bcrypt.Cost([]byte(h)); err != nil {
			return nil, fmt.Errorf("basic_auth_users: %s: the password must be a bcrypt hash: %v", u, err)
		}
	}
	if c.TLS.enabled() {
		if _, err := c.TLS.serverConfig(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// extraHeaders are the response headers http_server_config.headers may set, with the
// values allowed where the set is closed (the exporter-toolkit's list).
var extraHeaders = map[string][]string{
	"Strict-Transport-Security": nil,
	"X-Content-Type-Options":    {"nosniff"},
	"X-Frame-Options":           {"deny", "sameorigin"},
	"X-XSS-Protection":          nil,
	"Content-Security-Policy":   nil,
}

func checkHeaders(h map[string]string) error {
	for k, v := range h {
		allowed, ok := extraHeaders[k]
		if !ok {
			return fmt.Errorf("http_server_config.headers: %q can not be set (only Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy)", k)
		}
		if len(allowed) > 0 && !contains(allowed, v) {
			return fmt.Errorf("http_server_config.headers: %s: %q, want one of %q", k, v, allowed)
		}
	}
	return nil
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

type cipher uint16

func (c *cipher) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	for _, cs := range tls.CipherSuites() {
		if cs.Name == s {
			*c = cipher(cs.ID)
			return nil
		}
	}
	return fmt.Errorf("cipher_suites: unknown cipher suite %q (Go's crypto/tls names, such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)", s)
}

type curve tls.CurveID

var curves = map[string]curve{
	"CurveP256": curve(tls.CurveP256),
	"CurveP384": curve(tls.CurveP384),
	"CurveP521": curve(tls.CurveP521),
	"X25519":    curve(tls.X25519),
}

func (c *curve) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	v, ok := curves[s]
	if !ok {
		return fmt.Errorf("curve_preferences: unknown curve %q (CurveP256, CurveP384, CurveP521, X25519)", s)
	}
	*c = v
	return nil
}

type tlsVersion uint16

var tlsVersions = map[string]tlsVersion{
	"TLS13": tls.VersionTLS13,
	"TLS12": tls.VersionTLS12,
	"TLS11": tls.VersionTLS11,
	"TLS10": tls.VersionTLS10,
}

func (v *tlsVersion) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	x, ok := tlsVersions[s]
	if !ok {
		return fmt.Errorf("unknown TLS version %q (TLS10, TLS11, TLS12, TLS13)", s)
	}
	*v = x
	return nil
}
