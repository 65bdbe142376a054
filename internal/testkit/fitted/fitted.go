// Package fitted gives tests the sensor models a user would pass to --sensor: fitted by
// `gpuwatt sensor` on a twin of the preset's own (another seed than the recordings'), never
// the models that generate the twin's readings, so that a calibration test checks the method.
package fitted

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// Profile characterises preset's sensors on a twin of its own (its seed + 1000) and returns
// the sensor.json as a user passes it to --sensor, read back from a file in t.TempDir().
func Profile(t *testing.T, preset string) correct.Spec {
	t.Helper()
	cfg := simtest.Preset(t, preset)
	cfg.Seed += 1000
	sm := simtest.OpenConfig(t, cfg)
	rep, err := sensorchar.Measure(context.Background(), sm.Clock, sm.Dev, sm.Dev, sensorchar.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), preset+"-sensor.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := correct.WriteProfile(f, rep.Profile()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sp, err := correct.ParseSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
