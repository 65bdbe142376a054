package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/termtext"
)

// TestTextFits120Columns: the text of devices and measure fits a 120-column terminal on
// every preset (the descriptions and warnings wrap; an unavailable channel's reason moves
// to its description), and devices --wide keeps each channel on one line.
func TestTextFits120Columns(t *testing.T) {
	t.Parallel()
	check := func(what, text string) {
		t.Helper()
		for i, l := range strings.Split(text, "\n") {
			if n := termtext.Len(l); n > termtext.Width {
				t.Errorf("%s, line %d is %d columns wide (at most %d):\n%s", what, i+1, n, termtext.Width, l)
			}
		}
	}
	run := func(args ...string) string {
		t.Helper()
		a, stdout, stderr, ctx := testApp(t)
		if code := a.Main(ctx, args); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return stdout.String() + stderr.String()
	}
	for _, preset := range []string{"h200", "h100", "a100", "v100", "k20", "mi300x"} {
		check("devices on "+preset, run("devices", "--device", "sim:"+preset))
	}
	cfg := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(cfg, []byte(`{"preset": "h200", "gpus": 2, "seed": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	check("devices on two GPUs", run("devices", "--sim-config", cfg))
	check("measure on two GPUs", run("measure", "--sim-config", cfg, "--", "fake", "3s"))
	for _, preset := range []string{"h200", "k20", "mi300x"} {
		check("measure on "+preset, run("measure", "--device", "sim:"+preset, "--", "fake", "3s"))
	}
	check("measure of 0.2 s (the lag warnings)", run("measure", "--device", "sim:h200", "--", "fake", "200ms"))

	wide := run("devices", "--device", "sim:h200", "--wide")
	widest := 0
	for _, l := range strings.Split(wide, "\n") {
		widest = max(widest, termtext.Len(l))
	}
	if widest <= termtext.Width || !strings.Contains(wide, "unavailable: sim power.module.instant") {
		t.Errorf("devices --wide: widest line %d columns; want each channel on one line, its reason in the value column:\n%s", widest, wide)
	}
}
