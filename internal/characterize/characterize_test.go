package characterize

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func openSim(t *testing.T) Options {
	t.Helper()
	return openSimPreset(t, "h100")
}

func openSimPreset(t *testing.T, preset string) Options {
	t.Helper()
	cfg, err := sim.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	t.Cleanup(func() { sys.Close() })
	return Options{Clock: clk, System: sys, Device: sys.Devices()[0], Quick: true}
}

// interruptedPreset is the twin of the interrupted run: v100 by default, h100 where the slow
// tests run (CI). What these tests check is the stages' bookkeeping (kept, partial, not
// run, run again), which does not depend on the board; v100's sensor and micro stages take
// half of h100's CPU (issue 30: TestInterrupted 1.9 -> 0.8 s alone).
func interruptedPreset() string {
	if testkit.SlowOn() {
		return "h100"
	}
	return "v100"
}

// interruptedRun is a characterisation of every stage stopped (as by Ctrl-C) at micro's
// third step: TestInterrupted checks what it kept; TestResumeRerunsUnfinished resumes from it.
var interruptedRun struct {
	once sync.Once
	res  *Result
	err  error
}

func sharedInterruptedRun(t *testing.T) *Result {
	t.Helper()
	r := &interruptedRun
	r.once.Do(func() {
		opt := openSimPreset(t, interruptedPreset())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opt.Progress = func(e status.Event) {
			if e.Stage == StageMicro && e.I == 3 {
				cancel()
			}
		}
		r.res, r.err = characterise(ctx, opt)
	})
	if r.err != nil || r.res == nil {
		t.Fatalf("the interrupted run: %v", r.err)
	}
	return r.res
}

// TestInterrupted: Ctrl-C during a stage keeps what was measured, marks the results
// incomplete and lists the stages not run; the page says so.
func TestInterrupted(t *testing.T) {
	t.Parallel()
	r := sharedInterruptedRun(t)
	if !r.Incomplete || !slices.Equal(r.NotRun, []string{StageArchline, StageLoadlevel}) {
		t.Fatalf("incomplete %v, not run %v", r.Incomplete, r.NotRun)
	}
	if r.Sensor == nil || r.Stage(StageSensor).Status != StatusDone {
		t.Errorf("the sensor stage's results were not kept: %+v", r.Stage(StageSensor))
	}
	if s := r.Stage(StageMicro); s == nil || s.Status != StatusPartial {
		t.Errorf("micro stage %+v, want partial", s)
	}
	if s := r.Stage(StageLoadlevel); s == nil || s.Status != StatusNotRun {
		t.Errorf("loadlevel stage %+v, want not run", s)
	}
	if err := report.WriteJSON(filepath.Join(t.TempDir(), "results.json"), r); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Page().Render(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INCOMPLETE", "stages not run: archline, loadlevel", "This stage was not run"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestUnknownStage(t *testing.T) {
	t.Parallel()
	opt := openSim(t)
	opt.Stages = []string{"sensor", "tea"}
	if _, err := characterise(context.Background(), opt); err == nil || !strings.Contains(err.Error(), `"tea"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestInvalidLoadLevelWarnedOnce: each reason an invalid load-level run gives is one warning,
// marked INVALID, told once however many runs give it, and the runs' own warnings stay.
func TestInvalidLoadLevelWarnedOnce(t *testing.T) {
	t.Parallel()
	why := "level 100 % (interval 003_lvl): actual load 105.36 % is not within ±2.0 points of the target"
	note := func(m string) status.Status {
		return status.Status{Warnings: []status.Warning{status.Warnf("note", "%s", m)}}
	}
	run := func() *loadlevel.RunResult {
		return &loadlevel.RunResult{Invalid: []string{why}, Status: note("run note")}
	}
	r := &Result{Loadlevel: &loadlevel.Result{Status: note("stage note"), Configs: []*loadlevel.ConfigResult{
		{Runs: []*loadlevel.RunResult{run(), run()}}}}}
	ws := status.Group(collectWarnings(r), 0)
	n := 0
	for _, w := range ws {
		if strings.Contains(w, "105.36 %") {
			n++
			if w != "loadlevel: INVALID run: "+why {
				t.Errorf("warning %q", w)
			}
		}
	}
	if n != 1 || !slices.Contains(ws, "loadlevel: stage note") || !slices.Contains(ws, "loadlevel: run note") || len(ws) != 3 {
		t.Errorf("%d INVALID warnings in %q", n, ws)
	}
}

// TestMicroPlot: the summary plot has the kernels counted per instruction or byte, numbered
// as its list names them; the baseline (per launch) is left out, and a kernel with nothing
// above pi0 has no point on the log axis.
func TestMicroPlot(t *testing.T) {
	t.Parallel()
	m := &micro.Result{Rows: []micro.Row{
		{Name: "baseline", Unit: "launch", PJPerUnit: 4e8},
		{Name: "fp32.fma", Unit: "op", PJPerUnit: 11.7, PJPerUnitAbovePi0: 7.9},
		{Name: "dram.copy", Unit: "B", PJPerUnit: 110, PJPerUnitAbovePi0: 0},
	}}
	p, names := microPlot(m)
	if !slices.Equal(names, []string{"1 fp32.fma", "2 dram.copy"}) {
		t.Errorf("names %q", names)
	}
	all, above := p.Series[0], p.Series[1]
	if !slices.Equal(all.X, []float64{1, 2}) || !slices.Equal(all.Y, []float64{11.7, 110}) || !slices.Equal(above.X, []float64{1}) || !slices.Equal(above.Y, []float64{7.9}) {
		t.Errorf("in all %v %v, above pi0 %v %v", all.X, all.Y, above.X, above.Y)
	}
}

func TestShortNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want []string }{
		{[]string{"r/h200/full/ch", "r/h200/quick/ch"}, []string{"full/ch", "quick/ch"}},
		{[]string{"a/x-full/full", "a/x-quick/quick", "a/x-quick-run3/quick"}, []string{"x-full/full", "x-quick/quick", "x-quick-run3/quick"}},
		{[]string{"h100", "h200/"}, []string{"h100", "h200"}},
		{[]string{"same", "same"}, []string{"same", "same"}},
	} {
		if got := ShortNames(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ShortNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHeadlineNamesTheCard: two cards of one model are told apart by UUID and date.
func TestHeadlineNamesTheCard(t *testing.T) {
	t.Parallel()
	r := &Result{GPU: trace.GPU{Name: "NVIDIA H200", UUID: "GPU-7834e710"}, Date: "2026-11-21T13:36:36Z"}
	h := r.Headline()
	if !slices.Contains(h, [2]string{"UUID", "GPU-7834e710"}) || !slices.Contains(h, [2]string{"date", "2026-11-21T13:36:36Z"}) {
		t.Errorf("headline %q", h)
	}
}
