package kernels

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Operand patterns: the data an arithmetic kernel's instructions work on. The energy of an
// instruction depends on how many bits of its operands change from one instruction to the
// next (and, less, on how many are set): on an H200, archline's FMA ran at 2.27 pJ/flop with
// zeroed operands and 4.21 with live ones. A pattern changes only the kernel's parameters
// (the seeds' scale and offset, the chains' constant): the PTX, and so the SASS and the
// instruction counts, are the same for every pattern of a class.
type Operands string

// The patterns.
const (
	// OperandsZeros: every operand is 0 and stays 0.
	OperandsZeros Operands = "zeros"
	// OperandsConst: the operands hold a fixed non-zero bit pattern, the same in every
	// instruction (each chain sits on an exact fixed point of its update).
	OperandsConst Operands = "const"
	// OperandsRandom: the chains run a chaotic (floating point: x = x*x + c with c near -2)
	// or mixing (integer: rotating sums, products, Keccak's chi) update from seeds that differ
	// per thread and chain: about 30-45 % of the operand bits toggle from one instruction to
	// the next (DataPattern.ToggleEmulated), and the values never settle.
	OperandsRandom Operands = "random"
)

// OperandPatterns are the patterns, in the order micro reports them.
var OperandPatterns = []Operands{OperandsZeros, OperandsConst, OperandsRandom}

// DefaultOperands is the pattern micro runs the classes with patterns under by default
// (its kernels keep their class's name: PatternName).
const DefaultOperands = OperandsRandom

