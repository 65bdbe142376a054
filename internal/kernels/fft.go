package kernels

import (
	"fmt"
	"math"
	"math/bits"
)

// FFT sizes FFT accepts.
const (
	FFTMinSize = 64
	FFTMaxSize = 4096
)

// FFT generates gpuwatt's own complex-to-complex forward FFT of n points in single
// precision (complex64: interleaved float32 real and imaginary parts), n a power of two
// from 64 to 4096: the kernel of `gpuwatt loadlevel --variant gpu`.
//
// One CTA transforms one array, staged in shared memory: radix-2 decimation in time,
// out of place. Threads T = min(n/2, 1024); each handles B = n/2/T butterflies per stage.
//
//  1. Load: thread t reads elements t, t+T, ... of in (coalesced 8-byte loads) and stores
//     each at its bit-reversed index (brev.b32) in shared memory.
//  2. log2(n) stages, each ended by bar.sync: butterfly j (0 <= j < n/2) of stage s
//     (half = 2^s) pairs i0 = 2j - k and i1 = i0 + half, k = j mod half, with the twiddle
//     tw[k << (log2(n)-s-1)]; stage 0's twiddle is 1 and is not loaded. Each stage's
//     twiddles are loaded (ld.global.nc) one stage ahead, so their latency overlaps the
//     previous stage.
//  3. Store: thread t writes elements t, t+T, ... from shared memory to out (coalesced).
//
// The code is fully unrolled for n (no branches). Parameters: in, out (8n bytes each) and
// tw, the twiddle table of n/2 complex64 values exp(-2πik/n) (FFTTwiddles), uploaded once.
// Launch with Blocks = 1 (one transform) and Threads; the shared memory (8n bytes) is
// static. A launch of B blocks transforms B arrays stored one after another: CTA b reads
// in[b·n ...] and writes out[b·n ...].
//
// Ops counts fma.rn.f32 (FP32FMA) and add/sub.rn.f32 (FP32Add) and the integer address
// arithmetic; mul.rn.f32 and neg.f32 of the complex products belong to no class (see
// Notes). Bytes: DRAM is in + out + the table once; L2 the twiddle loads requested;
// Shared the bytes moved through shared memory, exactly.
func FFT(n int, dev Device) (Descriptor, error) {
	if n < FFTMinSize || n > FFTMaxSize || n&(n-1) != 0 {
		return Descriptor{}, fmt.Errorf("kernels: FFT size %d: want a power of two from %d to %d", n, FFTMinSize, FFTMaxSize)
	}
	dev, target, err := dev.withDefaults()
	if err != nil {
		return Descriptor{}, err
	}
	lg := bits.TrailingZeros(uint(n))
	T := min(n/2, 1024)
	B := n / 2 / T // butterflies per thread and stage
	E := n / T     // elements per thread in the load and store phases
	s := shape{dev: dev, target: target, threads: T, blocks: 1, total: int64(T)}
	name := fmt.Sprintf("fft.c2c.%d", n)
	e := newEmitter(entryName(name))
	pIn := e.param(Param{Name: "in", Kind: Buffer, Size: int64(8 * n)})
	pOut := e.param(Param{Name: "out", Kind: Buffer, Size: int64(8 * n)})
	pTw := e.param(Param{Name: "tw", Kind: Buffer, Size: int64(4 * n)})
	const smem = "gw_smem"
	e.globals = append(e.globals, fmt.Sprintf(".shared .align 16 .b8 %s[%d];", smem, 8*n))

	tid, sbase := e.reg("%r"), e.reg("%r")
	in, out, tw := e.reg("%rd"), e.reg("%rd"), e.reg("%rd")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %s", sbase, smem)
	for _, p := range []struct{ r, name string }{{in, pIn}, {out, pOut}, {tw, pTw}} {
		e.raw("ld.param.u64 %s, [%s]", p.r, p.name)
		e.raw("cvta.to.global.u64 %s, %s", p.r, p.r)
	}
	// A batch: CTA b transforms the b-th array of in into the b-th of out.
	cta, off := e.reg("%r"), e.reg("%rd")
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.op(Int32Mul, "mul.wide.u32 %s, %s, %d", off, cta, 8*n)
	e.op(Int64Add, "add.s64 %s, %s, %s", in, in, off)
	e.op(Int64Add, "add.s64 %s, %s, %s", out, out, off)
	var sharedBytes, l2Bytes int64

	// index returns a register holding tid + off.
	index := func(off int) string {
		if off == 0 {
			return tid
		}
		r := e.reg("%r")
		e.op(Int32Add, "add.s32 %s, %s, %d", r, tid, off)
		return r
	}
	// global returns a 64-bit register holding base + 8*i.
	global := func(base, i string) string {
		r := e.reg("%rd")
		e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", r, i)
		e.op(Int64Add, "add.s64 %s, %s, %s", r, base, r)
		return r
	}
	// shared returns a register holding sbase + 8*i.
	shared := func(i string) string {
		r := e.reg("%r")
		e.op(Int32Shift, "shl.b32 %s, %s, 3", r, i)
		e.op(Int32Add, "add.s32 %s, %s, %s", r, sbase, r)
		return r
	}
	type cpx struct{ re, im string }
	// twiddles loads stage st's twiddle of each of the thread's butterflies.
	twiddles := func(st int) []cpx {
		if st == 0 || st >= lg {
			return nil
		}
		w := make([]cpx, B)
		for b := range B {
			j := index(b * T)
			k := e.reg("%r")
			e.op(Int32Logic, "and.b32 %s, %s, %d", k, j, (1<<st)-1)
			e.op(Int32Shift, "shl.b32 %s, %s, %d", k, k, lg-st-1)
			a := global(tw, k)
			w[b] = cpx{e.reg("%f"), e.reg("%f")}
			e.raw("ld.global.nc.v2.f32 {%s, %s}, [%s]", w[b].re, w[b].im, a)
			l2Bytes += 8 * int64(T)
		}
		return w
	}

	e.comment("load: element i to shared index bitreverse(i)")
	for k := range E {
		i := index(k * T)
		a := global(in, i)
		v := cpx{e.reg("%f"), e.reg("%f")}
		e.raw("ld.global.nc.v2.f32 {%s, %s}, [%s]", v.re, v.im, a)
		r := e.reg("%r")
		e.raw("brev.b32 %s, %s", r, i) // no class: bit reversal
		e.op(Int32Shift, "shr.u32 %s, %s, %d", r, r, 32-lg)
		sa := shared(r)
		e.raw("st.shared.v2.f32 [%s], {%s, %s}", sa, v.re, v.im)
		sharedBytes += 8 * int64(T)
	}
	next := twiddles(1)
	e.raw("bar.sync 0")

	for st := range lg {
		half := 1 << st
		e.comment("stage %d: half %d", st, half)
		w := next
		next = twiddles(st + 1)
		for b := range B {
			j := index(b * T)
			i0 := e.reg("%r")
			if st == 0 {
				e.op(Int32Shift, "shl.b32 %s, %s, 1", i0, j)
			} else {
				k := e.reg("%r")
				e.op(Int32Logic, "and.b32 %s, %s, %d", k, j, half-1)
				e.op(Int32Shift, "shl.b32 %s, %s, 1", i0, j)
				e.op(Int32Add, "sub.s32 %s, %s, %s", i0, i0, k)
			}
			a0 := shared(i0)
			x := cpx{e.reg("%f"), e.reg("%f")}
			y := cpx{e.reg("%f"), e.reg("%f")}
			e.raw("ld.shared.v2.f32 {%s, %s}, [%s]", x.re, x.im, a0)
			e.raw("ld.shared.v2.f32 {%s, %s}, [%s+%d]", y.re, y.im, a0, 8*half)
			t := y
			if st > 0 {
				// t = y * w: re = yr*wr - yi*wi, im = yr*wi + yi*wr
				t = cpx{e.reg("%f"), e.reg("%f")}
				q, p := e.reg("%f"), e.reg("%f")
				e.raw("mul.rn.f32 %s, %s, %s", q, y.im, w[b].im)
				e.raw("neg.f32 %s, %s", q, q)
				e.op(FP32FMA, "fma.rn.f32 %s, %s, %s, %s", t.re, y.re, w[b].re, q)
				e.raw("mul.rn.f32 %s, %s, %s", p, y.im, w[b].re)
				e.op(FP32FMA, "fma.rn.f32 %s, %s, %s, %s", t.im, y.re, w[b].im, p)
			}
			u := cpx{e.reg("%f"), e.reg("%f")}
			v := cpx{e.reg("%f"), e.reg("%f")}
			e.op(FP32Add, "add.rn.f32 %s, %s, %s", u.re, x.re, t.re)
			e.op(FP32Add, "add.rn.f32 %s, %s, %s", u.im, x.im, t.im)
			e.op(FP32Add, "sub.rn.f32 %s, %s, %s", v.re, x.re, t.re)
			e.op(FP32Add, "sub.rn.f32 %s, %s, %s", v.im, x.im, t.im)
			e.raw("st.shared.v2.f32 [%s], {%s, %s}", a0, u.re, u.im)
			e.raw("st.shared.v2.f32 [%s+%d], {%s, %s}", a0, 8*half, v.re, v.im)
			sharedBytes += 4 * 8 * int64(T)
		}
		e.raw("bar.sync 0")
	}

	e.comment("store")
	for k := range E {
		i := index(k * T)
		sa := shared(i)
		v := cpx{e.reg("%f"), e.reg("%f")}
		e.raw("ld.shared.v2.f32 {%s, %s}, [%s]", v.re, v.im, sa)
		a := global(out, i)
		e.raw("st.global.v2.f32 [%s], {%s, %s}", a, v.re, v.im)
		sharedBytes += 8 * int64(T)
	}
	e.raw("ret")

	ops, overhead, _ := e.tally(nil, s.total)
	comments := []string{
		fmt.Sprintf("Radix-2 DIT complex64 FFT of %d points: one CTA of %d threads, shared memory, %d stages.", n, T, lg),
		"Parameters: in, out (8n bytes), tw (n/2 complex64 twiddles exp(-2 pi i k/n)).",
	}
	return Descriptor{
		Name: name, Group: "fft", PTX: e.render(name, s.target, s, comments), Entry: e.entry,
		Blocks: 1, Threads: T, Params: e.descParams(),
		Ops: ops, Overhead: overhead,
		Bytes:   map[MemLevel]int64{DRAM: int64(16*n + 4*n), L2: l2Bytes, Shared: sharedBytes},
		Variant: map[string]float64{"points": float64(n)},
		Notes: "gpuwatt's own FFT (loadlevel --variant gpu). The complex products' mul.rn.f32 and neg.f32 " +
			"are in no instruction class, so Flops() counts the FMAs and adds only: 5 n log2(n) flops is the usual figure.",
	}, nil
}

// FFTTwiddles returns the twiddle table of FFT(n) as interleaved float32 pairs:
// exp(-2πik/n) for k < n/2, computed in float64 and rounded once.
func FFTTwiddles(n int) []float32 {
	tw := make([]float32, n)
	for k := range n / 2 {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		tw[2*k], tw[2*k+1] = float32(c), float32(s)
	}
	return tw
}
