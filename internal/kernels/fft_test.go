package kernels

// The FFT kernel is checked by running it: parsePTX (ptx_test.go) reads and checks the
// module's form, and cta below executes every thread of the CTA, instruction by
// instruction, with real float32 arithmetic, shared memory and barriers. The code is
// straight-line (the generator unrolls everything), so a barrier is a point where every
// thread must have arrived: the interpreter runs all threads up to the first bar.sync,
// then all of them up to the next, and so on.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/cmplx"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// ctaOperand is a decoded operand.
type ctaOperand struct {
	kind byte // 'r' register, 'i' immediate, 't' %tid.x, 'm' memory [reg+off], 'v' vector {r, r}
	reg  int
	imm  int64
	vec  []int
	name string // a parameter's name in [name]
}

type ctaInstr struct {
	op   string
	args []ctaOperand
	line int
}

// ctaMachine runs one CTA of a module.
type ctaMachine struct {
	prog    []ctaInstr
	nregs   int
	params  map[string]uint64 // parameter name -> value
	global  map[uint64][]byte // buffer base -> bytes
	shared  []byte
	counts  map[string]int64 // opcode -> executions
	sharedN int64            // bytes moved through shared memory
	l2N     int64            // bytes loaded with ld.global.nc beyond the input (twiddles)
	ctaid   uint64           // %ctaid.x of the CTA being run
}

func decodeCTA(m *ptxModule, sharedSym string) ([]ctaInstr, int, error) {
	slots := map[string]int{}
	slot := func(r string) int {
		if i, ok := slots[r]; ok {
			return i
		}
		slots[r] = len(slots)
		return slots[r]
	}
	var prog []ctaInstr
	for _, in := range m.instrs {
		if in.guard != "" {
			return nil, 0, fmt.Errorf("line %d: guarded instruction (the FFT is straight-line)", in.line)
		}
		ci := ctaInstr{op: in.opcode, line: in.line}
		for _, o := range in.operands {
			var d ctaOperand
			switch {
			case o == "%tid.x":
				d.kind = 't'
			case o == "%ctaid.x":
				d.kind = 'c'
			case o == sharedSym:
				d.kind = 'i' // the shared window starts at 0
			case strings.HasPrefix(o, "{"):
				d.kind = 'v'
				for _, r := range strings.Split(strings.Trim(o, "{}"), ",") {
					d.vec = append(d.vec, slot(strings.TrimSpace(r)))
				}
			case strings.HasPrefix(o, "["):
				d.kind = 'm'
				base, off, _ := strings.Cut(strings.Trim(o, "[]"), "+")
				if strings.HasPrefix(base, "%") {
					d.reg = slot(base)
				} else {
					d.reg, d.name = -1, base // a parameter
				}
				if off != "" {
					v, err := strconv.ParseInt(off, 10, 64)
					if err != nil {
						return nil, 0, fmt.Errorf("line %d: offset %q", in.line, off)
					}
					d.imm = v
				}
			case strings.HasPrefix(o, "%"):
				d.kind = 'r'
				d.reg = slot(o)
			default:
				v, err := strconv.ParseInt(o, 0, 64)
				if err != nil {
					return nil, 0, fmt.Errorf("line %d: operand %q", in.line, o)
				}
				d.kind, d.imm = 'i', v
			}
			ci.args = append(ci.args, d)
		}
		prog = append(prog, ci)
	}
	return prog, len(slots), nil
}

