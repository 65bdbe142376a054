package device

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoNameChecks fails when code outside this package decides "is this the sim?" from
// a device's name (gpu.System.Simulated answers that).
func TestNoNameChecks(t *testing.T) {
	nameCheck := regexp.MustCompile(`HasPrefix\([^,]*(Name\(\)|Device|device)[^,]*, "sim|== "sim"|"sim:" *\+`)
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if p := filepath.ToSlash(path); strings.HasPrefix(p, "../device/") || strings.HasPrefix(p, "../gpu/sim/") {
			return nil // the device package resolves the name; the sim names itself
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(b), "\n") {
			if nameCheck.MatchString(line) {
				t.Errorf("%s:%d decides from a name whether the device is the sim: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d source files: the walk missed the tree", n)
	}
}
