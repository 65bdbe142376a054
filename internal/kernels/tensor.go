package kernels

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// The tensor-core kernels (issue 33): one class per data type and instruction form, each
// at full issue rate with its operands on chip. For these classes Descriptor.Ops counts
// multiply-accumulates (MACs), not instructions: energy per unit is energy per MAC, and
// the spec is the dense MACs per clock per SM.
//
//   - mma.sync (sm_80+; fp8 sm_89+): one warp multiplies register fragments. Each warp keeps
//     Chains independent accumulator sets and two operand sets (A and B fragments), and runs a
//     counted loop of Unroll mma instructions, instruction j accumulating into chain j mod
//     Chains from operand set j mod 2: consecutive instructions read different operands.
//   - wgmma.mma_async (sm_90a only): one warpgroup (128 threads) multiplies A and B tiles in
//     shared memory, named by 64-bit matrix descriptors, into 128 f32 accumulators per
//     thread (m64n256). The tiles are written once in the prologue and stay in shared
//     memory; the loop issues Unroll wgmmas alternating between two tile sets, commits them
//     as one group and waits until at most one group is in flight.
//
// Operand data (OperandPatterns): every A and B element is (hash(clock + tid) & mask) | or,
// so the PTX is the same for every pattern. zeros: all 0; const: 1.75 in every element (int8:
// 0x5a); random: the sign and mantissa bits random, the exponent that of 1 (int8: all bits
// random), so products stay in [1, 4) and the f32 accumulators follow a random walk that
// never overflows. The accumulators start at 0.

// The tensor-core classes.
const (
	FP16MMA   OpClass = "fp16.mma"   // mma.sync m16n8k16 f32.f16.f16.f32
	BF16MMA   OpClass = "bf16.mma"   // mma.sync m16n8k16 f32.bf16.bf16.f32
	TF32MMA   OpClass = "tf32.mma"   // mma.sync m16n8k8 f32.tf32.tf32.f32
	INT8MMA   OpClass = "int8.mma"   // mma.sync m16n8k32 s32.s8.s8.s32
	E4M3MMA   OpClass = "e4m3.mma"   // mma.sync m16n8k32 f32.e4m3.e4m3.f32 (sm_89+)
	E5M2MMA   OpClass = "e5m2.mma"   // mma.sync m16n8k32 f32.e5m2.e5m2.f32 (sm_89+)
	FP16WGMMA OpClass = "fp16.wgmma" // wgmma.mma_async m64n256k16 f32.f16.f16 (sm_90a)
	BF16WGMMA OpClass = "bf16.wgmma" // wgmma.mma_async m64n256k16 f32.bf16.bf16 (sm_90a)
	E4M3WGMMA OpClass = "e4m3.wgmma" // wgmma.mma_async m64n256k32 f32.e4m3.e4m3 (sm_90a)
	E5M2WGMMA OpClass = "e5m2.wgmma" // wgmma.mma_async m64n256k32 f32.e5m2.e5m2 (sm_90a)
)

// TensorClasses are the tensor-core classes, in the suite's order.
var TensorClasses = []OpClass{
	FP16MMA, BF16MMA, TF32MMA, INT8MMA, E4M3MMA, E5M2MMA,
	FP16WGMMA, BF16WGMMA, E4M3WGMMA, E5M2WGMMA,
}

// Tensor says c is a tensor-core class, whose Ops count MACs.
func (c OpClass) Tensor() bool { _, ok := tensorKinds[c]; return ok }

// TensorShape is the shape of a tensor-core kernel's instruction: M×N×K MACs per
// instruction, issued together by Threads threads (a warp, or a warpgroup for wgmma).
type TensorShape struct {
	M, N, K int
	Threads int    // 32 (mma.sync) or 128 (wgmma)
	Instr   string // the PTX opcode
}

// MACs is the multiply-accumulates of one instruction.
func (t TensorShape) MACs() int64 { return int64(t.M) * int64(t.N) * int64(t.K) }

// tensorElem is an operand type's bit patterns, per element.
type tensorElem struct {
	ptx         string // the PTX type: f16, bf16, tf32, s8, e4m3, e5m2
	bits        int    // element width in a packed 32-bit word
	one, fixed  uint32 // 1.0 (random data's exponent; int8: 0) and 1.75 (int8: 0x5a)
	randomMask  uint32 // the bits random data draws: sign and mantissa (int8: all)
	description string
}

