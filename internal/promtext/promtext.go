// Package promtext writes metrics in the Prometheus text exposition format, version 0.0.4,
// and serves them over HTTP as client_golang's promhttp did for gpuwatt: families sorted by
// name, each with its HELP and TYPE lines; series sorted by their label values, labels in
// the order of their names; label values escaped (\\, \", \n), HELP escaped (\\, \n); values
// as Go's shortest round-trip form ('g'), with NaN, +Inf and -Inf; gzip when the scraper
// accepts it. gpuwatt's metrics are all const metrics made afresh at each scrape, so a
// Set is all there is: no registry, no collectors.
package promtext

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Type is a family's TYPE: gpuwatt has gauges and counters.
type Type string

const (
	Gauge   Type = "gauge"
	Counter Type = "counter"
)

// Desc describes a family: its name, HELP text, TYPE and label names.
type Desc struct {
	name, help string
	typ        Type
	labels     []string // as given: Add's values come in this order
	order      []int    // indexes of labels sorted by name: the order they are written in
}

// NewDesc returns a family's description. A name or label name that Prometheus would not
// accept, or a label named twice, is a programming error: it panics.
func NewDesc(name, help string, typ Type, labels ...string) *Desc {
	if !validName(name, true) {
		panic(fmt.Sprintf("promtext: invalid metric name %q", name))
	}
	if typ != Gauge && typ != Counter {
		panic(fmt.Sprintf("promtext: %s: type %q", name, typ))
	}
	d := &Desc{name: name, help: help, typ: typ, labels: slices.Clone(labels)}
	for i, l := range labels {
		if !validName(l, false) || strings.HasPrefix(l, "__") {
			panic(fmt.Sprintf("promtext: %s: invalid label name %q", name, l))
		}
		if slices.Index(labels, l) != i {
			panic(fmt.Sprintf("promtext: %s: label %q named twice", name, l))
		}
		d.order = append(d.order, i)
	}
	slices.SortFunc(d.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return d
}

// Name is the family's name.
func (d *Desc) Name() string { return d.name }

// validName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* (with ':' where colon).
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') || (colon && r == ':')
		if !ok {
			return false
		}
	}
	return true
}

// series is one sample of a family: its label values (in the Desc's given order) and value.
type series struct {
	values []string
	v      float64
}

type family struct {
	d      *Desc
	series []series
}

// Set is what one scrape exposes: the samples added to it, by family.
type Set struct {
	fams map[string]*family
	errs []error
}

// Add adds a sample of d with the label values in d's label order. A label value that is
// not valid UTF-8 has its invalid bytes replaced by U+FFFD (a process's comm may hold any
// bytes; client_golang refused the whole scrape's remainder for one). A wrong number of
// values, a second family of the same name, or a series that repeats one already added
// (the same label values) is not written and is reported by Errors.
func (s *Set) Add(d *Desc, v float64, values ...string) {
	if len(values) != len(d.labels) {
		s.errs = append(s.errs, fmt.Errorf("%s: %d label values for %d labels %v", d.name, len(values), len(d.labels), d.labels))
		return
	}
	if s.fams == nil {
		s.fams = map[string]*family{}
	}
	f := s.fams[d.name]
	if f == nil {
		f = &family{d: d}
		s.fams[d.name] = f
	} else if f.d != d {
		s.errs = append(s.errs, fmt.Errorf("%s: two families of that name", d.name))
		return
	}
	vs := make([]string, len(values))
	for i, x := range values {
		if !utf8.ValidString(x) {
			x = strings.ToValidUTF8(x, "\uFFFD")
		}
		vs[i] = x
	}
	f.series = append(f.series, series{values: vs, v: v})
}

// Errors are the samples Add could not take, one error each.
func (s *Set) Errors() []error { return s.errs }

// Len is the number of families with at least one sample.
func (s *Set) Len() int { return len(s.fams) }

// Text is the exposition of the families that keep selects (all of them when keep is nil).
// Series that repeat one of their family (the same label values) are dropped, the first
// kept, and reported in dup.
func (s *Set) Text(keep func(name string) bool) (text []byte, dup []error) {
	names := make([]string, 0, len(s.fams))
	for n := range s.fams {
		if keep == nil || keep(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		dup = append(dup, s.fams[n].write(&b)...)
	}
	return b.Bytes(), dup
}

// write writes f's HELP, TYPE and series lines to b.
func (f *family) write(b *bytes.Buffer) (dup []error) {
	d := f.d
	sorted := slices.Clone(f.series)
	slices.SortStableFunc(sorted, func(x, y series) int {
		for _, i := range d.order {
			if c := strings.Compare(x.values[i], y.values[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	b.WriteString("# HELP ")
	b.WriteString(d.name)
	b.WriteByte(' ')
	helpEscaper.WriteString(b, d.help)
	b.WriteString("\n# TYPE ")
	b.WriteString(d.name)
	b.WriteByte(' ')
	b.WriteString(string(d.typ))
	b.WriteByte('\n')
	for i, x := range sorted {
		if i > 0 && slices.Equal(x.values, sorted[i-1].values) {
			dup = append(dup, fmt.Errorf("%s: series %v added twice; the first kept", d.name, x.values))
			continue
		}
		b.WriteString(d.name)
		if len(d.order) > 0 {
			b.WriteByte('{')
			for j, k := range d.order {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(d.labels[k])
				b.WriteString(`="`)
				valueEscaper.WriteString(b, x.values[k])
				b.WriteByte('"')
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.Write(AppendFloat(b.AvailableBuffer(), x.v))
		b.WriteByte('\n')
	}
	return dup
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// AppendFloat appends v as the text format writes a value: 0, 1 and -1 (and -0 as 0),
// NaN, +Inf, -Inf, else the shortest form that reads back as v ('g' with exponent e+NN).
func AppendFloat(dst []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(dst, '0')
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}
