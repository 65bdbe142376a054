package kernels

import (
	"fmt"
	"math"
	"strings"
)

// The tensor roofline (issue 33): archline's roofline with the tensor cores doing the
// work, as a GEMM does it: stage operands from DRAM into shared memory, multiply them with
// wgmma. Its precisions are TCBF16 and TCFP8; W counts flops (two per MAC) so that
// archline's fit, balance points and plots serve it unchanged, and eps_mac = 2 eps_flop.
const (
	TCBF16 Precision = "tc-bf16" // wgmma m64n256k16 bf16 (bf16.wgmma)
	TCFP8  Precision = "tc-fp8"  // wgmma m64n256k32 e4m3 (e4m3.wgmma)
)

// Tensor says p is a tensor-core precision.
func (p Precision) Tensor() bool { return p == TCBF16 || p == TCFP8 }

// The tensor roofline's bounds: (R wgmmas) per (U 16-byte chunks per thread) per step,
// R and U whole numbers up to these.
const (
	tensorRooflineMaxR = 64
	tensorRooflineMaxU = 128
)

// TensorRooflineIntensities returns the least and the most flop/byte the tensor roofline
// of precision p reaches.
func TensorRooflineIntensities(p Precision) (lo, hi float64) {
	base := tensorRooflineBase(p)
	return base / tensorRooflineMaxU, base * tensorRooflineMaxR
}

// tensorRooflineBase is the flop/byte of one wgmma per chunk of every thread (R = U = 1):
// 2 × MACs per wgmma over 128 threads × 16 bytes.
func tensorRooflineBase(p Precision) float64 {
	k := tensorKinds[p.Class()]
	return 2 * float64(k.m*k.n*k.k) / (128 * rooflineChunk)
}

