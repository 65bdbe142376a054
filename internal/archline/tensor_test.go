package archline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// TestTensorRecoversTruth (issue 33): the tensor roofline swept on twins whose energy per
// MAC, per DRAM byte, pi0 and power limit are drawn at random (hidden from the fit: it sees
// only the twin's sensors, as a user's run would) recovers the twin's eps_mac within its
// 95 % interval, for bf16 and fp8, with the board's gain error in (the interval is on the
// counter's scale: truth × gain). The points the power cap slows are shown, not fitted;
// the fit's eps_mem is the DRAM byte's plus the staging into shared memory and its xors.
func TestTensorRecoversTruth(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(33, 1))
	u := func(a, b float64) float64 { return a + (b-a)*rng.Float64() }
	in, n := 0, 0
	// Two twins by default (one h100, one h200), four where the slow tests run (CI), issue
	// 30 (0.5 -> 0.25 s of CPU): eps_mac must still fall inside its interval for both
	// precisions on each board, and within 4 %.
	twins := 2
	if testkit.SlowOn() {
		twins = 4
	}
	for i := range twins {
		preset := []string{"h100", "h200", "h100", "h200"}[i]
		bf, fp8 := u(0.8, 2.5), u(0.3, 1.2)
		js := fmt.Sprintf(`{"preset":%q,"seed":%d,"pi0_w":%.2f,"eps_mem_pj_per_byte":%.2f,"power_limit_w":%.0f,"eps_op_pj":{"bf16.wgmma":%.4f,"e4m3.wgmma":%.4f}}`,
			preset, i+40, u(100, 200), u(60, 140), u(600, 700), bf, fp8)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rep, cfg := runSim(t, js, Options{Precisions: []kernels.Precision{kernels.TCBF16, kernels.TCFP8}, TensorIntensities: QuickTensorIntensities})
			gain := cfg.Sensors["energy.total"].Model.Gain
			truth := map[string]float64{"tc-bf16": bf, "tc-fp8": fp8}
			if tab, ok := rep.tensorTable(); !ok || len(tab.Rows) != 2 || tab.Rows[0][0] != "tc-bf16" {
				t.Errorf("tensor table: %v", tab.Rows)
			}
			for prec, res := range rep.Results {
				want := gain * truth[prec]
				n++
				if ci := res.EpsMACCI; ci != nil && ci[0] <= want && want <= ci[1] {
					in++
				} else {
					t.Errorf("%s %s: eps_mac %.4f pJ, interval %v, truth × gain %.4f (%+.2f %%)", js, prec, res.EpsMACPJ, res.EpsMACCI, want, 100*(res.EpsMACPJ/want-1))
				}
				if math.Abs(res.EpsMACPJ/want-1) > 0.04 || res.R2 < 0.99 || res.Fitted < 6 {
					t.Errorf("%s: eps_mac %.4f against %.4f, R² %.4f, %d fitted", prec, res.EpsMACPJ, want, res.R2, res.Fitted)
				}
				// pi0 inside its interval (where every fitted point is memory-bound, T is
				// proportional to Q and pi0 and eps_mem are not separable: the interval is
				// then wide, and eps_mac still holds).
				if p := cfg.Pi0.Watts() * gain; !(res.Pi0CI[0] <= p && p <= res.Pi0CI[1]) {
					t.Errorf("%s: pi0 %.1f W, interval %v, truth × gain %.1f", prec, res.Pi0W, res.Pi0CI, p)
				}
				t.Logf("%s: eps_mac %.4f %v truth×gain %.4f; eps_mem %.1f (DRAM %.1f); pi0 %.1f; fitted %d off-clock %d; capped from %.3g flop/B",
					prec, res.EpsMACPJ, res.EpsMACCI, want, res.EpsMemPJPerByte, cfg.EpsMemPerByte.Joules()*1e12*gain, res.Pi0W, res.Fitted, res.OffClock, res.Derived.CappedFromFlop)
			}
		})
	}
	if n != 2*twins {
		t.Errorf("%d fits, want %d", n, 2*twins)
	}
}
