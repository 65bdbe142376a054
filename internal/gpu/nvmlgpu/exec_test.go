package nvmlgpu

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

const fillPTX = `//
.version 8.0
.target sm_90
.address_size 64

.visible .entry fill_u32(
	.param .u64 buf,
	.param .u32 value,
	.param .u32 n
)
{
	ret;
}
`

// TestExecutorOnFakeCUDA runs a descriptor through the CUDA side of a Device against the
// fake libcuda: the CUDA device is found by UUID, the buffer is allocated and passed, the
// run's times come from the events, and Close leaves nothing behind.
func TestExecutorOnFakeCUDA(t *testing.T) {
	path := cudatest.Build(t)
	old := cudaPaths
	cudaPaths = []string{path}
	defer func() { cudaPaths = old }()
	fake := cudatest.Control(t, path)

	clk := clock.NewReal()
	d := &Device{info: trace.GPU{Index: 0, UUID: cudatest.Dev0UUID}, clk: clk}
	p := d.Props()
	if p.SMs != cudatest.Dev0SMs || p.ComputeCapability != "9.0" || p.MaxSMClockHz != cudatest.Dev0ClockKHz*1e3 {
		t.Fatalf("props = %+v", p)
	}
	desc := kernels.Descriptor{
		Name: "fill", PTX: fillPTX, Entry: "fill_u32", Blocks: 1, Threads: 32,
		Params: []kernels.Param{{Name: "buf", Kind: kernels.Buffer, Size: 64}, {Name: "value", Kind: kernels.U32, Int: 0xdeadbeef}, {Name: "n", Kind: kernels.U32, Int: 16}},
	}
	k, err := d.Prepare(desc)
	if err != nil {
		t.Fatal(err)
	}
	before := clk.Now()
	start, end, err := k.Run(3)
	if err != nil {
		t.Fatal(err)
	}
	// The fake reports 1.5 ms for every elapsed time: the lead-in and the run.
	if end-start != 1500*time.Microsecond || start < before {
		t.Errorf("run [%v, %v], called at %v", start, end, before)
	}
	ck := k.(*cudaKernel)
	buf := make([]byte, 64)
	if err := ck.ctx.CopyDtoH(buf, ck.bufs[0]); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(buf[60:]); v != 0xdeadbeef {
		t.Errorf("buffer word 15 = %#x, want the u32 argument 0xdeadbeef", v)
	}
	if l, ok := fake.LastLaunch(); !ok || l.Kernel() != "fill_u32" {
		t.Errorf("last launch %+v", l)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.exec.close(); err != nil {
		t.Fatal(err)
	}
	if c := fake.Counts(); c.Outstanding() != 0 {
		t.Errorf("after Close: %+v outstanding", c)
	}
}

func TestExecutorNoMatchingDevice(t *testing.T) {
	path := cudatest.Build(t)
	old := cudaPaths
	cudaPaths = []string{path}
	defer func() { cudaPaths = old }()
	d := &Device{info: trace.GPU{Index: 3, Name: "elsewhere", UUID: "GPU-none", PCIBusID: "00000000:AA:00.0"}, clk: clock.NewReal()}
	if _, err := d.Prepare(kernels.Descriptor{Name: "x"}); err == nil {
		t.Fatal("Prepare found a CUDA device for a GPU that has none")
	}
	if !samePCI("00000000:19:00.0", "0000:19:00.0") || samePCI("0000:19:00.0", "0000:1A:00.0") {
		t.Error("samePCI")
	}
}

// TestKernelHangIsBounded: a kernel that never finishes (the fake libcuda's SetHang) ends its
// Run after the bound, with an error matching gpu.ErrKernelHung that names the kernel,
// where the wait had no end (cuEventSynchronize); later Prepares fail at once, and Close and
// the executor's close return without waiting for the GPU (issue 20).
func TestKernelHangIsBounded(t *testing.T) {
	path := cudatest.Build(t)
	fake := cudatest.Control(t, path)
	t.Cleanup(func() { fake.SetHang(false) })
	x := NewCUDAExecutor(cudatest.Dev0UUID, clock.NewReal(), 100*time.Millisecond, path)
	desc := kernels.Descriptor{
		Name: "fill", PTX: fillPTX, Entry: "fill_u32", Blocks: 1, Threads: 32,
		Params: []kernels.Param{{Name: "buf", Kind: kernels.Buffer, Size: 64}, {Name: "value", Kind: kernels.U32, Int: 1}, {Name: "n", Kind: kernels.U32, Int: 16}},
	}
	k, err := x.Prepare(desc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Run(3); err != nil {
		t.Fatal(err)
	}
	fake.SetHang(true)
	t0 := time.Now()
	_, _, err = k.Run(2)
	d := time.Since(t0)
	t.Logf("after %v: %v", d, err)
	if !errors.Is(err, gpu.ErrKernelHung) || !strings.Contains(err.Error(), "2 launches of fill (expected to take 1ms) had not finished after 110ms (cuEventQuery polled)") {
		t.Errorf("Run of a kernel that hangs = %v; want gpu.ErrKernelHung naming it", err)
	}
	if d < 100*time.Millisecond || d > 3*time.Second {
		t.Errorf("Run returned after %v with a bound of 110ms", d)
	}
	t0 = time.Now()
	if _, err := x.Prepare(desc); !errors.Is(err, gpu.ErrKernelHung) {
		t.Errorf("Prepare after a hang = %v", err)
	}
	if _, _, err := k.Run(1); !errors.Is(err, gpu.ErrKernelHung) {
		t.Errorf("Run after a hang = %v", err)
	}
	if err := k.Close(); err != nil {
		t.Error(err)
	}
	if err := x.Close(); err != nil {
		t.Error(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Prepare, Run and Close after the hang took %v: they waited for the GPU", d)
	}
}
