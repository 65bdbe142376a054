package gpuwatt_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/sim"
)

// TestTracePublicAPI records a region on the sim and goes through every public face of
// its Trace: Save and LoadTrace give back the same recording (device, clock, GPUs,
// channels, readings, marks), WriteCSV and ReadTrace the same readings, Energy over the
// region's span is Stop's figure for it (one estimator) and holds the twin's truth, and
// Regions pairs the marks again.
func TestTracePublicAPI(t *testing.T) {
	if ps := sim.Presets(); !slices.Contains(ps, "h200") || !slices.Contains(ps, "mi300x") {
		t.Errorf("sim.Presets() = %v: want h200 and mi300x among them", ps)
	}
	s, err := sim.New(sim.Options{Preset: "h200", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.Begin("fwd")
	if r.Name() != "fwd" {
		t.Errorf("Region.Name() = %q", r.Name())
	}
	s.Launch(1500*time.Millisecond, 600)
	s.Synchronize()
	r.End()
	s.Sleep(time.Second)
	res, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	if tr == nil || len(res.Regions) != 1 {
		t.Fatalf("trace %v, %d regions", tr, len(res.Regions))
	}
	if tr.Device() != "sim:h200" || !tr.Simulated() || tr.Duration() < 2*time.Second || tr.Started().IsZero() {
		t.Errorf("device %q simulated %v duration %v started %v", tr.Device(), tr.Simulated(), tr.Duration(), tr.Started())
	}
	if gs := tr.GPUs(); len(gs) != 1 || gs[0].UUID == "" || gs[0].UUID != res.GPUs[0].UUID {
		t.Errorf("GPUs %+v, result's %+v", gs, res.GPUs)
	}
	chans := tr.Channels()
	var names []string
	for _, c := range chans {
		names = append(names, c.Name)
		if c.Unit == "" || c.Description == "" {
			t.Errorf("channel %+v lacks its unit or description", c)
		}
	}
	for _, want := range []string{"power.samples", "power.usage", "energy.total"} {
		if !slices.Contains(names, want) {
			t.Errorf("channels %v lack %s", names, want)
		}
	}
	mk := tr.Marks()
	if len(mk) != 2 || mk[0].Name != "begin fwd" || mk[1].Name != "end fwd" || mk[0].T != res.Regions[0].Start {
		t.Errorf("marks %+v, region %v..%v", mk, res.Regions[0].Start, res.Regions[0].End)
	}

	// The region's energy from the trace is Stop's, and holds the truth.
	reg := res.Regions[0]
	e := tr.Energy(0, reg.Start, reg.End)
	want := reg.GPUs[0]
	truth := s.GPU(0).TrueEnergy(reg.Start, reg.End)
	if !e.OK || e.Joules != want.Joules || e.Low != want.Low || e.High != want.High || e.Method != want.Method {
		t.Errorf("Trace.Energy %+v, Stop gave %+v", e, want)
	}
	if truth < e.AbsLow || truth > e.AbsHigh || math.Abs(e.MeanWatts*reg.Duration().Seconds()-e.Joules) > 1e-6*e.Joules {
		t.Errorf("%.2f J [%.2f, %.2f] (mean %.1f W over %v), truth %.2f J", e.Joules, e.AbsLow, e.AbsHigh, e.MeanWatts, reg.Duration(), truth)
	}
	if bad := tr.Energy(0, reg.End, reg.Start); bad.OK || len(bad.Warnings) == 0 {
		t.Errorf("an empty span gave %+v, want no figure and a warning", bad)
	}

	// Save and LoadTrace: the same recording.
	dir := filepath.Join(t.TempDir(), "rec")
	if err := tr.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := gpuwatt.LoadTrace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Device() != tr.Device() || !back.Started().Equal(tr.Started()) || back.Duration() != tr.Duration() || len(back.Channels()) != len(chans) || !slices.Equal(back.Marks(), mk) {
		t.Errorf("loaded: device %q started %v duration %v, %d channels, marks %v", back.Device(), back.Started(), back.Duration(), len(back.Channels()), back.Marks())
	}
	regs, ws := back.Regions()
	if len(regs) != 1 || len(ws) != 0 || regs[0].Name != "fwd" || math.Abs(regs[0].GPUs[0].Joules-want.Joules) > 1e-6*want.Joules {
		t.Errorf("regions from the saved trace %+v (%v), want fwd at %.6f J (the saved clock to 1 ns)", regs, ws, want.Joules)
	}

	// WriteCSV and ReadTrace: the same readings, to the CSV's precision (1 ns, 9 digits).
	var csv bytes.Buffer
	if err := tr.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	fromCSV, err := gpuwatt.ReadTrace(&csv, "rec.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"power.samples", "energy.total"} {
		a, b := tr.Readings(0, ch), fromCSV.Readings(0, ch)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d readings, %d from the CSV", ch, len(a), len(b))
		}
		for i := range a {
			if d := a[i].T - b[i].T; d < -time.Microsecond || d > time.Microsecond || math.Abs(a[i].Value-b[i].Value) > 1e-9*math.Abs(a[i].Value)+1e-9 {
				t.Fatalf("%s reading %d: %+v, from the CSV %+v", ch, i, a[i], b[i])
			}
		}
	}
	if len(tr.Readings(0, "no.such")) != 0 {
		t.Error("readings of a channel that does not exist")
	}
}
