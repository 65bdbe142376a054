package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

func TestSensorWritesFiles(t *testing.T) {
	t.Parallel()
	// The run TestEveryVerbOnSim/sensor shares: it only reads it, as this test does.
	dir, code, stdout, stderr := sensorH100Quick.get(t)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	goldenText(t, "sensor_h100_quick.txt", stdout, dir)
	wantProgress(t, string(stderr), "gpuwatt sensor: idle")
	goldenJSON(t, "sensor_h100_quick_results.json", filepath.Join(dir, "results.json"), dir)
	goldenJSON(t, "sensor_h100_quick_sensor.json", filepath.Join(dir, "sensor.json"), dir)
	for _, f := range []string{"sensor.json", "results.json", "report.html", "trace.csv", "trace.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "sensor.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := correct.ParseProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Channels["power.instant"].Model; m.Kind() != sensormodel.Boxcar {
		t.Errorf("power.instant: %v", m)
	}
	if !strings.Contains(string(stdout), "doubling") {
		t.Errorf("no anomaly tests in the output:\n%s", stdout)
	}
}

func TestSensorBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--bogus"},
		{"--gpu", "-1"},
		{"--gpu", "7", "--device", "sim"},
		{"--device", "sim:nope"},
		{"extra"},
	} {
		a, _, stderr, ctx := testApp(t)
		code := a.Main(ctx, append([]string{"sensor"}, args...))
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
		if s := strings.TrimSpace(stderr.String()); strings.Count(s, "\n") != 0 || !strings.HasPrefix(s, "gpuwatt sensor: ") {
			t.Errorf("%v: want one line, got %q", args, s)
		}
	}
}
