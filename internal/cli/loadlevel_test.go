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
)

// loadlevelArgs are short intervals on the virtual clock (testApp's NewClock).
var loadlevelArgs = []string{"--warmup", "1s", "--pre", "1s", "--record", "10s", "--post", "1s", "--idle", "2s", "--ns-per-op", "2000"}

func TestLoadlevelJSON(t *testing.T) {
	a, stdout, stderr, ctx := testApp(t)
	dir := t.TempDir()
	args := append([]string{"--contexts", "2", "--size", "64,256", "--out", dir, "--json"}, loadlevelArgs...)
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
	a, stdout, stderr, ctx := testApp(t)
	args := append([]string{"--contexts", "1", "--levels", "100,50", "--runs", "2"}, loadlevelArgs...)
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
		{"--variant", "gpu", "--device", "sim"},
		{"--clock", "virtual", "--device", "nvml"},
		{"--variant", "cuda"},
		{"--variant", "cufft", "--clock", "virtual"},
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

// Without an NVIDIA GPU, auto is the sim device and the CPU variant, whose power is read
// from the sim; asking for a GPU variant there is bad input, after auto's notice.
func TestLoadlevelNoGPU(t *testing.T) {
	a, _, stderr, ctx := testApp(t)
	a.NewClock = nil // the device's own clock
	if code := a.Main(ctx, []string{"loadlevel", "--variant", "gpu"}); code != ExitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "using the sim device") ||
		!strings.HasPrefix(lines[1], "gpuwatt loadlevel: --variant gpu runs on a real NVIDIA GPU") {
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
	if got.Variant != "cpu" || len(got.Configs) != 1 || len(got.Configs[0].Runs[0].PowerSources) != 1 {
		t.Errorf("variant %q, configs %+v", got.Variant, got.Configs)
	}
}

// Without --contexts, the CPU variant runs one user per host core.
func TestLoadlevelDefaultContexts(t *testing.T) {
	a, stdout, stderr, ctx := testApp(t)
	args := append([]string{"--levels", "100", "--json"}, loadlevelArgs...)
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
