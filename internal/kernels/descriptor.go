// Package kernels generates the PTX of gpuwatt's own kernels from Go templates, and
// describes each launch exactly: operations per instruction class, bytes per memory level,
// threads and parameters. The descriptor is what the sim device executes and what every
// figure per operation or per byte is divided by, so it must match the PTX to the
// instruction: tests count the instructions in the generated PTX.
//
// The kernels are those of the MIPP suite (seed 001), adapted to a modern GPU:
//
//   - Arith(class, opts): throughput of one instruction class, a counted loop of
//     Unroll instructions in Chains independent chains per thread;
//   - DRAMRead, DRAMCopy, L2Read, SharedRead, ConstRead: one memory level each;
//   - Coalescing(k), AccessSize(bytes), BankConflicts(n): MIPP's intensity variants;
//   - Default(suite opts): all of them, in MIPP's order, each launch sized to take
//     about 5 ms; Names and ByName serve --list and --only;
//   - SpecOpsPerCycleSM: the CUDA programming guide's throughput table;
//   - TargetFor: the .target and PTX ISA version for a compute capability.
//
// Every module is one .entry with .version, .target sm_XY (from Device.CC) and
// .address_size 64, pure ASCII (ptxas rejects anything else, even in comments), with
// .maxntid and .minnctapersm so that ptxas keeps the registers within a full SM.
package kernels

import "sort"

// OpClass is an instruction class of the MIPP suite (seed 001), named "type.operation".
type OpClass string

// The instruction classes.
const (
	Int32Add   OpClass = "int32.add"   // simple: add.s32 (MIPP "simple")
	Int32Mul   OpClass = "int32.mad"   // complex: mad.lo.s32 (MIPP "complex")
	Int32Popc  OpClass = "int32.popc"  // popc.b32
	Int32Shift OpClass = "int32.shift" // shl.b32 / shr
	Int32Logic OpClass = "int32.logic" // and/or/xor.b32 (MIPP "bit op")
	Int32Cmp   OpClass = "int32.cmp"   // min.s32/max.s32/min.u32 (MIPP "compare"); setp is Setp
	Int64Add   OpClass = "int64.add"   // add.s64 (MIPP "64-bit simple")
	FP32Add    OpClass = "fp32.add"    // add.f32 (MIPP "FP32 simple")
	FP32FMA    OpClass = "fp32.fma"    // fma.rn.f32
	FP32Sin    OpClass = "fp32.sin"    // sin.approx.f32 (MIPP "FP32 special")
	FP32Ex2    OpClass = "fp32.ex2"    // ex2.approx.f32
	FP32Rsqrt  OpClass = "fp32.rsqrt"  // rsqrt.approx.f32
	FP64FMA    OpClass = "fp64.fma"    // fma.rn.f64
	FP16FMA    OpClass = "fp16.fma"    // fma.rn.f16x2: one op = one f16x2 instruction (2 FMAs)
	BF16FMA    OpClass = "bf16.fma"    // fma.rn.bf16x2: one op = one bf16x2 instruction (2 FMAs)
)

// The control classes: instructions that no throughput class covers. They are counted in
// Descriptor.Overhead only, never in Ops (the sim device models the 15 classes above).
const (
	Setp OpClass = "ctrl.setp" // setp: loop tests and the keep-alive comparison
	Bra  OpClass = "ctrl.bra"  // bra: the loops' back edges
)

// ArithClasses are the instruction classes of the arithmetic kernels, in MIPP's order.
var ArithClasses = []OpClass{
	Int32Add, Int32Mul, Int32Popc, Int32Shift, Int32Logic, Int32Cmp, Int64Add,
	FP32Add, FP32FMA, FP32Sin, FP32Ex2, FP32Rsqrt, FP64FMA, FP16FMA, BF16FMA,
}

// Flops returns the floating-point operations one instruction of class c performs (an FMA
// is two; a packed x2 FMA four; integer and special-function classes none); for a
// tensor-core class, whose Ops count MACs, those of one MAC (two; int8 none).
func (c OpClass) Flops() int64 {
	switch c {
	case FP32Add:
		return 1
	case FP32FMA, FP64FMA:
		return 2
	case FP16FMA, BF16FMA:
		return 4
	}
	if c.Tensor() && c != INT8MMA { // Ops count MACs: two flops each
		return 2
	}
	return 0
}

// MemLevel is a level of the memory hierarchy.
type MemLevel string

// The memory levels.
const (
	DRAM   MemLevel = "dram"
	L2     MemLevel = "l2"
	Shared MemLevel = "shared"
	Const  MemLevel = "const"
)