// mem returns the bytes at a global address.
func (c *ctaMachine) mem(addr uint64, n int) ([]byte, error) {
	for base, b := range c.global {
		if addr >= base && addr+uint64(n) <= base+uint64(len(b)) {
			return b[addr-base : addr-base+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("global access of %d bytes at %#x is outside every buffer", n, addr)
}

func (c *ctaMachine) smem(addr uint64, n int) ([]byte, error) {
	if addr%uint64(n) != 0 || addr+uint64(n) > uint64(len(c.shared)) {
		return nil, fmt.Errorf("shared access of %d bytes at %d: misaligned or outside %d bytes", n, addr, len(c.shared))
	}
	return c.shared[addr : addr+uint64(n)], nil
}

// run executes threads [0, threads) of the CTA.
func (c *ctaMachine) run(threads int) error {
	regs := make([][]uint64, threads)
	for i := range regs {
		regs[i] = make([]uint64, c.nregs)
	}
	f32 := func(v uint64) float32 { return math.Float32frombits(uint32(v)) }
	b32 := func(f float32) uint64 { return uint64(math.Float32bits(f)) }
	pc := make([]int, threads)
	for {
		done := 0
		for t := range threads {
			r := regs[t]
			val := func(o ctaOperand) uint64 {
				switch o.kind {
				case 'r':
					return r[o.reg]
				case 't':
					return uint64(t)
				case 'c':
					return c.ctaid
				}
				return uint64(o.imm)
			}
		thread:
			for pc[t] < len(c.prog) {
				in := c.prog[pc[t]]
				pc[t]++
				a := in.args
				op := in.op
				c.counts[op]++
				fail := func(err error) error { return fmt.Errorf("thread %d, line %d (%s): %w", t, in.line, op, err) }
				switch op {
				case "bar.sync":
					break thread
				case "ret":
					pc[t] = len(c.prog)
				case "mov.u32":
					r[a[0].reg] = uint64(uint32(val(a[1])))
				case "ld.param.u64":
					v, ok := c.params[a[1].name]
					if !ok {
						return fail(fmt.Errorf("no parameter %s", a[1].name))
					}
					r[a[0].reg] = v
				case "ld.param.u32":
					v, ok := c.params[a[1].name]
					if !ok {
						return fail(fmt.Errorf("no parameter %s", a[1].name))
					}
					r[a[0].reg] = uint64(uint32(v))
				case "mad.lo.s32":
					r[a[0].reg] = uint64(uint32(val(a[1])*val(a[2]) + val(a[3])))
				case "cvta.to.global.u64":
					r[a[0].reg] = val(a[1])
				case "add.s32":
					r[a[0].reg] = uint64(uint32(val(a[1]) + val(a[2])))
				case "sub.s32":
					r[a[0].reg] = uint64(uint32(val(a[1]) - val(a[2])))
				case "and.b32":
					r[a[0].reg] = uint64(uint32(val(a[1]) & val(a[2])))
				case "shl.b32":
					r[a[0].reg] = uint64(uint32(val(a[1]) << val(a[2])))
				case "shr.u32":
					r[a[0].reg] = uint64(uint32(val(a[1])) >> val(a[2]))
				case "brev.b32":
					r[a[0].reg] = uint64(bits.Reverse32(uint32(val(a[1]))))
				case "mul.wide.u32":
					r[a[0].reg] = uint64(uint32(val(a[1]))) * uint64(uint32(val(a[2])))
				case "add.s64":
					r[a[0].reg] = val(a[1]) + val(a[2])
				case "mul.rn.f32":
					r[a[0].reg] = b32(f32(val(a[1])) * f32(val(a[2])))
				case "mov.f32":
					r[a[0].reg] = val(a[1])
				case "neg.f32":
					r[a[0].reg] = b32(-f32(val(a[1])))
				case "add.rn.f32":
					r[a[0].reg] = b32(f32(val(a[1])) + f32(val(a[2])))
				case "sub.rn.f32":
					r[a[0].reg] = b32(f32(val(a[1])) - f32(val(a[2])))
				case "fma.rn.f32":
					// Exact product (24+24 bits fit a float64), one rounding of the sum in
					// float64, then to float32: a double rounding, within tolerance.
					x, y, z := float64(f32(val(a[1]))), float64(f32(val(a[2]))), float64(f32(val(a[3])))
					r[a[0].reg] = b32(float32(math.FMA(x, y, z)))
				case "ld.global.nc.v2.f32", "ld.global.v2.f32", "st.global.v2.f32", "ld.shared.v2.f32", "st.shared.v2.f32":
					store := strings.HasPrefix(op, "st.")
					mo, vo := a[1], a[0]
					if store {
						mo, vo = a[0], a[1]
					}
					addr := r[mo.reg] + uint64(mo.imm)
					var b []byte
					var err error
					if strings.Contains(op, ".shared.") {
						b, err = c.smem(addr, 8)
						c.sharedN += 8
					} else {
						b, err = c.mem(addr, 8)
					}
					if err != nil {
						return fail(err)
					}
					if len(vo.vec) != 2 {
						return fail(fmt.Errorf("want a 2-vector"))
					}
					if store {
						binary.LittleEndian.PutUint32(b, uint32(r[vo.vec[0]]))
						binary.LittleEndian.PutUint32(b[4:], uint32(r[vo.vec[1]]))
					} else {
						r[vo.vec[0]] = uint64(binary.LittleEndian.Uint32(b))
						r[vo.vec[1]] = uint64(binary.LittleEndian.Uint32(b[4:]))
					}
				default:
					return fail(fmt.Errorf("the interpreter does not know this instruction"))
				}
			}
			if pc[t] >= len(c.prog) {
				done++
			}
		}
		if done == threads {
			return nil
		}
		if done != 0 {
			return fmt.Errorf("%d of %d threads ended while others wait at a barrier", done, threads)
		}
	}
}

// runFFT runs d on x with the interpreter and returns the result and the machine.
func runFFT(t *testing.T, d Descriptor, x []complex64) ([]complex64, *ctaMachine) {
	t.Helper()
	m, err := parsePTX(d.PTX)
	if err != nil {
		t.Fatalf("%s: %v", d.Name, err)
	}
	prog, nregs, err := decodeCTA(m, "gw_smem")
	if err != nil {
		t.Fatalf("%s: %v", d.Name, err)
	}
	n := len(x)
	const inBase, outBase, twBase = 0x1000_0000, 0x2000_0000, 0x3000_0000
	c := &ctaMachine{prog: prog, nregs: nregs, counts: map[string]int64{}, shared: make([]byte, 8*n),
		params: map[string]uint64{d.Entry + "_in": inBase, d.Entry + "_out": outBase, d.Entry + "_tw": twBase},
		global: map[uint64][]byte{inBase: make([]byte, 8*n), outBase: make([]byte, 8*n), twBase: make([]byte, 4*n)}}
	for i, v := range x {
		binary.LittleEndian.PutUint32(c.global[inBase][8*i:], math.Float32bits(real(v)))
		binary.LittleEndian.PutUint32(c.global[inBase][8*i+4:], math.Float32bits(imag(v)))
	}
	for i, v := range FFTTwiddles(n) {
		binary.LittleEndian.PutUint32(c.global[twBase][4*i:], math.Float32bits(v))
	}
	if err := c.run(d.Threads); err != nil {
		t.Fatalf("%s: %v", d.Name, err)
	}
	y := make([]complex64, n)
	for i := range y {
		o := c.global[outBase][8*i:]
		y[i] = complex(math.Float32frombits(binary.LittleEndian.Uint32(o)), math.Float32frombits(binary.LittleEndian.Uint32(o[4:])))
	}
	return y, c
}

// dft64 is the direct transform in float64: the ground truth.
func dft64(x []complex64) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	for k := range out {
		var s complex128
		for j, v := range x {
			s += complex128(v) * cmplx.Rect(1, -2*math.Pi*float64((j*k)%n)/float64(n))
		}
		out[k] = s
	}
	return out
}

// fft64 is a float64 recursive radix-2 FFT (for the sizes where the DFT is slow).
func fft64(x []complex128) []complex128 {
	n := len(x)
	if n == 1 {
		return []complex128{x[0]}
	}
	ev, od := make([]complex128, n/2), make([]complex128, n/2)
	for i := range n / 2 {
		ev[i], od[i] = x[2*i], x[2*i+1]
	}
	E, O := fft64(ev), fft64(od)
	out := make([]complex128, n)
	for k := range n / 2 {
		t := cmplx.Rect(1, -2*math.Pi*float64(k)/float64(n)) * O[k]
		out[k], out[k+n/2] = E[k]+t, E[k]-t
	}
	return out
}

func relErr(got []complex64, want []complex128) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, cmplx.Abs(complex128(got[i])-want[i]))
		den = math.Max(den, cmplx.Abs(want[i]))
	}
	return num / den
}

