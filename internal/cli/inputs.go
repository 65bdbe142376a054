package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// overwritesInput returns an error (bad input, exit 2) where the output file out is one of
// the inputs, by any path or link to it: `energy --series` or `report --out` naming the
// trace or results.json they read destroyed it, exit 0.
func overwritesInput(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	ost, err := os.Stat(out)
	if err != nil {
		return nil // not there yet: nothing to overwrite
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(ost, ist) {
			return fmt.Errorf("%s %s: that is an input (%s): an output never overwrites what it was made from; name another file", flag, out, in)
		}
	}
	return nil
}

// traceFiles lists the files a trace at path is read from (as trace.Load finds them): the
// CSV (gzipped or not) and its sidecar.
func traceFiles(path string) []string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		c := filepath.Join(path, "trace.csv")
		return []string{c, c + ".gz", filepath.Join(path, "trace.json")}
	}
	base := strings.TrimSuffix(path, ".gz")
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return []string{path, base + ".csv", base + ".csv.gz", base + ".json"}
}