// ParseOperands parses a comma-separated list of patterns ("zeros,const,random"; "all" is
// every pattern).
func ParseOperands(s string) ([]Operands, error) {
	if strings.TrimSpace(s) == "all" {
		return append([]Operands(nil), OperandPatterns...), nil
	}
	var out []Operands
	seen := map[Operands]bool{}
	for _, f := range strings.Split(s, ",") {
		p := Operands(strings.TrimSpace(f))
		ok := false
		for _, q := range OperandPatterns {
			ok = ok || p == q
		}
		if !ok {
			return nil, fmt.Errorf("operand pattern %q: want zeros, const, random or all", string(p))
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// PatternsFor returns the operand patterns class c supports (nil: its data is not
// controlled: popc, shift and min/max chains settle whatever they start from, and the
// special functions' do too).
func PatternsFor(c OpClass) []Operands {
	switch c {
	case FP32FMA, FP64FMA, FP16FMA, BF16FMA, FP32Add, Int32Mul, Int32Logic:
		return []Operands{OperandsZeros, OperandsConst, OperandsRandom}
	case Int32Add, Int64Add:
		// s += t has no non-zero fixed point: no constant pattern.
		return []Operands{OperandsZeros, OperandsRandom}
	}
	if c.Tensor() {
		return []Operands{OperandsZeros, OperandsConst, OperandsRandom}
	}
	return nil
}

func supports(c OpClass, p Operands) bool {
	for _, q := range PatternsFor(c) {
		if q == p {
			return true
		}
	}
	return false
}

// DataPattern says what data an arithmetic kernel's measured instructions work on.
type DataPattern struct {
	Pattern Operands `json:"pattern"`
	// Toggle and Density are the pattern's nominal share of source-operand bits that change
	// from one instruction to the next, and that are set (zeros: 0 and 0; const: 0 and the
	// constant's share of ones; random: 0.5 and 0.5). The sim device's energy model reads
	// these.
	Toggle  float64 `json:"toggle"`
	Density float64 `json:"density"`
	// ToggleEmulated and DensityEmulated are the same shares found by running one thread's
	// chains (the kernel's update rule, in Go, for 64 rounds of the unrolled body after 16
	// of warm-up) over the instructions in issue order.
	ToggleEmulated  float64 `json:"toggle_emulated"`
	DensityEmulated float64 `json:"density_emulated"`
}

// The constants of the patterns. Every chain starts from bits ((clock+tid) & mask) | or.
// Floating point, x = x*x + c: random c = -1.99 (chaotic on [-1.99, 1.97]), seeds with a
// random mantissa in [0.5, 1); const c = 1.75 - 1.75^2 = -1.3125, seeds 1.75 (an exact
// fixed point in every precision); zeros c = 0, seeds 0. fp32.add alternates +b and -b:
// random b = sqrt(2), seeds in [0.5, 1); const and zeros b = 0, seeds 1.75 and 0.
const (
	chaosC       = -1.99
	fixedX       = 1.75
	fixedC       = fixedX - fixedX*fixedX // -1.3125
	addRandB     = 1.4142135
	intConst     = 0x5a5a5a5a // the integer chains' constant
	halfChaosC   = 0xbff6bff6 // f16x2 -1.990234375 in both halves
	halfFixedC   = 0xbd40bd40 // f16x2 -1.3125
	halfFixedX   = 0x3f003f00 // f16x2 1.75
	halfRandMask = 0x03ff03ff // f16x2 mantissas
	halfHalf     = 0x38003800 // f16x2 0.5
	bhalfChaosC  = 0xbfffbfff // bf16x2 -1.9921875
	bhalfFixedC  = 0xbfa8bfa8 // bf16x2 -1.3125
	bhalfFixedX  = 0x3fe03fe0 // bf16x2 1.75
	bhalfRndMask = 0x007f007f // bf16x2 mantissas
	bhalfHalf    = 0x3f003f00 // bf16x2 0.5
	f32RandMask  = 0x007fffff
	f32Half      = 0x3f000000
	f32Fixed     = 0x3fe00000 // 1.75
	f64HiMask    = 0x000fffff
	f64HiHalf    = 0x3fe00000 // the high word of 0.5
	f64HiFixed   = 0x3ffc0000 // the high word of 1.75
	seedMaskAll  = 0xffffffff
	seedHashK    = 0x9e3779b1 // Knuth's multiplicative hash (prime near 2^32/phi)
	emulateWarm  = 16
	emulateTimes = 64
)

// operandValues are the values of an arithmetic kernel's data parameters for a pattern:
// the chains' constant (fma: c; add: b and -b; mad: k), and the seeds' mask and or-value
// (fp64: of the low word, and maskHi, orHi of the high word).
type operandValues struct {
	c                            float64
	cInt, mask, or, maskHi, orHi uint64
}

func operandsFor(class OpClass, p Operands) operandValues {
	v := operandValues{}
	switch class {
	case FP32FMA:
		switch p {
		case OperandsRandom:
			v.c, v.mask, v.or = chaosC, f32RandMask, f32Half
		case OperandsConst:
			v.c, v.or = fixedC, f32Fixed
		}
	case FP64FMA:
		switch p {
		case OperandsRandom:
			v.c, v.mask, v.maskHi, v.orHi = chaosC, seedMaskAll, f64HiMask, f64HiHalf
		case OperandsConst:
			v.c, v.orHi = fixedC, f64HiFixed
		}
	case FP16FMA:
		switch p {
		case OperandsRandom:
			v.cInt, v.mask, v.or = halfChaosC, halfRandMask, halfHalf
		case OperandsConst:
			v.cInt, v.or = halfFixedC, halfFixedX
		}
	case BF16FMA:
		switch p {
		case OperandsRandom:
			v.cInt, v.mask, v.or = bhalfChaosC, bhalfRndMask, bhalfHalf
		case OperandsConst:
			v.cInt, v.or = bhalfFixedC, bhalfFixedX
		}
	case FP32Add:
		switch p {
		case OperandsRandom:
			v.c, v.mask, v.or = addRandB, f32RandMask, f32Half
		case OperandsConst:
			v.or = f32Fixed
		}
	case Int32Add, Int64Add, Int32Logic:
		switch p {
		case OperandsRandom:
			v.mask = seedMaskAll
		case OperandsConst:
			v.or = intConst
		}
	case Int32Mul:
		switch p {
		case OperandsRandom:
			v.mask, v.cInt = seedMaskAll, madK
		case OperandsConst:
			var k uint32 = intConst
			v.or, v.cInt = intConst, uint64(k-k*k) // C*C + k = C
		}
	}
	return v
}

// dataPattern describes pattern p of class c, emulating one thread's chains.
func dataPattern(c OpClass, p Operands, chains int) DataPattern {
	d := DataPattern{Pattern: p}
	switch p {
	case OperandsRandom:
		d.Toggle, d.Density = 0.5, 0.5
	case OperandsConst:
		d.Toggle = 0
	}
	d.ToggleEmulated, d.DensityEmulated = emulate(c, p, chains)
	if p == OperandsConst {
		d.Density = d.DensityEmulated // the constant's share of ones, exactly
	}
	return d
}

// emulate runs one thread's chains of class c under pattern p (thread 5, a clock of
// 123456789 advancing 7 per read as the seeding reads it) and returns the share of
// source-operand bits that change between instructions in issue order, and of bits set.
func emulate(c OpClass, p Operands, n int) (toggle, density float64) {
	v := operandsFor(c, p)
	clk := func(i int) uint32 { return seedHash(uint32(123456789 + 7*i + 5)) }
	var prev []uint64
	var width []int
	var tog, ones, total, setTotal float64
	record := func(ops []uint64, w []int, count bool) {
		if count {
			for k := range ops {
				ones += float64(bits.OnesCount64(ops[k]))
				setTotal += float64(w[k])
				if prev != nil {
					tog += float64(bits.OnesCount64(ops[k] ^ prev[k]))
					total += float64(w[k])
				}
			}
		}
		prev, width = ops, w
	}
	_ = width
	steps := n * (emulateWarm + emulateTimes)
	warm := n * emulateWarm
	switch c {
	case FP32FMA, FP32Add:
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = math.Float32frombits(clk(i)&uint32(v.mask) | uint32(v.or))
		}
		for j := 0; j < steps; j++ {
			i, round := j%n, j/n
			x := xs[i]
			if c == FP32FMA {
				record([]uint64{uint64(math.Float32bits(x)), uint64(math.Float32bits(x)), uint64(math.Float32bits(float32(v.c)))}, []int{32, 32, 32}, j >= warm)
				xs[i] = float32(math.FMA(float64(x), float64(x), float64(float32(v.c))))
			} else {
				b := float32(v.c)
				if round%2 == 1 {
					b = 0 - b
				}
				record([]uint64{uint64(math.Float32bits(x)), uint64(math.Float32bits(b))}, []int{32, 32}, j >= warm)
				xs[i] = x + b
			}
		}
	case FP64FMA:
		xs := make([]float64, n)
		for i := range xs {
			w := clk(i)
			xs[i] = math.Float64frombits(uint64(w&uint32(v.maskHi)|uint32(v.orHi))<<32 | uint64(w&uint32(v.mask)|uint32(v.or)))
		}
		for j := 0; j < steps; j++ {
			i := j % n
			x := xs[i]
			record([]uint64{math.Float64bits(x), math.Float64bits(x), math.Float64bits(v.c)}, []int{64, 64, 64}, j >= warm)
			xs[i] = math.FMA(x, x, v.c)
		}
	case FP16FMA, BF16FMA:
		sig, minExp := 11, -14
		if c == BF16FMA {
			sig, minExp = 8, -126
		}
		enc := func(x float64) uint64 { return halfBits(x, c == BF16FMA) }
		cv := halfValue(uint16(v.cInt), c == BF16FMA)
		xs := make([][2]float64, n)
		for i := range xs {
			w := clk(i)&uint32(v.mask) | uint32(v.or)
			xs[i] = [2]float64{halfValue(uint16(w), c == BF16FMA), halfValue(uint16(w>>16), c == BF16FMA)}
		}
		for j := 0; j < steps; j++ {
			i := j % n
			x := xs[i]
			packed := enc(x[0]) | enc(x[1])<<16
			record([]uint64{packed, packed, v.cInt & 0xffffffff}, []int{32, 32, 32}, j >= warm)
			for h := range 2 {
				xs[i][h] = roundSig(x[h]*x[h]+cv, sig, minExp)
			}
		}
	case Int32Add, Int32Mul, Int32Logic:
		s := make([]uint32, n)
		for i := range s {
			s[i] = clk(i)&uint32(v.mask) | uint32(v.or)
		}
		for j := 0; j < steps; j++ {
			i := j % n
			a, b, d := s[i], s[(i+1)%n], s[(i+2)%n]
			switch c {
			case Int32Add:
				record([]uint64{uint64(a), uint64(b)}, []int{32, 32}, j >= warm)
				s[i] = a + b
			case Int32Mul:
				record([]uint64{uint64(a), uint64(b), v.cInt}, []int{32, 32, 32}, j >= warm)
				s[i] = a*b + uint32(v.cInt)
			case Int32Logic:
				record([]uint64{uint64(a), uint64(b), uint64(d)}, []int{32, 32, 32}, j >= warm)
				s[i] = a ^ (^b & d)
			}
		}
	case Int64Add:
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(clk(i)&uint32(v.mask) | uint32(v.or))
		}
		for j := 0; j < steps; j++ {
			i := j % n
			a, b := s[i], s[(i+1)%n]
			record([]uint64{a, b}, []int{64, 64}, j >= warm)
			s[i] = a + b
		}
	}
	if total == 0 || setTotal == 0 {
		return 0, 0
	}
	return tog / total, ones / setTotal
}

// seedHash is the kernels' hash of a clock read: w*K, then the high half xored into the low.
func seedHash(w uint32) uint32 {
	w *= seedHashK
	return w ^ w>>16
}

// roundSig rounds x to sig significant bits (round to nearest even), with subnormals below
// 2^minExp: a half or bfloat16 result.
func roundSig(x float64, sig, minExp int) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	_, e := math.Frexp(x) // x = m × 2^e, m in [0.5, 1)
	if e-1 < minExp {
		e = minExp + 1
	}
	q := math.Ldexp(1, e-sig)
	return math.RoundToEven(x/q) * q
}

