package cuda_test

import (
	"errors"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
)

// The whole path from the driver to a kernel's result. Without a driver, Open fails with
// ErrLibraryNotFound and nothing else runs.
func Example() {
	lib, err := cuda.Open()
	if errors.Is(err, cuda.ErrLibraryNotFound) {
		fmt.Println(err) // no NVIDIA driver found: cannot load libcuda.so.1: ...
		return
	}
	dev, err := lib.Device(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := cuda.NewContext(dev) // a thread of its own, the primary context current on it
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close() // frees everything below

	mod, err := ctx.LoadPTX(`.version 8.0
.target sm_90
.address_size 64
.visible .entry fill_u32(.param .u64 buf, .param .u32 value, .param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [buf];
	ld.param.u32 %r1, [value];
	ld.param.u32 %r2, [n];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r6, %r3, %r4, %r5;
	setp.ge.u32 %p, %r6, %r2;
	@%p bra $Ldone;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r6, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
$Ldone:
	ret;
}
`)
	if err != nil {
		fmt.Println(err) // an *Error carrying the JIT's log
		return
	}
	fill, _ := mod.Function("fill_u32")
	const n = 1 << 20
	buf, _ := ctx.Alloc(4 * n)
	start, _ := ctx.NewEvent(cuda.EventDefault)
	end, _ := ctx.NewEvent(cuda.EventDefault)
	// One hand-over to the context thread for the whole timed sequence.
	err = ctx.Do(func() error {
		return errors.Join(
			start.Record(nil),
			fill.Launch(cuda.LaunchConfig{Grid: cuda.D1(n / 256), Block: cuda.D1(256)},
				cuda.Ptr(buf), cuda.U32(42), cuda.U32(n)),
			end.Record(nil),
			end.Synchronize())
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ms, _ := cuda.ElapsedTime(start, end)
	out := make([]uint32, n)
	_ = ctx.CopyDtoH(cuda.AsBytes(out), buf)
	fmt.Printf("out[n-1] = %d after %.3f ms\n", out[n-1], ms)
}
