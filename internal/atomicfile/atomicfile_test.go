package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A writer that fails half-way leaves nothing under the final name (and no temporary
// file), and the error names the file.
func TestWriteFileFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"partial": `); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want boom naming %s", err, path)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("files left behind: %v", ents)
	}
}

// A failing rewrite keeps the previous file whole; a good one replaces it, mode 0644.
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, func(w io.Writer) error { io.WriteString(w, "new, half"); return errors.New("fail") }); err == nil {
		t.Fatal("failing writer: no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failed rewrite the file holds %q, want the old %q", b, "old")
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || st.Mode().Perm() != 0o644 {
		t.Errorf("file %q mode %v, want \"new\" 0644", b, st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want 1: %v", len(ents), ents)
	}
}

// A directory that does not exist is an error naming the file.
func TestWriteFileNoDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "x.json")
	err := WriteBytes(path, []byte(`{"a": 1}`))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want one naming %s", err, path)
	}
}

// TestInjectFault: a disk that fills part-way through a file fails the write, names the
// file, and leaves neither a partial file under its name nor a temporary one.
func TestInjectFault(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.csv")
	full := errors.New("no space left on device")
	restore := InjectFault(func(p string) (int64, error) {
		if p == path {
			return 1000, full
		}
		return 0, nil
	})
	defer restore()
	err := WriteBytes(path, make([]byte, 1<<20))
	if !errors.Is(err, full) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want the fault naming %s", err, path)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
	if err := WriteBytes(filepath.Join(dir, "other"), []byte("x")); err != nil {
		t.Errorf("a file the fault does not name: %v", err)
	}
	restore()
	if err := WriteBytes(path, make([]byte, 1<<20)); err != nil {
		t.Errorf("after restore: %v", err)
	}
}
