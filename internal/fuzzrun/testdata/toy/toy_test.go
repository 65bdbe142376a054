// Package toy holds fuzz targets for fuzzrun's own test: one that passes, one that fails.
package toy

import (
	"strings"
	"testing"
)

func FuzzToy(f *testing.F) {
	f.Add("hello")
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "l") != len(s)-len(strings.ReplaceAll(s, "l", "")) {
			t.Fatal("counting is broken")
		}
	})
}

func FuzzToyFails(f *testing.F) {
	f.Add("hello")
	f.Fuzz(func(t *testing.T, s string) {
		if strings.HasPrefix(s, "x") {
			t.Fatalf("starts with x: %q", s)
		}
	})
}
