package webconfig

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// handler applies the file's rate limit, headers and basic auth to each request, the file
// read afresh each time.
type handler struct {
	path   string
	next   http.Handler
	logger *slog.Logger
	limit  *limiter

	mu    sync.Mutex // one bcrypt at a time (each ~50 ms of CPU), and the cache
	cache map[[32]byte]bool
}

// fakeHash is compared against when the user is unknown, so that the answer takes as long
// as for a known user (no user enumeration by timing): bcrypt of "fakepassword", cost 10,
// as the exporter-toolkit.
const fakeHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

// cacheSize bounds the cache of bcrypt verdicts (user, hash, password → ok).
const cacheSize = 100

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := Read(h.path)
	if err != nil {
		h.logger.Error("web configuration file", "path", h.path, "err", err)
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	if h.limit != nil && !h.limit.allow(time.Now()) {
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	for k, v := range c.HTTP.Headers {
		w.Header().Set(k, v)
	}
	if len(c.Users) == 0 || h.authorized(c.Users, r) {
		h.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("WWW-Authenticate", "Basic")
	http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
}

// authorized reports whether r's basic-auth user is in users with its password.
func (h *handler) authorized(users map[string]string, r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	hash, known := users[user]
	if !known {
		hash = fakeHash
	}
	// The key holds no password in clear: a digest of the three, with their lengths.
	key := sha256.Sum256([]byte(lenPrefixed(user) + lenPrefixed(hash) + lenPrefixed(pass)))
	h.mu.Lock()
	defer h.mu.Unlock()
	good, cached := h.cache[key]
	if !cached {
		good = bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) == nil // constant time in the hash
		if len(h.cache) >= cacheSize {
			clear(h.cache)
		}
		h.cache[key] = good
	}
	return good && known
}

func lenPrefixed(s string) string {
	n := len(s)
	return string([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) + s
}
