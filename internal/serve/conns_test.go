package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestConnectionCap: 300 keep-alive connections left idle after a scrape each (20 000 of
// them exhausted serve's descriptors and every scrape failed) are held to MaxConns, and a
// new scrape is answered; the server has its read, write and idle timeouts.
func TestConnectionCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })}
	c := harden(hs)
	if hs.IdleTimeout != IdleTimeout || hs.ReadTimeout != ReadTimeout || hs.ReadHeaderTimeout != ReadHeaderTimeout || hs.WriteTimeout != WriteTimeout {
		t.Errorf("timeouts %+v", hs)
	}
	go hs.Serve(ln)
	defer hs.Shutdown(context.Background())
	url := "http://" + ln.Addr().String() + "/"
	var conns []net.Conn
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			b := make([]byte, 512)
			conn.Read(b)
			mu.Lock()
			conns = append(conns, conn) // kept open, idle
			mu.Unlock()
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if n := c.Open(); n > MaxConns {
		t.Errorf("%d connections open, want at most %d", n, MaxConns)
	}
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("a scrape with %d idle connections about: %v", len(conns), err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok\n" {
		t.Errorf("answer %q", b)
	}
}