func TestFFTKernelRuns(t *testing.T) {
	for n := FFTMinSize; n <= FFTMaxSize; n *= 2 {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(6, uint64(n)))
			d, err := FFT(n, Device{})
			if err != nil {
				t.Fatal(err)
			}
			checkModule(t, d)
			x := make([]complex64, n)
			x128 := make([]complex128, n)
			for i := range x {
				x[i] = complex(float32(2*r.Float64()-1), float32(2*r.Float64()-1))
				x128[i] = complex128(x[i])
			}
			got, c := runFFT(t, d, x)
			var want []complex128
			if n <= 512 {
				want = dft64(x)
			} else {
				want = fft64(x128)
			}
			rel := relErr(got, want)
			t.Logf("n=%d threads=%d: max error / max magnitude %.3g; %d registers slots", n, d.Threads, rel, c.nregs)
			if !(rel <= 1e-5) {
				t.Errorf("n=%d: relative error %g (tolerance of loadlevel: 1e-4)", n, rel)
			}
			// The descriptor's counts are what ran.
			lg := int64(bits.TrailingZeros(uint(n)))
			if got, want := c.counts["fma.rn.f32"], d.Ops[FP32FMA]; got != want || want != 2*(lg-1)*int64(n/2) {
				t.Errorf("fma: ran %d, descriptor %d, want 2 per butterfly of stages 1.. (%d)", got, want, 2*(lg-1)*int64(n/2))
			}
			if got, want := c.counts["add.rn.f32"]+c.counts["sub.rn.f32"], d.Ops[FP32Add]; got != want || want != 4*lg*int64(n/2) {
				t.Errorf("add/sub: ran %d, descriptor %d", got, want)
			}
			if c.sharedN != d.Bytes[Shared] || c.counts["bar.sync"] != (lg+1)*int64(d.Threads) {
				t.Errorf("shared bytes: ran %d, descriptor %d; barriers %d", c.sharedN, d.Bytes[Shared], c.counts["bar.sync"])
			}
		})
	}
}

