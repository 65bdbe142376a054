package job

import (
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestMergeKeepsCounterMonotonic: the recorder stamps a counter value that changed since its
// last poll between the two polls, so a value it read just after end's own reading can carry
// a stamp before it; merged as it was, the counter fell at end's reading, which the
// estimator takes for a reset (no figure: "source none"). Such readings are left out.
func TestMergeKeepsCounterMonotonic(t *testing.T) {
	ms := time.Millisecond
	tr := &trace.Trace{Meta: trace.Meta{
		GPUs:     []trace.GPU{{Index: 0, UUID: "GPU-x", PowerLimitW: 700}},
		Channels: []trace.Channel{{GPU: 0, Name: trace.ChEnergyTotal, Quantity: trace.QEnergy, Unit: "J", Cumulative: true}},
	}}
	// 100 W: 0.1 J per ms, the counter publishing every 100 ms.
	for _, ts := range []int{50, 250, 450, 650, 850, 1050} {
		pub := (ts / 100) * 100
		tr.Samples = append(tr.Samples, trace.Sample{T: time.Duration(ts) * ms, GPU: 0, Channel: trace.ChEnergyTotal, Value: 1000 + 0.1*float64(pub)})
	}
	// The recorder's read at 1.15 s (after end's at 1.12 s, after an update at 1.1 s) stamped
	// half-way back to its last poll: 1.1 s, before end's reading.
	tr.Samples = append(tr.Samples, trace.Sample{T: 1100 * ms, GPU: 0, Channel: trace.ChEnergyTotal, Value: 1000 + 110})
	b := &Begin{Format: BeginFormat, Job: Job{JobID: "1"}, GPUs: []BeginGPU{{Index: 0, UUID: "GPU-x", PowerLimitW: 700, Counter: &Counter{T: 0.01, EnergyJ: 1000}}}}
	end := map[int]*Counter{0: {T: 1.12, EnergyJ: 1000 + 100}}
	r := Compute(b, end, nil, 1120*ms, tr, "")
	g := r.GPUs[0]
	if g.Method == "none" || g.EnergyJ < 100 || g.EnergyJ > 112 {
		t.Errorf("source %s, %.2f J (%v), want the counter's ~110 J", g.Method, g.EnergyJ, g.Warnings)
	}
}
