package characterize

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// ParseResults reads a results.json written by Run, as `gpuwatt report` and
// `characterize --resume` read it; name (its path) starts each error, which is one line
// saying what was found and what was expected. Results of older formats are upgraded.
func ParseResults(b []byte, name string) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: not valid JSON at byte %d: %v", name, se.Offset, err)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if r.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q (the results.json of gpuwatt characterize)", name, r.Format, Format)
	}
	r.Upgrade()
	return &r, nil
}

// ParseReport reads what `gpuwatt report` compares: characterize's results.json, or the
// results.json of `gpuwatt archline --out DIR`, taken as a datasheet of its archline stage
// alone (so that archline runs compare with datasheets).
func ParseReport(b []byte, name string) (*Result, error) {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(b, &head) == nil && head.Format == archline.Format {
		var a archline.Result
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		r := &Result{Format: Format, Device: a.Device, Sim: a.Simulated, GPU: a.GPU, Props: a.Props, Archline: &a,
			Stages: []StageInfo{{Name: StageArchline, Status: StatusDone}}, Status: a.Status}
		r.Upgrade()
		r.Warnings = append([]status.Warning(nil), collectWarnings(r)...)
		return r, nil
	}
	return ParseResults(b, name)
}
