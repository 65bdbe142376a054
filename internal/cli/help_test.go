package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// helpFlag is one flag as `gpuwatt VERB --help` prints it.
type helpFlag struct {
	name, placeholder, usage string
	autoDefault              bool // the flag package printed "(default ...)": a non-zero default
}

// helpFlags parses the flags out of a verb's --help text (the flag package's layout:
// "  -name placeholder" then the usage indented by a tab).
func helpFlags(t *testing.T, args ...string) []helpFlag {
	t.Helper()
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, append(args, "--help")); code != 0 {
		t.Fatalf("%s --help: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	text := stdout.String() + stderr.String()
	var fs []helpFlag
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "  -"):
			name, ph, _ := strings.Cut(strings.TrimPrefix(l, "  -"), " ")
			if n, u, ok := strings.Cut(name, "\t"); ok { // a one-letter flag: usage on its line
				fs = append(fs, helpFlag{name: n, usage: u})
				continue
			}
			fs = append(fs, helpFlag{name: name, placeholder: ph})
		case strings.HasPrefix(l, "    \t") && len(fs) > 0:
			fs[len(fs)-1].usage += strings.TrimPrefix(l, "    \t") + " "
		}
	}
	for i := range fs {
		f := &fs[i]
		f.usage = strings.TrimSpace(f.usage)
		f.autoDefault = autoDefault.MatchString(f.usage)
	}
	if len(fs) == 0 {
		t.Fatalf("%s --help lists no flags:\n%s", strings.Join(args, " "), text)
	}
	return fs
}

var (
	autoDefault = regexp.MustCompile(`\(default [^)]*\)$`)
	// placeholders the flag package prints for a flag's type, or a back-quoted name in caps.
	placeholder = regexp.MustCompile(`^(string|int|uint|int64|uint64|float|duration|value|[A-Z][A-Z0-9:,._|-]*)$`)
	saysDefault = regexp.MustCompile(`(?i)\bdefault\b|\brequired\b|\(0: |; 0: `)
)

// helpVerbs are every verb's command line to --help, job's two subverbs included.
func helpVerbs() [][]string {
	var vs [][]string
	for _, v := range verbs {
		switch v.name {
		case "version":
		case "job":
			vs = append(vs, []string{"job", "begin"}, []string{"job", "end"})
		default:
			vs = append(vs, []string{v.name})
		}
	}
	return vs
}

// TestHelpNamesDefaults: every flag's help says what happens without it: the flag package
// prints a non-zero default itself, and a flag whose default is zero or empty says in its
// own words what it defaults to (not a bool: off is its default). No help text back-quotes
// a word, which the flag package would show as the flag's placeholder ("-marks begin NAME").
func TestHelpNamesDefaults(t *testing.T) {
	t.Parallel()
	for _, args := range helpVerbs() {
		for _, f := range helpFlags(t, args...) {
			what := strings.Join(args, " ") + " --" + f.name
			if f.placeholder != "" && !placeholder.MatchString(f.placeholder) {
				t.Errorf("%s: placeholder %q (a back-quoted word in its help?)", what, f.placeholder)
			}
			if f.placeholder == "" || f.autoDefault {
				continue // a bool (off unless given), or the flag package names the default
			}
			if !saysDefault.MatchString(f.usage) {
				t.Errorf("%s: the help does not say what happens without it: %q", what, f.usage)
			}
		}
	}
}

