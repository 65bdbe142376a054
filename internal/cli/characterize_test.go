package cli

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// htmlOutline parses a report strictly (every tag closed, HTML entities) and returns its
// section titles (h2), the number of inline SVG plots, and all its text.
func htmlOutline(t *testing.T, path string) (titles []string, svgs int, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("http://")) && bytes.Contains(b, []byte("src=")) || bytes.Contains(b, []byte("<script")) || bytes.Contains(b, []byte("<link")) {
		t.Errorf("%s refers to something outside itself", path)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	var all strings.Builder
	inH2 := false
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s is not well-formed: %v", path, err)
			}
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "svg" {
				svgs++
			}
			if tok.Name.Local == "h2" || tok.Name.Local == "h3" {
				inH2 = true
				titles = append(titles, "")
			}
		case xml.EndElement:
			if tok.Name.Local == "h2" || tok.Name.Local == "h3" {
				inH2 = false
			}
		case xml.CharData:
			if inH2 {
				titles[len(titles)-1] += string(tok)
			}
			all.Write(tok)
		}
	}
	return titles, svgs, all.String()
}

func runCharacterize(t *testing.T, device, out string) *characterize.Result {
	t.Helper()
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", device, "--quick", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	name := "characterize_" + strings.ReplaceAll(device, ":", "_") + "_quick"
	goldenProgress(t, name+".txt", stderr.Bytes(), out)
	// sensor_plots (the plotted readings) and the archline points are the data behind the
	// figures the rest of the file holds.
	goldenJSON(t, name+"_results.json", filepath.Join(out, "results.json"), out, "sensor_plots", "points")
	for _, s := range characterize.Stages {
		if !strings.Contains(stderr.String(), "] "+s+": ") {
			t.Errorf("no progress line for stage %s in:\n%s", s, stderr)
		}
	}
	var r characterize.Result
	readJSON(t, filepath.Join(out, "results.json"), &r)
	// stdout is the summary of the results.json written (progress goes to stderr).
	var want strings.Builder
	r.WriteSummary(&want, filepath.Join(out, "report.html"))
	if stdout.String() != want.String() || !strings.Contains(stdout.String(), "Energy per flop, fp32") {
		t.Errorf("stdout:\n%s\nwant the summary of results.json:\n%s", stdout, want.String())
	}
	return &r
}

