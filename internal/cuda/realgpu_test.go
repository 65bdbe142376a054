package cuda_test

// TestRealGPU checks the binding on a real GPU. It runs only with GPUWATT_REAL_GPU=1; it
// reads and never sets anything on the card (no clocks, limits or modes). The report goes
// to the test log and, when $OUT is set, to $OUT/real_cuda.txt.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
)

type gpuReport struct {
	t *testing.T
	b strings.Builder
}

func (r *gpuReport) f(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.b.WriteString(s + "\n")
	r.t.Log(s)
}

func (r *gpuReport) save() {
	if out := os.Getenv("OUT"); out != "" {
		_ = os.WriteFile(filepath.Join(out, "real_cuda.txt"), []byte(r.b.String()), 0o644)
	}
}

// FMA kernel shape: chains independent FMA chains per thread, unrolled unroll times per
// loop iteration, so 3 loop instructions per chains*unroll FMAs.
const (
	fmaChains = 8
	fmaUnroll = 16
	fmaA      = float32(0.999999)
	fmaC      = float32(0.001)
)

// realPTX is the module of the real-GPU test: fma_f32 (seeded from a parameter, stores
// its sum so nothing is eliminated), copy_v4 (grid-stride 16-byte copy), fill_u32,
// kinds (stores each parameter's bits) and noop.
func realPTX() string {
	var b strings.Builder
	b.WriteString(`//
// gpuwatt cuda real-GPU test module.
.version 8.0
.target sm_90
.address_size 64

.visible .entry fma_f32(
	.param .u64 out,
	.param .f32 seed,
	.param .u32 iters
)
{
	.reg .pred %p;
	.reg .b32 %r<8>;
	.reg .f32 %f<8>;
	.reg .f32 %x<` + fmt.Sprint(fmaChains) + `>;
	.reg .b64 %rd<6>;

	ld.param.u64 %rd1, [out];
	ld.param.f32 %f1, [seed];
	ld.param.u32 %r1, [iters];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	cvt.rn.f32.u32 %f2, %r5;
	fma.rn.f32 %f3, %f2, 0f33800000, %f1;
`)
	fmt.Fprintf(&b, "\tmov.f32 %%f4, 0f%08X;\n\tmov.f32 %%f5, 0f%08X;\n", math.Float32bits(fmaA), math.Float32bits(fmaC))
	for i := range fmaChains {
		fmt.Fprintf(&b, "\tadd.f32 %%x%d, %%f3, 0f%08X;\n", i, math.Float32bits(float32(i)*0.125))
	}
	b.WriteString("$Lloop:\n")
	for range fmaUnroll {
		for i := range fmaChains {
			fmt.Fprintf(&b, "\tfma.rn.f32 %%x%d, %%x%d, %%f4, %%f5;\n", i, i)
		}
	}
	b.WriteString("\tsub.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p, %r1, 0;\n\t@%p bra $Lloop;\n")
	b.WriteString("\tmov.f32 %f6, %x0;\n")
	for i := 1; i < fmaChains; i++ {
		fmt.Fprintf(&b, "\tadd.f32 %%f6, %%f6, %%x%d;\n", i)
	}
	b.WriteString(`	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r5, 4;
	add.u64 %rd4, %rd2, %rd3;
	st.global.f32 [%rd4], %f6;
	ret;
}

.visible .entry copy_v4(
	.param .u64 dst,
	.param .u64 src,
	.param .u64 n
)
{
	.reg .pred %p;
	.reg .b32 %r<6>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<12>;

	ld.param.u64 %rd1, [dst];
	ld.param.u64 %rd2, [src];
	ld.param.u64 %rd3, [n];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %nctaid.x;
	mul.wide.u32 %rd4, %r1, %r2;
	cvt.u64.u32 %rd5, %r3;
	add.u64 %rd4, %rd4, %rd5;
	mul.wide.u32 %rd6, %r4, %r2;
$Lcopy:
	setp.ge.u64 %p, %rd4, %rd3;
	@%p bra $Ldone;
	shl.b64 %rd7, %rd4, 4;
	add.u64 %rd8, %rd2, %rd7;
	ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd8];
	add.u64 %rd9, %rd1, %rd7;
	st.global.v4.f32 [%rd9], {%f1, %f2, %f3, %f4};
	add.u64 %rd4, %rd4, %rd6;
	bra $Lcopy;
$Ldone:
	ret;
}

.visible .entry fill_u32(
	.param .u64 buf,
	.param .u32 value,
	.param .u32 n
)
{
	.reg .pred %p;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [buf];
	ld.param.u32 %r1, [value];
	ld.param.u32 %r2, [n];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r6, %r3, %r4, %r5;
	setp.ge.u32 %p, %r6, %r2;
	@%p bra $Lfilldone;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r6, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
$Lfilldone:
	ret;
}

.visible .entry kinds(
	.param .u64 out,
	.param .u32 a,
	.param .s32 b,
	.param .u64 c,
	.param .s64 d,
	.param .f32 e,
	.param .f64 f
)
{
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .f64 %fd<2>;
	.reg .b64 %rd<12>;

	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r1, [a];
	cvt.u64.u32 %rd2, %r1;
	st.global.u64 [%rd1], %rd2;
	ld.param.s32 %r2, [b];
	cvt.s64.s32 %rd3, %r2;
	st.global.u64 [%rd1+8], %rd3;
	ld.param.u64 %rd4, [c];
	st.global.u64 [%rd1+16], %rd4;
	ld.param.s64 %rd5, [d];
	st.global.u64 [%rd1+24], %rd5;
	ld.param.f32 %f1, [e];
	mov.b32 %r3, %f1;
	cvt.u64.u32 %rd6, %r3;
	st.global.u64 [%rd1+32], %rd6;
	ld.param.f64 %fd1, [f];
	mov.b64 %rd7, %fd1;
	st.global.u64 [%rd1+40], %rd7;
	ret;
}

.visible .entry noop()
{
	ret;
}
`)
	return b.String()
}

