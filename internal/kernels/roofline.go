package kernels

import (
	"fmt"
	"math"
	"strings"
)

// Precision is the floating-point precision of a roofline kernel.
type Precision string

// The precisions of the roofline kernel.
const (
	FP32 Precision = "fp32"
	FP64 Precision = "fp64"
)

// Class is the FMA class that a roofline kernel of this precision executes.
func (p Precision) Class() OpClass {
	switch p {
	case FP64:
		return FP64FMA
	case TCBF16:
		return BF16WGMMA
	case TCFP8:
		return E4M3WGMMA
	}
	return FP32FMA
}

// The bounds of the roofline kernel's intensity: one FMA per 16-byte chunk loaded and
// stored (2 flops over 32 bytes) is the least, 4096 flop/byte the most.
const (
	RooflineMinIntensity = 1.0 / 16
	RooflineMaxIntensity = 4096.0
	rooflineChunk        = 16  // bytes per vector load (ld.global.v4.f32 / v2.f64)
	rooflineBody         = 128 // FMAs per chunk in one trip of the inner loop
	// rooflineSpread is the multiplier of the seeding FMAs, 1 + 2^-10 (exact in both
	// precisions): each chain starts 0.1 % away from the previous one.
	rooflineSpread = 1 + 1.0/1024
)

