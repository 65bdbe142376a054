package kernels

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTensor(t *testing.T) {
	for _, c := range TensorClasses {
		t.Run(string(c), func(t *testing.T) {
			dev := Device{}
			if c == E4M3MMA || c == E5M2MMA {
				dev = Device{CC: "8.9"} // emulated on sm_90: not generated there
			}
			d, err := Tensor(c, Opts{Device: dev})
			if err != nil {
				t.Fatal(err)
			}
			m := checkModule(t, d)
			checkCounts(t, d, m)
			k := tensorKinds[c]
			// The MACs, computed apart: groups × iterations × instructions × m·n·k.
			group := int64(32)
			if k.wg {
				group = 128
			}
			want := d.TotalThreads() / group * d.Iters * int64(d.Unroll) * int64(k.m*k.n*k.k)
			if d.MeasuredOps() != want || d.Ops[c] != want {
				t.Errorf("MACs %d (Ops %d), want %d", d.MeasuredOps(), d.Ops[c], want)
			}
			if d.Tensor == nil || d.Tensor.MACs() != int64(k.m*k.n*k.k) || d.Tensor.Threads != int(group) {
				t.Errorf("shape %+v", d.Tensor)
			}
			// Targets: wgmma sm_90a at PTX 8.0, fp8 mma.sync PTX 8.4, the others sm_90 at 7.8.
			wantTarget := map[bool]string{true: ".version 8.0\n.target sm_90a\n", false: ".version 7.8\n.target sm_90\n"}[k.wg]
			if k.elem.bits == 8 && !k.wg && c != INT8MMA {
				wantTarget = ".version 8.4\n.target sm_89\n"
			}
			if !strings.Contains(d.PTX, wantTarget) {
				t.Errorf("target: want %q", wantTarget)
			}
			// About 5 ms at the spec rate (mma.sync: at two thirds of it, as sized).
			spec, ok := SpecOpsPerCycleSM(c, "9.0")
			if !ok {
				t.Fatal("no spec")
			}
			if !k.wg {
				spec *= 2.0 / 3
			}
			if dev.CC == "8.9" {
				spec = 1024 // no spec for 8.9: sized at 1024 per clock per SM
			}
			if s := float64(want) / (spec * 132 * 1.98e9); s < 4.5e-3 || s > 5.5e-3 {
				t.Errorf("%.2f ms at the sizing rate", s*1e3)
			}
			if c.Flops() != map[bool]int64{true: 0, false: 2}[c == INT8MMA] {
				t.Errorf("Flops per MAC %d", c.Flops())
			}
		})
	}
}

