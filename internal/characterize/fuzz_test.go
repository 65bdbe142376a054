package characterize

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/report"
)

// FuzzResultsJSON feeds results.json as `report` and `characterize --resume` read it
// (ParseResults) and renders what loads (Compare, the report's page): a one-line error
// naming the file, or a page; never a panic, and never NaN or Inf on the page.
func FuzzResultsJSON(f *testing.F) {
	for _, name := range []string{"characterize_sim_quick_results.json", "characterize_sim_a100_quick_results.json"} {
		b, err := os.ReadFile(filepath.Join("..", "cli", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"format": 1}`,
		`{"format": "` + Format + `"}`,
		`{"format": "` + Format + `", "stages": null, "micro": {}, "archline": {"results": {"fp32": {}}}, "loadlevel": {"levels": [{}]}, "sensor": {"channels": [{}]}}`,
		`{"format": "` + Format + `", "gpu": {"power_limit_w": 1e308}, "loadlevel": {"overall_score": -1e308}}`,
		`{"format": "` + Format + `", "runs": [{}, {}], "stages": [{"name": "micro", "status": "done"}]}`,
		`{"format": "gpuwatt-archline/1", "results": {"fp32": {"points": [{"kernel": "roofline", "flops": 1e9, "bytes": 1e8, "time_s": 1e-3, "energy_j": 0.3, "occupancy": 1, "sm_clock_mhz": 1980}]}, "fp64": null}}`,
		`{"format": "gpuwatt-archline/1", "results": {"fp32": {"points": [{"kernel": "roofline", "flops": -1, "bytes": 0, "time_s": 0, "energy_j": 1e308, "occupancy": 0}, {"kernel": "roofline", "flops": 1e300, "bytes": 1e-300, "time_s": 1e308, "energy_j": -5, "occupancy": 2}]}}, "copy": [{"kernel": "copy", "bytes": 1, "time_s": 0}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		const name = "dir/results.json"
		r, err := ParseReport([]byte(in), name) // ParseResults's superset: archline's results.json too
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+": ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error does not name %s in one line: %v", name, err)
			}
			return
		}
		noNaN(t, "report dir", Compare([]*Result{r}, []string{"dir"}))
		// report DIR1 DIR2: the same results side by side (the reproducibility table's
		// mean and CV over them), and its --json.
		r2, _ := ParseReport([]byte(in), name)
		noNaN(t, "report dir dir2", Compare([]*Result{r, r2}, []string{"dir", "dir2"}))
		var js bytes.Buffer
		if err := report.WriteJSONTo(&js, Reproducibility([]*Result{r, r2}, []string{"dir", "dir2"})); err != nil {
			t.Fatalf("report --json dir dir2: %v", err)
		}
		// report --refit: archline's points fitted again.
		if r3, _ := ParseReport([]byte(in), name); r3.Archline != nil {
			archline.Reanalyse(r3.Archline)
			noNaN(t, "report --refit dir", Compare([]*Result{r3}, []string{"dir"}))
		}
	})
}

// noNaN renders p and fails where the page shows NaN or an infinity.
func noNaN(t *testing.T, what string, p report.Page) {
	t.Helper()
	var b bytes.Buffer
	if err := p.Render(&b); err != nil {
		t.Fatalf("%s: render: %v", what, err)
	}
	for _, bad := range []string{"NaN", "+Inf", "-Inf"} {
		if i := strings.Index(b.String(), bad); i >= 0 {
			t.Fatalf("%s: the page shows %s: ...%s...", what, bad, b.String()[max(0, i-200):min(b.Len(), i+50)])
		}
	}
}
