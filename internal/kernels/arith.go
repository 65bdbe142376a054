package kernels

import (
	"fmt"
	"strings"
)

// The arithmetic kernels (MIPP §IV-A). Each thread keeps Chains independent dependency
// chains in registers, seeded from %clock reads (run-time values the JIT cannot fold,
// as MIPP seeds its registers with clock()), and runs a counted loop whose body is Unroll
// instructions of the measured class, instruction j working on chain j mod Chains. After
// the loop every chain is compared with a magic kernel parameter that no chain reaches,
// and one store happens if any matched: the chains stay live, and no thread stores.
//
// Two patterns keep ptxas from folding the sequence:
//   - floating point (add, fma, special functions): x = op(x, params); the FMAs are
//     x = x*x + c. IEEE arithmetic does not reassociate, and the operands are kernel
//     parameters.
//   - integer (add, mad, shift, logic, min/max, 64-bit add): s[i] = op(s[i], s[i+1]), the
//     chains rotating through each other. Integer arithmetic does reassociate, so an op
//     with a loop-invariant operand could be folded (x+b+b = x+2b; x^k^k = x); here every
//     result is used twice (by its own chain and by its neighbour), which also keeps
//     ptxas from merging two logic ops into one LOP3 or two adds into one IADD3.
// popc is unary: x = popc(x).
//
// The classes of PatternsFor take their data from an operand pattern (operands.go): zeros,
// a constant, or random bits that keep toggling. Only parameters differ between patterns.

// arithKind describes one class's registers and operands.
type arithKind struct {
	prefix string    // chain register prefix
	typ    string    // setp/st type of a chain value
	magic  ParamKind // kind of the magic parameter
	seed   string    // how %clock becomes a chain's start: "u32", "u16" or "u8" bits
	instr  string    // the measured instruction
	rotate bool      // s[i] = op(s[i], s[i+1]) (integer binary ops)
}

var arithKinds = map[OpClass]arithKind{
	Int32Add:   {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "add.s32", rotate: true},
	Int32Mul:   {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "mad.lo.s32", rotate: true},
	Int32Popc:  {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "popc.b32"},
	Int32Shift: {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "shl.b32", rotate: true},
	Int32Logic: {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "lop3.b32", rotate: true},
	Int32Cmp:   {prefix: "%r", typ: "b32", magic: U32, seed: "u32", instr: "min.s32|max.u32", rotate: true},
	Int64Add:   {prefix: "%rd", typ: "b64", magic: U64, seed: "u32", instr: "add.s64", rotate: true},
	FP32Add:    {prefix: "%f", typ: "f32", magic: F32, seed: "u16", instr: "add.rn.f32"},
	FP32FMA:    {prefix: "%f", typ: "f32", magic: F32, seed: "u16", instr: "fma.rn.f32"},
	FP32Sin:    {prefix: "%f", typ: "f32", magic: F32, seed: "u16", instr: "sin.approx.ftz.f32"},
	FP32Ex2:    {prefix: "%f", typ: "f32", magic: F32, seed: "u16", instr: "ex2.approx.ftz.f32"},
	FP32Rsqrt:  {prefix: "%f", typ: "f32", magic: F32, seed: "u32", instr: "rsqrt.approx.ftz.f32"},
	FP64FMA:    {prefix: "%fd", typ: "f64", magic: F64, seed: "u16", instr: "fma.rn.f64"},
	FP16FMA:    {prefix: "%r", typ: "b32", magic: U32, seed: "u8", instr: "fma.rn.f16x2"},
	BF16FMA:    {prefix: "%r", typ: "b32", magic: U32, seed: "u8", instr: "fma.rn.bf16x2"},
}

// The operands of the kernels without an operand pattern (the roofline kernels' too,
// roofline.go): x = x*a + b converges to b/(1-a) = 1 from any finite start, so the values
// stay normal and finite, and their bits hardly toggle; add alternates +b and -b. The
// kernels with a pattern take their data from it (operands.go).
const (
	fmaA32, fmaB32 = 0.9999, 0.0001
	fmaA64, fmaB64 = 0.9999999, 0.0000001
	addB32         = 0.5
	// f16x2 1-2^-11 and 2^-11 in both halves; bf16x2 1-2^-8 and 2^-8.
	fmaAf16, fmaBf16   = 0x3bff3bff, 0x10001000
	fmaAbf16, fmaBbf16 = 0x3f7f3f7f, 0x3b803b80
	madK               = 0x9e3779b9 // the mad chains' addend (odd)
	magic32            = 0xdeadbeef
	magicF             = -7.25e30 // below every value a float chain can take
)

