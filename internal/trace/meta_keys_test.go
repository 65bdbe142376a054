package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every sidecar saved under results/ and testdata/ still loads with unknown keys refused.
func TestStoredSidecarsLoad(t *testing.T) {
	var paths []string
	for _, root := range []string{"../../results", "../../internal"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "trace.json" {
				paths = append(paths, p)
			}
			return nil
		})
	}
	if len(paths) == 0 {
		t.Skip("no stored trace.json")
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadMeta(f); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		f.Close()
	}
}

// A misspelt key is refused, named.
func TestReadMetaUnknownKey(t *testing.T) {
	_, err := ReadMeta(strings.NewReader(`{"format": "` + Format + `", "gpuz": []}`))
	if err == nil || !strings.Contains(err.Error(), `"gpuz"`) {
		t.Errorf("err = %v, want the unknown key named", err)
	}
}
