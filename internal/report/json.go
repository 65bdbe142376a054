package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return writeFileAtomic(path, buf.Bytes())
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

// writeFileAtomic writes data to path through a temporary file and a rename. The file
// gets mode 0644.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}