// Arith generates the throughput kernel of one arithmetic class. It reads Opts.Device,
// Threads, Blocks, Iters, Unroll (default 512), Chains (default 8) and LaunchTime.
// bf16.fma needs compute capability 8.0 or later.
func Arith(class OpClass, o Opts) (Descriptor, error) {
	k, ok := arithKinds[class]
	if !ok {
		return Descriptor{}, fmt.Errorf("kernels: %q is not an arithmetic class (want one of %s)", class, classList())
	}
	s, err := o.shape(512)
	if err != nil {
		return Descriptor{}, err
	}
	if err := checkArith(class, k, s); err != nil {
		return Descriptor{}, err
	}
	iters := s.iters
	if iters == 0 {
		rate, _ := sizingRate(class, s.target.SM)
		perThread := rate * float64(s.dev.SMs) * s.dev.ClockHz / float64(s.total) // instructions per second per thread
		iters = s.sizeIters(float64(s.unroll) / perThread)
	}

	// pattern "": the kernel of before the patterns (FMA chains x = x*a + b converging to 1,
	// data not controlled), which archline's flop points share with its roofline kernels.
	pattern := o.Operands
	if pats := PatternsFor(class); pattern != "" && !supports(class, pattern) {
		if pats == nil {
			return Descriptor{}, fmt.Errorf("kernels: %s: its operands are not controlled (no operand pattern)", class)
		}
		return Descriptor{}, fmt.Errorf("kernels: %s has no %q operand pattern (it has %v)", class, pattern, pats)
	}
	ov := operandsFor(class, pattern)

	name := string(class)
	if pattern != "" {
		name = PatternName(class, pattern)
	}
	e := newEmitter(entryName(name))
	pOut := e.param(Param{Name: "out", Kind: Buffer, Size: 8})
	pIters := e.param(Param{Name: "iters", Kind: U32, Int: uint64(iters)})
	operandParams := arithOperandParams(e, class, pattern, ov)
	// The seeds' parameters: a chain starts from the bits ((clock+tid) & mask) | or (fp64:
	// the low word; the high word from mask_hi and or_hi).
	var seedParams []string
	if pattern != "" {
		seedParams = append(seedParams,
			e.param(Param{Name: "seed_mask", Kind: U32, Int: ov.mask}),
			e.param(Param{Name: "seed_or", Kind: U32, Int: ov.or}))
		if class == FP64FMA {
			seedParams = append(seedParams,
				e.param(Param{Name: "seed_mask_hi", Kind: U32, Int: ov.maskHi}),
				e.param(Param{Name: "seed_or_hi", Kind: U32, Int: ov.orHi}))
		}
	}
	magicP := Param{Name: "magic", Kind: k.magic}
	switch k.magic {
	case U32, U64:
		magicP.Int = magic32
	case F32, F64:
		magicP.Real = magicF
	}
	pMagic := e.param(magicP)

	// Prologue.
	rdOut, rdG := e.reg("%rd"), e.reg("%rd")
	rIters := e.reg("%r")
	e.raw("ld.param.u64 %s, [%s]", rdOut, pOut)
	e.raw("cvta.to.global.u64 %s, %s", rdG, rdOut)
	e.raw("ld.param.u32 %s, [%s]", rIters, pIters)
	operands := loadParams(e, operandParams, 2)
	seeds := loadParams(e, seedParams, 2+len(operandParams))
	rMagic := e.reg(paramRegPrefix[k.magic])
	e.raw("ld.param.%s %s, [%s]", paramLoadType[k.magic], rMagic, pMagic)

	e.comment("seed the %d chains from %%clock + %%tid.x: run-time values the JIT cannot fold,", s.chains)
	e.comment("different in every thread (else ptxas computes warp-uniform chains in uniform registers)")
	if pattern != "" {
		e.comment("operands %q: the seed parameters and the chains' constant set the data; the code is the same for every pattern", string(pattern))
	}
	tid := e.reg("%r")
	e.raw("mov.u32 %s, %%tid.x", tid)
	chains := e.regsN(k.prefix, s.chains)
	for _, x := range chains {
		seedChain(e, class, k, pattern, x, tid, seeds)
	}

	// The measured loop.
	l := e.beginLoop("iters", rIters)
	for j := range s.unroll {
		arithStep(e, class, k, pattern, chains, operands, j)
	}
	e.endLoop(l)

	keepAlive(e, k, chains, rMagic, rdG)

	trips := map[string]int64{"iters": int64(iters)}
	ops, overhead, measured := e.tally(trips, s.total)
	notes := arithDescNotes(class, k, s, iters)
	comments := []string{
		fmt.Sprintf("Measures %s: %d threads (%d blocks x %d) x iters x %d instructions.", class, s.total, s.blocks, s.threads, s.unroll),
		fmt.Sprintf("Parameters: %s.", paramList(e.params)),
	}
	var data *DataPattern
	if pattern != "" {
		dp := dataPattern(class, pattern, s.chains)
		data = &dp
		notes = append(notes, fmt.Sprintf("Operands %s: %.0f %% of the source-operand bits toggle from one instruction to the next and %.0f %% are set (emulated).",
			pattern, 100*dp.ToggleEmulated, 100*dp.DensityEmulated))
	}
	return Descriptor{
		Name: name, Group: "arith", PTX: e.render(name, s.target, s, comments), Entry: e.entry,
		Blocks: s.blocks, Threads: s.threads, Params: e.descParams(),
		Ops: ops, Measured: class, Overhead: overhead, Bytes: map[MemLevel]int64{},
		Data: data, Unroll: s.unroll, Iters: int64(iters),
		Notes: strings.Join(notes, " "),
	}.check(measured), nil
}

