package kernels

import "fmt"

// The spec table: results per clock cycle per multiprocessor of the native arithmetic
// instructions, from the CUDA C++ Programming Guide, section "Arithmetic Instructions"
// (Maximize Instruction Throughput), table "Throughput of Native Arithmetic Instructions
// (Number of Results per Clock Cycle per Multiprocessor)", CUDA 12.x editions,
// https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions
//
// How sure each entry is:
//   - The table's rows and its columns up to 7.x were read again, in this session, in a
//     mirror of the guide (a translation of the CUDA 11-era chapter 5.4.1). The 8.0 and
//     9.0 columns could not be read again here; their values below are the guide's as
//     recalled, and they agree with the rows' 7.x values wherever the hardware did not
//     change (integer, MUFU, popc).
//   - FP32 128 and FP64 64 for 9.0 agree with FACTS.md: FP32 FMA reached 97.5 % of
//     132 × 128 × 2 × 1.98 GHz and FP64 FMA 99.3 % of 132 × 64 × 2 × 1.98 GHz on an H200.
//   - FP16: the guide's row counts results; one f16x2 instruction gives two, so the
//     instruction rate (what Ops counts) is half the row: 256 results = 128 instructions.
//   - No entry (ok = false): int64.add (not native: "multiple instructions", as MIPP
//     notes too), bf16.fma (no row of its own in the guide), and the control classes.
//
// Units: thread-level instructions of the class per clock per SM, the unit of
// Descriptor.Ops; multiply by SMs and the SM clock for the device's rate.
var specTable = map[string]map[OpClass]float64{
	"9.0": {
		FP32Add: 128, FP32FMA: 128, // 32-bit floating-point add, multiply, multiply-add
		FP64FMA:    64,  // 64-bit floating-point add, multiply, multiply-add
		FP16FMA:    128, // 16-bit floating-point add, multiply, multiply-add: 256 results
		FP32Sin:    16,  // 32-bit floating-point reciprocal, rsqrt, log2, exp2, sine, cosine
		FP32Ex2:    16,
		FP32Rsqrt:  16,
		Int32Add:   64, // 32-bit integer add, extended-precision add, subtract
		Int32Mul:   64, // 32-bit integer multiply, multiply-add
		Int32Shift: 64, // 32-bit integer shift
		Int32Cmp:   64, // compare, minimum, maximum
		Int32Logic: 64, // 32-bit bitwise AND, OR, XOR
		Int32Popc:  16, // population count
	},
	"8.0": {
		FP32Add: 64, FP32FMA: 64,
		FP64FMA:    32,
		FP16FMA:    128, // 256 results
		FP32Sin:    16,
		FP32Ex2:    16,
		FP32Rsqrt:  16,
		Int32Add:   64,
		Int32Mul:   64,
		Int32Shift: 64,
		Int32Cmp:   64,
		Int32Logic: 64,
		Int32Popc:  16,
	},
}

// tensorSpecSource says where tensorSpecTable comes from, for the kernels' notes.
const tensorSpecSource = "NVIDIA H100 Tensor Core GPU Architecture whitepaper: 512 dense FP16 FMA per clock per tensor core, 4 per SM; A100 whitepaper: 256"

// tensorSpecTable is the dense tensor-core rate in MACs (multiply-accumulates) per clock per
// SM, the unit of a tensor class's Descriptor.Ops. Sources: the NVIDIA A100 and H100 Tensor
// Core GPU Architecture whitepapers. A100: 256 dense FP16 FMA per clock per tensor core,
// 4 per SM (1024 per SM: 312 TFLOP/s = 108 SMs x 1024 x 2 x 1.41 GHz); H100: twice that
// (2048 per SM: 989.4 TFLOP/s = 132 x 2048 x 2 x 1.83 GHz, the whitepaper's boost clock
// for tensor work on the SXM5; its max SM clock is 1.98 GHz, so the peak at the clock a
// kernel runs at is what micro compares with). TF32 is half the FP16 rate, FP8 and INT8
// twice (H100 SXM5: 494.7, 1978.9 TFLOP/s and 1978.9 TOPS dense). mma.sync and wgmma
// share the tensor cores: the table is the hardware's, whichever instruction reaches it.
var tensorSpecTable = map[string]map[OpClass]float64{
	"9.0": {
		FP16MMA: 2048, BF16MMA: 2048, TF32MMA: 1024, INT8MMA: 4096, E4M3MMA: 4096, E5M2MMA: 4096,
		FP16WGMMA: 2048, BF16WGMMA: 2048, E4M3WGMMA: 4096, E5M2WGMMA: 4096,
	},
	"8.0": {FP16MMA: 1024, BF16MMA: 1024, TF32MMA: 512, INT8MMA: 2048},
}

// SpecOpsPerCycleSM returns the spec throughput of class c on compute capability cc
// ("9.0", "8.0"), in thread-level instructions per clock per SM (the unit of
// Descriptor.Ops): the CUDA C++ Programming Guide's "Throughput of Native Arithmetic
// Instructions" table. ok is false where the table has no entry for the class (int64.add,
// bf16.fma, the control classes) or the compute capability is not in this table.
func SpecOpsPerCycleSM(c OpClass, cc string) (float64, bool) {
	sm, err := parseCC(cc)
	if err != nil {
		return 0, false
	}
	table := specTable
	if c.Tensor() {
		table = tensorSpecTable
	}
	col, ok := table[fmtCC(sm)]
	if !ok {
		return 0, false
	}
	v, ok := col[c]
	return v, ok
}

func fmtCC(sm int) string { return fmt.Sprintf("%d.%d", sm/10, sm%10) }