// TestOutHelpNamesFilesWritten: each verb's --out help names the files it writes, and a
// run on the sim writes every one of them.
func TestOutHelpNamesFilesWritten(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // 15 s: a run of every verb
	runs := map[string][]string{
		"measure":      {"--device", "sim:h200", "--", "fake", "1s"},
		"micro":        {"--device", "sim:h200", "--only", "baseline,fp32.fma"},
		"archline":     {"--device", "sim:h200", "--quick"},
		"sensor":       {"--device", "sim:h200", "--quick"},
		"profile":      {"--device", "sim:h100", "--channel", "power.instant", "--kernel", "5ms", "--runs", "200"},
		"loadlevel":    append([]string{"--contexts", "1", "--levels", "100", "--size", "1024"}, loadlevelArgs...),
		"characterize": {"--device", "sim:h200", "--quick", "--stages", "sensor"},
	}
	for verb, files := range OutFiles {
		t.Run(verb, func(t *testing.T) {
			var help string
			for _, f := range helpFlags(t, verb) {
				if f.name == "out" {
					help = f.usage
				}
			}
			out := filepath.Join(t.TempDir(), "out")
			a, _, stderr, ctx := testApp(t)
			args, ok := runs[verb]
			if !ok {
				t.Fatalf("no run for %s", verb)
			}
			// measure's flags come before its command.
			all := append([]string{verb, "--out", out}, args...)
			if code := a.Main(ctx, all); code != 0 {
				t.Fatalf("%s: exit %d: %s", strings.Join(all, " "), code, stderr)
			}
			for _, f := range files {
				name, cond, _ := strings.Cut(f, " (")
				if !strings.Contains(help, name) {
					t.Errorf("--out's help does not name %s: %q", name, help)
				}
				if cond != "" {
					continue // written only where the run calls for it (marks.txt: TestMeasureMarks)
				}
				if _, err := os.Stat(filepath.Join(out, name)); err != nil {
					t.Errorf("--out's help names %s, which the run did not write: %v", name, err)
				}
			}
		})
	}
}

// helpFileChecks says, for each file a verb's help names outside --out's list (OutFiles,
// which TestOutHelpNamesFilesWritten runs), which test runs the verb and checks that it is
// written there, or "input" for a file the verb reads.
var helpFileChecks = map[string]map[string]string{
	"energy":       {"FILE.csv": "TestEnergySeries", "sensor.json": "input"},
	"profile":      {"sensor.json": "input"},
	"call":         {"call.json": "TestCallVerb", "sensor.json": "input"},
	"micro":        {"kernels.json": "TestMicroPTXAndCheck"},
	"characterize": {"compare.json": "TestCharacterizeAllGPUs", "repeat.json": "TestCharacterizeRepeat"},
	"report":       {"report.html": "TestCharacterizeSim", "results.json": "input"},
	"job begin":    {"begin.json": "TestJobSimTruth", "job.json": "TestJobSimTruth"},
	"job end":      {"begin.json": "TestJobSimTruth", "job.json": "TestJobSimTruth"},
}

var helpFileName = regexp.MustCompile(`[A-Za-z0-9_-]+\.(json|csv|html|txt|gz)\b`)

// TestHelpFilesAreChecked: every file any verb's --help names (flags and usage line) is
// one that verb's --out run writes (OutFiles), or one a named test checks is written (its
// source names the file), or an input: a help that starts naming a new file fails here
// until a test writes it.
func TestHelpFilesAreChecked(t *testing.T) {
	t.Parallel()
	sources := map[string]string{} // test name -> the source of the file that holds it
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(b), -1) {
			sources[m[1]] = string(b)
		}
	}
	for _, args := range helpVerbs() {
		verb := strings.Join(args, " ")
		a, stdout, stderr, ctx := testApp(t)
		if code := a.Main(ctx, append(args, "--help")); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", verb, code, stderr)
		}
		seen := map[string]bool{}
		for _, f := range helpFileName.FindAllString(stdout.String()+stderr.String(), -1) {
			if seen[f] {
				continue
			}
			seen[f] = true
			inOut := false
			for _, o := range OutFiles[verb] {
				name, _, _ := strings.Cut(o, " (")
				inOut = inOut || name == f
			}
			check := helpFileChecks[verb][f]
			switch {
			case inOut, check == "input":
			case check == "":
				t.Errorf("%s --help names %s: no test is named that checks it is written (helpFileChecks), nor is it in OutFiles", verb, f)
			case sources[check] == "":
				t.Errorf("%s --help names %s, checked by %s: no such test in internal/cli", verb, f, check)
			case !strings.Contains(sources[check], strings.TrimPrefix(f, "FILE")):
				t.Errorf("%s --help names %s: %s's file does not mention it", verb, f, check)
			}
		}
	}
}