// checkArith says why class cannot be generated with shape s: chains that do not divide
// the unroll, too few chains to rotate, a half-precision class the target lacks.
func checkArith(class OpClass, k arithKind, s shape) error {
	switch {
	case s.unroll%s.chains != 0:
		return fmt.Errorf("kernels: %s: unroll %d is not a multiple of %d chains", class, s.unroll, s.chains)
	case k.rotate && s.chains < 3:
		return fmt.Errorf("kernels: %s: the rotating chains need at least 3 chains", class)
	case class == BF16FMA && s.target.SM < 80:
		return fmt.Errorf("kernels: bf16.fma needs compute capability 8.0 or later, not %s", s.dev.CC)
	case class == FP16FMA && s.target.SM < 53:
		return fmt.Errorf("kernels: fp16.fma needs compute capability 5.3 or later, not %s", s.dev.CC)
	}
	return nil
}

// arithOperandParams declares the chains' constant operands: the legacy ones without a
// pattern, else the pattern's constant c (k for the mad chains, ±c for add).
func arithOperandParams(e *emitter, class OpClass, pattern Operands, ov operandValues) []string {
	switch {
	case pattern == "":
		return legacyOperands(e, class)
	case class == Int32Mul:
		return []string{e.param(Param{Name: "k", Kind: U32, Int: ov.cInt})}
	case class == FP32Add:
		return []string{e.param(Param{Name: "b", Kind: F32, Real: ov.c}),
			e.param(Param{Name: "c", Kind: F32, Real: 0 - ov.c})} // +0, not -0, for zeros
	case class == FP32FMA:
		return []string{e.param(Param{Name: "c", Kind: F32, Real: ov.c})}
	case class == FP64FMA:
		return []string{e.param(Param{Name: "c", Kind: F64, Real: ov.c})}
	case class == FP16FMA || class == BF16FMA:
		return []string{e.param(Param{Name: "c", Kind: U32, Int: ov.cInt})}
	}
	return nil
}

// PTX load types and register prefixes of the scalar parameter kinds.
var (
	paramLoadType  = map[ParamKind]string{U32: "u32", U64: "u64", F32: "f32", F64: "f64"}
	paramRegPrefix = map[ParamKind]string{U32: "%r", U64: "%rd", F32: "%f", F64: "%fd"}
)

// loadParams loads the parameters names (declared from index first) into new registers.
func loadParams(e *emitter, names []string, first int) []string {
	var rs []string
	for i, pn := range names {
		kind := e.params[first+i].P.Kind
		r := e.reg(paramRegPrefix[kind])
		e.raw("ld.param.%s %s, [%s]", paramLoadType[kind], r, pn)
		rs = append(rs, r)
	}
	return rs
}

