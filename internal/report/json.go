package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"io"
)

// WriteJSONTo writes v to w as indented JSON (two spaces) followed by a newline. HTML
// characters are not escaped, so "<" stays readable.
func WriteJSONTo(w io.Writer, v any) error {
	var buf bytes.Buffer
	if err := encodeJSON(&buf, v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON writes v as indented JSON to path, atomically: the data goes to a temporary
// file in the same directory, which is then renamed over path, so a reader never sees a
// half-written file and a failed write leaves any previous file in place.
func WriteJSON(path string, v any) error {
	var buf bytes.Buffer
	if err := encodeJSON(&buf, v); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, buf.Bytes())
}

func encodeJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("report: encoding JSON: %w", err)
	}
	return nil
}