// halfBits encodes a value that roundSig made exact as IEEE binary16 (bf false) or
// bfloat16 (bf true) bits.
func halfBits(x float64, bf bool) uint64 {
	if bf {
		return uint64(math.Float32bits(float32(x)) >> 16)
	}
	if x == 0 {
		if math.Signbit(x) {
			return 0x8000
		}
		return 0
	}
	var sign uint64
	if x < 0 {
		sign, x = 0x8000, -x
	}
	m, e := math.Frexp(x) // x = m × 2^e
	exp := e - 1 + 15
	if exp <= 0 { // subnormal: x / 2^-24
		return sign | uint64(math.RoundToEven(x/math.Ldexp(1, -24)))
	}
	if exp >= 31 {
		return sign | 0x7c00
	}
	frac := uint64(math.RoundToEven((2*m - 1) * 1024))
	return sign | uint64(exp)<<10 | frac
}

// halfValue decodes binary16 or bfloat16 bits.
func halfValue(h uint16, bf bool) float64 {
	if bf {
		return float64(math.Float32frombits(uint32(h) << 16))
	}
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * frac * math.Ldexp(1, -24)
	case 31:
		return sign * math.Inf(1)
	}
	return sign * (1 + frac/1024) * math.Ldexp(1, exp-15)
}
