package region

import (
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// loadH200 loads the trimmed trace of the H200 micro run (testdata/h200-micro/README.md).
func loadH200(t *testing.T) *trace.Trace {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open("testdata/h200-micro/trace.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	meta, err := os.ReadFile("testdata/h200-micro/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type marked struct {
	name       string
	start, end time.Duration
}

// measurements are the marked measurements of a trace (idle windows left out).
func measurements(tr *trace.Trace) []marked {
	var out []marked
	for _, m := range tr.Meta.Marks {
		name, ok := strings.CutSuffix(m.Name, ".start")
		if !ok || strings.HasSuffix(name, ".idle") {
			continue
		}
		s, _ := tr.Mark(m.Name)
		e, ok := tr.Mark(name + ".end")
		if ok && e > s {
			out = append(out, marked{name, s, e})
		}
	}
	return out
}

// TestH200Energy re-summarises every measurement of the H200 micro run (5 s each; the
// counter, stepping every 100 ms, read every ~1.24 s: 3-4 readings inside spanning ~3.4 s)
// with the session's calibration. Each reading of the counter is up to 100 ms late, so its
// own figure over 3.4 s is uncertain by ~±3 %: the headline is the calibrated ring, and the
// counter's own figure agrees with it within 2.5 %. Then it cuts 2 s windows out of each
// measurement (its start, middle and end), as a short measurement would be: there the
// counter has 0-3 readings inside, and its figure, interpolated across readings outside the
// window, scatters by up to ~10 %; the headline stays within 2 % (in practice 0.5 %) of the
// 5 s figure, as mean power (the load is steady). Over the whole run the counter has
// enough readings and gives the headline.
func TestH200Energy(t *testing.T) {
	t.Parallel()
	tr := loadH200(t)
	g := tr.Meta.GPUs[0]
	cal, err := energy.FitCalibration(tr, g.Index, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("calibration: %s", cal.String())
	if cal.Channel != "power.samples" || math.Abs(cal.Gain-1) > 0.03 || cal.Readings < 150 {
		t.Errorf("calibration %+v", cal)
	}
	ms := measurements(tr)
	if len(ms) != 39 {
		t.Fatalf("%d measurements in the marks, want 39", len(ms))
	}
	// One energy.Cache for the trace's regions, as the measurement loop passes one
	// (loop.go): without it each of the 156 summaries prepared the whole trace's ring again
	// (its lattice fit), 80 % of the test's CPU. The cache gives the uncached figures
	// exactly (energy's TestCacheSameEstimate), so every check here is the same (issue 30).
	o := Options{What: "the measurement", Steady: true, Calibration: &cal, EnergyCache: &energy.Cache{}}
	var worstFull, worstNew, worstCtr float64
	var nWin, ctrOff5 int
	var ss5, ssNew, ssCtr float64
	for _, m := range ms {
		full := Summarize(tr, g, m.start, m.end, 0, 0, o)
		if full.EnergySource != "power.samples (calibrated to energy.total)" {
			t.Errorf("%s (%v): energy from %s (%s)", m.name, m.end-m.start, full.EnergySource, full.EnergyNote)
		}
		if math.Abs(full.CounterDiffPct) > 2.5 {
			t.Errorf("%s: counter %.1f J, calibrated ring %.1f J (%+.2f %%)", m.name, full.CounterEnergyJ, full.CalibratedEnergyJ, full.CounterDiffPct)
		}
		for _, w := range full.Warnings {
			if w.Code == CodeChannelDisagreement || w.Code == CodeCounterDisagreement || w.Code == energy.CodeInterpolated {
				t.Errorf("%s: warning %q", m.name, w)
			}
		}
		worstFull = max(worstFull, math.Abs(full.CounterDiffPct))
		ss5 += full.CounterDiffPct * full.CounterDiffPct
		p5 := full.MeanPowerW
		const win = 2 * time.Second
		mid := m.start + (m.end-m.start)/2
		line := ""
		for _, w := range [][2]time.Duration{{m.start, m.start + win}, {mid - win/2, mid + win/2}, {m.end - win, m.end}} {
			s := Summarize(tr, g, w[0], w[1], 0, 0, o)
			nWin++
			if !strings.HasPrefix(s.EnergySource, "power.samples (calibrated") {
				t.Errorf("%s window %v: energy from %s (%s)", m.name, w, s.EnergySource, s.EnergyNote)
			}
			relNew := s.MeanPowerW/p5 - 1
			relCtr := s.CounterEnergyJ/win.Seconds()/p5 - 1
			if math.Abs(relNew) > 0.02 {
				t.Errorf("%s window [%.2f, %.2f] s: %.1f W against %.1f W over 5 s (%+.2f %%)", m.name, w[0].Seconds(), w[1].Seconds(), s.MeanPowerW, p5, 100*relNew)
			}
			for _, w := range s.Warnings {
				if w.Code == CodeChannelDisagreement || w.Code == CodeCounterDisagreement || w.Code == energy.CodeInterpolated {
					t.Errorf("%s window: warning %q", m.name, w)
				}
			}
			worstNew = max(worstNew, math.Abs(relNew))
			ssNew += relNew * relNew
			ssCtr += relCtr * relCtr
			worstCtr = max(worstCtr, math.Abs(relCtr))
			if math.Abs(relCtr) > 0.05 {
				ctrOff5++
			}
			line += fmt.Sprintf("  %+5.2f / %+6.2f %% (%d)", 100*relNew, 100*relCtr, s.CounterReadings)
		}
		t.Logf("%-14s %6.1f W (ring %+5.2f %%): 2 s windows, new / counter alone (readings):%s", m.name, p5, full.CounterDiffPct, line)
	}
	n5, nw := float64(len(ms)), float64(nWin)
	t.Logf("5 s measurements: the counter's own figure against the calibrated ring: worst %.2f %%, rms %.2f %%", worstFull, math.Sqrt(ss5/n5))
	t.Logf("2 s windows (%d): new headline against the 5 s figure: worst %.2f %%, rms %.2f %%; the counter alone: worst %.1f %%, rms %.1f %%, %d beyond 5 %%",
		nWin, 100*worstNew, 100*math.Sqrt(ssNew/nw), 100*worstCtr, 100*math.Sqrt(ssCtr/nw), ctrOff5)
	if worstCtr < 0.05 {
		t.Errorf("the counter alone is within %.1f %% on 2 s windows: the test shows nothing", 100*worstCtr)
	}
	// The whole run, from the first start to the last end that a counter reading follows,
	// as measure would see it: the counter has ~180 readings inside and gives the
	// headline. (The ring on its scale agrees nearly by construction: the calibration was
	// fitted to these readings.)
	end := ms[len(ms)-2].end
	all := Summarize(tr, g, ms[0].start, end, 0, 0, Options{What: "the run", Calibration: &cal})
	t.Logf("whole run (%.0f s): %s %.0f J (%d readings), calibrated ring %.0f J (%+.4f %%)", (end - ms[0].start).Seconds(), all.EnergySource, all.EnergyJ, all.CounterReadings, all.CalibratedEnergyJ, -all.CounterDiffPct)
	if all.EnergySource != "energy.total" || math.Abs(all.CounterDiffPct) > 0.3 {
		t.Errorf("whole run: %s, counter %+.2f %% against the calibrated ring", all.EnergySource, all.CounterDiffPct)
	}
}