func TestCharacterizeSim(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 34 s on the loaded 2-core VM; internal/characterize's tests run its stages
	out := filepath.Join(t.TempDir(), "h100")
	r := runCharacterize(t, "sim", out)

	// results.json has every stage, each done, and every stage's results.
	if r.Format != characterize.Format || !r.Sim || r.Incomplete || len(r.NotRun) > 0 || !r.Quick {
		t.Errorf("format %q sim %v incomplete %v not run %v quick %v", r.Format, r.Sim, r.Incomplete, r.NotRun, r.Quick)
	}
	if len(r.Stages) != len(characterize.Stages) {
		t.Fatalf("stages %+v", r.Stages)
	}
	var clk float64
	for i, s := range r.Stages {
		if s.Name != characterize.Stages[i] || s.Status != characterize.StatusDone || s.ClockS <= 0 {
			t.Errorf("stage %d: %+v", i, s)
		}
		clk += s.ClockS
	}
	// --quick is a few minutes of GPU time (the sim's virtual clock measures it).
	if clk < 60 || clk > 360 {
		t.Errorf("quick run: %.0f s on the measurement clock, want a few minutes", clk)
	}
	if r.Sensor == nil || len(r.Sensor.Channels) == 0 || r.SensorProfile == nil || len(r.SensorPlots) == 0 {
		t.Errorf("sensor stage missing: %+v", r.Sensor)
	}
	if r.Micro == nil || len(r.Micro.Rows) == 0 {
		t.Errorf("micro stage missing")
	}
	if r.Archline == nil || r.Archline.Results["fp32"] == nil || r.Archline.Results["fp64"] == nil || r.Archline.Results["fp32"].Derived.BTau <= 0 {
		t.Errorf("archline stage missing")
	}
	if r.Loadlevel == nil || len(r.Loadlevel.Levels) < 3 || r.Loadlevel.OverallScore <= 0 {
		t.Errorf("loadlevel stage missing: %+v", r.Loadlevel)
	}
	if r.GPU.Name == "" || r.DriverVersion == "" {
		t.Errorf("GPU %+v driver %q", r.GPU, r.DriverVersion)
	}
	if len(r.Warnings) == 0 || !strings.Contains(strings.Join(status.Strings(r.Warnings), "\n"), "sim device: each transaction's kernels") {
		t.Errorf("warnings %v: want the load-level stage's modelled transactions among them", r.Warnings)
	}
	// On the sim the load-level stage's power comes from the sim device: above its idle at
	// every level, and more at 100 % than at 50 %.
	if ll := r.Loadlevel; ll != nil && len(ll.Levels) >= 3 {
		if !ll.Simulated || !strings.HasPrefix(ll.Configs[0].Runs[0].PowerSource, "sim ") {
			t.Errorf("loadlevel stage: simulated %v, power from %q: want the sim device", ll.Simulated, ll.Configs[0].Runs[0].PowerSource)
		}
		if !(ll.Levels[0].PowerW > ll.Levels[1].PowerW && ll.Levels[1].PowerW > ll.Levels[len(ll.Levels)-1].PowerW) {
			t.Errorf("loadlevel stage: power by level %+v: want 100 %% > 50 %% > active idle", ll.Levels)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "sensor.json")); err != nil {
		t.Error(err)
	}

	// The report: valid HTML, the sim notice at the top, every section and plot present.
	page := filepath.Join(out, "report.html")
	titles, svgs, text := htmlOutline(t, page)
	if len(titles) == 0 || titles[0] != characterize.TitleSummary {
		t.Errorf("report.html does not open with its summary (sections: %q)", titles)
	}
	for _, f := range r.KeyFigures() {
		if !f.HasInterval() {
			t.Errorf("key figure %q has no interval on the sim", f.Name)
		}
		if !strings.Contains(text, f.Text()) {
			t.Errorf("report.html lacks the key figure %q", f.Text())
		}
	}
	if n := len(r.KeyFigures()); n < 5 {
		t.Errorf("%d key figures, want at least 5 (pJ/flop, pJ/B, pi0, active idle, efficiency at load)", n)
	}
	for _, want := range []string{characterize.TitleSummary, characterize.TitleGPU, characterize.TitleHeadline, characterize.TitleSensors, characterize.TitleMicro,
		characterize.TitleArchline, characterize.TitleLoadlevel, characterize.TitleWarnings} {
		if !containsString(titles, want) {
			t.Errorf("report.html has no section %q (sections: %q)", want, titles)
		}
	}
	if i := strings.Index(text, characterize.SimNotice); i < 0 || i > strings.Index(text, characterize.TitleGPU) {
		t.Errorf("report.html does not open with the sim notice")
	}
	// sensor responses, the micro summary, 4 archline plots per precision, the load-level plot
	if want := len(r.SensorPlots) + 1 + 8 + 1; svgs < want {
		t.Errorf("report.html has %d plots, want at least %d", svgs, want)
	}
	for _, w := range r.WarningLines() {
		if !strings.Contains(text, w) {
			t.Errorf("warning %q is not in the report", w)
			break
		}
	}
	if noLinePerKernel(t, r.Warnings, text) == 0 {
		t.Error("no warning shared by several kernels or points on the sim: the grouping is not exercised")
	}

	// gpuwatt report re-renders the same page from results.json.
	orig, _ := os.ReadFile(page)
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"report", out}); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), page) {
		t.Errorf("report: stdout %q", stdout)
	}
	goldenText(t, "report.txt", stdout.Bytes(), out)
	again, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(orig, again) {
		t2, s2, _ := htmlOutline(t, page)
		t.Errorf("re-rendered report differs: %d bytes, %d plots, %d sections; was %d bytes, %d plots, %d sections", len(again), s2, len(t2), len(orig), svgs, len(titles))
	}

	// Two GPUs side by side.
	out2 := filepath.Join(t.TempDir(), "a100")
	runCharacterize(t, "sim:a100", out2)
	cmp := filepath.Join(t.TempDir(), "cmp.html")
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, []string{"report", "--out", cmp, out, out2}); code != 0 {
		t.Fatalf("report of two: exit %d: %s", code, stderr)
	}
	ctitles, csvgs, ctext := htmlOutline(t, cmp)
	if len(ctitles) == 0 || ctitles[0] != characterize.ComparisonTitle {
		t.Errorf("comparison page sections %q", ctitles)
	}
	if csvgs < 2*(len(r.SensorPlots)+10) {
		t.Errorf("comparison page has %d plots", csvgs)
	}
	for _, want := range []string{out, out2, "H100", "A100", "fp32 eps_flop (pJ/flop)"} {
		if !strings.Contains(ctext, want) {
			t.Errorf("comparison page lacks %q", want)
		}
	}
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// A run split in two: --stages runs part of it, --resume keeps what the first finished and
// runs the rest into the same results.json, which names both invocations.
func TestCharacterizeStagesResume(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 16 s; internal/characterize TestResumeRerunsUnfinished checks --resume
	out := filepath.Join(t.TempDir(), "split")
	a, _, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", "sim", "--quick", "--stages", "sensor,micro", "--out", out}); code != 0 {
		t.Fatalf("first part: exit %d: %s", code, stderr)
	}
	var first characterize.Result
	readJSON(t, filepath.Join(out, "results.json"), &first)
	if len(first.Stages) != 2 || first.Archline != nil || first.Loadlevel != nil || first.Micro == nil || len(first.Runs) != 1 {
		t.Fatalf("first part: stages %+v, runs %d", first.Stages, len(first.Runs))
	}
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", "sim", "--quick", "--resume", "--out", out}); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "sensor: kept from run 1") || !strings.Contains(stderr.String(), "] archline: ") {
		t.Errorf("progress does not say what was kept and what ran:\n%s", stderr)
	}
	var r characterize.Result
	readJSON(t, filepath.Join(out, "results.json"), &r)
	if len(r.Runs) != 2 || len(r.Stages) != 4 {
		t.Fatalf("runs %+v stages %+v", r.Runs, r.Stages)
	}
	for i, s := range r.Stages {
		want := 1
		if i >= 2 {
			want = 2
		}
		if s.Name != characterize.Stages[i] || s.Status != characterize.StatusDone || s.Run != want {
			t.Errorf("stage %d: %+v, want %s done in run %d", i, s, characterize.Stages[i], want)
		}
	}
	// The kept stages are the first run's results, unchanged.
	if r.Micro == nil || len(r.Micro.Rows) != len(first.Micro.Rows) || r.Micro.Rows[1].PJPerUnit != first.Micro.Rows[1].PJPerUnit {
		t.Errorf("micro results were not kept as measured")
	}
	if r.Archline == nil || r.Loadlevel == nil {
		t.Errorf("the resumed stages have no results")
	}
	_, _, text := htmlOutline(t, filepath.Join(out, "report.html"))
	var total float64
	for _, s := range r.Stages {
		total += s.ClockS
	}
	for _, want := range []string{"run 1", "run 2", "--stages sensor,micro", "--resume", fmt.Sprintf("%.0f s (%.1f min) over 4 stages", total, total/60)} {
		if !strings.Contains(text, want) {
			t.Errorf("report does not show %q", want)
		}
	}
}

