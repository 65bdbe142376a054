package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// volatileKeys hold what changes from run to run or machine to machine (gpuwatt's version,
// the host, dates, the command line with its temporary --out, the host's wall-clock
// time): masked in golden JSON.
var volatileKeys = map[string]bool{
	"version": true, "gpuwatt_version": true, "host": true, "date": true, "command": true,
	"start_time": true, "wall_start": true, "go_version": true, "wall_s": true, // the host's time, not the measurement clock
}

// goldenText compares a verb's text output with testdata/name, the temporary directories
// of the run replaced by $OUT and $TMP.
func goldenText(t *testing.T, name string, got []byte, out string) {
	t.Helper()
	golden(t, name, maskPaths(got, out))
}

// hostTimes are the wall-clock durations in progress lines ("(2s elapsed)", "6.238s)").
var hostTimes = regexp.MustCompile(`\(\d+(\.\d+)?m?s elapsed\)|, \d+(\.\d+)?m?s\)$`)

// goldenProgress compares a verb's progress lines (stderr) with testdata/name, with the
// host's wall-clock times masked (the measurement itself is on the virtual clock).
func goldenProgress(t *testing.T, name string, got []byte, out string) {
	t.Helper()
	lines := strings.Split(string(maskPaths(got, out)), "\n")
	for i, l := range lines {
		lines[i] = hostTimes.ReplaceAllStringFunc(l, func(m string) string {
			if strings.HasPrefix(m, ",") {
				return ", <time>)"
			}
			return "(<time> elapsed)"
		})
	}
	golden(t, name, []byte(strings.Join(lines, "\n")))
}

func maskPaths(b []byte, out string) []byte {
	if out != "" {
		b = bytes.ReplaceAll(b, []byte(out), []byte("$OUT"))
	}
	if tmp := os.TempDir(); tmp != "" && tmp != "/" {
		b = bytes.ReplaceAll(b, []byte(tmp), []byte("$TMP"))
	}
	return b
}

// goldenJSON compares the JSON file at path with testdata/name after masking the volatile
// keys, replacing the --out directory by $OUT and leaving out the keys in drop (long
// arrays of raw points whose summary the file holds already).
func goldenJSON(t *testing.T, name, path, out string, drop ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	goldenJSONBytes(t, name, b, out, drop...)
}

func goldenJSONBytes(t *testing.T, name string, b []byte, out string, drop ...string) {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(maskPaths(b, out)))
	d.UseNumber() // numbers as written, not rounded through float64
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dropped := map[string]bool{}
	for _, k := range drop {
		dropped[k] = true
	}
	v = maskJSON(v, dropped)
	var masked bytes.Buffer
	enc := json.NewEncoder(&masked)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	golden(t, name, masked.Bytes())
}

func maskJSON(v any, drop map[string]bool) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch {
			case drop[k]:
				delete(v, k)
			case volatileKeys[k]:
				v[k] = "<masked>"
			default:
				v[k] = maskJSON(x, drop)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = maskJSON(x, drop)
		}
	}
	return v
}

// TestGoldenMasking: the masking keeps what matters and hides only what varies.
func TestGoldenMasking(t *testing.T) {
	t.Parallel()
	in := map[string]any{"version": "v1.2", "energy_j": json.Number("12.5"), "points": []any{1},
		"runs": []any{map[string]any{"date": "2026-11-23", "command": []any{"gpuwatt", "x"}}}, "dir": "/tmp/x/out/f"}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(maskJSON(in, map[string]bool{"points": true}))
	got := strings.TrimSpace(buf.String())
	want := `{"dir":"/tmp/x/out/f","energy_j":12.5,"runs":[{"command":"<masked>","date":"<masked>"}],"version":"<masked>"}`
	if got != want {
		t.Errorf("masked %s, want %s", got, want)
	}
	if got := hostTimes.ReplaceAllString("[2/4] micro: energy (12s elapsed)", "#"); got != "[2/4] micro: energy #" {
		t.Errorf("hostTimes: %q", got)
	}
	if got := hostTimes.ReplaceAllString("wrote x and y (10 warnings, 6.238s)", "#"); got != "wrote x and y (10 warnings#" {
		t.Errorf("hostTimes: %q", got)
	}
	if got := string(maskPaths([]byte("wrote /x/out/report.html"), "/x/out")); !strings.Contains(got, "$OUT/report.html") {
		t.Errorf("maskPaths: %q", got)
	}
}
