package record

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// h200Loop is bench/gpu/python_loop.sh's run on an H200 (issue 31).
const h200Loop = "../../results/nvidia-h200/2026-11-28-python-loop"

// TestH200PythonLoop re-checks the H200 run: measure's recording of the loop, its regions
// computed again with this code from the saved trace and markers, against the package's
// final figures for the same 30 spans (its own recorder on the same GPU): each pair agrees
// within the two 95 % intervals, and within 1.5 % (1.38 % in the run, 0.71 % for steps of
// 0.2 s and more).
func TestH200PythonLoop(t *testing.T) {
	t.Parallel()
	tr, err := trace.Load(filepath.Join(h200Loop, "measure"))
	if err != nil {
		t.Fatal(err)
	}
	spans, ws := marks.Pair(marks.FromTrace(tr.Meta.Marks))
	if len(ws) != 0 || len(spans) != 30 {
		t.Fatalf("%d spans, %v", len(spans), ws)
	}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true})
	b, err := os.ReadFile(filepath.Join(h200Loop, "loop.json"))
	if err != nil {
		t.Fatal(err)
	}
	var loop struct {
		Final []Window `json:"final"`
	}
	if err := json.Unmarshal(b, &loop); err != nil {
		t.Fatal(err)
	}
	pkg := map[string]Window{}
	for _, w := range loop.Final {
		pkg[fmt.Sprintf("%s#%d", w.Name, w.Instance)] = w
	}
	for _, r := range regs {
		key := fmt.Sprintf("%s#%d", r.Name, r.Instance)
		w, ok := pkg[key]
		if !ok || len(w.GPUs) != 1 || len(r.GPUs) != 1 || w.Simulated {
			t.Fatalf("%s: package %+v", key, w)
		}
		m, p := r.GPUs[0], w.GPUs[0]
		d := p.EnergyJ - m.EnergyJ
		if math.Abs(d) > p.HalfWidthJ()+m.HalfWidthJ() || math.Abs(d) > 0.015*m.EnergyJ {
			t.Errorf("%s (%.3f s): the package %.3f J [%.3f, %.3f], measure %.3f J [%.3f, %.3f]", key, r.DurationS, p.EnergyJ, p.LowJ, p.HighJ, m.EnergyJ, m.LowJ, m.HighJ)
		}
		// Two recordings, two axes: the spans' lengths agree (the edges microseconds apart).
		if math.Abs(w.DurationS-r.DurationS) > 1e-3 {
			t.Errorf("%s: the spans last %.6f and %.6f s", key, w.DurationS, r.DurationS)
		}
	}
}
