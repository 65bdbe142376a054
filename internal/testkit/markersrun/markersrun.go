// Package markersrun opens the markers run on an H200 (results/nvidia-h200/2026-11-24-markers:
// a PyTorch training loop with a region per step, recorded by measure) for tests that
// re-check a recorded real trace.
package markersrun

import (
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Dir is the directory of one recording of the run, "sync" or "nosync", found from the
// test's working directory (its package's) up to the module's root.
func Dir(mode string) string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return filepath.Join(dir, "results", "nvidia-h200", "2026-11-24-markers", mode)
}

// Load loads one recording of that run (sync or nosync), its CSV ungzipped into a
// temporary directory, and its markers as the trace keeps them ("begin NAME", "end NAME").
func Load(t testing.TB, mode string) (*trace.Trace, []marks.Event) {
	t.Helper()
	src := Dir(mode)
	dir := t.TempDir()
	in, err := os.Open(filepath.Join(src, "trace.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	meta, err := os.ReadFile(filepath.Join(src, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "trace.json"), meta, 0o644)
	tr, err := trace.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var evs []marks.Event
	for _, m := range tr.Meta.Marks {
		verb, name, ok := strings.Cut(m.Name, " ")
		if ok && (verb == "begin" || verb == "end") {
			evs = append(evs, marks.Event{Begin: verb == "begin", Name: name, T: time.Duration(math.Round(m.T * 1e9)), Stamped: true, Line: 1})
		}
	}
	return tr, evs
}