// TestTensorPatterns: the patterns differ in their parameters only, and set the operand
// words' bits as documented.
func TestTensorPatterns(t *testing.T) {
	params := regexp.MustCompile(`(?m)//.*$|gw_\w+`)
	for _, c := range TensorClasses {
		var ptx []string
		for _, p := range OperandPatterns {
			d, err := Tensor(c, Opts{Operands: p, Device: Device{CC: map[bool]string{true: "8.9", false: "9.0"}[c == E4M3MMA || c == E5M2MMA]}})
			if err != nil {
				t.Fatal(err)
			}
			if d.Name != PatternName(c, p) || d.Data == nil || d.Data.Pattern != p {
				t.Errorf("%s %s: name %s, data %v", c, p, d.Name, d.Data)
			}
			ptx = append(ptx, params.ReplaceAllString(d.PTX, "X"))
			mask, _ := d.Param("seed_mask")
			or, _ := d.Param("seed_or")
			switch p {
			case OperandsZeros:
				if mask.Int != 0 || or.Int != 0 || d.Data.ToggleEmulated != 0 {
					t.Errorf("%s zeros: mask %#x or %#x", c, mask.Int, or.Int)
				}
			case OperandsConst:
				if mask.Int != 0 || or.Int == 0 || d.Data.ToggleEmulated != 0 {
					t.Errorf("%s const: mask %#x or %#x", c, mask.Int, or.Int)
				}
			case OperandsRandom:
				// Random bits never touch the exponent of 1 (no Inf or NaN can arise).
				if mask.Int == 0 || mask.Int&or.Int != 0 || d.Data.ToggleEmulated < 0.05 {
					t.Errorf("%s random: mask %#x or %#x toggle %.2f", c, mask.Int, or.Int, d.Data.ToggleEmulated)
				}
			}
		}
		if ptx[0] != ptx[1] || ptx[1] != ptx[2] {
			t.Errorf("%s: the PTX differs between patterns beyond the parameters", c)
		}
	}
	// 1.75 in each format, 1 as random data's exponent.
	for _, tc := range []struct {
		e         tensorElem
		one, fix  float64
		expBits   int
		mantBits  int
		bias      int
		totalBits int
	}{
		{elemF16, 1, 1.75, 5, 10, 15, 16}, {elemBF16, 1, 1.75, 8, 7, 127, 16},
		{elemTF32, 1, 1.75, 8, 23, 127, 32}, {elemE4M3, 1, 1.75, 4, 3, 7, 8}, {elemE5M2, 1, 1.75, 5, 2, 15, 8},
	} {
		dec := func(b uint32) float64 {
			exp := int(b>>tc.mantBits) & (1<<tc.expBits - 1)
			mant := float64(b&(1<<tc.mantBits-1)) / float64(uint32(1)<<tc.mantBits)
			v := (1 + mant)
			for range exp - tc.bias {
				v *= 2
			}
			return v
		}
		if dec(tc.e.one) != tc.one || dec(tc.e.fixed) != tc.fix {
			t.Errorf("%s: one %g, fixed %g", tc.e.ptx, dec(tc.e.one), dec(tc.e.fixed))
		}
		if tc.e.randomMask>>(tc.totalBits-1) != 1 || tc.e.randomMask&tc.e.one != 0 {
			t.Errorf("%s: random mask %#x: want the sign and mantissa bits only", tc.e.ptx, tc.e.randomMask)
		}
	}
}

