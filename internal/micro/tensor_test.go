package micro

import (
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// TestTensorFiguresHoldTruth: on the h100 twin, with its counter's gain error in, every
// tensor kernel's pJ per MAC above pi0 interval holds gain × the twin's energy per MAC, its
// throughput is the twin's rate at the clock the twin chose, the wgmma kernels hit the
// power cap (the twin's clock drops below its top), and the report's section shows them.
func TestTensorFiguresHoldTruth(t *testing.T) {
	rep, cfg, dev := runSimDev(t, "h100", false, "baseline", "*.mma", "*.wgmma")
	ctr, _ := dev.Model("energy.total")
	if len(rep.Tensor) != 8 {
		t.Fatalf("%d tensor figures, want 8 (fp8 mma.sync is not run on sm_90)", len(rep.Tensor))
	}
	rows := map[string]Row{}
	for _, r := range rep.Rows {
		rows[r.Name] = r
	}
	for _, f := range rep.Tensor {
		c := kernels.OpClass(f.Class)
		e, ok := cfg.OpEnergy(c)
		if !ok {
			t.Fatalf("%s: no twin energy", c)
		}
		want := ctr.Gain * e.Joules() * 1e12
		if !(f.PJPerMACAbovePi0CI[0] <= want && want <= f.PJPerMACAbovePi0CI[1]) {
			t.Errorf("%s: %.4f pJ/MAC above pi0, interval %v, truth × gain %.4f", f.Row, f.PJPerMACAbovePi0, f.PJPerMACAbovePi0CI, want)
		}
		if !(f.PJPerMACCI[0] < f.PJPerMAC && f.PJPerMAC < f.PJPerMACCI[1]) || f.PJPerMAC <= f.PJPerMACAbovePi0 {
			t.Errorf("%s: %.4f pJ/MAC in all, interval %v", f.Row, f.PJPerMAC, f.PJPerMACCI)
		}
		// Throughput: the twin's MACs per clock per SM at the clock it ran the kernel at.
		rate := cfg.OpsPerCycleSM[c]
		spec, _ := kernels.SpecOpsPerCycleSM(c, "9.0")
		if got := rows[f.Row].PerCycleSM; got < 0.98*rate || got > 1.01*rate {
			t.Errorf("%s: %.1f MACs per clock per SM, the twin runs %g", f.Row, got, rate)
		}
		if s := rate / spec; f.PeakShare < s-0.02 || f.PeakShare > s+0.01 {
			t.Errorf("%s: %.3f of the dense peak, want about %.3f", f.Row, f.PeakShare, s)
		}
		if strings.HasSuffix(f.Class, ".wgmma") && (f.ClockMHz >= 1980 || f.PowerCapShare < 0.9) {
			t.Errorf("%s: clock %.0f MHz, power-capped %.2f of the run: the twin's wgmma should hit its cap", f.Row, f.ClockMHz, f.PowerCapShare)
		}
	}
	if _, ok := tensorSection(rep); !ok {
		t.Error("no tensor section")
	}
	var b strings.Builder
	if err := Page(rep).Render(&b); err != nil || !strings.Contains(b.String(), "Tensor cores: energy per multiply-accumulate") {
		t.Errorf("report.html: %v, tensor section missing", err)
	}
}
