package webconfig

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves hs on ln as the configuration file at path says: TLS where it has a
// tls_server_config (the file, certificates and client CAs read again at every
// handshake), basic auth where it has basic_auth_users, its headers and rate limit (the
// file read again at every request). The file is checked first (Load). logger receives
// the requests refused because the file no longer reads.
func Serve(ln net.Listener, hs *http.Server, path string, logger *slog.Logger) error {
	c, err := Load(path)
	if err != nil {
		return err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	next := hs.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	h := &handler{path: path, next: next, logger: logger, cache: map[[32]byte]bool{}}
	if c.RateLimit.Interval > 0 {
		h.limit = &limiter{burst: float64(c.RateLimit.Burst), every: c.RateLimit.Interval, tokens: float64(c.RateLimit.Burst)}
	}
	hs.Handler = h
	if !c.TLS.enabled() {
		return hs.Serve(ln)
	}
	cfg, err := c.TLS.serverConfig()
	if err != nil {
		return err
	}
	protos := []string{"http/1.1"}
	if c.HTTP.HTTP2 {
		protos = []string{"h2", "http/1.1"}
	} else {
		hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // no HTTP/2
	}
	cfg.NextProtos = protos
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := Read(path)
		if err != nil {
			logger.Error("web configuration file", "path", path, "err", err)
			return nil, err
		}
		cfg, err := c.TLS.serverConfig()
		if err != nil {
			logger.Error("web configuration file", "path", path, "err", err)
			return nil, err
		}
		cfg.NextProtos = protos
		return cfg, nil
	}
	hs.TLSConfig = cfg
	return hs.ServeTLS(ln, "", "")
}

// limiter is rate_limit's token bucket: burst requests at once, one more every every.
type limiter struct {
	mu     sync.Mutex
	burst  float64
	every  time.Duration
	tokens float64
	last   time.Time
}

func (l *limiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.every))
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