var (
	elemF16  = tensorElem{"f16", 16, 0x3c00, 0x3f00, 0x83ff, "f16: sign and 10 mantissa bits random, exponent of 1"}
	elemBF16 = tensorElem{"bf16", 16, 0x3f80, 0x3fe0, 0x807f, "bf16: sign and 7 mantissa bits random, exponent of 1"}
	elemTF32 = tensorElem{"tf32", 32, 0x3f800000, 0x3fe00000, 0x807fe000, "tf32 (an f32 whose low 13 bits the tensor core ignores): sign and 10 mantissa bits random"}
	elemS8   = tensorElem{"s8", 8, 0, 0x5a, 0xff, "s8: all 8 bits random"}
	elemE4M3 = tensorElem{"e4m3", 8, 0x38, 0x3e, 0x87, "e4m3: sign and 3 mantissa bits random, exponent of 1"}
	elemE5M2 = tensorElem{"e5m2", 8, 0x3c, 0x3f, 0x83, "e5m2: sign and 2 mantissa bits random, exponent of 1"}
)

// word replicates an element's bits over a 32-bit register.
func (t tensorElem) word(v uint32) uint32 {
	var w uint32
	for i := 0; i < 32; i += t.bits {
		w |= v << i
	}
	return w
}

// tensorKind is one class's instruction and registers.
type tensorKind struct {
	wg      bool // wgmma (else mma.sync)
	m, n, k int
	elem    tensorElem
	acc     string // accumulator type: f32 or s32
	a, b, c int    // registers per thread of A, B (mma.sync) and the accumulator
	minSM   int
	isa     string // the first PTX ISA with the instruction at this shape and type
}

var tensorKinds = map[OpClass]tensorKind{
	FP16MMA:   {m: 16, n: 8, k: 16, elem: elemF16, acc: "f32", a: 4, b: 2, c: 4, minSM: 80, isa: "7.0"},
	BF16MMA:   {m: 16, n: 8, k: 16, elem: elemBF16, acc: "f32", a: 4, b: 2, c: 4, minSM: 80, isa: "7.0"},
	TF32MMA:   {m: 16, n: 8, k: 8, elem: elemTF32, acc: "f32", a: 4, b: 2, c: 4, minSM: 80, isa: "7.0"},
	INT8MMA:   {m: 16, n: 8, k: 32, elem: elemS8, acc: "s32", a: 4, b: 2, c: 4, minSM: 80, isa: "7.0"},
	E4M3MMA:   {m: 16, n: 8, k: 32, elem: elemE4M3, acc: "f32", a: 4, b: 2, c: 4, minSM: 89, isa: "8.4"},
	E5M2MMA:   {m: 16, n: 8, k: 32, elem: elemE5M2, acc: "f32", a: 4, b: 2, c: 4, minSM: 89, isa: "8.4"},
	FP16WGMMA: {wg: true, m: 64, n: 256, k: 16, elem: elemF16, acc: "f32", c: 128, minSM: 90, isa: "8.0"},
	BF16WGMMA: {wg: true, m: 64, n: 256, k: 16, elem: elemBF16, acc: "f32", c: 128, minSM: 90, isa: "8.0"},
	E4M3WGMMA: {wg: true, m: 64, n: 256, k: 32, elem: elemE4M3, acc: "f32", c: 128, minSM: 90, isa: "8.0"},
	E5M2WGMMA: {wg: true, m: 64, n: 256, k: 32, elem: elemE5M2, acc: "f32", c: 128, minSM: 90, isa: "8.0"},
}

// instr is the kind's PTX opcode.
func (k tensorKind) instr() string {
	t := k.elem.ptx
	if k.wg {
		return fmt.Sprintf("wgmma.mma_async.sync.aligned.m%dn%dk%d.%s.%s.%s", k.m, k.n, k.k, k.acc, t, t)
	}
	return fmt.Sprintf("mma.sync.aligned.m%dn%dk%d.row.col.%s.%s.%s.%s", k.m, k.n, k.k, k.acc, t, t, k.acc)
}

func (k tensorKind) shape() TensorShape {
	th := 32
	if k.wg {
		th = 128
	}
	return TensorShape{M: k.m, N: k.n, K: k.k, Threads: th, Instr: k.instr()}
}