func TestCharacterizeBadStagesAndResume(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 13 s
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stages", "sensor,roofline"}, `unknown stage "roofline"`},
		{[]string{"--resume", "--out", filepath.Join(dir, "none")}, "--resume"},
		{[]string{"--contexts", "-1"}, "--contexts -1"},
	} {
		a, _, stderr, ctx := testApp(t)
		args := append([]string{"characterize", "--device", "sim", "--quick"}, tc.args...)
		if code := a.Main(ctx, args); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	// A quick run resumed as a full one is refused.
	out := filepath.Join(dir, "q")
	a, _, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", "sim", "--quick", "--stages", "sensor", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	a, _, stderr, ctx = testApp(t)
	if code := a.Main(ctx, []string{"characterize", "--device", "sim", "--resume", "--out", out}); code != ExitUsage || !strings.Contains(stderr.String(), "--quick") {
		t.Errorf("full resume of a quick run: exit %d, %s", code, stderr)
	}
}

// noLinePerKernel fails if a warning that several kernels or points of one stage share
// (one Code and Key on GroupMin or more subjects) is told more than once in the warnings,
// or not on the page; it returns how many such warnings there are.
func noLinePerKernel(t *testing.T, ws []status.Warning, text string) int {
	t.Helper()
	lines := status.GroupEach(ws, func(string) int { return 0 })
	type group struct{ stage, key string }
	subjects := map[group]map[string]bool{}
	for _, w := range ws {
		if w.Key == "" {
			continue
		}
		stage, _, ok := strings.Cut(w.Subject, ": ")
		if !ok {
			stage = ""
		}
		g := group{stage, w.Key}
		if subjects[g] == nil {
			subjects[g] = map[string]bool{}
		}
		subjects[g][w.Subject] = true
	}
	shared := 0
	for g, subj := range subjects {
		if len(subj) < status.GroupMin {
			continue
		}
		shared++
		told := g.key
		if g.stage != "" {
			told = g.stage + ": " + g.key
		}
		n := 0
		for _, l := range lines {
			n += strings.Count(l, told)
		}
		if n != 1 || !strings.Contains(text, told) {
			t.Errorf("%q (on %d subjects) is told %d times in the warnings, want once (and on the page)", told, len(subj), n)
		}
	}
	t.Logf("%d warnings, %d shared by %d or more subjects of a stage", len(ws), shared, status.GroupMin)
	return shared
}
