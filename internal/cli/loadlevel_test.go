package cli

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
)

// loadlevelArgs are short intervals on the virtual clock (testApp's NewClock).
var loadlevelArgs = []string{"--warmup", "1s", "--pre", "1s", "--record", "10s", "--post", "1s", "--idle", "2s", "--ns-per-op", "2000"}

func TestLoadlevelJSON(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	dir := t.TempDir()
	args := append([]string{"--contexts", "2", "--size", "1024,4096", "--out", dir, "--json"}, loadlevelArgs...)
	if code := a.Main(ctx, append([]string{"loadlevel"}, args...)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	goldenJSONBytes(t, "loadlevel.json", stdout.Bytes(), dir)
	// The steps in words, without the intervals' internal labels (issue 20: "_004_lvl_").
	wantProgress(t, stderr.String(), "gpuwatt loadlevel: [1/9] warm-up",
		"gpuwatt loadlevel: [5/9] level 100 %", "gpuwatt loadlevel: [9/9] active idle")
	if strings.Contains(stderr.String(), "_lvl") || strings.Contains(stderr.String(), "_idle") {
		t.Errorf("progress shows internal labels:\n%s", stderr)
	}
	var got struct {
		Levels []struct {
			TargetLoad float64 `json:"target_load"`
			ActualLoad float64 `json:"actual_load"`
			TxPerS     float64 `json:"tx_per_s"`
			PowerW     float64 `json:"power_w"`
			TxPerJ     float64 `json:"tx_per_j"`
			ActiveIdle bool    `json:"active_idle"`
		} `json:"levels"`
		OverallScore float64 `json:"overall_score"`
		Configs      []any   `json:"configs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(got.Levels) != 5 || !got.Levels[4].ActiveIdle || got.OverallScore <= 0 || len(got.Configs) != 2 {
		t.Fatalf("unexpected JSON: %+v", got)
	}
	for _, l := range got.Levels[:4] {
		if math.Abs(l.ActualLoad-l.TargetLoad) > 0.02 || l.PowerW <= 0 || l.TxPerJ <= 0 {
			t.Errorf("level %+v", l)
		}
	}
	for _, f := range []string{"results.json", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "report.html" {
			if err := xml.Unmarshal(b, new(any)); err != nil {
				t.Errorf("report.html is not well-formed: %v", err)
			}
			if !strings.Contains(string(b), "Power and throughput over dataset size") {
				t.Error("report.html lacks the dataset-size plot")
			}
		}
	}
}

func TestLoadlevelText(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	args := append([]string{"--contexts", "2", "--levels", "100,50", "--runs", "2"}, loadlevelArgs...)
	if code := a.Main(ctx, append([]string{"loadlevel"}, args...)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	goldenText(t, "loadlevel.txt", stdout.Bytes(), "")
	for _, want := range []string{"active idle", "overall score", "CV 50 %", "sim device"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestLoadlevelBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--size", "100"},
		{"--size", "8388608"},
		{"--contexts", "0"},
		{"--levels", "150"},
		{"--calibrations", "1"},
		{"--record", "0s"},
		{"--runs", "0"},
		{"--clock", "sundial"},
		{"--device", "cuda"},
		{"--device", "sim:p100"},
		{"--clock", "virtual", "--device", "nvml"},
		{"--variant", "cuda"},
		{"--workload", "gemm", "--variant", "cpu", "--device", "sim"},
		{"--workload", "gemm", "--variant", "cufft"},
		{"--workload", "dft"},
		{"--preset", "huge"},
		{"--batch", "-1"},
		{"--math", "fp8"},
		{"--workload", "gemm", "--size", "8"},
		{"--gpu", "-1"},
		{"--verify-fraction", "2"},
		{"--bogus"},
		{"extra"},
	} {
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, append([]string{"loadlevel"}, args...)); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, "gpuwatt loadlevel: ") {
			t.Errorf("%v: stderr %q, want one line", args, s)
		}
	}
}

// Without an NVIDIA GPU, auto is the sim device on its virtual clock, where the default
// workload (gemm) runs on the sim's execution model and its power is read from the sim;
// a GPU variant on the real clock there is bad input, after auto's notice.
func testLoadlevelNoGPU(t *testing.T) {
	a, _, stderr, ctx := testApp(t)
	a.NewClock = nil // the device's own clock
	if code := a.Main(ctx, []string{"loadlevel", "--variant", "gpu", "--clock", "real"}); code != ExitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "using the sim device") ||
		!strings.HasPrefix(lines[1], "gpuwatt loadlevel: --variant gpu runs on a GPU") {
		t.Errorf("stderr %q: want auto's notice, then why", stderr)
	}
	a, stdout, stderr, ctx := testApp(t)
	args := append([]string{"--contexts", "1", "--levels", "100", "--json"}, loadlevelArgs...)
	if code := a.Main(ctx, append([]string{"loadlevel"}, args...)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Variant string `json:"variant"`
		Configs []struct {
			Runs []struct {
				PowerSources []string `json:"power_sources"`
			} `json:"runs"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Variant != "cublas" || len(got.Configs) != 1 || len(got.Configs[0].Runs[0].PowerSources) != 1 {
		t.Errorf("variant %q, configs %+v", got.Variant, got.Configs)
	}
}

// Without --contexts, the CPU variant runs one user per host core.
func TestLoadlevelDefaultContexts(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	// Only the number of contexts is checked: a 2 s record (the later flag wins) is enough.
	args := append(append([]string{"--levels", "100", "--json", "--variant", "cpu"}, loadlevelArgs...), "--record", "2s", "--idle", "1s")
	if code := a.Main(ctx, append([]string{"loadlevel"}, args...)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Configs []struct {
			Contexts int `json:"contexts"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Configs) != 1 || got.Configs[0].Contexts != runtime.GOMAXPROCS(0) {
		t.Errorf("configs %+v, want one with %d contexts", got.Configs, runtime.GOMAXPROCS(0))
	}
}

// Issue 14's "must show": on the sim H200 the default workload resolves the levels: each
// within 2 points of its target, active idle present, power rising with load, and the
// 90 % level at least 30 % of the card's dynamic range (power limit − active idle) above
// active idle.
func TestLoadlevelSimH200Levels(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"loadlevel", "--device", "sim:h200", "--levels", "90,60,30", "--json", "--quiet"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr.Len() != 0 {
		t.Errorf("--quiet wrote %q", stderr)
	}
	var got struct {
		Workload string `json:"workload"`
		Levels   []struct {
			TargetLoad   float64 `json:"target_load"`
			ActualLoad   float64 `json:"actual_load"`
			PowerW       float64 `json:"power_w"`
			ActiveIdle   bool    `json:"active_idle"`
			TemperatureC *struct {
				Max float64 `json:"max"`
			} `json:"temperature_c"`
		} `json:"levels"`
		Configs []struct {
			Runs []struct {
				LevelsResolved       bool   `json:"levels_resolved"`
				HostPowerUnavailable string `json:"host_power_unavailable"`
			} `json:"runs"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Levels) != 4 || !got.Levels[3].ActiveIdle || !strings.HasPrefix(got.Workload, "gemm") {
		t.Fatalf("workload %q, levels %+v: want gemm, 3 levels and active idle", got.Workload, got.Levels)
	}
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	idle := got.Levels[3].PowerW
	span := float64(cfg.PowerLimit) - idle
	t.Logf("power %.1f / %.1f / %.1f W at 90/60/30 %%, active idle %.1f W, dynamic range %.0f W",
		got.Levels[0].PowerW, got.Levels[1].PowerW, got.Levels[2].PowerW, idle, span)
	for i, l := range got.Levels[:3] {
		if math.Abs(l.ActualLoad-l.TargetLoad) > 0.02 {
			t.Errorf("level %.0f %%: actual %.2f %%", 100*l.TargetLoad, 100*l.ActualLoad)
		}
		if next := got.Levels[i+1].PowerW; !(l.PowerW > next) {
			t.Errorf("power does not rise with load: %.1f W at %.0f %%, %.1f W below it", l.PowerW, 100*l.TargetLoad, next)
		}
		if l.TemperatureC == nil || l.TemperatureC.Max <= 0 {
			t.Errorf("level %.0f %%: no temperature", 100*l.TargetLoad)
		}
	}
	if above := got.Levels[0].PowerW - idle; above < 0.3*span {
		t.Errorf("90 %% level %.1f W above active idle: want at least 30 %% of %.0f W", above, span)
	}
	if r := got.Configs[0].Runs[0]; !r.LevelsResolved || r.HostPowerUnavailable == "" {
		t.Errorf("run: resolved %v, host power unavailable %q: want resolved, and why the host's power is not read", r.LevelsResolved, r.HostPowerUnavailable)
	}
}

// --preset seed runs the seed paper's transaction and labels it host-bound.
func TestLoadlevelSeedPreset(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	args := []string{"loadlevel", "--device", "sim:h200", "--preset", "seed", "--contexts", "1", "--levels", "100",
		"--warmup", "0s", "--calibrations", "2", "--pre", "0s", "--record", "500ms", "--post", "0s", "--idle", "500ms", "--quiet"}
	if code := a.Main(ctx, args); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "fft-64/gpu, 1 contexts") || !strings.Contains(out, "warning: --preset seed: the seed paper's transactions") ||
		!strings.Contains(out, "bound by the host's round trip") {
		t.Errorf("output:\n%s", out)
	}
}
