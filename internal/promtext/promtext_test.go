package promtext

import (
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// want is what client_golang v1.25.0 (registry, then common v0.72.0's expfmt) wrote for
// expfmtCase's samples, recorded before gpuwatt dropped it: the independent computation
// this package is checked against.
const want = `# HELP x_total help with \\ backslash, "quotes" and a\nnewline	tab é
# TYPE x_total counter
x_total{a="",b="v00"} 0
x_total{a="",b="v01"} 0
x_total{a="",b="v02"} 1
x_total{a="",b="v03"} -1
x_total{a="",b="v04"} 0.1
x_total{a="",b="v05"} 1e-07
x_total{a="",b="v06"} 1.23456789012e+11
x_total{a="",b="v07"} 1e+21
x_total{a="",b="v08"} 1e+20
x_total{a="",b="v09"} 1.5e+300
x_total{a="",b="v10"} 1.7976931348623157e+308
x_total{a="",b="v11"} 5e-324
x_total{a="",b="v12"} NaN
x_total{a="",b="v13"} +Inf
x_total{a="",b="v14"} -Inf
x_total{a="",b="v15"} 2.5330406e+08
x_total{a="",b="v16"} 3733.029999999999
x_total{a="",b="v17"} 100000
x_total{a="",b="v18"} 1.234567e+06
x_total{a="",b="v19"} 0.000123
x_total{a="",b="v20"} -2.5
x_total{a="\\\"",b="w06"} 1
x_total{a="\\n",b="w05"} 1
x_total{a="a\\b",b="w00"} 1
x_total{a="n\nn",b="w02"} 1
x_total{a="q\"q",b="w01"} 1
x_total{a="t	t",b="w03"} 1
x_total{a="é",b="w04"} 1
`

// expfmtCase is the set whose exposition client_golang wrote as want (added in the order
// it was collected; the labels given as b, a).
func expfmtCase() *Set {
	d := NewDesc("x_total", "help with \\ backslash, \"quotes\" and a\nnewline\ttab é", Counter, "b", "a")
	var s Set
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-7, 123456789012, 1e21, 1e20, 1.5e300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 2.5330406e+08, 3733.029999999999, 100000, 1234567, 0.000123, -2.5}
	for i, v := range vals {
		s.Add(d, v, fmt.Sprintf("v%02d", i), "")
	}
	for i, x := range []string{`a\b`, `q"q`, "n\nn", "t\tt", "é", "\\n", `\"`} {
		s.Add(d, 1, fmt.Sprintf("w%02d", i), x)
	}
	return &s
}

// TestTextAsClientGolang: values (0, -0, ±1, NaN, ±Inf, the extremes, shortest forms),
// HELP and label escaping, label order and series order are client_golang's, byte for byte.
func TestTextAsClientGolang(t *testing.T) {
	got, dup := expfmtCase().Text(nil)
	if string(got) != want || dup != nil {
		t.Errorf("got (dup %v)\n%s\nwant\n%s", dup, got, want)
	}
}

