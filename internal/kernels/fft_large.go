package kernels

import (
	"fmt"
	"math/bits"
)

// FFTLargeMax is the largest FFT the global-memory kernels take (FFTBitrev, FFTStage).
const FFTLargeMax = 1 << 24

// FFTLargeThreads is the block size of FFTBitrev and FFTStage.
const FFTLargeThreads = 256

// checkLarge checks a size and batch of the global-memory FFT.
func checkLarge(n, batch int) error {
	if n <= FFTMaxSize || n > FFTLargeMax || n&(n-1) != 0 {
		return fmt.Errorf("kernels: large FFT size %d: want a power of two above %d up to %d", n, FFTMaxSize, FFTLargeMax)
	}
	if batch < 1 || int64(n)*int64(batch) > 1<<31 {
		return fmt.Errorf("kernels: large FFT batch %d of %d points: want 1 to %d", batch, n, (1<<31)/n)
	}
	return nil
}

// globalIndex emits g = ctaid.x * FFTLargeThreads + tid.x.
func globalIndex(e *emitter) string {
	tid, cta, g := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.op(Int32Mul, "mad.lo.s32 %s, %s, %d, %s", g, cta, FFTLargeThreads, tid)
	return g
}

// FFTBitrev generates the first pass of gpuwatt's own FFT above FFTMaxSize points: the
// bit-reversal permutation of batch arrays of n complex64 points, out of place:
// out[b·n + bitreverse(j)] = in[b·n + j]. One thread per element; launch with
// Blocks = batch·n / FFTLargeThreads and Threads = FFTLargeThreads (both exact: n is a
// power of two above 4096). FFTStage then runs the log2(n) butterfly stages in place.
func FFTBitrev(n, batch int, dev Device) (Descriptor, error) {
	if err := checkLarge(n, batch); err != nil {
		return Descriptor{}, err
	}
	dev, target, err := dev.withDefaults()
	if err != nil {
		return Descriptor{}, err
	}
	lg := bits.TrailingZeros(uint(n))
	total := int64(n) * int64(batch)
	s := shape{dev: dev, target: target, threads: FFTLargeThreads, blocks: int(total / FFTLargeThreads), total: total}
	name := fmt.Sprintf("fft.bitrev.%d", n)
	e := newEmitter(entryName(name))
	pIn := e.param(Param{Name: "in", Kind: Buffer, Size: 8 * total})
	pOut := e.param(Param{Name: "out", Kind: Buffer, Size: 8 * total})
	in, out := e.reg("%rd"), e.reg("%rd")
	for _, p := range []struct{ r, name string }{{in, pIn}, {out, pOut}} {
		e.raw("ld.param.u64 %s, [%s]", p.r, p.name)
		e.raw("cvta.to.global.u64 %s, %s", p.r, p.r)
	}
	g := globalIndex(e)
	a := e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", a, g)
	e.op(Int64Add, "add.s64 %s, %s, %s", a, in, a)
	re, im := e.reg("%f"), e.reg("%f")
	e.raw("ld.global.nc.v2.f32 {%s, %s}, [%s]", re, im, a)
	j, base, r := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.op(Int32Logic, "and.b32 %s, %s, %d", j, g, n-1)
	e.op(Int32Logic, "and.b32 %s, %s, %#x", base, g, ^uint32(n-1))
	e.raw("brev.b32 %s, %s", r, j)
	e.op(Int32Shift, "shr.u32 %s, %s, %d", r, r, 32-lg)
	e.op(Int32Add, "add.s32 %s, %s, %s", r, r, base)
	b := e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", b, r)
	e.op(Int64Add, "add.s64 %s, %s, %s", b, out, b)
	e.raw("st.global.v2.f32 [%s], {%s, %s}", b, re, im)
	e.raw("ret")
	ops, overhead, _ := e.tally(nil, s.total)
	return Descriptor{
		Name: name, Group: "fft", PTX: e.render(name, s.target, s, []string{
			fmt.Sprintf("Bit-reversal permutation of batch arrays of %d complex64 points, one thread per element.", n)}),
		Entry: e.entry, Blocks: s.blocks, Threads: FFTLargeThreads, Params: e.descParams(),
		Ops: ops, Overhead: overhead,
		Bytes:   map[MemLevel]int64{DRAM: 16 * total},
		Variant: map[string]float64{"points": float64(n), "batch": float64(batch)},
		Notes:   "first pass of gpuwatt's own global-memory FFT (loadlevel --variant gpu above 4096 points)",
	}, nil
}

