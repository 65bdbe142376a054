package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/micro"
)

// TestMicroOperands: --operands runs each class with patterns under each pattern and prints
// the data table; bad patterns are bad input naming them.
func TestMicroOperands(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"micro", "--device", "sim:h200", "--only", "baseline,fp32.fma,int32.add,fp32.sin", "--operands", "zeros,random", "--min-updates", "10", "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep micro.Result
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rep.Rows {
		names = append(names, r.Name+":"+r.Operands)
	}
	if got := strings.Join(names, " "); got != "baseline: int32.add@zeros:zeros int32.add:random fp32.fma@zeros:zeros fp32.fma:random fp32.sin:" {
		t.Errorf("rows %s", got)
	}
	if len(rep.Data) != 2 || rep.Data[0].RandomOverZerosAbovePi0 < 1.5 {
		t.Errorf("data effect %+v", rep.Data)
	}
	for _, bad := range [][]string{{"--operands", "ones"}, {"--operands", "zeros,"}} {
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, append([]string{"micro", "--device", "sim:h200"}, bad...)); code != ExitUsage || !strings.Contains(stderr.String(), "--operands") {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
}

// TestMicroPTXAndCheck: --ptx writes every kernel's PTX with kernels.json; --check on a
// directory without the records is bad input, and on the records of sass's testdata passes.
func TestMicroPTXAndCheck(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	dir := filepath.Join(t.TempDir(), "ptx")
	if code := a.Main(ctx, []string{"micro", "--ptx", dir, "--operands", "all", "--only", "fp32.fma,dram.copy"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	if len(files) != 4 {
		t.Errorf("%d PTX files, want 4 (fp32.fma under 3 patterns, dram.copy): %v", len(files), files)
	}
	var m micro.Manifest
	readJSON(t, filepath.Join(dir, "kernels.json"), &m)
	if m.Format != micro.ManifestFormat || len(m.Kernels) != 4 || m.Kernels[0].Unroll != 512 || m.Kernels[0].MeasuredOps == 0 {
		t.Errorf("kernels.json %+v", m)
	}
	b, err := os.ReadFile(filepath.Join(dir, m.Kernels[0].File))
	if err != nil || !strings.Contains(string(b), ".entry "+m.Kernels[0].Entry) {
		t.Errorf("%s: %v", m.Kernels[0].File, err)
	}
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, []string{"micro", "--check", t.TempDir()}); code != ExitUsage || !strings.Contains(stderr.String(), "kernels.json") {
		t.Errorf("--check of an empty directory: exit %d, %s", code, stderr)
	}
}