// seedChain starts chain x from %clock + tid: hashed and masked into the pattern's bits
// where there is a pattern, else converted to the chain's type.
func seedChain(e *emitter, class OpClass, k arithKind, pattern Operands, x, tid string, seeds []string) {
	clk := e.reg("%r")
	e.raw("mov.u32 %s, %%clock", clk)
	e.op(Int32Add, "add.s32 %s, %s, %s", clk, clk, tid)
	if pattern != "" {
		// Successive clock reads differ in their low bits only: hash them (Knuth's
		// multiplier, then the high half folded in), so that every chain's seed differs
		// in about half its bits.
		sh := e.reg("%r")
		e.op(Int32Mul, "mul.lo.s32 %s, %s, %d", clk, clk, seedHashK)
		e.op(Int32Shift, "shr.u32 %s, %s, 16", sh, clk)
		e.op(Int32Logic, "xor.b32 %s, %s, %s", clk, clk, sh)
		seedPattern(e, class, k, x, clk, seeds)
		return
	}
	switch {
	case k.prefix == "%r" && k.seed == "u8": // a half in [0, 255], packed twice
		h8, h := e.reg("%h"), e.reg("%h")
		f := e.reg("%f")
		e.raw("cvt.u8.u32 %s, %s", h8, clk)
		e.raw("cvt.rn.f32.u16 %s, %s", f, h8)
		if class == BF16FMA {
			e.raw("cvt.rn.bf16.f32 %s, %s", h, f)
		} else {
			e.raw("cvt.rn.f16.f32 %s, %s", h, f)
		}
		e.raw("mov.b32 %s, {%s, %s}", x, h, h)
	case k.prefix == "%r":
		e.raw("mov.b32 %s, %s", x, clk)
	case k.prefix == "%rd":
		e.raw("cvt.u64.u32 %s, %s", x, clk)
	case k.seed == "u16": // a float in [0, 65535]
		h := e.reg("%h")
		e.raw("cvt.u16.u32 %s, %s", h, clk)
		e.raw("cvt.rn.%s.u16 %s, %s", k.typ, x, h)
	default:
		e.raw("cvt.rn.%s.u32 %s, %s", k.typ, x, clk)
	}
}

// seedPattern sets chain x to the hashed clock's bits (clk & mask) | or (fp64: both words).
func seedPattern(e *emitter, class OpClass, k arithKind, x, clk string, seeds []string) {
	switch {
	case class == FP64FMA:
		lo, hi := e.reg("%r"), e.reg("%r")
		e.op(Int32Logic, "and.b32 %s, %s, %s", lo, clk, seeds[0])
		e.op(Int32Logic, "or.b32 %s, %s, %s", lo, lo, seeds[1])
		e.op(Int32Logic, "and.b32 %s, %s, %s", hi, clk, seeds[2])
		e.op(Int32Logic, "or.b32 %s, %s, %s", hi, hi, seeds[3])
		e.raw("mov.b64 %s, {%s, %s}", x, lo, hi)
	case k.prefix == "%rd":
		m := e.reg("%r")
		e.op(Int32Logic, "and.b32 %s, %s, %s", m, clk, seeds[0])
		e.op(Int32Logic, "or.b32 %s, %s, %s", m, m, seeds[1])
		e.raw("cvt.u64.u32 %s, %s", x, m)
	case k.prefix == "%r":
		e.op(Int32Logic, "and.b32 %s, %s, %s", x, clk, seeds[0])
		e.op(Int32Logic, "or.b32 %s, %s, %s", x, x, seeds[1])
	default: // f32 bits
		m := e.reg("%r")
		e.op(Int32Logic, "and.b32 %s, %s, %s", m, clk, seeds[0])
		e.op(Int32Logic, "or.b32 %s, %s, %s", m, m, seeds[1])
		e.raw("mov.b32 %s, %s", x, m)
	}
}

