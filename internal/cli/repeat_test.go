package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/characterize"
)

// TestCharacterizeRepeat: --repeat 2 runs the stages twice into run-1 and run-2, and
// writes repeat.json (each headline figure over the runs with its CV; the archline fit
// pooled over the runs) and report.html with the reproducibility table; on the sim the
// runs of one card repeat to well under 1 % CV. --repeat 0 and --repeat with --resume
// are bad input.
func TestCharacterizeRepeat(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "rep")
	a, runOut, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", "sim:h200", "--quick", "--stages", "archline", "--repeat", "2", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rp characterize.Repro
	readJSON(t, filepath.Join(out, "repeat.json"), &rp)
	// stdout ends the series as a single run ends with its summary: a line per figure with
	// its mean and CV (issue 30: the table went to stderr only).
	for _, f := range rp.Figures {
		if want := fmt.Sprintf("mean %-10s CV %.2f %%", fmt.Sprintf("%.4g", f.Mean), f.CVPct); !strings.Contains(runOut.String(), f.Name) || !strings.Contains(runOut.String(), want) {
			t.Errorf("stdout lacks %s's line (%q):\n%s", f.Name, want, runOut)
		}
	}
	if strings.Contains(stderr.String(), "CV ") {
		t.Errorf("the table is on stderr too:\n%s", stderr)
	}
	if len(rp.Runs) != 2 || rp.Cards != 1 || len(rp.Figures) == 0 || len(rp.Pooled) != 2 {
		t.Fatalf("repeat.json: %+v", rp)
	}
	seen := map[string]bool{}
	for _, f := range rp.Figures {
		seen[f.Name] = true
		if len(f.Values) != 2 || f.CVPct > 1 || f.Differs {
			t.Errorf("%s: %v, CV %.2f %%, differs %v", f.Name, f.Values, f.CVPct, f.Differs)
		}
	}
	for _, want := range []string{"pi0 (W)", "fp32 eps_mem (pJ/B)", "fp32 eps_mem on the memory rail (pJ/B)", "fp64 eps_flop (pJ/flop)"} {
		if !seen[want] {
			t.Errorf("no %q in the figures", want)
		}
	}
	for p, f := range rp.Pooled {
		if f.Error != "" || f.Intervals.Runs != 2 || !(f.Intervals.EpsMemPJPerByte[0] < f.EpsMemPJPerByte && f.EpsMemPJPerByte < f.Intervals.EpsMemPJPerByte[1]) {
			t.Errorf("pooled %s: %+v", p, f)
		}
	}
	for k := 1; k <= 2; k++ {
		var r characterize.Result
		readJSON(t, filepath.Join(out, "run-"+string(rune('0'+k)), "results.json"), &r)
		if r.Archline == nil || r.Archline.Pi0 == nil {
			t.Errorf("run-%d has no archline", k)
		}
	}
	_, _, text := htmlOutline(t, filepath.Join(out, "report.html"))
	for _, want := range []string{characterize.ReproTitle, "pooled over 2 runs", "run-to-run CV"} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// report --json over the runs' directories prints the same table.
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"report", "--json", "--out", filepath.Join(t.TempDir(), "cmp.html"), filepath.Join(out, "run-1"), filepath.Join(out, "run-2")}); code != 0 {
		t.Fatalf("report --json: exit %d: %s", code, stderr)
	}
	var again characterize.Repro
	if err := json.Unmarshal(stdout.Bytes(), &again); err != nil || len(again.Figures) != len(rp.Figures) || again.Figures[0].CVPct != rp.Figures[0].CVPct {
		t.Errorf("report --json: %v\n%s", err, stdout)
	}
	for _, bad := range [][]string{{"--repeat", "0"}, {"--repeat", "2", "--resume"}} {
		a, _, stderr, ctx := testApp(t)
		args := append([]string{"characterize", "--device", "sim", "--quick", "--out", filepath.Join(t.TempDir(), "x")}, bad...)
		if code := a.Main(ctx, args); code != ExitUsage || !strings.Contains(stderr.String(), "--repeat") {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
}
