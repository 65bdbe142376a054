package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

func TestArchlineOnSim(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "archline")
	if code := a.Main(ctx, []string{"archline", "--device", "sim:h200", "--quick", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	goldenText(t, "archline_h200_quick.txt", stdout.Bytes(), out)
	wantProgress(t, stderr.String(), "gpuwatt archline: [ 1/31] baseline")
	goldenJSON(t, "archline_h200_quick_results.json", filepath.Join(out, "results.json"), out)
	for _, s := range []string{"Table 4", "R²*", "eta_flop", "B_tau", "fp32", "fp64"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, stdout)
		}
	}
	var rep archline.Result
	readJSON(t, filepath.Join(out, "results.json"), &rep)
	if rep.Format != archline.Format || rep.Device != "sim:h200" || len(rep.Results) != 2 || rep.Incomplete {
		t.Fatalf("results.json: format %q device %q %d results", rep.Format, rep.Device, len(rep.Results))
	}
	for p, res := range rep.Results {
		if res.R2 < 0.99 || len(res.Points) != 2+6*2 || res.Pi0W <= 0 {
			t.Errorf("%s: R² %v, %d points, pi0 %v", p, res.R2, len(res.Points), res.Pi0W)
		}
	}
	checkPlots(t, filepath.Join(out, "report.html"), 8)
	for _, f := range []string{"trace.csv", "trace.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestArchlineJSONRecoversSimConfig: a --sim-config with its own pi0, eps_flop and eps_mem
// is recovered within 2 % by --json. By default on --quick's grid (0.2 s of CPU, not 1.2):
// the sim config's figures reach the twin and the fit either way, so a config key lost or
// misread, or a fit off by more than 2 %, fails it just the same, at the same tolerance
// (on --quick's grid the six figures came within 1.0 % of their truth); the full grid (at
// least 48 points) where the slow tests run (CI).
func TestArchlineJSONRecoversSimConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sim.json")
	js := `{"preset":"a100","pi0_w":131.5,"eps_flop_fp32_pj":3.3,"eps_flop_fp64_pj":9.1,"eps_mem_pj_per_byte":71.0,"sensors":{"energy.total":{"gain":1}}}`
	if err := os.WriteFile(cfg, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	args, minPoints := []string{"archline", "--device", "sim", "--sim-config", cfg, "--json", "--quiet", "--quick"}, 2+6*2
	if testkit.SlowOn() {
		args, minPoints = args[:len(args)-1], 48
	}
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, args); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr.Len() != 0 {
		t.Errorf("--quiet: stderr %q", stderr)
	}
	var got map[string]struct {
		EpsFlopPJ float64           `json:"eps_flop_pj"`
		EpsMem    float64           `json:"eps_mem_pj_per_byte"`
		Pi0W      float64           `json:"pi0_w"`
		R2        float64           `json:"r2"`
		R2All     float64           `json:"r2_all"`
		Points    []json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	truth := map[string][3]float64{"fp32": {3.3, 71, 131.5}, "fp64": {9.1, 71, 131.5}}
	if len(got) != 2 {
		t.Fatalf("--json: keys %v", got)
	}
	for p, want := range truth {
		r, ok := got[p]
		if !ok {
			t.Fatalf("--json: no %s", p)
		}
		for i, v := range []float64{r.EpsFlopPJ, r.EpsMem, r.Pi0W} {
			if math.Abs(v/want[i]-1) > 0.02 {
				t.Errorf("%s: parameter %d = %.4g, truth %.4g", p, i, v, want[i])

			}
		}
		if r.R2 < 0.99 || r.R2All < 0.99 || len(r.Points) < minPoints {
			t.Errorf("%s: R² %v R²* %v, %d points", p, r.R2, r.R2All, len(r.Points))
		}
	}
}

func TestArchlineBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.json")
	os.WriteFile(badCfg, []byte(`{"preset":"h100","eps_flop_fp16_pj":3}`), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--precision", "fp16"}, "--precision"},
		{[]string{"--precision", ""}, "--precision"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--clock-tolerance", "2"}, "--clock-tolerance"},
		{[]string{"--device", "sim:nope"}, "--device"},
		{[]string{"--sim-config", badCfg}, "eps_flop_fp16_pj"},
		{[]string{"--out", filepath.Join(file, "sub")}, "--out"},
		{[]string{"--device", "sim", "--gpu", "5"}, "--gpu 5"},
	} {
		a, stdout, stderr, ctx := testApp(t)
		code := a.Main(ctx, append([]string{"archline", "--quick"}, tc.args...))
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q (want one line with %q)", tc.args, code, stderr, tc.want)
		}
	}
	a, stdout, _, ctx := testApp(t)
	if code := a.Main(ctx, []string{"archline", "--help"}); code != 0 || !strings.Contains(stdout.String(), "--precision") {
		t.Errorf("--help: exit %d\n%s", code, stdout)
	}
}
