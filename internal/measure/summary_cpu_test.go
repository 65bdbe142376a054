package measure

import (
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestSamplerCPUPerGPU: a lean recording (no lane threads of its own per GPU) says its CPU is
// not measured per GPU and why, rather than blaming the OS or a hung lane as it did on four
// H200s (results/nvidia-h200/2026-11-28-four-gpus-2); with --gpu-cpu each GPU has its share,
// and a GPU without one among them is the hung-lane case.
func TestSamplerCPUPerGPU(t *testing.T) {
	t.Parallel()
	meta := func(cpu ...float64) trace.Meta {
		m := trace.Meta{Duration: 10}
		for i, c := range cpu {
			m.GPUs = append(m.GPUs, trace.GPU{Index: i, SamplerCPUSecs: c})
		}
		return m
	}
	lean := meta(0, 0)
	for _, g := range lean.GPUs {
		if h := samplerHealth(lean, g); h.CPUUnknown != notPerGPU || h.CPUShare != 0 {
			t.Errorf("lean GPU %d: %+v, want %q", g.Index, h, notPerGPU)
		}
	}
	per := meta(0.05, 0)
	if h := samplerHealth(per, per.GPUs[0]); h.CPUUnknown != "" || h.CPUShare != 0.005 {
		t.Errorf("--gpu-cpu GPU 0: %+v, want 0.5 %%", h)
	}
	if h := samplerHealth(per, per.GPUs[1]); h.CPUUnknown == "" || h.CPUUnknown == notPerGPU {
		t.Errorf("--gpu-cpu GPU 1 without a figure: %+v, want the hung-lane reason", h)
	}
}
