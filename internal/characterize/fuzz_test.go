package characterize

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		const name = "dir/results.json"
		r, err := ParseResults([]byte(in), name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+": ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error does not name %s in one line: %v", name, err)
			}
			return
		}
		var b bytes.Buffer
		if err := Compare([]*Results{r}, []string{"dir"}).Render(&b); err != nil {
			t.Fatalf("render: %v", err)
		}
		for _, bad := range []string{"NaN", "+Inf", "-Inf"} {
			if i := strings.Index(b.String(), bad); i >= 0 {
				t.Fatalf("the page shows %s: ...%s...", bad, b.String()[max(0, i-200):min(b.Len(), i+50)])
			}
		}
	})
}