// arithStep emits the j-th measured instruction of the unrolled loop body: on chain
// j mod chains, with its neighbours or the constant operands as the class needs.
func arithStep(e *emitter, class OpClass, k arithKind, pattern Operands, chains, operands []string, j int) {
	n := len(chains)
	i, round := j%n, j/n
	x, next := chains[i], chains[(i+1)%n]
	switch class {
	case Int32Mul:
		e.measure(class, "%s %s, %s, %s, %s", k.instr, x, x, next, operands[0])
	case Int32Logic: // Keccak's chi: s[i] ^= ~s[i+1] & s[i+2]
		e.measure(class, "%s %s, %s, %s, %s, 0xD2", k.instr, x, x, next, chains[(i+2)%n])
	case Int32Cmp:
		instrs := strings.Split(k.instr, "|")
		op := instrs[(i+round)%len(instrs)]
		e.measure(class, "%s %s, %s, %s", op, x, x, next)
	case FP32Add:
		e.measure(class, "%s %s, %s, %s", k.instr, x, x, operands[round%2])
	case FP32FMA, FP64FMA, FP16FMA, BF16FMA:
		if pattern == "" { // x = x*a + b
			e.measure(class, "%s %s, %s, %s, %s", k.instr, x, x, operands[0], operands[1])
		} else { // x = x*x + c
			e.measure(class, "%s %s, %s, %s, %s", k.instr, x, x, x, operands[0])
		}
	case Int32Popc, FP32Sin, FP32Ex2, FP32Rsqrt:
		e.measure(class, "%s %s, %s", k.instr, x, x)
	default: // rotating binary ops
		e.measure(class, "%s %s, %s, %s", k.instr, x, x, next)
	}
}

// keepAlive stores once if any chain equals the magic parameter (none does), so that the
// compiler keeps every chain.
func keepAlive(e *emitter, k arithKind, chains []string, rMagic, rdG string) {
	e.comment("keep the chains live: store if any equals the magic parameter (none does)")
	cmpType := k.typ
	if k.prefix == "%r" {
		cmpType = "b32"
	}
	p := e.reg("%p")
	for i, x := range chains {
		if i == 0 {
			e.op(Setp, "setp.eq.%s %s, %s, %s", cmpType, p, x, rMagic)
		} else {
			e.op(Setp, "setp.eq.or.%s %s, %s, %s, %s", cmpType, p, x, rMagic, p)
		}
	}
	e.raw("@%s st.global.%s [%s], %s", p, k.typ, rdG, chains[0])
	e.raw("ret")
}

// arithDescNotes describe the kernel: its shape, what Ops counts, the class's notes and the
// programming guide's rate where there is one.
func arithDescNotes(class OpClass, k arithKind, s shape, iters int) []string {
	notes := []string{
		fmt.Sprintf("%d threads × %d iterations × %d %s (%d chains); loop overhead per iteration: add.s32, setp, bra.",
			s.total, iters, s.unroll, strings.ReplaceAll(k.instr, "|", "/"), s.chains),
		"Ops counts PTX instructions; Overhead holds the loop counter, seeding and keep-alive setp.",
	}
	notes = append(notes, arithNotes[class]...)
	if spec, ok := SpecOpsPerCycleSM(class, s.dev.CC); ok {
		notes = append(notes, fmt.Sprintf("Spec: %g per clock per SM (CUDA C++ Programming Guide, compute capability %s).", spec, s.dev.CC))
	}
	return notes
}

// legacyOperands declares the operand parameters of the kernels without a pattern: x*a + b
// converging to 1 (fma), +b and -b alternating (add), the mad chains' odd addend.
func legacyOperands(e *emitter, class OpClass) []string {
	switch class {
	case Int32Mul:
		return []string{e.param(Param{Name: "k", Kind: U32, Int: madK})}
	case FP32Add:
		return []string{e.param(Param{Name: "b", Kind: F32, Real: addB32}), e.param(Param{Name: "c", Kind: F32, Real: -addB32})}
	case FP32FMA:
		return []string{e.param(Param{Name: "a", Kind: F32, Real: fmaA32}), e.param(Param{Name: "b", Kind: F32, Real: fmaB32})}
	case FP64FMA:
		return []string{e.param(Param{Name: "a", Kind: F64, Real: fmaA64}), e.param(Param{Name: "b", Kind: F64, Real: fmaB64})}
	case FP16FMA:
		return []string{e.param(Param{Name: "a", Kind: U32, Int: fmaAf16}), e.param(Param{Name: "b", Kind: U32, Int: fmaBf16})}
	case BF16FMA:
		return []string{e.param(Param{Name: "a", Kind: U32, Int: fmaAbf16}), e.param(Param{Name: "b", Kind: U32, Int: fmaBbf16})}
	}
	return nil
}

