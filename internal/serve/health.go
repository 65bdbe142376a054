package serve

import (
	"fmt"
	"net/http"
	"strings"
)

// Health says whether serve is ready: every watched GPU has given a reading and is up. Where
// not, reasons say which GPU is not, and why, one line each.
func (s *Server) Health() (ready bool, reasons []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gpus {
		if why := g.unready(); why != "" {
			reasons = append(reasons, fmt.Sprintf("gpu %d (%s): %s", g.info.Index, g.info.UUID, why))
		}
	}
	return len(reasons) == 0, reasons
}

// unready says why the GPU is not ready ("" when it is): no reading yet, or down (every
// driver call since the previous update failed). Under Server.mu.
func (g *gpuState) unready() string {
	g.mu.Lock()
	read := len(g.latest) > 0
	g.mu.Unlock()
	switch {
	case !g.up:
		return "down: " + g.reason
	case !read:
		return "no reading yet"
	}
	return ""
}

// healthHandler answers /health: 200 "ok" when ready, else 503 with the reasons, for
// Kubernetes' probes and load balancers.
func (s *Server) healthHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	ready, reasons := s.Health()
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", strings.Join(reasons, "; "))
		return
	}
	fmt.Fprintln(w, "ok")
}
