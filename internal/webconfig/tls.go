package webconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// serverConfig is the tls.Config that t asks for. The certificate and key are loaded now
// (an error names the file) and again at every handshake (GetCertificate).
func (t *TLS) serverConfig() (*tls.Config, error) {
	if t.CertFile == "" && t.Cert == "" {
		return nil, errors.New("tls_server_config: missing one of cert or cert_file")
	}
	if t.KeyFile == "" && t.Key == "" {
		return nil, errors.New("tls_server_config: missing one of key or key_file")
	}
	if _, err := t.certificate(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     uint16(t.MinVersion),
		MaxVersion:     uint16(t.MaxVersion),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.certificate() },
	}
	for _, c := range t.CipherSuites {
		cfg.CipherSuites = append(cfg.CipherSuites, uint16(c))
	}
	for _, c := range t.CurvePreferences {
		cfg.CurvePreferences = append(cfg.CurvePreferences, tls.CurveID(c))
	}
	switch {
	case t.ClientCAFile != "":
		pem, err := infile.ReadFile(t.ClientCAFile, FileLimit)
		if err != nil {
			return nil, fmt.Errorf("tls_server_config: client_ca_file: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		cfg.ClientCAs.AppendCertsFromPEM(pem)
	case t.ClientCA != "":
		cfg.ClientCAs = x509.NewCertPool()
		cfg.ClientCAs.AppendCertsFromPEM([]byte(t.ClientCA))
	}
	if t.ClientAllowedSANs != nil {
		cfg.VerifyPeerCertificate = t.verifySANs
	}
	switch t.ClientAuthType {
	case "RequestClientCert":
		cfg.ClientAuth = tls.RequestClientCert
	case "RequireAnyClientCert", "RequireClientCert": // the latter kept by the toolkit for old files
		cfg.ClientAuth = tls.RequireAnyClientCert
	case "VerifyClientCertIfGiven":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "RequireAndVerifyClientCert":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "", "NoClientCert":
		cfg.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("tls_server_config: client_auth_type %q: want NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert", t.ClientAuthType)
	}
	if cfg.ClientCAs != nil && cfg.ClientAuth == tls.NoClientCert {
		return nil, errors.New("tls_server_config: client CAs are given without a client_auth_type that asks for a certificate")
	}
	return cfg, nil
}

// certificate loads the certificate and key (files, or the PEM given inline).
func (t *TLS) certificate() (*tls.Certificate, error) {
	cert, key := []byte(t.Cert), []byte(t.Key)
	var err error
	if t.CertFile != "" {
		if cert, err = infile.ReadFile(t.CertFile, FileLimit); err != nil {
			return nil, fmt.Errorf("tls_server_config: cert_file: %w", err)
		}
	}
	if t.KeyFile != "" {
		if key, err = infile.ReadFile(t.KeyFile, FileLimit); err != nil {
			return nil, fmt.Errorf("tls_server_config: key_file: %w", err)
		}
	}
	c, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("tls_server_config: the certificate and key (%s, %s): %w", orInline(t.CertFile), orInline(t.KeyFile), err)
	}
	return &c, nil
}

func orInline(path string) string {
	if path == "" {
		return "given inline"
	}
	return path
}

// verifySANs accepts a client certificate that has one of client_allowed_sans among its
// DNS names, e-mail addresses, IP addresses or URIs.
func (t *TLS) verifySANs(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("no client certificate")
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	sans := slices.Concat(cert.DNSNames, cert.EmailAddresses)
	for _, ip := range cert.IPAddresses {
		sans = append(sans, ip.String())
	}
	for _, u := range cert.URIs {
		sans = append(sans, u.String())
	}
	for _, s := range sans {
		if slices.Contains(t.ClientAllowedSANs, s) {
			return nil
		}
	}
	return fmt.Errorf("the client certificate has none of the allowed SANs %v", t.ClientAllowedSANs)
}
