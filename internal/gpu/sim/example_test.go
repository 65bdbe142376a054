package sim_test

import (
	"fmt"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// A K20 measured as `gpuwatt measure` would: a command runs from 1 s to 3 s on a virtual
// clock; the true power steps at once, the sensor follows with its 0.84 s RC lag.
func ExampleOpen() {
	cfg, err := sim.Preset("k20")
	if err != nil {
		panic(err)
	}
	clk := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		panic(err)
	}
	dev := sys.Device(0)
	dev.CommandStarted(1 * time.Second)
	dev.CommandEnded(3 * time.Second)

	usage, _ := dev.Scheduled("power.usage")
	for _, at := range []time.Duration{500 * time.Millisecond, 1100 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5 * time.Second} {
		clk.AdvanceTo(at)
		r, _ := usage.Read(nil)
		fmt.Printf("t=%-5v true %-7v reads %.1f W\n", at, dev.TruePower(at), r[0].Value)
	}
	fmt.Printf("true energy of the command: %v\n", dev.TrueEnergy(time.Second, 3*time.Second))
	// Output:
	// t=500ms true 25 W    reads 28.0 W
	// t=1.1s  true 158 W   reads 42.0 W
	// t=2s    true 158 W   reads 121.3 W
	// t=3s    true 52.5 W  reads 149.3 W
	// t=5s    true 52.5 W  reads 64.3 W
	// true energy of the command: 316 J
}

// Kernels on the sim device: an FP32 FMA kernel runs at the top clock; a roofline kernel
// near the H200's balance point would draw more than the 700 W limit, so its clock drops.
func ExampleDevice_Prepare() {
	cfg, err := sim.Preset("h200")
	if err != nil {
		panic(err)
	}
	clk := clock.NewVirtual(time.Time{})
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		panic(err)
	}
	dev := sys.Device(0)
	threads := int64(2112 * 256)
	for _, d := range []kernels.Descriptor{
		{Name: "fp32.fma", Blocks: 2112, Threads: 256, Ops: map[kernels.OpClass]int64{kernels.FP32FMA: threads * 4096}},
		{Name: "roofline", Blocks: 2112, Threads: 256, Ops: map[kernels.OpClass]int64{kernels.FP32FMA: 8 << 30},
			Bytes: map[kernels.MemLevel]int64{kernels.DRAM: 1 << 30}},
	} {
		k, err := dev.Prepare(d)
		if err != nil {
			panic(err)
		}
		start, end, err := k.Run(1000)
		if err != nil {
			panic(err)
		}
		_, energy, power, clockHz := dev.TrueLaunch(d)
		fmt.Printf("%-8s %v per launch, %.1f W at %.0f MHz, %.2f TFLOP/s, %v per launch\n", d.Name, (end-start)/1000, power.Watts(), clockHz/1e6,
			float64(d.Flops())*1000/(end-start).Seconds()/1e12, energy)
		fmt.Printf("         true energy of the run %v, reasons during it %#x\n", dev.TrueEnergy(start, end), dev.TrueThrottleReasons(start))
		k.Close()
	}
	// Output:
	// fp32.fma 68.987µs per launch, 482.9 W at 1980 MHz, 64.20 TFLOP/s, 33.32 mJ per launch
	//          true energy of the run 33.32 J, reasons during it 0x0
	// roofline 353.411µs per launch, 699.9 W at 1450 MHz, 48.61 TFLOP/s, 247.4 mJ per launch
	//          true energy of the run 247.4 J, reasons during it 0x4
}