// check panics if the tally disagrees with itself (a bug in a generator).
func (d Descriptor) check(measured int64) Descriptor {
	if d.Measured != "" && d.MeasuredOps() != measured {
		panic(fmt.Sprintf("kernels: %s: measured %d, descriptor says %d", d.Name, measured, d.MeasuredOps()))
	}
	return d
}

var arithNotes = map[OpClass][]string{
	Int32Add:   {"SASS on sm_90: one instruction per add, about half IADD3 (integer pipe) and half IMAD.IADD (FMA pipe), so int32.add runs near 128 per clock per SM, twice the table's 64 (checked on an H200 with cuobjdump and Nsight Compute)."},
	Int32Shift: {"Shift amounts come from the neighbouring chain (PTX clamps them at 32), so chains soon hold 0: the SM's timing does not depend on values."},
	Int32Logic: {"lop3 0xD2 (Keccak's chi, s ^= ~t & u) over rotating chains; SASS LOP3.LUT."},
	Int32Cmp:   {"min.s32/max.s32 alternate (SASS IMNMX/VIMNMX); setp is not this class."},
	Int64Add:   {"add.s64 is not native: SASS on sm_90 is IADD3 + IMAD.X (a 32-bit add and one with carry) on the integer and FMA pipes, near 64 adds per clock per SM; the spec table has no row for it."},
	FP32Add:    {"x = x + b and x = x + c alternate, with c = -b from a parameter (random: b = 1.4142135, seeds in [0.5, 1))."},
	FP32FMA:    {"x = x*x + c with c a parameter (random: c = -1.99, chaotic on [-1.99, 1.97]; const: x = 1.75, c = -1.3125, an exact fixed point; zeros: 0). Flops = 2 × Ops."},
	FP32Sin:    {"sin.approx.ftz.f32 is FMUL.RZ (range scaling) + MUFU.SIN in SASS: the MUFU pipe (16/clock/SM) is the limit."},
	FP32Ex2:    {"ex2.approx.ftz.f32 chains grow to +Inf within a few steps and stay there; MUFU.EX2's timing does not depend on values."},
	FP32Rsqrt:  {"rsqrt.approx.ftz.f32 chains converge to 1."},
	FP64FMA:    {"x = x*x + c as fp32.fma. Flops = 2 × Ops."},
	FP16FMA:    {"One op = one fma.rn.f16x2 = 2 FMAs = 4 flops; x = x*x + c per half as fp32.fma (random: c = -1.990234375)."},
	BF16FMA:    {"One op = one fma.rn.bf16x2 = 2 FMAs = 4 flops; x = x*x + c per half as fp32.fma (random: c = -1.9921875)."},
}

// sizingRate is the per-SM per-clock rate used to size a launch: the spec where known,
// else an estimate.
func sizingRate(c OpClass, sm int) (float64, bool) {
	if r, ok := SpecOpsPerCycleSM(c, fmtCC(sm)); ok {
		return r, true
	}
	switch c {
	case Int64Add:
		return 64, false // IADD3 + IMAD.X on two pipes: 62.7 per clock per SM measured on an H200
	case BF16FMA:
		return 128, false // as fp16x2
	case FP32Add, FP32FMA:
		return 64, false
	case FP64FMA, FP16FMA:
		return 32, false
	case FP32Sin, FP32Ex2, FP32Rsqrt, Int32Popc:
		return 16, false
	}
	return 64, false
}

func classList() string {
	var s []string
	for _, c := range ArithClasses {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func paramList(ps []ptxParam) string {
	var s []string
	for _, p := range ps {
		switch p.P.Kind {
		case Buffer:
			s = append(s, fmt.Sprintf("%s (buffer, %d B)", p.P.Name, p.P.Size))
		case U32, U64:
			s = append(s, fmt.Sprintf("%s = %d", p.P.Name, p.P.Int))
		default:
			s = append(s, fmt.Sprintf("%s = %g", p.P.Name, p.P.Real))
		}
	}
	return strings.Join(s, ", ")
}
