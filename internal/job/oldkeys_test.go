package job

import (
	"encoding/json"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/energy"
)

// TestGPUResultReadsOldKeys: a job.json written before issue 27 (the method under
// "source", the description under "energy_source") reads as one written now, and a
// written GPU reads back as it was.
func TestGPUResultReadsOldKeys(t *testing.T) {
	var old GPUResult
	if err := json.Unmarshal([]byte(`{"index":1,"energy_j":394.1,"energy_low_j":389.9,"energy_high_j":398.3,"source":"counter","energy_source":"energy.total","note":"n"}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Method != energy.Counter || old.Source != "energy.total" || old.LowJ != 389.9 || old.Note != "n" || old.Index != 1 {
		t.Errorf("old keys read as method %q source %q low %g note %q", old.Method, old.Source, old.LowJ, old.Note)
	}
	now := GPUResult{Index: 2, Figure: energy.Figure{Interval: energy.Interval{EnergyJ: 5, LowJ: 4, HighJ: 6}, Method: CounterOnly, Source: "energy.total (begin and end readings only)"}}
	b, err := json.Marshal(now)
	if err != nil {
		t.Fatal(err)
	}
	var back GPUResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Method != now.Method || back.Source != now.Source || back.HighJ != 6 {
		t.Errorf("%s read back as method %q source %q high %g", b, back.Method, back.Source, back.HighJ)
	}
}

// TestJobTotalIsIndependentSum: job.json's total is energy.IndependentSum of its GPUs'
// figures, flat in it (energy_j, energy_low_j, energy_high_j, absolute_low_j,
// absolute_high_j): two GPUs of ±3 J and ±4 J (absolute ±6 J and ±8 J) give ±5 J and
// ±10 J, partial where one is.
func TestJobTotalIsIndependentSum(t *testing.T) {
	r := Result{Interval: energy.IndependentSum([]energy.Interval{
		{EnergyJ: 100, LowJ: 97, HighJ: 103, AbsoluteLowJ: 94, AbsoluteHighJ: 106},
		{EnergyJ: 200, LowJ: 196, HighJ: 204, AbsoluteLowJ: 192, AbsoluteHighJ: 208, Partial: true},
	})}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"energy_j": 300.0, "energy_low_j": 295.0, "energy_high_j": 305.0, "absolute_low_j": 290.0, "absolute_high_j": 310.0, "partial": true} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v (%s)", k, got[k], want, b)
		}
	}
}
