package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/micro"
)

func TestMicroOnSim(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "micro")
	if code := a.Main(ctx, []string{"micro", "--device", "sim:h200", "--only", "baseline,fp32.fma,dram.copy,coalesce.*", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	goldenText(t, "micro_h200.txt", stdout.Bytes(), out)
	goldenJSON(t, "micro_h200_results.json", filepath.Join(out, "results.json"), out)
	if !strings.Contains(stdout.String(), "fp32.fma") || !strings.Contains(stdout.String(), "baseline power pi0") {
		t.Errorf("table:\n%s", stdout)
	}
	wantProgress(t, stderr.String(), "gpuwatt micro: [1/9] baseline", "gpuwatt micro: [9/9] coalesce.1/1")
	var rep micro.Result
	readJSON(t, filepath.Join(out, "results.json"), &rep)
	if rep.Format != micro.Format || len(rep.Rows) != 9 || rep.Device != "sim:h200" || rep.Pi0W <= rep.IdlePowerW {
		t.Fatalf("results.json: format %q, %d rows, device %q, pi0 %v, idle %v", rep.Format, len(rep.Rows), rep.Device, rep.Pi0W, rep.IdlePowerW)
	}
	csv, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(csv), "\n"); lines != 10 || !strings.HasPrefix(string(csv), strings.Join(micro.CSVHeader, ",")) {
		t.Errorf("results.csv: %d lines, header %q", lines, strings.SplitN(string(csv), "\n", 2)[0])
	}
	checkPlots(t, filepath.Join(out, "report.html"), 3)
	for _, f := range []string{"trace.csv", "trace.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestMicroListJSONAndBadInput(t *testing.T) {
	t.Parallel()
	a, stdout, _, ctx := testApp(t)
	if code := a.Main(ctx, []string{"micro", "--list"}); code != 0 || !strings.Contains(stdout.String(), "bank.31") || !strings.Contains(stdout.String(), "baseline") {
		t.Fatalf("--list: exit %d\n%s", code, stdout)
	}
	a, stdout, _, ctx = testApp(t)
	if code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "int32.add", "--json"}); code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	var rep micro.Result
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Rows) != 1 || rep.Rows[0].Name != "int32.add" {
		t.Fatalf("--json: %v, %+v", err, rep.Rows)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"micro", "--device", "sim", "--only", "nosuch"}, `--only: kernels: no kernel matches "nosuch"`},
		{[]string{"micro", "--device", "sim", "--gpu", "4"}, "--gpu 4: no such GPU"},
		{[]string{"micro", "--bogus"}, "unknown flag -bogus"},
	} {
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, tc.args); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// checkPlots parses an HTML report as XML and checks it has at least n plots.
func checkPlots(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	svgs := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "svg" {
			svgs++
		}
	}
	if svgs < n {
		t.Errorf("%s has %d plots, want at least %d", path, svgs, n)
	}
}

// TestMicroWarningsToldOnceOnSim: with characterize --quick's short runs the 1 s moving-average
// channels disagree on several kernels; the table's warnings tell each such disagreement
// once, with the count of kernels and the range.
func TestMicroWarningsToldOnceOnSim(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "micro")
	if code := a.Main(ctx, []string{"micro", "--device", "sim:h200", "--quiet", "--min-updates", "20", "--warmup", "250ms", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep micro.Result
	readJSON(t, filepath.Join(out, "results.json"), &rep)
	if noLinePerKernel(t, rep.RowWarnings(), stdout.String()) == 0 {
		t.Fatalf("no warning shared by several kernels: the grouping is not exercised\n%s", stdout)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf(" of %d, ", len(rep.Rows))) {
		t.Errorf("no group line counts the kernels out of %d:\n%s", len(rep.Rows), stdout)
	}
}
