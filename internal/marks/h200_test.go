package marks

import (
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// h200Run is the markers run on an H200 (results/nvidia-h200/2026-11-24-markers).
const h200Run = "../../results/nvidia-h200/2026-11-24-markers"

// loadRun loads one recording of that run (sync or nosync) and its markers, as the trace
// keeps them ("begin NAME", "end NAME").
func loadRun(t *testing.T, mode string) (*trace.Trace, []Event) {
	t.Helper()
	src := filepath.Join(h200Run, mode)
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
	var evs []Event
	for _, m := range tr.Meta.Marks {
		verb, name, ok := strings.Cut(m.Name, " ")
		if ok && (verb == "begin" || verb == "end") {
			evs = append(evs, Event{Begin: verb == "begin", Name: name, T: time.Duration(math.Round(m.T * 1e9)), Stamped: true, Line: 1})
		}
	}
	return tr, evs
}

// TestH200MarkersRun re-analyses the H200 run of a PyTorch training loop, a region per
// step (docs/markers.md, the run's README): synchronised at every marker, no region is
// flagged, each step size's energies repeat within 3 % (CV), a step's energy grows with
// its work (4096 over 1024 and 16384 over 4096: 4x the flops, 3.7-4.3x the energy), and the
// steps together are the train region that holds them within 1 %; without the
// synchronise, the warm-up's and the training loop's ends are flagged (the loop's work ran
// 4.2 s past its end marker) and no step is.
func TestH200MarkersRun(t *testing.T) {
	tr, evs := loadRun(t, "sync")
	spans, ws := Pair(evs)
	if len(ws) > 0 || len(spans) != 26 {
		t.Fatalf("%d regions, warnings %v", len(spans), ws)
	}
	regs := Energies(tr, spans, Options{SyncCheck: true})
	by := map[string][]float64{}
	steps, train := 0.0, 0.0
	for _, r := range regs {
		g := r.GPUs[0]
		if g.NoFigure {
			t.Fatalf("%s #%d: no figure", r.Name, r.Instance)
		}
		for _, w := range g.Warnings {
			if w.Code == CodeUnsynced {
				t.Errorf("%s #%d synchronised, but flagged: %s", r.Name, r.Instance, w.Message)
			}
		}
		by[r.Name] = append(by[r.Name], g.EnergyJ)
		if strings.HasPrefix(r.Name, "step_") {
			steps += g.EnergyJ
		}
		if r.Name == "train" {
			train = g.EnergyJ
		}
	}
	mean := map[string]float64{}
	for name, es := range by {
		var m, ss float64
		for _, e := range es {
			m += e
		}
		m /= float64(len(es))
		for _, e := range es {
			ss += (e - m) * (e - m)
		}
		mean[name] = m
		if len(es) > 1 {
			cv := math.Sqrt(ss/float64(len(es)-1)) / m
			t.Logf("%s: %d regions, %.1f J mean, CV %.2f %%", name, len(es), m, 100*cv)
			if cv > 0.03 {
				t.Errorf("%s: CV %.1f %% over %d steps, want within 3 %%", name, 100*cv, len(es))
			}
		}
	}
	for _, p := range [][2]string{{"step_b4096", "step_b1024"}, {"step_b16384", "step_b4096"}} {
		if r := mean[p[0]] / mean[p[1]]; r < 3.7 || r > 4.3 {
			t.Errorf("%s / %s = %.2f: 4x the flops, want 3.7-4.3x the energy", p[0], p[1], r)
		}
	}
	if d := steps/train - 1; math.Abs(d) > 0.01 {
		t.Errorf("the steps together %.1f J against the train region's %.1f J (%+.2f %%)", steps, train, 100*d)
	}

	tr, evs = loadRun(t, "nosync")
	spans, _ = Pair(evs)
	regs = Energies(tr, spans, Options{SyncCheck: true})
	flagged := map[string]bool{}
	for _, r := range regs {
		for _, w := range r.GPUs[0].Warnings {
			if w.Code == CodeUnsynced {
				flagged[r.Name] = true
				t.Logf("%s #%d: %s", r.Name, r.Instance, w.Message)
			}
		}
	}
	if !flagged["warmup"] || !flagged["train"] || len(flagged) != 2 {
		t.Errorf("flagged %v, want warmup and train alone", flagged)
	}
}
