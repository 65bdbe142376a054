package archline

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// TestQuickSweepOnH200: the --quick sweep's points, taken from a full sweep measured on an
// H200 (testdata/h200-sweep.json), fit eps_flop, eps_mem and pi0 within 5 % of what all
// points fit. With occupancies 1/8 and 1 (the quick sweep before) pi0 came out at 85 W
// against 149 W: points at those two occupancies run at nearly the same rate, so their
// times carry little of their own.
func TestQuickSweepOnH200(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/h200-sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	var sweep struct {
		Results map[string]struct {
			EpsFlopPJ float64 `json:"eps_flop_pj"`
			EpsMemPJ  float64 `json:"eps_mem_pj_per_byte"`
			Pi0W      float64 `json:"pi0_w"`
			Points    []Point `json:"points"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &sweep); err != nil {
		t.Fatal(err)
	}
	for _, prec := range []string{"fp32", "fp64"} {
		r := sweep.Results[prec]
		var all, quick []Point
		for _, p := range r.Points {
			if p.OffClock {
				continue
			}
			all = append(all, p)
			if slices.Contains(QuickIntensities, p.Intensity) && slices.Contains(QuickOccupancies, p.Occupancy) {
				quick = append(quick, p)
			}
		}
		full, q := fitPoints(all, 5), fitPoints(quick, 5)
		// The full fit here is the one the run reported (same points, same model).
		if math.Abs(full.Pi0W-r.Pi0W) > 1e-6*r.Pi0W || math.Abs(full.EpsMemPJPerByte-r.EpsMemPJ) > 1e-6*r.EpsMemPJ {
			t.Fatalf("%s: refit of all points %+v differs from the run's %g W, %g pJ/B", prec, full, r.Pi0W, r.EpsMemPJ)
		}
		if len(quick) < 10 {
			t.Fatalf("%s: only %d quick points in the sweep", prec, len(quick))
		}
		for _, c := range []struct {
			name        string
			quick, full float64
		}{{"eps_flop", q.EpsFlopPJ, full.EpsFlopPJ}, {"eps_mem", q.EpsMemPJPerByte, full.EpsMemPJPerByte}, {"pi0", q.Pi0W, full.Pi0W}} {
			if d := c.quick/c.full - 1; math.Abs(d) > 0.05 {
				t.Errorf("%s %s: quick sweep (%d points) %.4g, all %d points %.4g (%+.1f %%)", prec, c.name, len(quick), c.quick, len(all), c.full, 100*d)
			}
		}
	}
}
