package job

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestMergeHostAcrossWraps: a counter at 100 W that wraps every 1.5 s (range 150 J), read
// by three processes that each unwrap from their own first reading: begin (before the
// recorder, across a wrap from the recorder's first reading), the recorder every second,
// and end (three wraps after the recorder began). Merged, begin's and end's readings lie
// on the recorder's series, and the job's energy between them is the truth, 510 J; with no
// range known, the readings across a wrap are left out rather than taken as a reset.
func TestMergeHostAcrossWraps(t *testing.T) {
	const p, rangeJ, c0 = 100.0, 150.0, 120.0
	raw := func(t float64) float64 { return math.Mod(c0+p*t, rangeJ) }
	const ch = "cpu.package.0"
	newTrace := func() *trace.Trace {
		tr := &trace.Trace{Meta: trace.Meta{Channels: []trace.Channel{{GPU: trace.HostGPU, Name: ch, Cumulative: true, Quantity: trace.QEnergy, Unit: "J"}}}}
		first := raw(0.5)
		for ts := 0.5; ts < 6; ts++ {
			tr.Samples = append(tr.Samples, trace.Sample{T: secs(ts), GPU: trace.HostGPU, Channel: ch, Value: first + p*(ts-0.5)})
		}
		return tr
	}
	reads := func(t0 float64, rg float64) []HostReading {
		first := raw(t0)
		return []HostReading{{Channel: ch, T: t0, EnergyJ: first, RangeJ: rg}, {Channel: ch, T: t0 + 0.004, EnergyJ: first + p*0.004, RangeJ: rg}}
	}
	tr := newTrace()
	mergeHost(tr, reads(0.1, rangeJ), reads(5.2, rangeJ))
	want := map[time.Duration]float64{secs(0.1): 20 - 40, secs(5.2): 20 + p*4.7}
	n := 0
	for _, s := range tr.Samples {
		if w, ok := want[s.T]; ok {
			n++
			if math.Abs(s.Value-w) > 1e-9 {
				t.Errorf("reading at %v merged as %.3f J, want %.3f on the recorder's scale", s.T, s.Value, w)
			}
		}
	}
	if n != 2 || len(tr.Samples) != 6+4 {
		t.Fatalf("%d of begin's and end's readings found, %d samples", n, len(tr.Samples))
	}
	f := energy.HostRegion(tr, ch, secs(0.102), secs(5.202))
	if truth := p * 5.1; !f.OK() || truth < f.LowJ || truth > f.HighJ || f.HighJ-f.LowJ > 1 {
		t.Errorf("job's energy %.3f J [%.3f, %.3f], truth %.3f J", f.EnergyJ, f.LowJ, f.HighJ, truth)
	}

	// No range known: begin's readings (read before a wrap the recorder's first reading
	// is after) and end's (after three wraps) contradict the series and are left out.
	tr = newTrace()
	mergeHost(tr, reads(0.1, 0), reads(5.2, 0))
	if len(tr.Samples) != 6 {
		t.Errorf("with no range, %d samples after merging, want the recorder's 6", len(tr.Samples))
	}
}
