package kernels

// Offline checks with NVIDIA's assembler, where it is installed (Debian's
// nvidia-cuda-toolkit has ptxas and cuobjdump; CI has neither, and skips): every kernel
// assembles, spills nothing, and the SASS of the arithmetic kernels keeps one machine
// instruction of the class per PTX instruction.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not on PATH", name)
	}
	return p
}

// ptxasMajor is the CUDA release of ptxas ("release 11.8" -> 11).
func ptxasMajor(t *testing.T, ptxas string) int {
	out, err := exec.Command(ptxas, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ptxas --version: %v", err)
	}
	m := regexp.MustCompile(`release (\d+)\.`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("ptxas --version: %s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// assemble runs ptxas on d's PTX for its own target and returns the cubin's path and
// ptxas's -v report.
func assemble(t *testing.T, ptxas string, d Descriptor) (string, string) {
	t.Helper()
	target := regexp.MustCompile(`\.target (sm_\d+)`).FindStringSubmatch(d.PTX)[1]
	dir := t.TempDir()
	src := filepath.Join(dir, "k.ptx")
	bin := filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(src, []byte(d.PTX), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ptxas, "-arch="+target, "-v", "-o", bin, src).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: ptxas -arch=%s: %v\n%s", d.Name, target, err, out)
	}
	return bin, string(out)
}

func TestPTXAS(t *testing.T) {
	ptxas := needTool(t, "ptxas")
	for _, cc := range []string{"9.0", "8.0"} {
		ds, err := Default(SuiteOpts{Device: Device{CC: cc}})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
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

// sassOps counts a cubin's SASS instructions by mnemonic (predicate guards dropped).
func sassOps(t *testing.T, cubin string) map[string]int {
	cuobjdump := needTool(t, "cuobjdump")
	out, err := exec.Command(cuobjdump, "-sass", cubin).CombinedOutput()
	if err != nil {
		t.Fatalf("cuobjdump: %v\n%s", err, out)
	}
	ops := map[string]int{}
	re := regexp.MustCompile(`^\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)`)
	for _, l := range bytes.Split(out, []byte("\n")) {
		if m := re.FindSubmatch(l); m != nil {
			ops[string(m[1])]++
		}
	}
	return ops
}

// sassFor is the SASS that one PTX instruction of each class becomes on sm_80/sm_90
// (the FMA classes, and everything ptxas could fold): mnemonics whose counts add up to
// one per PTX instruction. For int32.add and int64.add, the counts may also include the
// loop counter and the seeding.
var sassFor = map[OpClass][]string{
	FP32FMA: {"FFMA"}, FP64FMA: {"DFMA"}, FP16FMA: {"HFMA2", "HFMA2.MMA"},
	BF16FMA: {"HFMA2.BF16_V2", "HFMA2.MMA.BF16_V2"}, FP32Add: {"FADD"},
	FP32Sin: {"MUFU.SIN"}, FP32Ex2: {"MUFU.EX2"}, FP32Rsqrt: {"MUFU.RSQ"},
	Int32Mul: {"IMAD"}, Int32Popc: {"POPC"}, Int32Shift: {"SHF.L.U32"}, Int32Logic: {"LOP3.LUT"},
	Int32Cmp: {"IMNMX", "IMNMX.U32", "VIMNMX", "VIMNMX.U32"},
	Int32Add: {"IADD3", "IMAD.IADD"}, Int64Add: {"IMAD.X", "IADD3.X"},
}

func TestSASS(t *testing.T) {
	ptxas := needTool(t, "ptxas")
	needTool(t, "cuobjdump")
	major := ptxasMajor(t, ptxas)
	for _, cc := range []string{"9.0", "8.0"} {
		for _, c := range ArithClasses {
			t.Run(cc+"/"+string(c), func(t *testing.T) {
				t.Parallel()
				if c == Int32Cmp && cc == "9.0" && major < 12 {
					// CUDA 11.8's ptxas drops min/max for sm_90 (even a lone min.s32
					// comes out as a move); CUDA 13's keeps all 512 (VIMNMX).
					t.Skipf("ptxas %d miscompiles min/max for sm_90", major)
				}
				const unroll = 64
				d, err := Arith(c, Opts{Device: Device{CC: cc}, Unroll: unroll, Iters: 10})
				if err != nil {
					t.Fatal(err)
				}
				bin, _ := assemble(t, ptxas, d)
				ops := sassOps(t, bin)
				n := 0
				for _, m := range sassFor[c] {
					n += ops[m]
				}
				lo, hi := unroll, unroll
				if c == Int32Add {
					hi = unroll + 8 + 4 // seeding and the loop counter may be IADD3s too
				}
				if n < lo || n > hi {
					t.Errorf("%s on sm_%s: %d of %v in SASS for %d PTX instructions: %v", c, strings.ReplaceAll(cc, ".", ""), n, sassFor[c], unroll, ops)
				}
			})
		}
	}
}
