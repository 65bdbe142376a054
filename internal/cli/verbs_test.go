package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every verb answers --help with exit 0 on stdout, and every verb takes --device.
func TestEveryVerbHelp(t *testing.T) {
	t.Parallel()
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			a, stdout, stderr, ctx := testApp(t)
			if code := a.Main(ctx, []string{v.name, "--help"}); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			out := stdout.String()
			if !strings.HasPrefix(out, "Usage: gpuwatt "+v.name) || !strings.Contains(out, "-device") || !strings.Contains(out, "-sim-config") {
				t.Errorf("--help does not show --device and --sim-config:\n%s", out)
			}
			// A bad --device value is bad input, named, on one line.
			a, _, stderr, ctx = testApp(t)
			args := []string{v.name, "--device", "cuda"}
			if v.name == "measure" {
				args = append(args, "--", "fake", "1s")
			}
			if code := a.Main(ctx, args); code != ExitUsage || !strings.Contains(stderr.String(), `--device "cuda"`) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("--device cuda: exit %d, stderr %q: want 2 and one line naming the value", code, stderr)
			}
		})
	}
}

// Every verb that opens a device runs on the sim with --device sim:h100 (its smallest run).
func TestEveryVerbOnSim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runs := map[string][]string{
		"devices":  {},
		"measure":  {"--baseline", "100ms", "--tail", "100ms", "--json", "--", "fake", "1s"},
		"micro":    {"--only", "int32.add", "--json"},
		"archline": {"--quick", "--precision", "fp32", "--json"},
		"profile":  {"--kernel", "fp32.fma", "--runs", "200", "--json"},
		"sensor":   nil, // sensorH100Quick
		// This checks that the verb runs and prints (loadlevel's figures: TestLoadlevelJSON,
		// TestLoadlevelText): a 2 s record and 1 s of idle, not 10 and 2 (the later flag wins).
		"loadlevel":    append(append([]string{"--levels", "100", "--contexts", "1", "--json"}, loadlevelArgs...), "--record", "2s", "--idle", "1s"),
		"characterize": {"--quick", "--stages", "loadlevel", "--out", filepath.Join(dir, "char")},
		"version":      {},
	}
	for _, v := range verbs {
		args, ok := runs[v.name]
		if !ok {
			continue // opens no device (energy, report): --device's meaning is tested with them
		}
		t.Run(v.name, func(t *testing.T) {
			if v.name == "sensor" {
				// sensor --quick on the h100 twin is 1.5-2 s of CPU: this reads the run that
				// TestSensorWritesFiles checks against its golden files (the same verb, board
				// and flags, with --out and progress), made once for both.
				_, code, stdout, stderr := sensorH100Quick.get(t)
				if code != ExitOK || len(stdout) == 0 {
					t.Fatalf("exit %d, %d bytes on stdout: %s", code, len(stdout), stderr)
				}
				return
			}
			a, stdout, stderr, ctx := testApp(t)
			if code := a.Main(ctx, append([]string{v.name, "--device", "sim:h100"}, append(quietIf(v.name), args...)...)); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if v.name != "characterize" && stdout.Len() == 0 {
				t.Error("nothing on stdout")
			}
			if (v.name == "devices" || v.name == "version") && !strings.Contains(stdout.String(), "sim:h100") {
				t.Errorf("stdout does not name the sim:\n%s", stdout)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "char", "results.json")); err != nil {
		t.Error(err)
	}
}

// quietIf is --quiet for the verbs that have it.
func quietIf(verb string) []string {
	switch verb {
	case "devices", "version", "energy", "report":
		return nil
	}
	return []string{"--quiet"}
}

// The README's table of verbs names every verb once and only verbs that exist, each with an
// example that is a gpuwatt command of that verb (record's is the Python package it serves).
func TestReadmeVerbTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## One example per verb")
	if start < 0 {
		t.Fatal(`README.md has no "## One example per verb" section`)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	known := map[string]bool{}
	for _, v := range verbs {
		known[v.name] = true
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| ") {
			continue
		}
		name, example := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if name == "verb" || strings.HasPrefix(name, "---") {
			continue
		}
		if !known[name] {
			t.Errorf("README's verb table lists %q, which is not a gpuwatt verb", name)
			continue
		}
		seen[name] = true
		if name != "record" && !strings.Contains(example, "gpuwatt "+name) {
			t.Errorf("README's example for %s is not a `gpuwatt %s` command: %s", name, name, example)
		}
	}
	for name := range known {
		if !seen[name] {
			t.Errorf("README's verb table has no row for %s", name)
		}
	}
}
