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
