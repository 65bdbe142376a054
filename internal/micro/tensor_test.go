package micro

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// TestTensorFiguresHoldTruth: on the h100 twin, with its counter's gain error in, every
// tensor kernel's pJ per MAC above pi0 interval holds gain × the twin's energy per MAC, its
// throughput is the twin's rate at the clock the twin chose, the wgmma kernels hit the
// power cap (the twin's clock drops below its top), and the report's section shows them.
func TestTensorFiguresHoldTruth(t *testing.T) {
	t.Parallel()
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

// TestTensorRecordedH100: the development run on an H100 (results/nvidia-h100-80gb-hbm3/
// 2026-11-28-tensor-dev/run1, whose build still labelled the rows "op") gives what
// docs/tensor.md says: wgmma at 95-100 % of the dense peak at the clock it ran at, mma.sync
// at 62-65 %, every wgmma power-capped below the top clock, bf16.wgmma 1.674 pJ/MAC.
func TestTensorRecordedH100(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../results/nvidia-h100-80gb-hbm3/2026-11-28-tensor-dev/run1/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep Result
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for i := range rep.Rows {
		if kernels.OpClass(rep.Rows[i].What).Tensor() {
			rep.Rows[i].Unit = "MAC"
		}
	}
	figs := TensorFigures(rep.Rows, rep.Props.SMs)
	seen := 0
	for _, f := range figs {
		switch {
		case strings.HasSuffix(f.Class, ".wgmma"):
			seen++
			if f.PeakShare < 0.95 || f.PeakShare > 1 || f.ClockMHz >= 1980 {
				t.Errorf("%s: %.3f of the peak at %.0f MHz", f.Row, f.PeakShare, f.ClockMHz)
			}
		case f.Class == "bf16.mma" || f.Class == "fp16.mma" || f.Class == "tf32.mma" || f.Class == "int8.mma":
			seen++
			if f.PeakShare < 0.62 || f.PeakShare > 0.65 {
				t.Errorf("%s: %.3f of the peak", f.Row, f.PeakShare)
			}
		}
		if f.Class == "bf16.wgmma" && math.Abs(f.PJPerMAC-1.674) > 0.001 {
			t.Errorf("bf16.wgmma: %.4f pJ/MAC", f.PJPerMAC)
		}
	}
	if seen != 8 {
		t.Errorf("%d of the 8 Hopper tensor kernels", seen)
	}
}
