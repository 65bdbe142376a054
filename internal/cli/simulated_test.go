package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/measure"
)

// TestAutoNeedsARealGPU: --device auto means this machine's GPUs for the verbs that
// record or account: without a driver measure, job begin and serve exit 2 naming what was
// looked for, and write nothing (they exited 0 with the twin's figures, unmarked: issue 29).
func TestAutoNeedsARealGPU(t *testing.T) {
	t.Parallel()
	noAMD := []string{filepath.Join(t.TempDir(), "libamd_smi.so")}
	for _, tc := range []struct {
		name string
		args func(dir string) []string
	}{
		{"measure", func(dir string) []string {
			return []string{"measure", "--out", filepath.Join(dir, "out"), "--", "fake", "1s"}
		}},
		{"measure --device auto", func(dir string) []string {
			return []string{"measure", "--device", "auto", "--out", filepath.Join(dir, "out"), "--", "fake", "1s"}
		}},
		{"job begin", func(dir string) []string {
			return []string{"job", "begin", "--job", "7", "--gpu", "0", "--dir", filepath.Join(dir, "out")}
		}},
		{"serve", func(dir string) []string { return []string{"serve", "--listen", "127.0.0.1:0"} }},
		{"call", func(dir string) []string {
			return []string{"call", "--calls", "8", "--out", filepath.Join(dir, "out"), "--", "sh", "-c", "echo ready; while read l; do echo done; done"}
		}},
		{"call --stdio", func(dir string) []string {
			return []string{"call", "--stdio", "--out", filepath.Join(dir, "out")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, stdout, stderr, ctx := testApp(t)
			a.AMDSMIPaths = noAMD
			a.Stdin = strings.NewReader("") // call --stdio's protocol: nothing comes
			dir := t.TempDir()
			code := a.Main(ctx, tc.args(dir))
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range []string{"no GPU driver found", "libnvidia-ml.so.1", "libamd_smi.so", "--device sim"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %s", stdout)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("%s was written", filepath.Join(dir, "out"))
			}
		})
	}
}

// TestSimOutputsSaySimulated: measure --device sim says so in every output: summary.json
// and --json "simulated": true with the twin's charge for the command, the text's first
// line, trace.json, report.html.
func TestSimOutputsSaySimulated(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "run")
	if code := a.Main(ctx, []string{"measure", "--device", "sim:h200", "--out", out, "--", "fake", "2s"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stderr.String(), "\n SIMULATED: every figure below is the sim device's (sim:h200)") ||
		!strings.Contains(stderr.String(), "690 W (its preset's command_load_w)") {
		t.Errorf("the text does not open with the banner and the charge:\n%s", stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if !sum.Simulated || !strings.Contains(sum.SimLoad, "690 W") {
		t.Errorf("summary.json: simulated %v, sim_load %q", sum.Simulated, sum.SimLoad)
	}
	for _, f := range []struct{ name, want string }{{"summary.json", `"simulated": true`}, {"trace.json", `"simulated": true`}, {"report.html", "every figure here is simulated"}} {
		b, err := os.ReadFile(filepath.Join(out, f.name))
		if err != nil || !strings.Contains(string(b), f.want) {
			t.Errorf("%s does not say %q (%v)", f.name, f.want, err)
		}
	}
	stdout.Reset()
	if code := a.Main(ctx, []string{"measure", "--device", "sim", "--json", "--", "fake", "1s"}); code != 0 || !strings.Contains(stdout.String(), `"simulated": true`) {
		t.Errorf("--json: exit %d, %s", code, stdout)
	}
	if code := a.Main(ctx, []string{"measure", "--device", "sim", "--sim-load", "-3", "--", "fake", "1s"}); code != ExitUsage {
		t.Errorf("--sim-load -3: exit %d, want 2", code)
	}
}

// testSimLoadStatedAndIdle: the twin charges a measured command its preset's load, which it
// states; a shell script that marks a region and goes on sleeping (a correct Python
// region, as it were) was flagged unsynchronised for that charge. --sim-load idle charges
// nothing: no flag, and the energy above idle is near 0; --sim-load 300 draws 300 W.
func testSimLoadStatedAndIdle(t *testing.T) {
	script := `echo begin step >> "$GPUWATT_MARKS"; sleep 0.3; echo end step >> "$GPUWATT_MARKS"; sleep 0.8`
	unsynced := func(s *measure.Summary) bool {
		for _, r := range s.Regions {
			for _, g := range r.GPUs {
				for _, w := range g.Warnings {
					if w.Code == marks.CodeUnsynced {
						return true
					}
				}
			}
		}
		return false
	}
	// The two runs side by side (each mostly sleeps through its command).
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		sum, _ := measureSh(t, script, "--sim-load", "idle")
		if !sum.Simulated || !strings.Contains(sum.SimLoad, "stayed idle") || len(sum.Regions) != 1 {
			t.Fatalf("simulated %v, sim_load %q, regions %d", sum.Simulated, sum.SimLoad, len(sum.Regions))
		}
		if unsynced(sum) {
			t.Errorf("--sim-load idle: the region is flagged unsynchronised: %+v", sum.Regions[0].GPUs[0].Warnings)
		}
		if g := sum.GPUs[0]; g.EnergyAboveIdleJ > 0.1*g.EnergyJ {
			t.Errorf("--sim-load idle: %.1f J above idle of %.1f J", g.EnergyAboveIdleJ, g.EnergyJ)
		}
	})
	t.Run("300", func(t *testing.T) {
		t.Parallel()
		sum, _ := measureSh(t, "sleep 1", "--sim-load", "300")
		if g := sum.GPUs[0]; g.MeanPowerW < 270 || g.MeanPowerW > 330 || !strings.Contains(sum.SimLoad, "300 W") {
			t.Errorf("--sim-load 300: mean %.0f W, sim_load %q", g.MeanPowerW, sum.SimLoad)
		}
		b, _ := json.Marshal(sum)
		if !strings.Contains(string(b), `"simulated":true`) {
			t.Errorf("the summary's JSON lacks simulated: %s", b[:200])
		}
	})
}
