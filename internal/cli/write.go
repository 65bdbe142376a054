package cli

import (
	"fmt"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// outFile is one file (or pair) a verb writes into --out.
type outFile struct {
	name  string // in messages: "report.html"
	write func(dir string) error
}

// writeFiles writes a verb's files into dir in order, each whole or not at all (the
// atomicfile writer), and goes on past a failure: a full disk may still take a small file.
// Each file that failed is marked on st (when the verb has one), so that last, the file
// that carries st (results.json, summary.json), written after them, says that the output
// is incomplete and which file is missing. The error names every file that failed.
func writeFiles(dir string, st *status.Status, files []outFile, last outFile) error {
	if err := makeOut(dir); err != nil {
		return err
	}
	var failed []string
	for _, f := range files {
		if err := f.write(dir); err != nil {
			failed = append(failed, err.Error())
			if st != nil {
				st.MarkIncomplete(fmt.Sprintf("%s not written: %v", f.name, err))
			}
		}
	}
	if err := last.write(dir); err != nil {
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		return fmt.Errorf("incomplete output: %s", strings.Join(failed, "; "))
	}
	return nil
}