// TensorRoofline generates the tensor roofline kernel of precision p (TCBF16, TCFP8) at
// about flopsPerByte: one warpgroup per block streams a DRAM buffer (far larger than L2,
// grid-stride, ld.global.v4) into a shared-memory tile set (A 64 and B 256 rows of 32
// bytes, as the wgmma kernel's), U chunks of 16 bytes per thread per step, and runs R
// wgmmas on the tile after each step: W = R × 2 × MACs per wgmma per step and block, Q =
// U × 16 × 128 bytes, so the intensity is exactly base × R / U (base 256 flop/byte for
// bf16, 512 for fp8); Variant["intensity"] holds it. The loaded words (the executor zeroes
// the buffer) are xored with a per-thread random word of the format (sign and mantissa
// random, the exponent of 1), which changes every chunk: the tensor cores see live data that
// changes from step to step, as in a GEMM. Bytes[shared] counts the staging stores (Q) and
// the prologue's fill of the tile; the wgmmas' own reads of the tile are part of their
// energy per MAC, as in the micro kernels.
//
// Reads Opts.Device, Blocks (default 2 per SM; 128 threads each), Iters (passes over the
// buffer, default sized for LaunchTime), Bytes (the buffer, default 1 GiB, rounded down to
// whole steps).
func TensorRoofline(p Precision, flopsPerByte float64, o Opts) (Descriptor, error) {
	if !p.Tensor() {
		return Descriptor{}, fmt.Errorf("kernels: %q is not a tensor precision (want %s or %s)", p, TCBF16, TCFP8)
	}
	c := p.Class()
	k := tensorKinds[c]
	dev, _, err := o.Device.withDefaults()
	if err != nil {
		return Descriptor{}, err
	}
	if ok, why := TensorSupported(c, dev.CC); !ok {
		return Descriptor{}, fmt.Errorf("kernels: tensor roofline %s: %s", p, why)
	}
	lo, hi := TensorRooflineIntensities(p)
	if !(flopsPerByte >= lo && flopsPerByte <= hi) {
		return Descriptor{}, fmt.Errorf("kernels: tensor roofline %s: intensity %g flop/byte: want %g to %g", p, flopsPerByte, lo, hi)
	}
	if o.Threads == 0 {
		o.Threads = 128
	}
	if o.Threads != 128 {
		return Descriptor{}, fmt.Errorf("kernels: tensor roofline: %d threads per block: it runs one warpgroup (128) per block", o.Threads)
	}
	if o.Blocks == 0 {
		o.Blocks = 2 * dev.SMs
	}
	base := tensorRooflineBase(p)
	R, U := 1, 1
	if r := flopsPerByte / base; r >= 1 {
		R = int(math.Round(r))
	} else {
		U = int(math.Round(1 / r))
	}
	intensity := base * float64(R) / float64(U)
	o.Unroll = R
	s, err := o.shape(R)
	if err != nil {
		return Descriptor{}, err
	}
	s.ctas = 2
	name := fmt.Sprintf("roofline.%s.i%g", p, intensity)

	T := s.total
	row := T * rooflineChunk
	step := row * int64(U)
	if (int64(U)-1)*row > 1<<31-1 {
		return Descriptor{}, fmt.Errorf("kernels: %s: %d chunks of %d-byte rows do not fit PTX's 32-bit address offsets", name, U, row)
	}
	bufTarget := int64(gib)
	if s.bytes > 0 {
		bufTarget = s.bytes
	}
	steps := max(1, bufTarget/step)
	if steps > 1<<31 {
		return Descriptor{}, fmt.Errorf("kernels: %s: %d bytes is too large", name, bufTarget)
	}
	buf := steps * step
	groups := T / 128
	macsPerPass := steps * groups * int64(R) * k.shape().MACs()
	passes := s.iters
	if passes == 0 {
		rate := sizingTensorRate(c, s.target.SM) * float64(s.dev.SMs) * s.dev.ClockHz
		passes = s.sizeIters(max(float64(buf)/s.dev.DRAMBytesPerSec, float64(macsPerPass)/rate))
	}

	e := newEmitter(entryName(name))
	mask, or := tensorOperands(k.elem, OperandsRandom)
	pSrc := e.param(Param{Name: "src", Kind: Buffer, Size: buf})
	pOut := e.param(Param{Name: "out", Kind: Buffer, Size: 8})
	pSteps := e.param(Param{Name: "steps", Kind: U32, Int: uint64(steps)})
	pPasses := e.param(Param{Name: "passes", Kind: U32, Int: uint64(passes)})
	pMask := e.param(Param{Name: "seed_mask", Kind: U32, Int: uint64(mask)})
	pOr := e.param(Param{Name: "seed_or", Kind: U32, Int: uint64(or)})
	pMagic := e.param(Param{Name: "magic", Kind: F32, Real: magicF})

	rdSrc, rdOut := e.reg("%rd"), e.reg("%rd")
	e.raw("ld.param.u64 %s, [%s]", rdSrc, pSrc)
	e.raw("cvta.to.global.u64 %s, %s", rdSrc, rdSrc)
	e.raw("ld.param.u64 %s, [%s]", rdOut, pOut)
	e.raw("cvta.to.global.u64 %s, %s", rdOut, rdOut)
	rSteps, rPasses, rMask, rOr := e.reg("%r"), e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("ld.param.u32 %s, [%s]", rSteps, pSteps)
	e.raw("ld.param.u32 %s, [%s]", rPasses, pPasses)
	e.raw("ld.param.u32 %s, [%s]", rMask, pMask)
	e.raw("ld.param.u32 %s, [%s]", rOr, pOr)
	rMagic := e.reg("%f")
	e.raw("ld.param.f32 %s, [%s]", rMagic, pMagic)

	tid, cta, gid := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.op(Int32Mul, "mad.lo.s32 %s, %s, %d, %s", gid, cta, s.threads, tid)
	e.comment("a random word per thread (hash of %%clock + the thread's index), advanced every step")
	rnd, hi32, m := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%clock", rnd)
	e.op(Int32Add, "add.s32 %s, %s, %s", rnd, rnd, gid)
	e.op(Int32Mul, "mul.lo.s32 %s, %s, %d", rnd, rnd, seedHashK)
	e.op(Int32Shift, "shr.u32 %s, %s, 16", hi32, rnd)
	e.op(Int32Logic, "xor.b32 %s, %s, %s", rnd, rnd, hi32)
	e.op(Int32Logic, "and.b32 %s, %s, %s", m, rnd, rMask)
	e.op(Int32Logic, "or.b32 %s, %s, %s", m, m, rOr)

	aBytes, bBytes := k.m*wgRowBytes, k.n*wgRowBytes
	tile := aBytes + bBytes
	slots := tile / (s.threads * rooflineChunk) // 16-byte slots of the tile per thread: 5
	smem := e.entry + "_tile"
	e.globals = append(e.globals, fmt.Sprintf(".shared .align 1024 .b8 %s[%d];", smem, tile))
	sbase, saddr := e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %s", sbase, smem)
	e.op(Int32Shift, "shl.b32 %s, %s, 4", saddr, tid)
	e.op(Int32Add, "add.s32 %s, %s, %s", saddr, saddr, sbase)
	e.comment("fill the whole tile once, so that no wgmma reads what another kernel left")
	for i := range slots {
		e.raw("st.shared.v4.u32 [%s+%d], {%s, %s, %s, %s}", saddr, i*s.threads*rooflineChunk, m, m, m, m)
	}
	descr := func(off int) string {
		l, h := e.reg("%r"), e.reg("%r")
		d := e.reg("%rd")
		e.op(Int32Add, "add.s32 %s, %s, %d", l, sbase, off)
		e.op(Int32Shift, "shr.u32 %s, %s, 4", l, l)
		e.op(Int32Logic, "and.b32 %s, %s, %d", l, l, 0x3fff)
		e.op(Int32Logic, "or.b32 %s, %s, %d", l, l, (wgLBO>>4)<<16)
		e.raw("mov.u32 %s, %d", h, wgSBO>>4)
		e.raw("mov.b64 %s, {%s, %s}", d, l, h)
		return d
	}
	aDesc, bDesc := descr(0), descr(aBytes)
	acc := e.regsN("%f", k.c)
	for _, r := range acc {
		e.raw("mov.f32 %s, 0f00000000", r)
	}
	pAcc := e.reg("%p")
	e.op(Setp, "setp.ne.u32 %s, %s, 0", pAcc, rPasses)
	off := e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, %d", off, gid, rooflineChunk)
	lp := e.beginLoop("passes", rPasses)
	ptr := e.reg("%rd")
	e.op(Int64Add, "add.s64 %s, %s, %s", ptr, rdSrc, off)
	ls := e.beginLoop("steps", rSteps)
	for u := range U {
		// The random word advances per chunk, not per step: every instruction of the
		// staging then scales with Q, which the model has a term for.
		e.op(Int32Mul, "mad.lo.s32 %s, %s, %d, 1", rnd, rnd, seedHashK)
		e.op(Int32Logic, "and.b32 %s, %s, %s", m, rnd, rMask)
		e.op(Int32Logic, "or.b32 %s, %s, %s", m, m, rOr)
		w := e.regsN("%r", 4)
		e.raw("ld.global.v4.u32 {%s}, [%s+%d]", strings.Join(w, ", "), ptr, int64(u)*row)
		for _, x := range w {
			e.op(Int32Logic, "xor.b32 %s, %s, %s", x, x, m)
		}
		e.raw("st.shared.v4.u32 [%s+%d], {%s}", saddr, (u%slots)*s.threads*rooflineChunk, strings.Join(w, ", "))
	}
	e.raw("fence.proxy.async.shared::cta")
	e.raw("bar.sync 0")
	e.raw("wgmma.fence.sync.aligned")
	d := "{" + strings.Join(acc, ", ") + "}"
	imm := "1, 1, 0, 0"
	if k.elem.bits == 8 {
		imm = "1, 1"
	}
	for range R {
		e.measure(c, "%s %s, %s, %s, %s, %s", k.instr(), d, aDesc, bDesc, pAcc, imm)
	}
	e.raw("wgmma.commit_group.sync.aligned")
	e.raw("wgmma.wait_group.sync.aligned 0")
	e.op(Int64Add, "add.s64 %s, %s, %d", ptr, ptr, step)
	e.endLoop(ls)
	e.endLoop(lp)
	p0 := e.reg("%p")
	e.op(Setp, "setp.eq.f32 %s, %s, %s", p0, acc[0], rMagic)
	e.raw("@%s st.global.f32 [%s], %s", p0, rdOut, acc[0])
	e.raw("ret")

	trips := map[string]int64{"passes": int64(passes), "steps": steps}
	ops, overhead, measured := e.tally(trips, T)
	sh := k.shape()
	ops[c] = ops[c] / int64(sh.Threads) * sh.MACs()
	measured = measured / int64(sh.Threads) * sh.MACs()
	q := buf * int64(passes)
	target := tensorTarget(k, s.target)
	comments := []string{
		fmt.Sprintf("Tensor roofline %s: %d threads (%d blocks x 128), %d chunks of 16 B per thread and %d %s per step: %g flop/byte.", p, T, s.blocks, U, R, c, intensity),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	notes := []string{
		fmt.Sprintf("%d warpgroups, %d passes × %d steps; per step and warpgroup %d chunks of 16 B per thread from DRAM (ld.global.v4, xored with a random word of the format, stored to the shared tile) and %d %s (%d MACs each): W = %d flops (%d MACs), Q = %d B per launch, %g flop/byte.",
			groups, passes, steps, U, R, k.instr(), sh.MACs(), 2*measured, measured, q, intensity),
		"Bytes[shared] counts the staging stores and the prologue's fill of the tile; the wgmmas' reads of the tile are in their energy per MAC. Ops also hold the overhead (addresses, loop counters, the random word's update and xors).",
	}
	dsc := Descriptor{
		Name: name, Group: "roofline", PTX: e.render(name, target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Measured: c, Overhead: overhead,
		Bytes:  map[MemLevel]int64{DRAM: q, Shared: q + int64(slots)*rooflineChunk*T},
		Unroll: R, Iters: steps * int64(passes), Tensor: &sh,
		Variant: map[string]float64{"intensity": intensity, "wgmmas_per_step": float64(R), "chunks_per_step": float64(U)},
		Notes:   strings.Join(notes, " "),
	}
	return dsc.check(measured), nil
}