// The check catches a wrong kernel: the same module with the sign of one product flipped
// (neg.f32 made a move) runs but gives a wrong transform.
func TestFFTKernelCheckCatchesBug(t *testing.T) {
	d, err := FFT(64, Device{})
	if err != nil {
		t.Fatal(err)
	}
	d.PTX = strings.Replace(d.PTX, "neg.f32", "mov.f32", 1)
	x := make([]complex64, 64)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = complex(float32(r.Float64()), float32(r.Float64()))
	}
	got, _ := runFFT(t, d, x)
	if rel := relErr(got, dft64(x)); rel < 1e-3 {
		t.Errorf("a wrong kernel passed: relative error %g", rel)
	}
	for _, bad := range []int{0, 32, 100, 8192} {
		if _, err := FFT(bad, Device{}); err == nil {
			t.Errorf("FFT(%d) accepted", bad)
		}
	}
}

func TestFFTPTXAS(t *testing.T) {
	ptxas := needTool(t, "ptxas")
	for n := FFTMinSize; n <= FFTMaxSize; n *= 2 {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			d, err := FFT(n, Device{CC: "9.0"})
			if err != nil {
				t.Fatal(err)
			}
			_, report := assemble(t, ptxas, d)
			if !strings.Contains(report, "0 bytes spill stores") {
				t.Errorf("%s spills registers:\n%s", d.Name, report)
			}
			t.Logf("%s", strings.TrimSpace(report))
		})
	}
}
