package energy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneEnergyType fails where a result re-declares an energy's interval instead of
// embedding Interval (or Figure): outside this package's figure.go, only the library's
// public Energy (result.go) may declare energy_low_j (issue 27: there were eleven).
func TestOneEnergyType(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"../../result.go": true, "figure.go": true}
	n := 0
	check := func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "json:\"energy_low_j") && !allowed[filepath.ToSlash(path)] {
				t.Errorf("%s:%d declares energy_low_j: embed energy.Interval or energy.Figure instead: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	}
	goFile := func(name string) bool { return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") }
	// The library's own files (the module's root), then every package below it.
	top, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if !e.IsDir() && goFile(e.Name()) {
			if err := check("../../" + e.Name()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, dir := range []string{"..", "../../sim"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !goFile(path) {
				return err
			}
			if p := filepath.ToSlash(path); strings.HasPrefix(p, "../energy/") {
				path = strings.TrimPrefix(p, "../energy/")
			}
			return check(path)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 100 {
		t.Fatalf("read only %d Go files: is the test run from internal/energy?", n)
	}
}