// ParamKind is the type of a kernel parameter.
type ParamKind int

// Parameter kinds.
const (
	Buffer ParamKind = iota // a device buffer of Size bytes, allocated and zeroed by the executor (its pointer is passed)
	U32
	U64
	F32
	F64
)

// Param is one kernel parameter, in the order of the PTX entry's parameter list.
type Param struct {
	Name string
	Kind ParamKind
	Size int64   // Buffer: bytes
	Int  uint64  // U32, U64
	Real float64 // F32, F64
}

// Descriptor is one kernel launch, described exactly.
type Descriptor struct {
	Name  string // unique, e.g. "fp32.fma", "dram.read", "coalesce.1/16"
	Group string // "arith", "memory", "coalescing", "access-size", "bank-conflicts", ...
	PTX   string // the whole module, for the driver JIT (target sm_XX set by the generator)
	Entry string // the .entry name

	Blocks, Threads int // grid and block size (1-D)
	SharedBytes     int // dynamic shared memory per block
	Params          []Param

	// Ops counts the instructions of each class executed by one launch, summed over all
	// threads (thread-level, not warp-level): the measured sequence and the arithmetic of
	// the overhead (loop counters, address arithmetic, keep-alive xors, seeding) alike.
	// PTX instructions of no class (mov, cvt, ld, st, ret) and the control classes are
	// not in Ops. The counts are of PTX instructions; the SASS the driver makes of them
	// may differ (see Notes).
	Ops map[OpClass]int64
	// Measured is the class an arithmetic kernel exists to measure ("" for memory
	// kernels); MeasuredOps() of its instructions are the measured sequence.
	Measured OpClass
	// Overhead is everything one launch executes besides the measured work, by class:
	// the part of Ops that is not measured, plus the control classes (Setp, Bra), which
	// are counted here only. For a memory kernel all of Ops is overhead.
	Overhead map[OpClass]int64
	// Bytes counts the bytes one launch moves at each level: for DRAM the bytes actually
	// transferred (whole sectors, so an uncoalesced access counts its wasted bytes), for
	// the on-chip levels the bytes requested by the threads.
	Bytes map[MemLevel]int64
	// Requested is the bytes the threads asked for, where they differ from Bytes[DRAM]
	// (coalescing and access-size variants): useful bytes over moved bytes is the efficiency.
	Requested int64

	// Data is the operand pattern of an arithmetic kernel whose data is controlled (nil:
	// not controlled, or no arithmetic kernel). The sim device's energy per instruction
	// depends on it.
	Data *DataPattern
	// Unroll and Iters are an arithmetic kernel's measured instructions per loop iteration
	// and thread, and the loop's trip count (0 for other kernels): what a check of the
	// SASS counts per iteration.
	Unroll int
	Iters  int64
	// Tensor is a tensor-core kernel's instruction shape (nil for others): its Ops of the
	// measured class count MACs, Shape.MACs() per instruction of Shape.Threads threads.
	Tensor *TensorShape

	// Variant holds the swept parameter of an intensity variant: "coalescing" (threads per
	// transaction, 1..32), "access_bytes" (1..16), "conflicts" (0..31), "occupancy"...
	Variant map[string]float64
	// Notes says anything a reader of the results must know about this kernel.
	Notes string
}

// Flops returns the floating-point operations of one launch.
func (d Descriptor) Flops() int64 {
	var f int64
	for c, n := range d.Ops {
		f += c.Flops() * n
	}
	return f
}

// TotalOps returns the instructions of all classes of one launch.
func (d Descriptor) TotalOps() int64 {
	var n int64
	for _, v := range d.Ops {
		n += v
	}
	return n
}

// Classes returns the descriptor's instruction classes in a stable order.
func (d Descriptor) Classes() []OpClass {
	var cs []OpClass
	for c := range d.Ops {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	return cs
}

// TotalThreads returns the threads of one launch.
func (d Descriptor) TotalThreads() int64 { return int64(d.Blocks) * int64(d.Threads) }

// MeasuredOps returns the instructions of the measured sequence of one launch: those of
// class Measured that are not overhead (0 for memory kernels).
func (d Descriptor) MeasuredOps() int64 {
	if d.Measured == "" {
		return 0
	}
	return d.Ops[d.Measured] - d.Overhead[d.Measured]
}

// Param returns the parameter called name and whether there is one.
func (d Descriptor) Param(name string) (Param, bool) {
	for _, p := range d.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}
