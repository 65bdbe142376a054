package kernels_test

import (
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// An FP32 FMA throughput kernel for one small launch: 2 blocks of 64 threads, 3 loop
// iterations of 16 fma.rn.f32 in 4 chains.
func ExampleArith() {
	d, err := kernels.Arith(kernels.FP32FMA, kernels.Opts{Blocks: 2, Threads: 64, Iters: 3, Unroll: 16, Chains: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Name, d.Entry, d.Blocks, d.Threads)
	fmt.Println("fma:", d.MeasuredOps(), "flops:", d.Flops())
	fmt.Println("overhead:", d.Overhead)
	// Output:
	// fp32.fma gw_fp32_fma 2 64
	// fma: 6144 flops: 12288
	// overhead: map[ctrl.bra:384 ctrl.setp:896 int32.add:896]
}

// The coalescing variant with two lanes per 128-byte line (MIPP's 1/16): each 4-byte
// load costs a whole 32-byte sector, 4 times what the threads use.
func ExampleCoalescing() {
	d, err := kernels.Coalescing(2, kernels.Opts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Name, d.Bytes[kernels.DRAM]/d.Requested)
	// Output:
	// coalesce.1/16 8
}

func ExampleSpecOpsPerCycleSM() {
	for _, c := range []kernels.OpClass{kernels.FP32FMA, kernels.FP64FMA, kernels.Int64Add} {
		v, ok := kernels.SpecOpsPerCycleSM(c, "9.0")
		fmt.Println(c, v, ok)
	}
	// Output:
	// fp32.fma 128 true
	// fp64.fma 64 true
	// int64.add 0 false
}
