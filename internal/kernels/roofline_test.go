package kernels

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestRoofline(t *testing.T) {
	configs := []struct {
		name string
		o    Opts
	}{
		{"default", Opts{}},
		{"small", Opts{Blocks: 3, Threads: 64, Iters: 2, Unroll: 3, Bytes: 1 << 20}},
		{"sm_80", Opts{Device: Device{CC: "8.0", SMs: 108}, Bytes: 64 << 20}},
		{"low-occupancy", Opts{Blocks: 4, Threads: 64, Bytes: 256 << 20}},
	}
	for _, cfg := range configs {
		for _, prec := range []Precision{FP32, FP64} {
			for _, tc := range []struct {
				in, want float64 // requested and generated intensity, flop/byte
			}{{0.0625, 0.0625}, {0.125, 0.125}, {0.25, 0.25}, {1, 1}, {1.3, 1.3125}, {2, 2}, {3, 3}, {16, 16}, {20.03, 20}, {100, 100}, {256, 256}} {
				t.Run(fmt.Sprintf("%s/%s/%g", cfg.name, prec, tc.in), func(t *testing.T) {
					d, err := Roofline(prec, tc.in, cfg.o)
					if err != nil {
						t.Fatal(err)
					}
					m := checkModule(t, d)
					c := checkCounts(t, d, m)
					checkBounds(t, d, m)
					if d.Group != "roofline" || d.Measured != prec.Class() {
						t.Errorf("group %q measured %q", d.Group, d.Measured)
					}
					// Q: the PTX's unguarded global loads and stores, all DRAM.
					if c.bytes["global"] != d.Bytes[DRAM] || d.Requested != d.Bytes[DRAM] || len(d.Bytes) != 1 {
						t.Errorf("PTX moves %d global bytes; Bytes %v, Requested %d", c.bytes["global"], d.Bytes, d.Requested)
					}
					// W: the PTX's FMAs of the class, less none (no FMA is overhead).
					W := RooflineFlops(d)
					if W != 2*c.ops[prec.Class()] || W != d.Flops() || d.Overhead[prec.Class()] != 0 {
						t.Errorf("W %d, PTX FMAs %d, Flops %d", W, c.ops[prec.Class()], d.Flops())
					}
					if got := float64(W) / float64(d.Bytes[DRAM]); got != tc.want || d.Variant["intensity"] != tc.want {
						t.Errorf("intensity W/Q = %g (variant %g), want %g", got, d.Variant["intensity"], tc.want)
					}
					src, _ := d.Param("src")
					passes, _ := d.Param("passes")
					if 2*src.Size*int64(passes.Int) != d.Bytes[DRAM] {
						t.Errorf("Q %d, want 2 × buffer %d × passes %d", d.Bytes[DRAM], src.Size, passes.Int)
					}
					wantLd := map[Precision]string{FP32: "ld.global.v4.f32", FP64: "ld.global.v2.f64"}[prec]
					if !strings.Contains(d.PTX, wantLd) || !strings.Contains(d.PTX, "fma.rn.f"+string(prec)[2:]) {
						t.Errorf("PTX lacks %s", wantLd)
					}
					// The reps loop holds the FMAs beyond each chain's seeding one, up to 128
					// per chunk per trip; with at most one FMA per word there is none.
					words := map[Precision]float64{FP32: 4, FP64: 2}[prec]
					if hasLoop := strings.Contains(d.PTX, "$L_reps:"); hasLoop != (16*tc.want > words) {
						t.Errorf("reps loop %v at %g FMAs per chunk", hasLoop, 16*tc.want)
					}
					if reps, _ := d.Param("reps"); 16*tc.want >= 16*words+128*2 && reps.Int < 2 {
						t.Errorf("reps %d at %g FMAs per chunk", reps.Int, 16*tc.want)
					}
				})
			}
		}
	}
}

func TestRooflineSizing(t *testing.T) {
	// The default launch lasts about LaunchTime on the default device at both ends.
	for _, I := range []float64{0.125, 256} {
		d, err := Roofline(FP32, I, Opts{Bytes: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		dev := DefaultDevice
		sec := max(float64(d.Bytes[DRAM])/dev.DRAMBytesPerSec, float64(d.Flops())/(2*128*float64(dev.SMs)*dev.ClockHz))
		if sec < 2.5e-3 || sec > 10e-3 {
			t.Errorf("I = %g: launch of %.3g s, want about 5 ms", I, sec)
		}
	}
}

func TestRooflineErrors(t *testing.T) {
	for _, tc := range []struct {
		p Precision
		I float64
		o Opts
	}{
		{"fp16", 1, Opts{}},
		{FP32, 0.01, Opts{}},
		{FP32, 5000, Opts{}},
		{FP64, 1, Opts{Threads: 48}},
		{FP64, 1, Opts{Unroll: 32}},
		{FP32, 1, Opts{Iters: -1}},
	} {
		if _, err := Roofline(tc.p, tc.I, tc.o); err == nil {
			t.Errorf("Roofline(%q, %g, %+v): no error", tc.p, tc.I, tc.o)
		}
	}
}

// TestRooflinePTXAS assembles the roofline kernels where ptxas is installed (CI skips):
// no spills, and at most 32 registers so that 2048 threads fit an SM.
func TestRooflinePTXAS(t *testing.T) {
	ptxas := needTool(t, "ptxas")
	for _, cc := range []string{"9.0", "8.0"} {
		for _, prec := range []Precision{FP32, FP64} {
			for _, I := range []float64{0.125, 2, 256} {
				d, err := Roofline(prec, I, Opts{Device: Device{CC: cc}, Bytes: 64 << 20})
				if err != nil {
					t.Fatal(err)
				}
				t.Run(cc+"/"+d.Name, func(t *testing.T) {
					t.Parallel()
					_, report := assemble(t, ptxas, d)
					if !strings.Contains(report, "0 bytes spill stores") {
						t.Errorf("%s spills registers:\n%s", d.Name, report)
					}
					regs := regexp.MustCompile(`Used (\d+) registers`).FindStringSubmatch(report)
					if n, _ := strconv.Atoi(regs[1]); n > 32 {
						t.Errorf("%s: %d registers: more than 32 halves the occupancy of 2048 threads per SM", d.Name, n)
					}
				})
			}
		}
	}
}