// FFTStage generates one radix-2 decimation-in-time butterfly stage of gpuwatt's own FFT
// above FFTMaxSize points, in place on batch bit-reversed arrays of n complex64 points (the
// output of FFTBitrev). Parameters: data, tw (the n/2 twiddles exp(-2πik/n), FFTTwiddles)
// and the stage st (0 to log2(n)-1, u32). Thread g is butterfly j = g mod n/2 of array
// b = g / (n/2): half = 2^st, k = j mod half, i0 = b·n + 2j − k, i1 = i0 + half,
// t = x[i1]·tw[k·n/(2·half)], x[i0] = x[i0] + t, x[i1] = x[i0] − t. Launch with
// Blocks = batch·n/2 / FFTLargeThreads and Threads = FFTLargeThreads, log2(n) times.
func FFTStage(n, batch int, dev Device) (Descriptor, error) {
	if err := checkLarge(n, batch); err != nil {
		return Descriptor{}, err
	}
	dev, target, err := dev.withDefaults()
	if err != nil {
		return Descriptor{}, err
	}
	lg := bits.TrailingZeros(uint(n))
	total := int64(n/2) * int64(batch)
	s := shape{dev: dev, target: target, threads: FFTLargeThreads, blocks: int(total / FFTLargeThreads), total: total}
	name := fmt.Sprintf("fft.stage.%d", n)
	e := newEmitter(entryName(name))
	pData := e.param(Param{Name: "data", Kind: Buffer, Size: 16 * total})
	pTw := e.param(Param{Name: "tw", Kind: Buffer, Size: int64(4 * n)})
	pSt := e.param(Param{Name: "st", Kind: U32})
	data, tw, st := e.reg("%rd"), e.reg("%rd"), e.reg("%r")
	for _, p := range []struct{ r, name string }{{data, pData}, {tw, pTw}} {
		e.raw("ld.param.u64 %s, [%s]", p.r, p.name)
		e.raw("cvta.to.global.u64 %s, %s", p.r, p.r)
	}
	e.raw("ld.param.u32 %s, [%s]", st, pSt)
	g := globalIndex(e)
	j, bb, half, k, i0, tws, ti := e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.op(Int32Logic, "and.b32 %s, %s, %d", j, g, n/2-1)
	e.op(Int32Logic, "and.b32 %s, %s, %#x", bb, g, ^uint32(n/2-1)) // b·n/2
	e.op(Int32Shift, "shl.b32 %s, %s, 1", bb, bb)                  // b·n
	e.raw("mov.u32 %s, 1", half)
	e.op(Int32Shift, "shl.b32 %s, %s, %s", half, half, st)
	e.op(Int32Add, "add.s32 %s, %s, -1", k, half)
	e.op(Int32Logic, "and.b32 %s, %s, %s", k, j, k)
	e.op(Int32Shift, "shl.b32 %s, %s, 1", i0, j)
	e.op(Int32Add, "sub.s32 %s, %s, %s", i0, i0, k)
	e.op(Int32Add, "add.s32 %s, %s, %s", i0, i0, bb)
	e.raw("mov.u32 %s, %d", tws, lg-1)
	e.op(Int32Add, "sub.s32 %s, %s, %s", tws, tws, st)
	e.op(Int32Shift, "shl.b32 %s, %s, %s", ti, k, tws)
	a0, a1, at := e.reg("%rd"), e.reg("%rd"), e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", a0, i0)
	e.op(Int64Add, "add.s64 %s, %s, %s", a0, data, a0)
	off := e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", off, half)
	e.op(Int64Add, "add.s64 %s, %s, %s", a1, a0, off)
	e.op(Int32Mul, "mul.wide.u32 %s, %s, 8", at, ti)
	e.op(Int64Add, "add.s64 %s, %s, %s", at, tw, at)
	xr, xi, yr, yi, wr, wi := e.reg("%f"), e.reg("%f"), e.reg("%f"), e.reg("%f"), e.reg("%f"), e.reg("%f")
	e.raw("ld.global.v2.f32 {%s, %s}, [%s]", xr, xi, a0)
	e.raw("ld.global.v2.f32 {%s, %s}, [%s]", yr, yi, a1)
	e.raw("ld.global.nc.v2.f32 {%s, %s}, [%s]", wr, wi, at)
	tr, tim, q, p := e.reg("%f"), e.reg("%f"), e.reg("%f"), e.reg("%f")
	e.raw("mul.rn.f32 %s, %s, %s", q, yi, wi)
	e.raw("neg.f32 %s, %s", q, q)
	e.op(FP32FMA, "fma.rn.f32 %s, %s, %s, %s", tr, yr, wr, q)
	e.raw("mul.rn.f32 %s, %s, %s", p, yi, wr)
	e.op(FP32FMA, "fma.rn.f32 %s, %s, %s, %s", tim, yr, wi, p)
	ur, ui, vr, vi := e.reg("%f"), e.reg("%f"), e.reg("%f"), e.reg("%f")
	e.op(FP32Add, "add.rn.f32 %s, %s, %s", ur, xr, tr)
	e.op(FP32Add, "add.rn.f32 %s, %s, %s", ui, xi, tim)
	e.op(FP32Add, "sub.rn.f32 %s, %s, %s", vr, xr, tr)
	e.op(FP32Add, "sub.rn.f32 %s, %s, %s", vi, xi, tim)
	e.raw("st.global.v2.f32 [%s], {%s, %s}", a0, ur, ui)
	e.raw("st.global.v2.f32 [%s], {%s, %s}", a1, vr, vi)
	e.raw("ret")
	ops, overhead, _ := e.tally(nil, s.total)
	return Descriptor{
		Name: name, Group: "fft", PTX: e.render(name, s.target, s, []string{
			fmt.Sprintf("One radix-2 DIT stage, in place, over batch bit-reversed arrays of %d complex64 points.", n)}),
		Entry: e.entry, Blocks: s.blocks, Threads: FFTLargeThreads, Params: e.descParams(),
		Ops: ops, Overhead: overhead,
		Bytes:   map[MemLevel]int64{DRAM: 32 * total, L2: 8 * total},
		Variant: map[string]float64{"points": float64(n), "batch": float64(batch)},
		Notes:   "a butterfly stage of gpuwatt's own global-memory FFT (loadlevel --variant gpu above 4096 points); launched log2(n) times",
	}, nil
}