// TestWGMMADescriptors: every matrix descriptor's reach (its start, 8-row core matrices
// SBO apart, two K halves LBO apart, 128 bytes each) stays inside the tile array.
func TestWGMMADescriptors(t *testing.T) {
	for _, c := range []OpClass{BF16WGMMA, E4M3WGMMA} {
		d, err := Tensor(c, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		size := regexp.MustCompile(`\.shared \.align 1024 \.b8 \w+\[(\d+)\];`).FindStringSubmatch(d.PTX)
		if size == nil {
			t.Fatal("no tile array")
		}
		n, _ := strconv.Atoi(size[1])
		offs := regexp.MustCompile(`add\.s32 %r\d+, %r\d+, (\d+);\n\tshr\.u32`).FindAllStringSubmatch(d.PTX, -1)
		if len(offs) != 4 {
			t.Fatalf("%d descriptors, want 4", len(offs))
		}
		k := tensorKinds[c]
		for i, o := range offs {
			off, _ := strconv.Atoi(o[1])
			rows := k.m
			if i%2 == 1 {
				rows = k.n
			}
			end := off + (rows/8-1)*wgSBO + wgLBO + 128
			if off%128 != 0 || end > n || end > off+rows*wgRowBytes {
				t.Errorf("%s descriptor %d: bytes %d..%d of %d (its tile %d)", c, i, off, end, n, rows*wgRowBytes)
			}
		}
		// LBO 128 and SBO 256 in their fields.
		if !strings.Contains(d.PTX, "or.b32 %r") || !strings.Contains(d.PTX, ", 524288;") || !strings.Contains(d.PTX, ", 16;\n\tmov.b64") {
			t.Errorf("%s: descriptor fields (LBO 128 << 12 = 524288, SBO 256 >> 4 = 16) not found", c)
		}
	}
}

func TestTensorTargets(t *testing.T) {
	for _, tc := range []struct {
		c  OpClass
		cc string
		ok bool
	}{
		{BF16MMA, "8.0", true}, {BF16MMA, "7.5", false}, {E4M3MMA, "8.0", false}, {E4M3MMA, "8.9", true}, {E4M3MMA, "9.0", false}, {E5M2MMA, "12.0", true},
		{BF16WGMMA, "9.0", true}, {BF16WGMMA, "8.9", false}, {BF16WGMMA, "10.0", false}, {TF32MMA, "10.0", true},
	} {
		ok, why := TensorSupported(tc.c, tc.cc)
		_, err := Tensor(tc.c, Opts{Device: Device{CC: tc.cc}})
		if ok != tc.ok || (err == nil) != tc.ok || (!ok && why == "") {
			t.Errorf("%s on %s: supported %v (%s), Tensor error %v", tc.c, tc.cc, ok, why, err)
		}
	}
	d, _ := Tensor(BF16MMA, Opts{Device: Device{CC: "8.0", SMs: 108}})
	if !strings.Contains(d.PTX, ".version 7.0\n.target sm_80\n") || d.Blocks != 4*108 {
		t.Errorf("A100 bf16.mma: blocks %d\n%s", d.Blocks, d.PTX[:400])
	}
	if _, err := Tensor(BF16WGMMA, Opts{Threads: 256}); err == nil {
		t.Error("wgmma with 256 threads per block: no error")
	}
	if _, err := Tensor(FP32FMA, Opts{}); err == nil {
		t.Error("fp32.fma as a tensor class: no error")
	}
	if _, err := Tensor(BF16MMA, Opts{Unroll: 6}); err == nil {
		t.Error("unroll 6 over 4 chains: no error")
	}
	short, _ := Tensor(BF16WGMMA, Opts{LaunchTime: time.Millisecond})
	long, _ := Tensor(BF16WGMMA, Opts{LaunchTime: 10 * time.Millisecond})
	if r := float64(long.MeasuredOps()) / float64(short.MeasuredOps()); r < 9.5 || r > 10.5 {
		t.Errorf("10 ms / 1 ms: %.2f × the MACs", r)
	}
}

// TestTensorRoofline: the tensor roofline's W and Q, counted in its PTX by the package's
// own reader, give the intensity asked for (to the nearest R/U step), and the bytes
// loaded from global memory and stored to shared memory are the descriptor's.
func TestTensorRoofline(t *testing.T) {
	for _, tc := range []struct {
		p    Precision
		I    float64
		want float64
	}{
		{TCBF16, 4, 4}, {TCBF16, 64, 64}, {TCBF16, 256, 256}, {TCBF16, 1000, 1024}, {TCBF16, 4096, 4096},
		{TCFP8, 4, 4}, {TCFP8, 100, 102.4}, {TCFP8, 8192, 8192},
	} {
		d, err := TensorRoofline(tc.p, tc.I, Opts{Bytes: 64 << 20})
		if err != nil {
			t.Fatalf("%s %g: %v", tc.p, tc.I, err)
		}
		m := checkModule(t, d)
		c := checkCounts(t, d, m)
		W := float64(d.Flops())
		if got := d.Variant["intensity"]; got != tc.want || W/float64(d.Bytes[DRAM]) != tc.want {
			t.Errorf("%s %g: intensity %g (W/Q %g), want %g", tc.p, tc.I, got, W/float64(d.Bytes[DRAM]), tc.want)
		}
		if c.bytes["global"] != d.Bytes[DRAM] || c.bytes["shared"] != d.Bytes[Shared] {
			t.Errorf("%s %g: the PTX moves %d global and %d shared bytes, the descriptor %d and %d", tc.p, tc.I, c.bytes["global"], c.bytes["shared"], d.Bytes[DRAM], d.Bytes[Shared])
		}
		if d.Params[0].Size < 64<<20-int64(d.TotalThreads())*16*128 || !strings.Contains(d.PTX, ".target sm_90a") {
			t.Errorf("%s %g: buffer %d bytes", tc.p, tc.I, d.Params[0].Size)
		}
	}
	if _, err := TensorRoofline(TCBF16, 1, Opts{}); err == nil {
		t.Error("1 flop/byte (U = 256): no error")
	}
	if _, err := TensorRoofline(FP32, 16, Opts{}); err == nil {
		t.Error("fp32 tensor roofline: no error")
	}
	if _, err := TensorRoofline(TCBF16, 16, Opts{Device: Device{CC: "8.0"}}); err == nil {
		t.Error("tensor roofline on sm_80: no error")
	}
}
