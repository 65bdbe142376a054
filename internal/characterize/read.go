package characterize

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ParseResults reads a results.json written by Run, as `gpuwatt report` and
// `characterize --resume` read it; name (its path) starts each error, which is one line
// saying what was found and what was expected. Results of older formats are upgraded.
func ParseResults(b []byte, name string) (*Results, error) {
	var r Results
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