// TensorSupported says whether class c runs on compute capability cc, and why not.
func TensorSupported(c OpClass, cc string) (bool, string) {
	k, ok := tensorKinds[c]
	if !ok {
		return false, fmt.Sprintf("%q is not a tensor-core class", c)
	}
	sm, err := parseCC(orDefault(cc))
	if err != nil {
		return false, err.Error()
	}
	switch {
	case k.wg && sm != 90:
		return false, fmt.Sprintf("%s (wgmma) exists on compute capability 9.0 only (sm_90a), not %s", c, cc)
	case !k.wg && k.elem.bits == 8 && k.elem.ptx != "s8" && sm >= 90 && sm < 120:
		// On an H100 (2026-11-28) ptxas made of 32 e4m3 mma.sync per loop iteration 24
		// F2FP.F16.E4M3.UNPACK_B and 4 HMMA.16816.F32 (fp16), and the kernel ran 5400 of
		// its "MACs" per clock per SM where fp16 does at most 2048: the MACs counted are
		// not the ones run. Hopper's fp8 is wgmma's.
		return false, fmt.Sprintf("%s is emulated on compute capability %s (fp8 mma.sync is native on 8.9 and 12.x; Hopper's fp8 is wgmma)", c, cc)
	case sm < k.minSM:
		return false, fmt.Sprintf("%s needs compute capability %s or later, not %s", c, fmtCC(k.minSM), cc)
	}
	return true, ""
}

// tensorTarget is the module target of class c on target t: sm_90a for wgmma, and the PTX
// ISA raised to the first that has the instruction.
func tensorTarget(k tensorKind, t Target) Target {
	if k.wg {
		t.Suffix = "a"
	}
	if isaLess(t.ISA, k.isa) {
		t.ISA = k.isa
	}
	return t
}

// isaLess compares PTX ISA versions "7.8" < "8.4".
func isaLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	ma, _ := strconv.Atoi(pa[0])
	mb, _ := strconv.Atoi(pb[0])
	if ma != mb {
		return ma < mb
	}
	na, nb := 0, 0
	if len(pa) > 1 {
		na, _ = strconv.Atoi(pa[1])
	}
	if len(pb) > 1 {
		nb, _ = strconv.Atoi(pb[1])
	}
	return na < nb
}

// The wgmma kernels' shared-memory tiles: A (64 rows) and B (256 rows), each row K elements
// of 32 bytes (16 bf16/f16 or 32 fp8), in 8-row × 16-byte core matrices without swizzle:
// core matrix (row group g, K half h) at (2g + h) × 128 bytes, so the leading-dimension
// byte offset (K) is 128 and the stride-dimension offset (rows) 256.
const (
	wgRowBytes = 32
	wgLBO      = 128
	wgSBO      = 256
	wgSets     = 2 // tile sets, alternated from one wgmma to the next
)

// sizingTensorRate is the MACs per clock per SM used to size a launch: the spec, else an
// estimate (mma.sync on sm_90 reaches about two thirds of the dense peak).
func sizingTensorRate(c OpClass, sm int) float64 {
	if r, ok := SpecOpsPerCycleSM(c, fmtCC(sm)); ok {
		if k := tensorKinds[c]; !k.wg && sm >= 90 {
			return r * 2 / 3
		}
		return r
	}
	return 1024
}

