package sass

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// dump builds a cuobjdump -sass listing of one function whose loop holds body (with the
// loop counter's IADD3, its ISETP and the back edge after it).
func dump(name string, body []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n\tcode for sm_90\n\t\tFunction : %s\n\t.headerflags\t@\"EF_CUDA_SM90\"\n", name)
	addr := 0
	emit := func(pred, ins string) {
		fmt.Fprintf(&b, "        /*%04x*/              %s%s ;                       /* 0x000fe20000000f00 */\n", addr, pred, ins)
		fmt.Fprintf(&b, "                                                                 /* 0x000fe20000000f00 */\n")
		addr += 0x10
	}
	emit("", "LDC R1, c[0x0][0x28]")
	emit("", "S2R R0, SR_TID.X")
	top := addr
	for _, ins := range body {
		emit("", ins)
	}
	emit("", "IADD3 R2, R2, 0x1, RZ")
	emit("", "ISETP.GE.U32.AND P0, PT, R2, R3, PT")
	emit("@!P0 ", fmt.Sprintf("BRA 0x%x", top))
	emit("", "EXIT")
	emit("", fmt.Sprintf("BRA 0x%x", addr))
	return b.String()
}

func repeat(ins string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = ins
	}
	return out
}

// TestCheckSASS: the check passes a loop with one machine instruction per PTX instruction
// (int32.add split over IADD3 and IMAD.IADD, the counter's IADD3 allowed), and fails a loop
// where ptxas merged pairs of adds, or dropped FMAs.
func TestCheckSASS(t *testing.T) {
	add := append(repeat("IADD3 R4, R4, R5, RZ", 4), repeat("IMAD.IADD R6, R6, 0x1, R7", 4)...)
	for _, tc := range []struct {
		name  string
		k     Kernel
		body  []string
		ok    bool
		found int
	}{
		{"split adds", Kernel{Name: "int32.add", Entry: "gw_int32_add", Measured: "int32.add", Unroll: 8}, add, true, 9},
		{"merged adds", Kernel{Name: "int32.add", Entry: "gw_int32_add", Measured: "int32.add", Unroll: 16}, add, false, 9},
		{"fma", Kernel{Name: "fp32.fma", Entry: "gw_fp32_fma", Measured: "fp32.fma", Unroll: 8}, repeat("FFMA R4, R4, R4, R5", 8), true, 8},
		{"fma unrolled twice", Kernel{Name: "fp32.fma", Entry: "gw_fp32_fma", Measured: "fp32.fma", Unroll: 4}, repeat("FFMA R4, R4, R4, R5", 8), true, 8},
		{"fma dropped", Kernel{Name: "fp32.fma", Entry: "gw_fp32_fma", Measured: "fp32.fma", Unroll: 8}, repeat("FFMA R4, R4, R4, R5", 7), false, 7},
		{"int64", Kernel{Name: "int64.add", Entry: "gw_int64_add", Measured: "int64.add", Unroll: 4},
			append(repeat("IADD3 R4, P0, R4, R6, RZ", 4), repeat("IADD3.X R5, R5, R7, RZ, P0, !PT", 4)...), true, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := Parse(strings.NewReader(dump(tc.k.Entry, tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(fs[0].Loop()); n != len(tc.body)+3 {
				t.Fatalf("loop of %d instructions, want %d", n, len(tc.body)+3)
			}
			r := CheckSASS(tc.k, fs)
			if r.OK != tc.ok || r.Found != tc.found {
				t.Errorf("ok %v found %d (%s), want %v %d", r.OK, r.Found, r.Why, tc.ok, tc.found)
			}
		})
	}
	if _, err := Parse(strings.NewReader("no sass here")); err == nil {
		t.Error("a file without a Function parsed")
	}
}

// TestReadNCU: the raw CSV with its units row, thousands separators and SI-scaled units.
func TestReadNCU(t *testing.T) {
	in := `==PROF== Connected to process 1106 (/usr/bin/python3.12)
{"name": "dram.copy", "entry": "gw_dram_copy", "ok": true}
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
"","","","","","","","Gbyte","Mbyte","msecond","inst"
"0","1","python3","h","gw_dram_copy","1","7","1.07","1,073.74","2.50","0"
"1","1","python3","h","gw_fp32_fma","1","7","0","0","5.02","69,206,016"
`
	m, err := ReadNCU(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c := m["gw_dram_copy"]
	near := func(a, b float64) bool { return math.Abs(a/b-1) < 1e-12 }
	if !near(c["dram__bytes_read.sum"], 1.07e9) || !near(c["dram__bytes_write.sum"], 1073.74e6) || !near(c["gpu__time_duration.sum"], 2.5e-3) {
		t.Errorf("dram copy %v", c)
	}
	k := Kernel{Name: "dram.copy", Entry: "gw_dram_copy", Bytes: map[string]int64{"dram": 2147483648}}
	if r := CheckNCU(k, c); !r.OK || r.DRAMRatio < 0.99 || r.DRAMRatio > 1.01 {
		t.Errorf("dram copy %+v", r)
	}
	k.Bytes["dram"] = 1 << 30
	if r := CheckNCU(k, c); r.OK {
		t.Errorf("twice the counted bytes passed: %+v", r)
	}
	f := Kernel{Name: "fp32.fma", Entry: "gw_fp32_fma", Measured: "fp32.fma", Ops: map[string]int64{"fp32.fma": 69206016}, MeasuredOps: 69206016}
	if r := CheckNCU(f, m["gw_fp32_fma"]); !r.OK || r.ClassRatio != 1 {
		t.Errorf("fma %+v", r)
	}
	if _, err := ReadNCU(strings.NewReader("==PROF== nothing profiled\n")); err == nil {
		t.Error("no header: no error")
	}
}

// TestCheckTensor: the tensor rules read HGMMA's shape (64x256x16, lowercase x) as one
// mnemonic, count 8 per iteration of the wgmma loop, and fail the fp8 mma.sync pattern
// of sm_90 (a few fp16 HMMAs where 32 mma were written); ncu's warp-level tensor count
// is checked against MACs / MACs per instruction × warps per instruction.
func TestCheckTensor(t *testing.T) {
	wg := append(repeat("HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0", 8), "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR.LE gsb0, 0x1")
	fs, err := Parse(strings.NewReader(dump("gw_bf16_wgmma", wg)))
	if err != nil {
		t.Fatal(err)
	}
	k := Kernel{Name: "bf16.wgmma", Entry: "gw_bf16_wgmma", Measured: "bf16.wgmma", Unroll: 8, MACsPerInstr: 64 * 256 * 16, InstrThreads: 128,
		Ops: map[string]int64{"bf16.wgmma": 10 * 64 * 256 * 16}}
	if row := CheckSASS(k, fs); !row.OK || row.Found != 8 || row.Split["HGMMA.64x256x16.F32.BF16"] != 8 {
		t.Errorf("wgmma: %+v", row)
	}
	fs, _ = Parse(strings.NewReader(dump("gw_bf16_mma", append(repeat("HMMA.16816.F32.BF16 R8, R4, R6, R8", 4), repeat("F2FP.F16.E4M3.UNPACK_B R4, R2", 24)...))))
	if row := CheckSASS(Kernel{Name: "bf16.mma", Entry: "gw_bf16_mma", Measured: "bf16.mma", Unroll: 32}, fs); row.OK {
		t.Errorf("4 HMMA for 32 mma passed: %+v", row)
	}
	// ncu: 10 wgmmas of one warpgroup are 40 warp-level instructions.
	for _, tc := range []struct {
		v  float64
		ok bool
	}{{40, true}, {10, false}} {
		row := CheckNCU(k, map[string]float64{"smsp__inst_executed_pipe_tensor_op_hmma.sum": tc.v, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 97})
		if row.OK != tc.ok || row.TensorInstr != 40 || row.TensorPipePct != 97 {
			t.Errorf("ncu %g: %+v", tc.v, row)
		}
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, &Report{NCU: []NCURow{CheckNCU(k, map[string]float64{"smsp__inst_executed_pipe_tensor_op_hmma.sum": 40})}}); err != nil || !strings.Contains(b.String(), "| bf16.wgmma | 40 | 40 | 1.0000 |") {
		t.Errorf("markdown: %v\n%s", err, b.String())
	}
}
