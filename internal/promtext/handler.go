package promtext

import (
	"compress/gzip"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ContentType is the text format's media type as promhttp gave it; the escaping parameter
// (how names outside [a-zA-Z0-9_:] would be escaped; gpuwatt has none) follows the
// scraper's Accept header, underscores by default.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the Set that gather makes at each request: the whole exposition is made
// before the first byte is sent, so the answer is all of it or an error, never part. The
// samples Add refused and the repeated series are left out and logged to log (when not
// nil); when nothing at all is left to serve, the answer is 500 with the errors. The query
// parameter name[] (repeatable) selects families by name, as promhttp's does.
func Handler(gather func() *Set, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := gather()
		var keep func(string) bool
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			keep = func(n string) bool { return slices.Contains(names, n) }
		}
		text, dup := set.Text(keep)
		errs := append(slices.Clone(set.Errors()), dup...)
		if len(errs) > 0 && log != nil {
			log.Error("metrics left out of /metrics", "err", errors.Join(errs...))
		}
		if len(errs) > 0 && set.Len() == 0 {
			http.Error(w, "error gathering metrics: "+errors.Join(errs...).Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Type", ContentType+"; escaping="+escaping(r.Header.Get("Accept")))
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Length", strconv.Itoa(len(text)))
			w.Write(text)
			return
		}
		h.Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(text)
		zw.Close()
	})
}

// clause is one element of an Accept or Accept-Encoding header.
type clause struct {
	value  string // type/subtype, or an encoding
	q      float64
	params map[string]string
}

func parseClauses(header string) []clause {
	var out []clause
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(part, ";")
		c := clause{value: strings.ToLower(strings.TrimSpace(fields[0])), q: 1, params: map[string]string{}}
		if c.value == "" {
			continue
		}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(p, "=")
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.Trim(strings.TrimSpace(v), `"`)
			if k == "q" {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					c.q = q
				}
				continue
			}
			c.params[k] = v
		}
		out = append(out, c)
	}
	return out
}

// acceptsGzip reports whether the Accept-Encoding header prefers gzip to identity as
// promhttp negotiated it (gzip or * with the highest q, above 0; ties go to identity,
// offered first).
func acceptsGzip(header string) bool {
	best, bestQ := "identity", -1.0
	for _, offer := range []string{"identity", "gzip"} {
		for _, c := range parseClauses(header) {
			if c.q > bestQ && (c.value == "*" || c.value == offer) {
				best, bestQ = offer, c.q
			}
		}
	}
	return best == "gzip" && bestQ > 0
}

// escaping is the Content-Type's escaping parameter: that of the Accept header's clauses,
// in order of preference, up to the first that the text format 0.0.4 answers (as
// common/expfmt's NegotiateAccept set it); underscores when none names one.
func escaping(accept string) string {
	cs := parseClauses(accept)
	slices.SortStableFunc(cs, func(a, b clause) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return 0
	})
	scheme := "underscores"
	for _, c := range cs {
		switch e := c.params["escaping"]; e {
		case "allow-utf-8", "underscores", "dots", "values":
			scheme = e
		}
		if textMatches(c) {
			break
		}
	}
	return scheme
}

// textMatches reports whether an Accept clause takes text/plain version 0.0.4.
func textMatches(c clause) bool {
	if c.value != "text/plain" {
		return false // expfmt matched */* and text/* to no version, and so to nothing
	}
	v, ok := c.params["version"]
	return !ok || v == "" || v == "0.0.4"
}