// Tensor generates the throughput kernel of tensor-core class c. It reads Opts.Device,
// Threads (default 256 for mma.sync, 128 for wgmma: one warpgroup), Blocks (default 4 per
// SM for mma.sync, 2 per SM for wgmma), Iters, Unroll (mma instructions per loop iteration
// and warp, default 32; wgmma instructions per iteration and warpgroup, default 8), Chains
// (mma.sync accumulator sets, default 4), LaunchTime and Operands (default random; every
// tensor class has all three patterns).
func Tensor(c OpClass, o Opts) (Descriptor, error) {
	k, ok := tensorKinds[c]
	if !ok {
		return Descriptor{}, fmt.Errorf("kernels: %q is not a tensor-core class (want one of %s)", c, tensorList())
	}
	dev, _, err := o.Device.withDefaults()
	if err != nil {
		return Descriptor{}, err
	}
	if ok, why := TensorSupported(c, dev.CC); !ok {
		return Descriptor{}, fmt.Errorf("kernels: %s", why)
	}
	o, perBlock, err := tensorDefaults(c, k, o, dev)
	if err != nil {
		return Descriptor{}, err
	}
	s, err := o.shape(o.Unroll)
	if err != nil {
		return Descriptor{}, err
	}
	s.ctas = perBlock
	if err := checkTensorShape(c, k, s); err != nil {
		return Descriptor{}, err
	}
	pattern := o.Operands
	if pattern == "" {
		pattern = DefaultOperands
	}
	if !supports(c, pattern) {
		return Descriptor{}, fmt.Errorf("kernels: %s has no %q operand pattern (it has %v)", c, pattern, PatternsFor(c))
	}
	sh := k.shape()
	groups := s.total / int64(sh.Threads) // warps or warpgroups of the launch
	iters := s.iters
	if iters == 0 {
		rate := sizingTensorRate(c, s.target.SM) * float64(s.dev.SMs) * s.dev.ClockHz // MACs per second
		iters = s.sizeIters(float64(groups) * float64(s.unroll) * float64(sh.MACs()) / rate)
	}
	name := PatternName(c, pattern)
	e := newEmitter(entryName(name))
	mask, or := tensorOperands(k.elem, pattern)
	pOut := e.param(Param{Name: "out", Kind: Buffer, Size: 8})
	pIters := e.param(Param{Name: "iters", Kind: U32, Int: uint64(iters)})
	pMask := e.param(Param{Name: "seed_mask", Kind: U32, Int: uint64(mask)})
	pOr := e.param(Param{Name: "seed_or", Kind: U32, Int: uint64(or)})
	magic := Param{Name: "magic", Kind: F32, Real: magicF}
	accPrefix := "%f"
	if k.acc == "s32" {
		magic, accPrefix = Param{Name: "magic", Kind: U32, Int: magic32}, "%r"
	}
	pMagic := e.param(magic)

	rdOut, rdG := e.reg("%rd"), e.reg("%rd")
	rIters := e.reg("%r")
	seed := tensorSeeder{e: e, mask: e.reg("%r"), or: e.reg("%r")}
	e.raw("ld.param.u64 %s, [%s]", rdOut, pOut)
	e.raw("cvta.to.global.u64 %s, %s", rdG, rdOut)
	e.raw("ld.param.u32 %s, [%s]", rIters, pIters)
	e.raw("ld.param.u32 %s, [%s]", seed.mask, pMask)
	e.raw("ld.param.u32 %s, [%s]", seed.or, pOr)
	rMagic := e.reg(accPrefix)
	if k.acc == "s32" {
		e.raw("ld.param.u32 %s, [%s]", rMagic, pMagic)
	} else {
		e.raw("ld.param.f32 %s, [%s]", rMagic, pMagic)
	}
	seed.tid = e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", seed.tid)
	e.comment("operands %q: every A and B word is (hash(%%clock + %%tid.x) & seed_mask) | seed_or; the code is the same for every pattern", string(pattern))

	chains := s.chains
	if k.wg {
		chains = 1
	}
	acc := zeroAccumulators(e, k, accPrefix, chains)
	if !k.wg {
		mmaSyncLoop(e, c, k, s, acc, seed, rIters)
	} else if err := wgmmaLoop(e, c, k, s, acc, seed, rIters); err != nil {
		return Descriptor{}, err
	}
	keepAccumulators(e, k, acc, rMagic, rdG)

	// The emitter counts instructions per thread; one tensor instruction is issued by the
	// sh.Threads threads of its warp or warpgroup together and does sh.MACs() MACs.
	trips := map[string]int64{"iters": int64(iters)}
	ops, overhead, measured := e.tally(trips, s.total)
	perThread := ops[c]
	ops[c] = perThread / int64(sh.Threads) * sh.MACs()
	measured = measured / int64(sh.Threads) * sh.MACs()
	target := tensorTarget(k, s.target)
	dp := tensorDataPattern(k.elem, pattern)
	notes := tensorNotes(c, k, s, groups, iters, pattern, dp)
	comments := []string{
		fmt.Sprintf("Measures %s: %d threads (%d blocks x %d), %d MACs per instruction per %d threads.", c, s.total, s.blocks, s.threads, sh.MACs(), sh.Threads),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	if perThread%int64(sh.Threads) != 0 {
		panic("kernels: tensor instructions do not fill whole warps")
	}
	return Descriptor{
		Name: name, Group: "tensor", PTX: e.render(name, target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Measured: c, Overhead: overhead, Bytes: map[MemLevel]int64{},
		Data: &dp, Unroll: s.unroll, Iters: int64(iters), Tensor: &sh,
		Notes: strings.Join(notes, " "),
	}.check(measured), nil
}

// tensorDefaults fills in the launch of kind k: 256 threads and 4 blocks per SM for
// mma.sync, one warpgroup and 2 blocks per SM for wgmma; 32 (mma.sync) or 8 (wgmma)
// instructions per iteration; 4 chains. perBlock is the blocks per SM.
func tensorDefaults(c OpClass, k tensorKind, o Opts, dev Device) (Opts, int, error) {
	perBlock := 4
	if o.Threads == 0 {
		o.Threads = 256
		if k.wg {
			o.Threads = 128
		}
	}
	if k.wg {
		perBlock = 2
		if o.Threads != 128 {
			return o, 0, fmt.Errorf("kernels: %s: %d threads per block: a wgmma kernel runs one warpgroup (128 threads) per block", c, o.Threads)
		}
	}
	if o.Blocks == 0 {
		o.Blocks = dev.SMs * perBlock
	}
	if o.Unroll == 0 {
		o.Unroll = 32
		if k.wg {
			o.Unroll = 8
		}
	}
	if o.Chains == 0 {
		o.Chains = 4
	}
	return o, perBlock, nil
}

// checkTensorShape says why s cannot run kind k: part warps, chains that do not divide
// the unroll, an odd unroll (two operand or tile sets alternate).
func checkTensorShape(c OpClass, k tensorKind, s shape) error {
	switch {
	case s.threads%32 != 0:
		return fmt.Errorf("kernels: %s: %d threads per block: want whole warps", c, s.threads)
	case !k.wg && s.unroll%s.chains != 0:
		return fmt.Errorf("kernels: %s: unroll %d is not a multiple of %d chains", c, s.unroll, s.chains)
	case !k.wg && s.unroll%wgSets != 0:
		return fmt.Errorf("kernels: %s: unroll %d: want an even number (two operand sets alternate)", c, s.unroll)
	case k.wg && s.unroll%wgSets != 0:
		return fmt.Errorf("kernels: %s: unroll %d: want an even number (two tile sets alternate)", c, s.unroll)
	}
	return nil
}

// tensorSeeder emits operand words: (hash(%clock + tid) & mask) | or.
type tensorSeeder struct {
	e             *emitter
	tid, mask, or string
}

// word emits one operand word into register x.
func (t tensorSeeder) word(x string) {
	e := t.e
	clk, hi := e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %%clock", clk)
	e.op(Int32Add, "add.s32 %s, %s, %s", clk, clk, t.tid)
	e.op(Int32Mul, "mul.lo.s32 %s, %s, %d", clk, clk, seedHashK)
	e.op(Int32Shift, "shr.u32 %s, %s, 16", hi, clk)
	e.op(Int32Logic, "xor.b32 %s, %s, %s", clk, clk, hi)
	e.op(Int32Logic, "and.b32 %s, %s, %s", x, clk, t.mask)
	e.op(Int32Logic, "or.b32 %s, %s, %s", x, x, t.or)
}

// zeroAccumulators declares chains sets of kind k's accumulator registers, set to zero.
func zeroAccumulators(e *emitter, k tensorKind, accPrefix string, chains int) [][]string {
	var acc [][]string // per chain, its accumulator registers
	for range chains {
		regs := e.regsN(accPrefix, k.c)
		for _, r := range regs {
			if k.acc == "s32" {
				e.raw("mov.u32 %s, 0", r)
			} else {
				e.raw("mov.f32 %s, 0f00000000", r)
			}
		}
		acc = append(acc, regs)
	}
	return acc
}

// mmaSyncLoop emits the mma.sync loop: two register sets of A and B fragments alternate,
// the accumulator chains take turns.
func mmaSyncLoop(e *emitter, c OpClass, k tensorKind, s shape, acc [][]string, seed tensorSeeder, rIters string) {
	var aSets, bSets [wgSets][]string
	for i := range wgSets {
		aSets[i], bSets[i] = e.regsN("%r", k.a), e.regsN("%r", k.b)
		for _, r := range append(append([]string{}, aSets[i]...), bSets[i]...) {
			seed.word(r)
		}
	}
	l := e.beginLoop("iters", rIters)
	for j := range s.unroll {
		d := "{" + strings.Join(acc[j%len(acc)], ", ") + "}"
		set := j % wgSets
		e.measure(c, "%s %s, {%s}, {%s}, %s", k.instr(), d, strings.Join(aSets[set], ", "), strings.Join(bSets[set], ", "), d)
	}
	e.endLoop(l)
}

// wgmmaLoop emits the wgmma loop: two tile sets written once to shared memory, read
// through matrix descriptors; one commit group of s.unroll wgmmas per iteration.
func wgmmaLoop(e *emitter, c OpClass, k tensorKind, s shape, acc [][]string, seed tensorSeeder, rIters string) error {
	aBytes, bBytes := k.m*wgRowBytes, k.n*wgRowBytes
	tile := aBytes + bBytes
	total := wgSets * tile
	smem := e.entry + "_tiles"
	e.globals = append(e.globals, fmt.Sprintf(".shared .align 1024 .b8 %s[%d];", smem, total))
	base, addr := e.reg("%r"), e.reg("%r")
	e.raw("mov.u32 %s, %s", base, smem)
	e.comment("fill the %d tile sets (%d bytes each: A %d, B %d) once; they stay in shared memory", wgSets, tile, aBytes, bBytes)
	e.op(Int32Shift, "shl.b32 %s, %s, 2", addr, seed.tid)
	e.op(Int32Add, "add.s32 %s, %s, %s", addr, addr, base)
	words := total / 4
	if words%s.threads != 0 {
		return fmt.Errorf("kernels: %s: %d tile words do not spread over %d threads", c, words, s.threads)
	}
	w := e.reg("%r")
	for i := range words / s.threads {
		seed.word(w)
		e.raw("st.shared.u32 [%s+%d], %s", addr, 4*s.threads*i, w)
	}
	e.comment("make the generic-proxy stores visible to the tensor cores' async proxy")
	e.raw("fence.proxy.async.shared::cta")
	e.raw("bar.sync 0")
	var aDesc, bDesc [wgSets]string
	for i := range wgSets {
		aDesc[i], bDesc[i] = matrixDescriptor(e, base, i*tile), matrixDescriptor(e, base, i*tile+aBytes)
	}
	pAcc := e.reg("%p")
	e.comment("scale-d: accumulate (iters >= 1, a run-time true the JIT cannot fold)")
	e.op(Setp, "setp.ne.u32 %s, %s, 0", pAcc, rIters)
	e.raw("wgmma.fence.sync.aligned")
	l := e.beginLoop("iters", rIters)
	d := "{" + strings.Join(acc[0], ", ") + "}"
	imm := "1, 1, 0, 0" // scale-a, scale-b, transpose-a, transpose-b (K-major)
	if k.elem.bits == 8 {
		imm = "1, 1" // fp8 is K-major only: no transpose operands
	}
	for j := range s.unroll {
		set := j % wgSets
		e.measure(c, "%s %s, %s, %s, %s, %s", k.instr(), d, aDesc[set], bDesc[set], pAcc, imm)
	}
	e.raw("wgmma.commit_group.sync.aligned")
	e.raw("wgmma.wait_group.sync.aligned 1")
	e.endLoop(l)
	e.raw("wgmma.wait_group.sync.aligned 0")
	return nil
}

// matrixDescriptor emits a wgmma matrix descriptor of the tile at base+off: start address
// >> 4 in bits 0-13, the leading-dimension byte offset >> 4 in bits 16-29, the
// stride-dimension byte offset >> 4 in bits 32-45; no swizzle (bits 62-63 zero), base
// offset 0.
func matrixDescriptor(e *emitter, base string, off int) string {
	lo, hi := e.reg("%r"), e.reg("%r")
	d := e.reg("%rd")
	e.op(Int32Add, "add.s32 %s, %s, %d", lo, base, off)
	e.op(Int32Shift, "shr.u32 %s, %s, 4", lo, lo)
	e.op(Int32Logic, "and.b32 %s, %s, %d", lo, lo, 0x3fff)
	e.op(Int32Logic, "or.b32 %s, %s, %d", lo, lo, (wgLBO>>4)<<16)
	e.raw("mov.u32 %s, %d", hi, wgSBO>>4)
	e.raw("mov.b64 %s, {%s, %s}", d, lo, hi)
	return d
}

// keepAccumulators stores once if any chain's first accumulator equals the magic
// parameter (none does), so that the compiler keeps every chain.
func keepAccumulators(e *emitter, k tensorKind, acc [][]string, rMagic, rdG string) {
	e.comment("keep the accumulators live: store if any chain's first equals the magic parameter (none does)")
	p := e.reg("%p")
	cmp := "f32"
	if k.acc == "s32" {
		cmp = "b32"
	}
	for i, regs := range acc {
		if i == 0 {
			e.op(Setp, "setp.eq.%s %s, %s, %s", cmp, p, regs[0], rMagic)
		} else {
			e.op(Setp, "setp.eq.or.%s %s, %s, %s, %s", cmp, p, regs[0], rMagic, p)
		}
	}
	if k.acc == "s32" {
		e.raw("@%s st.global.b32 [%s], %s", p, rdG, acc[0][0])
	} else {
		e.raw("@%s st.global.f32 [%s], %s", p, rdG, acc[0][0])
	}
	e.raw("ret")
}

// tensorNotes describe the kernel: its groups and MACs, the operands' pattern, where the
// tiles live and the spec's rate.
func tensorNotes(c OpClass, k tensorKind, s shape, groups int64, iters int, pattern Operands, dp DataPattern) []string {
	sh := k.shape()
	notes := []string{
		fmt.Sprintf("%d %s of %d threads × %d iterations × %d %s (%d MACs each); Ops[%s] counts MACs, not instructions.",
			groups, map[bool]string{false: "warps", true: "warpgroups"}[k.wg], sh.Threads, iters, s.unroll, k.instr(), sh.MACs(), c),
		"Operands: " + k.elem.description + fmt.Sprintf("; pattern %s: %.0f %% of the operand bits toggle from one instruction to the next, %.0f %% are set (expected from the masks).",
			pattern, 100*dp.ToggleEmulated, 100*dp.DensityEmulated),
	}
	if k.wg {
		notes = append(notes, fmt.Sprintf("A and B tiles in shared memory (two sets of %d bytes, written once), read by the tensor cores through matrix descriptors (no swizzle, LBO %d, SBO %d); %d wgmmas per commit group, at most one group in flight. Target sm_90a.",
			k.m*wgRowBytes+k.n*wgRowBytes, wgLBO, wgSBO, s.unroll))
	} else {
		notes = append(notes, fmt.Sprintf("A and B fragments in registers (two sets, alternating), %d accumulator chains per warp.", s.chains))
	}
	if spec, ok := SpecOpsPerCycleSM(c, s.dev.CC); ok {
		notes = append(notes, fmt.Sprintf("Spec: %g dense MACs per clock per SM (%s).", spec, tensorSpecSource))
	}
	return notes
}

// tensorOperands returns the seed mask and or-value of pattern p for element type t.
func tensorOperands(t tensorElem, p Operands) (mask, or uint32) {
	switch p {
	case OperandsRandom:
		return t.word(t.randomMask), t.word(t.one)
	case OperandsConst:
		return 0, t.word(t.fixed)
	}
	return 0, 0
}

// tensorDataPattern describes pattern p of element type t: nominal shares, and the
// expected ones from the masks (each random bit toggles between the two operand sets with
// probability 1/2 and is set with probability 1/2).
func tensorDataPattern(t tensorElem, p Operands) DataPattern {
	mask, or := tensorOperands(t, p)
	d := DataPattern{Pattern: p}
	switch p {
	case OperandsRandom:
		d.Toggle, d.Density = 0.5, 0.5
	case OperandsConst:
		d.Density = float64(bits.OnesCount32(or)) / 32
	}
	d.ToggleEmulated = float64(bits.OnesCount32(mask)) / 2 / 32
	d.DensityEmulated = (float64(bits.OnesCount32(or&^mask)) + float64(bits.OnesCount32(mask))/2) / 32
	return d
}

func tensorList() string {
	var s []string
	for _, c := range TensorClasses {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}