// Roofline generates the roofline kernel of seed 002 (Algorithm 4), grid-stride: in each
// step a thread loads Unroll 16-byte chunks from src (ld.global.v4.f32 or .v2.f64),
// applies K FMAs per chunk, spread round-robin over the chunk's words (each word its own
// dependency chain), and stores the chunks to dst. Loads and stores are DRAM traffic (the
// buffers are far larger than L2), so per chunk W = 2K flops and Q = 32 bytes: the
// intensity is exactly K/16 flop/byte, K = round(16 × flopsPerByte) (any whole number
// from 1 to 65536: flopsPerByte must lie in [1/16, 4096]); the descriptor's Variant holds
// the exact intensity.
//
// The FMAs exercise the FPU as the flop kernel's (Arith) do: x = x*a + b with the same
// a and b, on chains whose values differ from each other and from lane to lane. The
// first FMA of each chain in a step seeds it, x = prev*s + x (s = 1 + 2^-10): the first
// chain from a per-thread value in [0, 65535] (%clock plus the address, as the flop
// kernel seeds from %clock plus %tid.x), each further chain from the chain seeded
// before it. Without it every chain of every thread would start from the zeroed buffer
// and hold the same value: the FPU would see the same operands 16 times in a row and
// draw far less power per flop than on varied data (measured on an H200: 2.3 instead of
// 3.7 pJ per fp32 flop). The other FMAs are the body of the inner loop "reps", up to 128
// per chunk and trip (the loop overhead is then 3 instructions per 128 × Unroll FMAs),
// and what does not fill a whole trip comes straight-line before the loop.
//
// Reads Opts.Device, Threads, Blocks (the occupancy), Iters (passes over the buffer,
// default sized for LaunchTime), Unroll (chunks in flight per thread, default 4) and
// Bytes (each buffer, default 1 GiB, rounded down to whole steps).
func Roofline(prec Precision, flopsPerByte float64, o Opts) (Descriptor, error) {
	var typ, vecSfx string
	var pa, pb ParamKind
	var a, b float64
	switch prec {
	case FP32:
		typ, vecSfx, pa, pb, a, b = "f32", "v4.f32", F32, F32, fmaA32, fmaB32
	case FP64:
		typ, vecSfx, pa, pb, a, b = "f64", "v2.f64", F64, F64, fmaA64, fmaB64
	default:
		return Descriptor{}, fmt.Errorf("kernels: roofline precision %q: want fp32 or fp64", prec)
	}
	if math.IsNaN(flopsPerByte) || flopsPerByte < RooflineMinIntensity || flopsPerByte > RooflineMaxIntensity {
		return Descriptor{}, fmt.Errorf("kernels: roofline intensity %g flop/byte: want %g to %g", flopsPerByte, RooflineMinIntensity, RooflineMaxIntensity)
	}
	s, err := o.shape(4)
	if err != nil {
		return Descriptor{}, err
	}
	if s.unroll > 16 {
		return Descriptor{}, fmt.Errorf("kernels: roofline: unroll %d chunks: want 1 to 16", s.unroll)
	}
	words := rooflineChunk * 8 / map[Precision]int{FP32: 32, FP64: 64}[prec]
	// K FMAs per chunk: seed (the first FMA of each word's chain), rest, then body × reps
	// in the inner loop.
	k := int64(math.Round(flopsPerByte * rooflineChunk))
	seed := min(k, int64(words))
	body, reps := min(k-seed, rooflineBody), int64(1)
	if body > 0 {
		reps = (k - seed) / body
	}
	rest := k - seed - body*reps
	intensity := float64(2*k) / float64(2*rooflineChunk)
	name := fmt.Sprintf("roofline.%s.i%g", prec, intensity)

	T := s.total
	row := T * rooflineChunk
	step := row * int64(s.unroll)
	if (int64(s.unroll)-1)*row > 1<<31-1 {
		return Descriptor{}, fmt.Errorf("kernels: %s: %d chunks of %d-byte rows do not fit PTX's 32-bit address offsets; use fewer threads or a smaller unroll", name, s.unroll, row)
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
	bytesPerPass := 2 * buf
	flopsPerPass := 2 * k * (buf / rooflineChunk)
	passes := s.iters
	if passes == 0 {
		rate, _ := sizingRate(prec.Class(), s.target.SM)
		flopRate := 2 * rate * float64(s.dev.SMs) * s.dev.ClockHz
		passes = s.sizeIters(max(float64(bytesPerPass)/s.dev.DRAMBytesPerSec, float64(flopsPerPass)/flopRate))
	}

	e := newEmitter(entryName(name))
	pSrc := e.param(Param{Name: "src", Kind: Buffer, Size: buf})
	pDst := e.param(Param{Name: "dst", Kind: Buffer, Size: buf})
	pSteps := e.param(Param{Name: "steps", Kind: U32, Int: uint64(steps)})
	pPasses := e.param(Param{Name: "passes", Kind: U32, Int: uint64(passes)})
	pReps := e.param(Param{Name: "reps", Kind: U32, Int: uint64(reps)})
	pA := e.param(Param{Name: "a", Kind: pa, Real: a})
	pB := e.param(Param{Name: "b", Kind: pb, Real: b})
	pS := e.param(Param{Name: "s", Kind: pa, Real: rooflineSpread})

	fr := map[string]string{"f32": "%f", "f64": "%fd"}[typ]
	rdSrc, rdDst := e.reg("%rd"), e.reg("%rd")
	e.raw("ld.param.u64 %s, [%s]", rdSrc, pSrc)
	e.raw("cvta.to.global.u64 %s, %s", rdSrc, rdSrc)
	e.raw("ld.param.u64 %s, [%s]", rdDst, pDst)
	e.raw("cvta.to.global.u64 %s, %s", rdDst, rdDst)
	rSteps, rPasses, rReps := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("ld.param.u32 %s, [%s]", rSteps, pSteps)
	e.raw("ld.param.u32 %s, [%s]", rPasses, pPasses)
	e.raw("ld.param.u32 %s, [%s]", rReps, pReps)
	ra, rb, rs := e.reg(fr), e.reg(fr), e.reg(fr)
	e.raw("ld.param.%s %s, [%s]", typ, ra, pA)
	e.raw("ld.param.%s %s, [%s]", typ, rb, pB)
	e.raw("ld.param.%s %s, [%s]", typ, rs, pS)
	// Each pass computes its start addresses afresh: nothing but the parameters lives
	// across passes, which keeps the kernel within 32 registers (2048 threads per SM).
	lp := e.beginLoop("passes", rPasses)
	tid, cta, gid := e.reg("%r"), e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", tid)
	e.raw("mov.u32 %s, %%ctaid.x", cta)
	e.op(Int32Mul, "mad.lo.s32 %s, %s, %d, %s", gid, cta, s.threads, tid)
	off := e.reg("%rd")
	e.op(Int32Mul, "mul.wide.u32 %s, %s, %d", off, gid, rooflineChunk)
	p, q := e.reg("%rd"), e.reg("%rd")
	e.op(Int64Add, "add.s64 %s, %s, %s", p, rdSrc, off)
	e.op(Int64Add, "add.s64 %s, %s, %s", q, rdDst, off)
	ls := e.beginLoop("steps", rSteps)
	data := make([][]string, s.unroll)
	for u := range s.unroll {
		data[u] = e.regsN(fr, words)
		e.raw("ld.global.%s %s, [%s+%d]", vecSfx, vec(data[u]), p, int64(u)*row)
	}
	// fma emits the j-th FMA of every chunk: x = x*a + b on word j mod words.
	fma := func(j int64) {
		for u := range s.unroll {
			x := data[u][j%int64(words)]
			e.measure(prec.Class(), "fma.rn.%s %s, %s, %s, %s", typ, x, x, ra, rb)
		}
	}
	e.comment("seed the chains: the first from %%clock + the address (as a float in [0, 65535]),")
	e.comment("each further one from the chain before it: x = prev*s + x")
	clk, lo := e.reg("%r"), e.reg("%r")
	h, sv := e.reg("%h"), e.reg(fr)
	e.raw("mov.u32 %s, %%clock", clk)
	e.raw("cvt.u32.u64 %s, %s", lo, p)
	e.op(Int32Add, "add.s32 %s, %s, %s", clk, clk, lo)
	e.raw("cvt.u16.u32 %s, %s", h, clk)
	e.raw("cvt.rn.%s.u16 %s, %s", typ, sv, h)
	prev := sv
	for j := range seed {
		for u := range s.unroll {
			x := data[u][j]
			e.measure(prec.Class(), "fma.rn.%s %s, %s, %s, %s", typ, x, prev, rs, x)
			prev = x
		}
	}
	if rest > 0 {
		e.comment("%d FMAs per chunk before the loop", rest)
		for j := range rest {
			fma(seed + j)
		}
	}
	if body > 0 {
		e.comment("%d FMAs per chunk per trip, round-robin over its %d words; reps trips", body, words)
		lr := e.beginLoop("reps", rReps)
		for j := range body {
			fma(seed + rest + j)
		}
		e.endLoop(lr)
	}
	for u := range s.unroll {
		e.raw("st.global.%s [%s+%d], %s", vecSfx, q, int64(u)*row, vec(data[u]))
	}
	e.op(Int64Add, "add.s64 %s, %s, %d", p, p, step)
	e.op(Int64Add, "add.s64 %s, %s, %d", q, q, step)
	e.endLoop(ls)
	e.endLoop(lp)
	e.raw("ret")

	trips := map[string]int64{"passes": int64(passes), "steps": steps, "reps": reps}
	ops, overhead, measured := e.tally(trips, T)
	q64 := bytesPerPass * int64(passes)
	comments := []string{
		fmt.Sprintf("Seed 002, Algorithm 4 (roofline), %s: %d threads (%d blocks x %d), %d chunks of 16 B per step, %d FMAs per chunk: %g flop/byte.", prec, T, s.blocks, s.threads, s.unroll, k, intensity),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	notes := []string{
		fmt.Sprintf("%d threads, %d passes × %d steps × %d chunks of 16 B (ld/st.global.%s); %d FMAs (%s) per chunk: W = %d flops, Q = %d B per launch, %g flop/byte.",
			T, passes, steps, s.unroll, vecSfx, k, prec.Class(), 2*measured, q64, intensity),
		fmt.Sprintf("Per chunk and step: %d seeding FMAs (x = prev*s + x, the first chain from %%clock + the address in [0, 65535], s = 1 + 2^-10), %d before the reps loop and %d x %d in it, each x = x*a + b as in the flop kernel: chains differ from each other and from lane to lane, stay finite and never denormal (they tend to 1).", seed, rest, body, reps),
		"Ops also hold the overhead (addresses, loop counters, the seed's add).",
	}
	d := Descriptor{
		Name: name, Group: "roofline", PTX: e.render(name, s.target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Measured: prec.Class(), Overhead: overhead,
		Bytes: map[MemLevel]int64{DRAM: q64}, Requested: q64,
		Variant: map[string]float64{"intensity": intensity, "fmas_per_chunk": float64(k)},
		Notes:   strings.Join(notes, " "),
	}
	return d.check(measured), nil
}

// RooflineFlops returns W, the flops of the measured FMAs of a roofline (or FMA) kernel:
// 2 × its measured FMAs.
func RooflineFlops(d Descriptor) int64 { return d.MeasuredOps() * d.Measured.Flops() }
