package characterize

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// card is a results with one archline figure set (fp32 eps_mem and pi0 with intervals).
func card(uuid string, epsMem, hw float64) *Result {
	res := &archline.PrecisionResult{EpsFlopPJ: 4.2, EpsFlopCI: [2]float64{4.1, 4.3}, EpsMemPJPerByte: epsMem, EpsMemCI: [2]float64{epsMem - hw, epsMem + hw}, Pi0W: 148, Pi0CI: [2]float64{142, 154}}
	return &Result{GPU: trace.GPU{UUID: uuid}, Archline: &archline.Result{Results: map[string]*archline.PrecisionResult{"fp32": res}}}
}

// TestReproducibility: the CV over runs, and a card-to-card difference named only beyond
// both intervals and, for an energy, the ±5 % gain part of each value.
func TestReproducibility(t *testing.T) {
	t.Parallel()
	find := func(rp *Repro, name string) ReproFigure {
		for _, f := range rp.Figures {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no figure %q", name)
		return ReproFigure{}
	}
	// Three runs of one card: CV = SD / mean.
	rp := Reproducibility([]*Result{card("A", 90, 2), card("A", 91, 2), card("A", 92, 2)}, []string{"1", "2", "3"})
	if f := find(rp, "fp32 eps_mem (pJ/B)"); rp.Cards != 1 || math.Abs(f.CVPct-100*1.0/91) > 1e-9 || f.Differs || f.Verdict != "" {
		t.Errorf("one card: %+v", f)
	}
	for _, tc := range []struct {
		a, b, hw float64
		differs  bool
	}{
		{76, 91, 2, true},   // 15 apart: beyond 2 + 2 + 5 % of 76 and of 91 (8.35)
		{80, 91, 2, false},  // 11 apart: within 12.55
		{76, 91, 4, false},  // 15 apart: within 4 + 4 + 8.35
		{90, 91.5, 0, true}, // without an interval: not judged
	} {
		rp := Reproducibility([]*Result{card("A", tc.a, tc.hw), card("B", tc.b, tc.hw)}, []string{"a", "b"})
		f := find(rp, "fp32 eps_mem (pJ/B)")
		if tc.hw == 0 {
			if f.Differs || !strings.Contains(f.Verdict, "not judged") {
				t.Errorf("no interval: %+v", f)
			}
			continue
		}
		if f.Differs != tc.differs {
			t.Errorf("%g vs %g ± %g: differs %v (%s)", tc.a, tc.b, tc.hw, f.Differs, f.Verdict)
		}
	}
}

// TestMicroAbovePi0: with the archline stage's pi0, micro's energies above pi0 are taken
// above it (pi0's share scaled by pi0 / the baseline kernel's power), with pi0's interval;
// without it, micro's report as it is.
func TestMicroAbovePi0(t *testing.T) {
	t.Parallel()
	m := &micro.Result{Pi0W: 120, Pi0HalfWidthW: 1, Rows: []micro.Row{{Name: "fp32.fma", Unit: "op", PJPerUnit: 12, PJPerUnitLow: 11.9, PJPerUnitHigh: 12.1, PJPerUnitPi0: 3.6, PJPerUnitAbovePi0: 8.4}}}
	r := &Result{Micro: m}
	if r.MicroAbovePi0() != m {
		t.Fatal("without archline, micro's report changed")
	}
	r.Archline = &archline.Result{Pi0: &archline.JointFit{Pi0W: 150, Pi0CI: [2]float64{145, 155}}}
	got := r.MicroAbovePi0()
	row := got.Rows[0]
	// time per op 3.6/120 = 0.03 ps·W; pi0's share 150 × 0.03 = 4.5; above 7.5 ± hypot(0.1, 5 × 0.03).
	hw := math.Hypot(0.1, 0.15)
	if got.Pi0W != 150 || math.Abs(row.PJPerUnitPi0-4.5) > 1e-12 || math.Abs(row.PJPerUnitAbovePi0-7.5) > 1e-12 ||
		math.Abs(row.PJPerUnitAbovePi0High-7.5-hw) > 1e-12 || !strings.Contains(got.Pi0Source, "baseline kernel drew 120") {
		t.Errorf("rebased: pi0 %v (%s), row %+v", got.Pi0W, got.Pi0Source, row)
	}
	if m.Rows[0].PJPerUnitAbovePi0 != 8.4 {
		t.Error("micro's own report was changed")
	}
}
