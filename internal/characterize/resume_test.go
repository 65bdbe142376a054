package characterize

import (
	"context"
	"strings"
	"testing"
)

// Resuming with another GPU's results is refused, naming both.
func TestResumeOtherGPU(t *testing.T) {
	t.Parallel()
	opt := openSim(t)
	prev := &Result{Format: Format, Device: "nvml", Stages: []StageInfo{{Name: StageSensor, Status: StatusDone}}}
	prev.GPU.Name, prev.GPU.UUID = "NVIDIA H200", "GPU-1234"
	opt.Resume = prev
	_, err := characterise(context.Background(), opt)
	if err == nil || !strings.Contains(err.Error(), "GPU-1234") || !strings.Contains(err.Error(), "not of GPU 0") {
		t.Fatalf("err %v, want a refusal naming both GPUs", err)
	}
}

// A stage that was partial or failed in the earlier run runs again; a done one is kept.
//
// The earlier run is TestInterrupted's (sensor done, micro partial: stopped at its third
// step), shared (issue 30): until then this test ran sensor and micro to the end and marked
// micro partial by hand, a whole characterisation more for the same check. A resume that
// reran a done stage, kept a partial one, or numbered the runs wrong still fails it.
func TestResumeRerunsUnfinished(t *testing.T) {
	t.Parallel()
	first := sharedInterruptedRun(t)
	if first.Stage(StageSensor).Status != StatusDone || first.Stage(StageMicro).Status != StatusPartial {
		t.Fatalf("the earlier run's stages %+v: want sensor done, micro partial", first.Stages)
	}
	opt2 := openSimPreset(t, interruptedPreset())
	opt2.Stages, opt2.Resume = []string{StageSensor, StageMicro}, first
	r, err := characterise(context.Background(), opt2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stages[0].Run != 1 || r.Stages[1].Run != 2 || r.Stages[1].Status != StatusDone {
		t.Errorf("stages %+v: want sensor kept from run 1, micro run again in run 2", r.Stages)
	}
	if r.Sensor != first.Sensor {
		t.Error("the kept sensor stage's results are not the earlier run's")
	}
}