// fmaHost computes fma_f32's result for thread id on the host (float64 FMA rounded to
// float32: exact except in rare double-rounding cases).
func fmaHost(seed float32, id, iters int) float32 {
	x0 := float32(math.FMA(float64(id), 0x1p-24, float64(seed)))
	var x [fmaChains]float32
	for i := range x {
		x[i] = x0 + float32(i)*0.125
	}
	for range iters * fmaUnroll {
		for i := range x {
			x[i] = float32(math.FMA(float64(x[i]), float64(fmaA), float64(fmaC)))
		}
	}
	s := x[0]
	for i := 1; i < fmaChains; i++ {
		s += x[i]
	}
	return s
}

func TestRealGPU(t *testing.T) {
	if os.Getenv("GPUWATT_REAL_GPU") != "1" {
		t.Skip("set GPUWATT_REAL_GPU=1 to run on a real GPU")
	}
	r := &gpuReport{t: t}
	defer r.save()
	r.f("date %s", time.Now().UTC().Format(time.RFC3339))

	l, err := cuda.Open()
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.DriverVersion()
	r.f("library %s, driver CUDA version %s (%d), err %v", l.Path(), cuda.FormatVersion(v), v, err)
	n, err := l.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	r.f("devices %d", n)
	dev, err := l.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dev.Properties()
	if err != nil {
		t.Fatal(err)
	}
	r.f("device 0: %q uuid %s pci %s cc %s", p.Name, p.UUID, p.PCIBusID, p.ComputeCapability())
	r.f("  SMs %d, SM clock %v, memory clock %v, bus %d bit, L2 %d B, memory %d B (%.1f GiB)",
		p.SMs, p.SMClock, p.MemoryClock, p.MemoryBusWidthBits, p.L2Bytes, p.MemoryBytes, float64(p.MemoryBytes)/(1<<30))
	r.f("  max threads/block %d, /SM %d, shared/SM %d B, shared/block opt-in %d B, warp %d",
		p.MaxThreadsPerBlock, p.MaxThreadsPerSM, p.SharedPerSMBytes, p.SharedPerBlockOptinBytes, p.WarpSize)
	peak := p.PeakFP32FLOPS()
	r.f("  nominal FP32 %.2f TFLOP/s (SMs x %d x 2 x clock), nominal DRAM %.0f GB/s",
		peak/1e12, p.FP32LanesPerSM(), p.PeakMemoryBandwidth()/1e9)
	for _, a := range []cuda.Attribute{cuda.AttrMaxRegistersPerMultiprocessor, cuda.AttrMaxBlocksPerMultiprocessor,
		cuda.AttrAsyncEngineCount, cuda.AttrECCEnabled, cuda.AttrComputeMode, cuda.AttrMultiGPUBoard, cuda.AttrNUMAID} {
		x, err := dev.Attribute(a)
		r.f("  %s = %d %v", a, x, errOrEmpty(err))
	}

	// The observer context holds the primary context for the whole test, so that free
	// memory can be compared across the work context's lifetimes.
	obs, err := cuda.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := obs.Close(); err != nil {
			t.Error(err)
		}
	}()
	free0, total, err := obs.MemInfo()
	r.f("memory free %d of %d B before work (err %v)", free0, total, errOrEmpty(err))

	realWork(t, r, dev, p)
	free1, _, _ := obs.MemInfo()
	r.f("after the first work context closed: free %d B (%+d B against before; the primary context keeps what it set up once)", free1, free1-free0)

	leakyWork(t, r, dev)
	free2, _, _ := obs.MemInfo()
	r.f("after a second context that freed nothing itself closed: free %d B (%+d B against the first)", free2, free2-free1)
	if free2 != free1 {
		t.Errorf("device memory leaked across Close: %d B", free1-free2)
	}
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// realWork runs the module's kernels on a context of its own and closes it.
func realWork(t *testing.T, r *gpuReport, dev cuda.Device, p cuda.Properties) {
	c, err := cuda.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	// A deliberately broken module: the JIT's log must reach the error.
	broken := strings.Replace(realPTX(), "\tret;\n}\n\n.visible .entry noop", "\tbogus.instruction %r1;\n\tret;\n}\n\n.visible .entry noop", 1)
	_, err = c.LoadPTX(broken)
	var ce *cuda.Error
	if !errors.Is(err, cuda.ErrInvalidPTX) || !errors.As(err, &ce) || ce.Log == "" {
		t.Errorf("broken PTX: %v (want ErrInvalidPTX with a log)", err)
	}
	r.f("broken PTX -> %v", err)
	if ce != nil {
		r.f("  JIT error log (%d bytes): %q", len(ce.Log), ce.Log)
	}

	t0 := time.Now()
	m, err := c.LoadPTXOptions(realPTX(), cuda.JITOptions{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	r.f("LoadPTX (JIT, %d bytes of PTX): %v", len(realPTX()), time.Since(t0).Round(time.Microsecond))
	r.f("  JIT info log: %q", m.InfoLog)
	fns := map[string]*cuda.Function{}
	for _, name := range []string{"fma_f32", "copy_v4", "fill_u32", "kinds", "noop"} {
		f, err := m.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		regs, _ := f.NumRegs()
		mt, _ := f.MaxThreadsPerBlock()
		r.f("  %s: %d registers, max %d threads/block", name, regs, mt)
		fns[name] = f
	}

	// Arguments of every kind, checked on the device.
	out, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	args := []cuda.Arg{cuda.Ptr(out), cuda.U32(0xfedcba98), cuda.I32(-5), cuda.U64(1<<40 + 3), cuda.I64(-7),
		cuda.F32(3.25), cuda.F64(-1e300)}
	if err := fns["kinds"].Launch(cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}, args...); err != nil {
		t.Fatal(err)
	}
	got := make([]uint64, 6)
	if err := c.CopyDtoH(cuda.AsBytes(got), out); err != nil {
		t.Fatal(err)
	}
	m5, m7 := int64(-5), int64(-7)
	want := []uint64{0xfedcba98, uint64(m5), 1<<40 + 3, uint64(m7), uint64(math.Float32bits(3.25)), math.Float64bits(-1e300)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kinds: slot %d = %#x, want %#x", i, got[i], want[i])
		}
	}
	r.f("argument kinds round trip (ptr,u32,i32,u64,i64,f32,f64): %v", slices.Equal(got, want))

	// fill_u32 from several goroutines at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			const n = 1 << 16
			buf, err := c.Alloc(4 * n)
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = c.Free(buf) }()
			for i := range 20 {
				v := uint32(g<<16 | i)
				if err := fns["fill_u32"].Launch(cuda.LaunchConfig{Grid: cuda.D1(n / 256), Block: cuda.D1(256)},
					cuda.Ptr(buf), cuda.U32(v), cuda.U32(n)); err != nil {
					t.Error(err)
					return
				}
				h := make([]uint32, n)
				if err := c.CopyDtoH(cuda.AsBytes(h), buf); err != nil {
					t.Error(err)
					return
				}
				for _, x := range h {
					if x != v {
						mu.Lock()
						bad++
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if bad != 0 {
		t.Errorf("fill_u32 from 8 goroutines: %d wrong buffers", bad)
	}
	r.f("fill_u32 from 8 goroutines x 20 launches: %d wrong buffers", bad)

	// FP32 FMA throughput.
	peak := p.PeakFP32FLOPS()
	threads := p.SMs * 2048
	block := 256
	const iters = 100000
	fmaOut, err := c.Alloc(int64(4 * threads))
	if err != nil {
		t.Fatal(err)
	}
	start, _ := c.NewEvent(cuda.EventDefault)
	end, _ := c.NewEvent(cuda.EventDefault)
	seed := float32(0.5)
	cfg := cuda.LaunchConfig{Grid: cuda.D1(threads / block), Block: cuda.D1(block)}
	// Warm up (clocks ramp, caches fill), then time single launches.
	if err := fns["fma_f32"].Launch(cfg, cuda.Ptr(fmaOut), cuda.F32(seed), cuda.U32(iters)); err != nil {
		t.Fatal(err)
	}
	flops := float64(threads) * iters * fmaChains * fmaUnroll * 2
	var best, sum float64
	const reps = 5
	for range reps {
		if err := errors.Join(start.Record(nil),
			fns["fma_f32"].Launch(cfg, cuda.Ptr(fmaOut), cuda.F32(seed), cuda.U32(iters)),
			end.Record(nil), end.Synchronize()); err != nil {
			t.Fatal(err)
		}
		ms, err := cuda.ElapsedTime(start, end)
		if err != nil {
			t.Fatal(err)
		}
		tf := flops / (float64(ms) / 1e3) / 1e12
		sum += tf
		best = math.Max(best, tf)
	}
	r.f("FP32 FMA: %d threads x %d iterations x %d FMAs, %.3g flop/launch: best %.2f TFLOP/s, mean %.2f (%.1f %% of nominal %.2f)",
		threads, iters, fmaChains*fmaUnroll, flops, best, sum/reps, 100*best/(peak/1e12), peak/1e12)
	res := make([]float32, threads)
	if err := c.CopyDtoH(cuda.AsBytes(res), fmaOut); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{0, 12345, threads - 1} {
		h := fmaHost(seed, id, iters)
		rel := math.Abs(float64(res[id]-h)) / math.Abs(float64(h))
		r.f("  fma_f32 result[%d] = %.7g, host %.7g (rel. diff %.2g)", id, res[id], h, rel)
		if !(rel < 1e-5) {
			t.Errorf("fma_f32 result[%d] = %g, host %g", id, res[id], h)
		}
	}

	// Grid-stride copy bandwidth.
	const size = 256 << 20
	src, err := c.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := c.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	pattern := make([]uint32, size/4)
	for i := range pattern {
		pattern[i] = uint32(i)*2654435761 + 12345
	}
	if err := errors.Join(c.CopyHtoD(src, cuda.AsBytes(pattern)), c.MemsetD8(dst, 0, size)); err != nil {
		t.Fatal(err)
	}
	ccfg := cuda.LaunchConfig{Grid: cuda.D1(p.SMs * 8), Block: cuda.D1(256)}
	cargs := []cuda.Arg{cuda.Ptr(dst), cuda.Ptr(src), cuda.U64(size / 16)}
	if err := fns["copy_v4"].Launch(ccfg, cargs...); err != nil {
		t.Fatal(err)
	}
	const launches = 20
	err = c.Do(func() error { // one hand-over for the whole timed sequence
		if err := start.Record(nil); err != nil {
			return err
		}
		for range launches {
			if err := fns["copy_v4"].Launch(ccfg, cargs...); err != nil {
				return err
			}
		}
		if err := end.Record(nil); err != nil {
			return err
		}
		return end.Synchronize()
	})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := cuda.ElapsedTime(start, end)
	r.f("copy_v4: %d x %d MiB, %.3f ms: %.0f GB/s (read+write)", launches, size>>20, ms, 2*size*launches/(float64(ms)/1e3)/1e9)
	back := make([]uint32, size/4)
	if err := c.CopyDtoH(cuda.AsBytes(back), dst); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, pattern) {
		t.Error("copy_v4: destination differs from source")
	}
	r.f("copy_v4 result equals source: %v", slices.Equal(back, pattern))
	// cuMemcpyDtoD for comparison.
	err = errors.Join(start.Record(nil), c.CopyDtoD(dst, src, size), end.Record(nil), end.Synchronize())
	ms, _ = cuda.ElapsedTime(start, end)
	r.f("cuMemcpyDtoD %d MiB: %.3f ms, %.0f GB/s (read+write) %v", size>>20, ms, 2*size/(float64(ms)/1e3)/1e9, errOrEmpty(err))

	// Pinned buffers and the asynchronous copies on a non-blocking stream.
	s, err := c.NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := c.AllocHost(64<<20, cuda.HostAllocDefault)
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	err = errors.Join(c.CopyDtoHAsync(hb.Bytes(), src, s), s.Synchronize())
	dt := time.Since(t0)
	ok := err == nil && bytesEqualU32(hb.Bytes(), pattern[:len(hb.Bytes())/4])
	r.f("cuMemcpyDtoHAsync 64 MiB into pinned memory: %v, %.1f GB/s, data ok %v %v", dt.Round(time.Microsecond),
		float64(64<<20)/dt.Seconds()/1e9, ok, errOrEmpty(err))
	if !ok {
		t.Error("DtoHAsync into pinned memory")
	}

	// Launch overhead: the empty kernel, inside one Do, and one hand-over per launch.
	noop := fns["noop"]
	one := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}
	const nBatch, nSingle = 20000, 5000
	_ = c.Synchronize()
	t0 = time.Now()
	err = c.Do(func() error {
		for range nBatch {
			if err := noop.Launch(one); err != nil {
				return err
			}
		}
		return nil
	})
	batch := time.Since(t0)
	_ = c.Synchronize()
	t0 = time.Now()
	for range nSingle {
		if err := noop.Launch(one); err != nil {
			t.Fatal(err)
		}
	}
	single := time.Since(t0)
	_ = c.Synchronize()
	r.f("empty-kernel launch, host time: %.2f us inside one Do (%d launches), %.2f us with one hand-over each (%d) %v",
		batch.Seconds()/nBatch*1e6, nBatch, single.Seconds()/nSingle*1e6, nSingle, errOrEmpty(err))
	r.f("work context owned before Close: %+v", c.Live())
}

// leakyWork allocates and creates everything and frees nothing: Close must.
func leakyWork(t *testing.T, r *gpuReport, dev cuda.Device) {
	c, err := cuda.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.LoadPTX(realPTX())
	if err != nil {
		t.Fatal(err)
	}
	f, _ := m.Function("fill_u32")
	for range 3 {
		b, err := c.Alloc(100 << 20)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Launch(cuda.LaunchConfig{Grid: cuda.D1(1024), Block: cuda.D1(256)}, cuda.Ptr(b), cuda.U32(7), cuda.U32(1<<18)); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.AllocHost(1<<20, cuda.HostAllocDefault)
	_, _ = c.NewStream(cuda.StreamNonBlocking)
	e, _ := c.NewEvent(cuda.EventBlockingSync)
	_ = e.Record(nil)
	live := c.Live()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	r.f("leaky context owned %+v at Close; after Close %+v", live, c.Live())
}

// bytesEqualU32 reports whether b holds the little-endian words p.
func bytesEqualU32(b []byte, p []uint32) bool {
	if len(b) != 4*len(p) {
		return false
	}
	for i, w := range p {
		if binary.LittleEndian.Uint32(b[4*i:]) != w {
			return false
		}
	}
	return true
}
