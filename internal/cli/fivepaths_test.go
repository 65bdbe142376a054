package cli

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/job"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/testkit/markersrun"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestFivePathsOneFigure: one recorded span (the H200 markers run, results/nvidia-h200/
// 2026-11-24-markers) told by the five paths that report an energy: measure's region
// (energy.Marked on the trace's marks), `energy --region`, `energy --from/--to` on the
// region's edges to the nanosecond, job (job.GPUFigure over the same span) and the Go
// library (Trace.Regions, and Trace.Energy over the same span). Each gives the same
// energy, relative and absolute interval and method, to the last digit: one estimator,
// its intervals edited by none of them.
func TestFivePathsOneFigure(t *testing.T) {
	t.Parallel()
	run := markersrun.Dir("sync")
	tr, err := trace.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := marks.Pair(marks.FromTrace(tr.Meta.Marks))
	lib, err := gpuwatt.LoadTrace(run)
	if err != nil {
		t.Fatal(err)
	}
	libRegs, _ := lib.Regions()
	measured := energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true})
	type fig struct {
		E, Lo, Hi, ALo, AHi float64
		Method              string
	}
	for _, pick := range []struct {
		spec string
		name string
		k    int
	}{{"train", "train", 1}, {"step_b4096#3", "step_b4096", 3}, {"step_b1024#2", "step_b1024", 2}} {
		i := -1
		for j, s := range spans {
			if s.Name == pick.name && s.Instance == pick.k {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("no %s in the run", pick.spec)
		}
		s := spans[i]
		m := measured[i].GPUs[0]
		paths := map[string]fig{"measure": {m.EnergyJ, m.LowJ, m.HighJ, m.AbsoluteLowJ, m.AbsoluteHighJ, string(m.Method)}}

		verb := func(args ...string) fig {
			a, stdout, stderr, ctx := testApp(t)
			if code := a.Main(ctx, append([]string{"energy", "--trace", run, "--json"}, args...)); code != 0 {
				t.Fatalf("energy %v: exit %d: %s", args, code, stderr)
			}
			var r energy.Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			return fig{r.EnergyJ, r.LowJ, r.HighJ, r.AbsoluteLowJ, r.AbsoluteHighJ, string(r.EnergyMethod)}
		}
		paths["energy --region"] = verb("--region", pick.spec)
		paths["energy --from/--to"] = verb("--from", fmt.Sprintf("%dns", s.Start.Nanoseconds()), "--to", fmt.Sprintf("%dns", s.End.Nanoseconds()))

		g := job.GPUFigure(tr, job.BeginGPU{Index: 0, PowerLimitW: tr.Meta.GPUs[0].PowerLimitW}, s.Start, s.End, &energy.Cache{})
		paths["job"] = fig{g.EnergyJ, g.LowJ, g.HighJ, g.AbsoluteLowJ, g.AbsoluteHighJ, string(g.Method)}

		l := libRegs[i].GPUs[0]
		if libRegs[i].Start != s.Start || libRegs[i].End != s.End {
			t.Fatalf("the library's %s spans %v to %v, the marks %v to %v", pick.spec, libRegs[i].Start, libRegs[i].End, s.Start, s.End)
		}
		paths["library"] = fig{l.Joules, l.Low, l.High, l.AbsLow, l.AbsHigh, l.Method}
		le := lib.Energy(0, s.Start, s.End)
		paths["library Trace.Energy"] = fig{le.Joules, le.Low, le.High, le.AbsLow, le.AbsHigh, le.Method}

		want := paths["measure"]
		t.Logf("%s (%v to %v): %.6f J [%.6f, %.6f], absolute [%.6f, %.6f], %s", pick.spec, s.Start, s.End, want.E, want.Lo, want.Hi, want.ALo, want.AHi, want.Method)
		if want.Method == "" || want.Hi <= want.Lo || want.E <= 0 {
			t.Errorf("%s: measure gave no figure: %+v", pick.spec, want)
		}
		for name, got := range paths {
			if got != want {
				t.Errorf("%s: %s gave %+v, measure's region %+v", pick.spec, name, got, want)
			}
		}
	}
}