// TestFamiliesSortedAndSelected: families by name (a family with no sample is not
// written), keep selects by name.
func TestFamiliesSortedAndSelected(t *testing.T) {
	b := NewDesc("b_gauge", "B.", Gauge)
	a := NewDesc("a_total", "A.", Counter, "x")
	NewDesc("c_empty", "never added", Gauge)
	var s Set
	s.Add(b, 2.5)
	s.Add(a, 3, "z")
	s.Add(a, 4, "y")
	got, _ := s.Text(nil)
	w := "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"y\"} 4\na_total{x=\"z\"} 3\n# HELP b_gauge B.\n# TYPE b_gauge gauge\nb_gauge 2.5\n"
	if string(got) != w {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
	got, _ = s.Text(func(n string) bool { return n == "b_gauge" })
	if string(got) != "# HELP b_gauge B.\n# TYPE b_gauge gauge\nb_gauge 2.5\n" {
		t.Errorf("keep b_gauge: %s", got)
	}
}

// TestBadSamples: a wrong number of label values and a second family of one name are
// refused and reported; a repeated series is written once (the first) and reported; a
// label value that is not UTF-8 is written with U+FFFD, and the rest of the family too.
func TestBadSamples(t *testing.T) {
	d := NewDesc("x_total", "h", Counter, "a")
	other := NewDesc("x_total", "h2", Counter, "a")
	var s Set
	s.Add(d, 1, "x")
	s.Add(d, 2, "x")
	s.Add(d, 3, "y\xff")
	s.Add(d, 4, "z")
	s.Add(d, 5)
	s.Add(other, 6, "w")
	got, dup := s.Text(nil)
	w := "# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"x\"} 1\nx_total{a=\"y\uFFFD\"} 3\nx_total{a=\"z\"} 4\n"
	if string(got) != w {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
	if len(dup) != 1 || !strings.Contains(dup[0].Error(), "[x] added twice") {
		t.Errorf("dup %v", dup)
	}
	if e := s.Errors(); len(e) != 2 || !strings.Contains(e[0].Error(), "0 label values for 1 labels") || !strings.Contains(e[1].Error(), "two families") {
		t.Errorf("errors %v", e)
	}
}

// TestNewDescRefusesBadNames: names Prometheus would not take panic at start.
func TestNewDescRefusesBadNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
	}{
		{"", nil}, {"1x", nil}, {"a-b", nil}, {"ok", []string{"a:b"}}, {"ok", []string{"__x"}}, {"ok", []string{"a", "a"}}, {"ok", []string{"é"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewDesc(%q, %q) did not panic", tc.name, tc.labels)
				}
			}()
			NewDesc(tc.name, "h", Gauge, tc.labels...)
		}()
	}
	NewDesc("a:b_c9", "h", Gauge, "_x", "Y9") // valid
}

// TestHandler: Content-Type and its escaping parameter, Vary, gzip as promhttp negotiated
// it, name[] selection, and a 500 naming the errors when nothing is left to serve.
func TestHandler(t *testing.T) {
	h := Handler(expfmtCase, nil)
	for _, tc := range []struct {
		accept, encoding, escaping string
		gz                         bool
	}{
		{"", "", "underscores", false},
		{"", "gzip", "underscores", true},
		{"", "gzip;q=0", "underscores", false},
		{"", "identity;q=1, gzip;q=0.5", "underscores", false},
		{"", "identity;q=0.5, gzip", "underscores", true},
		{"", "*", "underscores", false},
		{"", "br, *;q=0.5", "underscores", false}, // * ties identity (offered first)
		{"", "br, gzip;q=0.6, *;q=0.5", "underscores", true},
		{"text/plain;version=0.0.4;escaping=allow-utf-8", "deflate", "allow-utf-8", false},
		{"application/openmetrics-text;version=1.0.0;escaping=values;q=0.6,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip", "values", true},
		{"text/plain;version=0.0.4;q=0.9,application/openmetrics-text;escaping=dots;q=0.5", "", "underscores", false},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=bogus", "", "underscores", false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", tc.accept)
		req.Header.Set("Accept-Encoding", tc.encoding)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%+v: %d", tc, rec.Code)
		}
		if got := rec.Header().Get("Content-Type"); got != ContentType+"; escaping="+tc.escaping {
			t.Errorf("%+v: Content-Type %q", tc, got)
		}
		if got := strings.Join(rec.Header().Values("Vary"), ","); got != "Accept,Accept-Encoding" {
			t.Errorf("%+v: Vary %q", tc, got)
		}
		var body io.Reader = rec.Body
		if gz := rec.Header().Get("Content-Encoding") == "gzip"; gz != tc.gz {
			t.Errorf("%+v: Content-Encoding %q", tc, rec.Header().Get("Content-Encoding"))
		} else if gz {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		if b, err := io.ReadAll(body); err != nil || string(b) != want {
			t.Errorf("%+v: body (%v)\n%s", tc, err, b)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics?name[]=nothing", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("name[]=nothing: %d %q", rec.Code, rec.Body)
	}
	d := NewDesc("x", "h", Gauge, "a")
	bad := Handler(func() *Set { var s Set; s.Add(d, 1); return &s }, nil)
	rec = httptest.NewRecorder()
	bad.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "x: 0 label values for 1 labels") {
		t.Errorf("nothing but errors: %d %q", rec.Code, rec.Body)
	}
}
