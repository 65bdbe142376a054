package marks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// TestBadLinesCapped: 200 000 bad lines give status.MaxPerCode warnings and one that
// counts the rest (a warning each was 23 MB of stderr), the good lines all read.
func TestBadLinesCapped(t *testing.T) {
	t.Parallel()
	var lines []Line
	for i := range 200000 {
		lines = append(lines, Line{No: i + 1, Text: "begn x"})
	}
	lines = append(lines, Line{No: 200001, Text: "begin a"}, Line{No: 200002, Text: "end a"})
	evs, ws := ParseLines(lines, nil)
	if len(evs) != 2 {
		t.Errorf("%d events, want 2", len(evs))
	}
	bad := 0
	for _, w := range ws {
		if w.Code == CodeBadLine {
			bad++
		}
	}
	last := ws[len(ws)-2] // before the arrival warning
	if bad != status.MaxPerCode+1 || !strings.Contains(last.Message, "199980 more bad lines") {
		t.Errorf("%d bad-line warnings, the last %q", bad, last.Message)
	}
}

// TestTailBounded: a marks file written without end is read up to MaxBytes, with an
// error saying the rest was not; the tail never holds more.
func TestTailBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "marks")
	tl, err := OpenTail(context.Background(), path, clock.NewVirtual(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 100-byte lines past MaxBytes by some 100 kB as before, written 650 at a time, not one
	// (issue 30: 170 000 write calls were most of the test's 1.2 s of CPU): the bound is on
	// what the tail reads, whatever the size of the writes that grew the file.
	chunk := []byte(strings.Repeat(strings.Repeat("x", 99)+"\n", 650))
	for range ((MaxBytes/100)+1000)/650 + 1 {
		f.Write(chunk)
	}
	f.Close()
	lines, err := tl.Stop()
	if err == nil || !strings.Contains(err.Error(), "grew past 16 MiB") {
		t.Errorf("err %v", err)
	}
	if len(tl.Raw()) != MaxBytes || len(lines) > MaxBytes/100+1 {
		t.Errorf("read %d bytes, %d lines", len(tl.Raw()), len(lines))
	}
}

// TestTailRefusesDevices: /dev/zero as the marks file is refused when opened.
func TestTailRefusesDevices(t *testing.T) {
	t.Parallel()
	if _, err := OpenTail(context.Background(), "/dev/zero", clock.NewVirtual(time.Time{})); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("/dev/zero: %v", err)
	}
}
