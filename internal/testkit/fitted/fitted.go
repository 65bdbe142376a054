// Package fitted gives tests the sensor models a user would pass to --sensor: fitted by
// `gpuwatt sensor` on a twin of the preset's own (another seed than the recordings'), never
// the models that generate the twin's readings, so that a calibration test checks the method.
package fitted

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// Profile characterises preset's sensors on a twin of its own (its seed + 1000) and returns
// the sensor.json as a user passes it to --sensor, read back from a file in t.TempDir().
// The characterisation runs once per preset in a test process (1.6 s of CPU for the h200:
// energy's tests asked for it four times); each call parses its own copy of the file.
func Profile(t *testing.T, preset string) correct.Spec {
	t.Helper()
	b := profileJSON(t, preset)
	path := filepath.Join(t.TempDir(), preset+"-sensor.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := correct.ParseSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// profiles holds each preset's sensor.json once characterised.
var profiles struct {
	sync.Mutex
	json map[string][]byte
}

// profileJSON returns preset's sensor.json, characterising the twin on the first call.
func profileJSON(t *testing.T, preset string) []byte {
	t.Helper()
	profiles.Lock()
	defer profiles.Unlock()
	if b, ok := profiles.json[preset]; ok {
		return b
	}
	cfg := simtest.Preset(t, preset)
	cfg.Seed += 1000
	sm := simtest.OpenConfig(t, cfg)
	rep, err := sensorchar.Measure(context.Background(), sm.Clock, sm.Dev, sm.Dev, sensorchar.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := correct.WriteProfile(&buf, rep.Profile()); err != nil {
		t.Fatal(err)
	}
	if profiles.json == nil {
		profiles.json = map[string][]byte{}
	}
	profiles.json[preset] = buf.Bytes()
	return buf.Bytes()
}
