package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/nvmlgpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// fakeCUDASystem is the sim's system with its kernels run on the fake libcuda instead of
// the sim's model (the sensors stay the sim's): the hang-th kernel prepared hangs.
type fakeCUDASystem struct {
	gpu.System
	exec *hangAt
}

func (s *fakeCUDASystem) Devices() []gpu.Device {
	var out []gpu.Device
	for _, d := range s.System.Devices() {
		out = append(out, &fakeCUDADevice{Device: d, hangAt: s.exec})
	}
	return out
}

type fakeCUDADevice struct {
	gpu.Device
	*hangAt
}

// hangAt runs kernels on the fake libcuda, arming its hang when the hang-th is prepared.
type hangAt struct {
	x    *nvmlgpu.CUDAExecutor
	fake *cudatest.Fake
	hang int

	mu       sync.Mutex
	prepared []string
}

func (h *hangAt) Props() gpu.Props { return h.x.Props() }

func (h *hangAt) Prepare(d kernels.Descriptor) (gpu.Kernel, error) {
	h.mu.Lock()
	h.prepared = append(h.prepared, d.Name)
	if len(h.prepared) == h.hang {
		h.fake.SetHang(true)
	}
	h.mu.Unlock()
	return h.x.Prepare(d)
}

// TestKernelHangsDuringMicro: the second kernel of micro's run never finishes (the fake
// libcuda's hang, on a real clock). Before, micro waited on the CUDA driver for ever
// (cuEventSynchronize); now the wait is bounded, the run ends with the kernel before it
// measured and written, results.json incomplete naming the kernel that hangs, the kernels
// after it not run, and exit 1 (issue 20).
func TestKernelHangsDuringMicro(t *testing.T) {
	t.Parallel()
	path := cudatest.Build(t)
	fake := cudatest.Control(t, path)
	t.Cleanup(func() { fake.SetHang(false) })
	fake.SetPerLaunchMS(2)
	a, _, stderr, ctx := testApp(t)
	clk := clock.NewReal()
	a.NewClock = func() clock.Clock { return clk }
	h := &hangAt{x: nvmlgpu.NewCUDAExecutor(cudatest.Dev0UUID, clk, 200*time.Millisecond, path), fake: fake, hang: 2}
	a.WrapSystem = func(s gpu.System) gpu.System { return &fakeCUDASystem{System: s, exec: h} }
	out := filepath.Join(t.TempDir(), "micro")
	t0 := time.Now()
	code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "baseline,fp32.fma,fp64.fma", "--min-updates", "3", "--warmup", "0s", "--quiet", "--out", out})
	d := time.Since(t0)
	t.Logf("exit %d after %v: %s", code, d, stderr)
	if d > 20*time.Second {
		t.Errorf("micro took %v with a kernel that hangs", d)
	}
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	var res struct {
		Incomplete       bool   `json:"incomplete"`
		IncompleteReason string `json:"incomplete_reason"`
		Rows             []struct {
			Name string `json:"name"`
		} `json:"rows"`
		Failed []string `json:"failed"`
	}
	readJSON(t, filepath.Join(out, "results.json"), &res)
	if !res.Incomplete || !strings.Contains(res.IncompleteReason, "fp32.fma") || !strings.Contains(res.IncompleteReason, "a kernel hangs") {
		t.Errorf("results.json: incomplete %v, %q; want the kernel that hangs named", res.Incomplete, res.IncompleteReason)
	}
	if got := strings.Join(h.prepared, ","); got != "baseline,fp32.fma" {
		t.Errorf("kernels prepared: %s; want the run to end at the one that hangs", got)
	}
	if len(res.Rows) != 1 || res.Rows[0].Name != "baseline" || strings.Join(res.Failed, ",") != "fp32.fma" {
		t.Errorf("results.json: rows %+v, failed %v; want baseline measured and fp32.fma failed", res.Rows, res.Failed)
	}
	for _, f := range []string{"trace.csv", "trace.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}
