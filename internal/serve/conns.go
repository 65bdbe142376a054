package serve

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits of serve's HTTP connections, as a Prometheus exporter keeps them: a scrape is
// one short request, and every connection that is idle, slow or one too many is closed,
// so that no client can hold serve's descriptors (20 000 idle keep-alive connections made
// every scrape fail).
const (
	ReadHeaderTimeout = 5 * time.Second  // the request line and headers
	ReadTimeout       = 10 * time.Second // the whole request
	WriteTimeout      = 30 * time.Second // the answer (a scrape takes milliseconds)
	IdleTimeout       = 30 * time.Second // a keep-alive connection between requests (Prometheus scrapes every 15 s or more; it reconnects)
	MaxConns          = 64               // open connections; past it the oldest idle one is closed, and a new one while none is idle
)

// harden sets the server's timeouts and caps its connections (connCap, returned).
func harden(hs *http.Server) *connCap {
	hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout = ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout
	c := &connCap{max: MaxConns, open: map[net.Conn]bool{}, idle: map[net.Conn]time.Time{}}
	prev := hs.ConnState
	hs.ConnState = func(conn net.Conn, st http.ConnState) {
		c.track(conn, st)
		if prev != nil {
			prev(conn, st)
		}
	}
	return c
}

// Open is how many connections are open.
func (c *connCap) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// connCap keeps at most max connections open: a new one beyond it closes the connection
// idle the longest, or itself where none is idle (every one busy with a request: each
// bounded by the read and write timeouts).
type connCap struct {
	mu   sync.Mutex
	max  int
	open map[net.Conn]bool
	idle map[net.Conn]time.Time
}

func (c *connCap) track(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	var drop net.Conn
	switch st {
	case http.StateNew:
		c.open[conn] = true
		if len(c.open) > c.max {
			drop = conn
			var oldest time.Time
			for ic, t := range c.idle {
				if drop == conn || t.Before(oldest) {
					drop, oldest = ic, t
				}
			}
		}
	case http.StateIdle:
		c.idle[conn] = time.Now()
	case http.StateActive:
		delete(c.idle, conn)
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
		delete(c.idle, conn)
	}
	if drop != nil {
		delete(c.open, drop)
		delete(c.idle, drop)
	}
	c.mu.Unlock()
	if drop != nil {
		drop.Close()
	}
}
