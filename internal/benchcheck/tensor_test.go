package benchcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cli"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// TestTensorGemmCompare (issue 33): bench/gpu/tensor_gemm.py's selftest passes, and its
// compare reads the tensor archline's results.json as gpuwatt writes it (the sim's h100,
// tc-bf16): a GEMM whose energy is 1.1 × the fit's model, E = 2 MACs eps_flop + Q eps_mem
// + T pi0 computed here from the same results.json, comes out at 1.100.
func TestTensorGemmCompare(t *testing.T) {
	testkit.Slow(t) // 9 s: python3
	py := python(t)
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, append([]string{benchGPU + "/tensor_gemm.py"}, args...)...)
		cmd.Env = append(os.Environ(), noBytecode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tensor_gemm.py %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("selftest"); !strings.Contains(out, "selftest ok") {
		t.Fatalf("selftest: %s", out)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"archline", "--device", "sim:h100", "--precision", "tc-bf16", "--quick", "--quiet", "--out", filepath.Join(dir, "arch")}, &stdout, &stderr); code != 0 {
		t.Fatalf("archline: exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "arch", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results map[string]struct {
			EpsFlop float64 `json:"eps_flop_pj"`
			EpsMem  float64 `json:"eps_mem_pj_per_byte"`
			Pi0     float64 `json:"pi0_w"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	f, ok := rep.Results["tc-bf16"]
	if !ok || f.EpsFlop <= 0 {
		t.Fatalf("no tc-bf16 fit: %s", b[:200])
	}
	m, n, k := 512, 8192, 8192
	macs := float64(m) * float64(n) * float64(k)
	q := 2*float64(m*k+k*n) + 2*float64(m*n)
	T := 1e-3
	model := 2*macs*f.EpsFlop*1e-12 + q*f.EpsMem*1e-12 + T*f.Pi0
	line := fmt.Sprintf(`{"dtype": "bf16", "m": %d, "n": %d, "k": %d, "macs": %g, "bytes": %g, "intensity_flop_per_byte": %g, "time_s": %g, "power_w": %g, "energy_j": %g, "sm_clock_mhz": 1500, "tflops": %g}`,
		m, n, k, macs, q, 2*macs/q, T, 1.1*model/T, 1.1*model, 2*macs/T/1e12)
	jl := filepath.Join(dir, "gemm.jsonl")
	if err := os.WriteFile(jl, []byte(line+"\n"+`{"dtype": "fp8", "m": 8, "n": 8192, "k": 8192, "error": "no fp8"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run("compare", jl, filepath.Join(dir, "arch", "results.json"))
	if !strings.Contains(out, "| bf16 | 512 x 8192 x 8192 |") || !strings.Contains(out, "| 1.100 |") || !strings.Contains(out, "error: no fp8") {
		t.Errorf("compare:\n%s", out)
	}
}
