package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// measureSh runs `gpuwatt measure --device sim --json ... -- sh -c script` for real (a
// real process on the wall clock, as a user runs it) and returns the summary.
func measureSh(t *testing.T, script string, extra ...string) (*measure.Summary, string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH")
	}
	var stdout, stderr bytes.Buffer
	off := false
	a := &App{Stdout: &stdout, Stderr: &stderr, NVMLPaths: []string{filepath.Join(t.TempDir(), "libnvidia-ml.so.1")}, Host: "testhost", Version: "test", Interactive: &off}
	args := append([]string{"measure", "--device", "sim", "--baseline", "300ms", "--tail", "300ms", "--json"}, extra...)
	if code := a.Main(context.Background(), append(args, "--", "sh", "-c", script)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var sum measure.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	return &sum, stderr.String()
}

// testMeasureMarksWarm: a shell script appends `begin warm` / `end warm` to
// $GPUWATT_MARKS and measure reports region warm with its energy and interval, the sim's
// true power (its command draws command_load_w) inside the interval with the board's
// gain error; the region is synchronised (the command ends with it), so not flagged.
//
// Its baseline is 1 s, not measureSh's 0.3 s, so that begin is written after TestRealClock's
// nine subtests have started side by side (each setting up its device and sampler at once):
// begin, written in that burst, was stamped 10-90 ms late (regions of 0.428-0.499 s for
// the script's 0.5 s, 3 failures of the 0.45 s bound in whole runs at load 9-10), while end,
// written later, was on time; alone it never was (0.506-0.544 s in 12 runs). With the 1 s
// baseline: 0.510-0.564 s in 10 runs of TestRealClock at load 8.6.
func testMeasureMarksWarm(t *testing.T) {
	sum, _ := measureSh(t, `echo begin warm >> "$GPUWATT_MARKS"; sleep 0.5; echo end warm >> "$GPUWATT_MARKS"`, "--baseline", "1s")
	if len(sum.Regions) != 1 {
		t.Fatalf("regions %+v, warnings %v", sum.Regions, sum.Warnings)
	}
	r := sum.Regions[0]
	g := r.GPUs[0]
	cfg, _ := sim.Preset("h100")
	truthW := float64(cfg.CommandLoad)
	t.Logf("%s: %.3f-%.3f s, %.1f J [%.1f, %.1f] abs [%.1f, %.1f] %s, true %.0f W", r.Name, r.StartS, r.EndS, g.EnergyJ, g.LowJ, g.HighJ, g.AbsoluteLowJ, g.AbsoluteHighJ, g.Method, truthW)
	if r.Name != "warm" || r.Timing != "arrival" || r.DurationS < 0.45 || r.DurationS > 1 || r.StartS < sum.StartS || r.EndS > sum.EndS {
		t.Errorf("region %+v against the command's %.3f-%.3f s", r, sum.StartS, sum.EndS)
	}
	if g.NoFigure || g.LowJ > g.EnergyJ || g.EnergyJ > g.HighJ || g.AbsoluteLowJ/r.DurationS > truthW || g.AbsoluteHighJ/r.DurationS < truthW {
		t.Errorf("energy %.1f J [%.1f, %.1f] abs [%.1f, %.1f] over %.3f s: the true %.0f W outside", g.EnergyJ, g.LowJ, g.HighJ, g.AbsoluteLowJ, g.AbsoluteHighJ, r.DurationS, truthW)
	}
	for _, w := range g.Warnings {
		if w.Code == marks.CodeUnsynced {
			t.Errorf("flagged unsynchronised: %s", w.Message)
		}
	}
}

// testMeasureMarksBadAndUnsynced: a bad line is a warning naming it; a region ended while
// the command's load goes on (the sim's command draws its load to the end) is flagged;
// --out keeps the marks file as marks.txt, the trace holds the marks, the text summary
// and report.html list the regions.
func testMeasureMarksBadAndUnsynced(t *testing.T) {
	testkit.Slow(t) // 14 s; TestMeasureMarksWarm checks the marks
	out := filepath.Join(t.TempDir(), "run")
	sum, _ := measureSh(t, `M="$GPUWATT_MARKS"; echo "begin step" >> "$M"; echo "begn x" >> "$M"; sleep 0.3; echo "end step" >> "$M"; echo "end nothing" >> "$M"; sleep 0.6`, "--out", out)
	var codes []string
	for _, w := range sum.Warnings {
		codes = append(codes, string(w.Code))
	}
	got := strings.Join(codes, ",")
	for _, want := range []string{"bad_marker", "unmatched_marker", "unsynchronised_marker"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %s: no %s", got, want)
		}
	}
	for _, w := range sum.Warnings {
		if w.Code == marks.CodeBadLine && !strings.Contains(w.Message, `line 2 "begn x"`) {
			t.Errorf("the bad line is not named: %s", w.Message)
		}
	}
	if len(sum.Regions) != 1 || sum.Regions[0].Name != "step" {
		t.Fatalf("regions %+v", sum.Regions)
	}
	b, err := os.ReadFile(filepath.Join(out, "marks.txt"))
	if err != nil || !strings.HasPrefix(string(b), "begin step\nbegn x\n") {
		t.Errorf("marks.txt: %q, %v", b, err)
	}
	meta, _ := os.ReadFile(filepath.Join(out, "trace.json"))
	page, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(meta), `"name": "begin step"`) || !strings.Contains(string(page), "step #1") {
		t.Errorf("trace.json or report.html lacks the region")
	}
	// The page with its regions table and bands, in the browser as every report.html.
	if _, err := exec.LookPath("chromium"); err == nil || os.Getenv("GPUWATT_REQUIRE_BROWSER") != "" {
		t.Run("browser", func(t *testing.T) {
			for _, width := range browserWidths {
				for _, pc := range browserCheck(t, findChromium(t), map[string]string{"measure with regions": filepath.Join(out, "report.html")}, width) {
					for _, f := range pc.findings(width, "report.html") {
						t.Errorf("at %d px: %s", width, f)
					}
				}
			}
		})
	}
	var text bytes.Buffer
	measure.WriteText(&text, sum)
	if !strings.Contains(text.String(), "step #1") || !strings.Contains(text.String(), "!unsynchronised") {
		t.Errorf("text summary:\n%s", text.String())
	}
}
