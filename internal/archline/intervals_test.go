package archline

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// hidden is a sim configuration the fit does not know, drawn from seed.
func hidden(seed uint64, extra string) string {
	rng := rand.New(rand.NewPCG(seed, 19))
	u := func(a, b float64) float64 { return a + (b-a)*rng.Float64() }
	preset := []string{"h100", "h200", "a100"}[seed%3]
	fp32 := u(2, 12)
	return fmt.Sprintf(`{"preset":%q,"seed":%d,"pi0_w":%.2f,"eps_flop_fp32_pj":%.3f,"eps_flop_fp64_pj":%.3f,"eps_mem_pj_per_byte":%.2f,"sensors":{"energy.total":{"gain":%.4f}}%s}`,
		preset, seed, u(60, 220), fp32, fp32*u(1.5, 3), u(40, 160), u(0.96, 1.04), extra)
}

// truthFit is eq 5 fitted to the twin's own per-launch energies and times of the points
// the run fitted (no sensor in between): the value the model can find on these kernels.
func truthFit(t *testing.T, sm simtest.Sim, res *PrecisionResult, opt Options) Fit {
	t.Helper()
	ds, err := Plan(sm.Dev.Props(), opt)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]kernels.Descriptor{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	tl := sm.Dev
	var pts []Point
	for _, p := range res.Points {
		if !p.Fitted {
			continue
		}
		dur, e, _, _ := tl.TrueLaunch(byName[p.Name])
		pts = append(pts, Point{W: p.W, Q: p.Q, TimeS: dur.Seconds(), Interval: energy.Interval{EnergyJ: e.Joules()}, Occupancy: p.Occupancy})
	}
	return fitPoints(pts, 5)
}

// TestIntervalsHoldHiddenTruth: on the twin with configurations the fit does not know
// (pi0, eps_flop in both precisions, eps_mem, the energy counter's gain and the seed drawn),
// on characterize's quick sweep (its points and their 1 s measurements), each fitted parameter's 95 % interval holds the true
// value on the board's scale (the counter's gain × the truth), its absolute interval the
// true value itself, and is no wider than 7 % of it (maxWidth, with the run-to-run spread
// of ±1.2 % in it; before it, the widest was 6.2 %, eps_flop on an a100 config whose pi0 of 217 W
// leaves 6 points under the power limit). The true value is eq 5 fitted to the twin's own per-launch energies (no sensor in
// between), which lies within 1 % of the configured eps_flop, eps_mem and pi0: the rest is
// the kernels' own loop and address arithmetic, which the thesis's eps include.
func TestIntervalsHoldHiddenTruth(t *testing.T) {
	t.Parallel()
	const maxWidth = 0.07
	opt := Options{Intensities: QuickIntensities, Occupancies: QuickOccupancies, Loop: QuickLoop}
	worst := 0.0
	// Three hidden configurations by default, one on each preset hidden draws from (seed % 3:
	// h200, a100, h100), six where the slow tests run (CI), issue 30 (0.9 -> 0.45 s of CPU):
	// every one of the 18 intervals must still hold its truth and be no wider than maxWidth,
	// so an interval too narrow or off-centre on any of the three boards still fails.
	seeds := uint64(3)
	if testkit.SlowOn() {
		seeds = 6
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		js := hidden(seed, "")
		rep, cfg, sm := runHidden(t, js, opt)
		gain := cfg.Sensors["energy.total"].Model.Gain
		for _, prec := range []string{"fp32", "fp64"} {
			res := rep.Results[prec]
			tf := truthFit(t, sm, res, opt)
			conf := map[string][3]float64{
				"fp32": {cfg.EpsFlopFP32.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
				"fp64": {cfg.EpsFlopFP64.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
			}[prec]
			truth := [3]float64{tf.EpsFlopPJ, tf.EpsMemPJPerByte, tf.Pi0W}
			got := [3]float64{res.EpsFlopPJ, res.EpsMemPJPerByte, res.Pi0W}
			cis := [3][2]float64{res.EpsFlopCI, res.EpsMemCI, res.Pi0CI}
			for i, what := range []string{"eps_flop", "eps_mem", "pi0"} {
				if d := truth[i]/conf[i] - 1; math.Abs(d) > 0.01 {
					t.Errorf("seed %d %s %s: the twin's own energies fit %.4g, configured %.4g (%+.2f %%)", seed, prec, what, truth[i], conf[i], 100*d)
				}
				want := gain * truth[i]
				ci := cis[i]
				w := relWidth(ci, want)
				worst = max(worst, w)
				if !(ci[0] <= want && want <= ci[1]) || w > maxWidth {
					t.Errorf("seed %d %s %s: %.4g, 95 %% interval [%.4g, %.4g] (%.2f %% wide), true value %.4g on the board's scale (gain %.4f)\n%s",
						seed, prec, what, got[i], ci[0], ci[1], 100*w, want, gain, js)
				}
				// The absolute interval holds the true value itself, whatever the board's gain.
				if abs := [3][2]float64{res.EpsFlopAbsCI, res.EpsMemAbsCI, res.Pi0AbsCI}[i]; !(abs[0] <= truth[i] && truth[i] <= abs[1]) {
					t.Errorf("seed %d %s %s: absolute interval [%.4g, %.4g], true value %.4g (gain %.4f)", seed, prec, what, abs[0], abs[1], truth[i], gain)
				}
			}
			// The derived figures (ratios: the counter's gain cancels) from the true fit and
			// the measured peaks lie in their intervals.
			td := derive(tf, res.Derived.PeakFlopsPerS, res.Derived.PeakBytesPerS, 0, 4, 0)
			for _, c := range []struct {
				what  string
				truth float64
				ci    [2]float64
			}{{"B_eps", td.BEps, res.BEpsCI}, {"eta_flop", td.EtaFlop, res.EtaFlopCI}, {"effective balance", td.BEffective, res.BEffectiveCI}} {
				if !(c.ci[0] <= c.truth && c.truth <= c.ci[1]) || relWidth(c.ci, c.truth) > maxWidth {
					t.Errorf("seed %d %s %s: interval [%.4g, %.4g], true value %.4g", seed, prec, c.what, c.ci[0], c.ci[1], c.truth)
				}
			}
			// eps_mem's memory-rail part (where the preset has a memory channel: not the
			// a100's): the memory channel's own scale (its gain) × the configured rail energy,
			// within 1 % (its interval leaves out the memory channel's own errors: 0.1 % here).
			if sc, ok := cfg.Sensors["power.memory.instant"]; ok && !sc.Unsupported {
				if m := res.Memory; m == nil || m.Error != "" {
					t.Errorf("seed %d %s: no memory split: %+v", seed, prec, m)
				} else {
					want := cfg.Sensors[m.Channel].Model.Gain * cfg.EpsMemRail.Joules() * 1e12
					if math.Abs(m.RailPJPerByte/want-1) > 0.01 {
						t.Errorf("seed %d %s: eps_mem on the memory rail %.4g, truth %.4g on %s's scale", seed, prec, m.RailPJPerByte, want, m.Channel)
					}
				}
			} else if res.Memory != nil {
				t.Errorf("seed %d %s: a memory split without a memory channel: %+v", seed, prec, res.Memory)
			}
			t.Logf("seed %d %s gain %.4f: eps_flop %.4g [%.4g, %.4g] (%.4g), eps_mem %.4g [%.4g, %.4g] (%.4g), pi0 %.4g [%.4g, %.4g] (%.4g)", seed, prec, gain,
				got[0], cis[0][0], cis[0][1], gain*truth[0], got[1], cis[1][0], cis[1][1], gain*truth[1], got[2], cis[2][0], cis[2][1], gain*truth[2])
		}
	}
	t.Logf("widest interval: %.2f %% of the true value", 100*worst)
}

// runHidden runs the sweep on a hidden config and returns the report, the config and the
// opened twin.
func runHidden(t *testing.T, js string, opt Options) (*Result, sim.Config, simtest.Sim) {
	t.Helper()
	cfg, err := sim.LoadConfig(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	m, err := loop.Start(context.Background(), sm.Clock, sm.Sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Measure(context.Background(), m, sm.Dev, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep, cfg, sm
}

// TestStaticTermByBIC: the twin with a static power of occupied SMs (pi_occ_w: 40 W at full
// occupancy, on top of pi0) has the model with the occupancy term chosen by BIC, its pi_occ
// within 15 % and pi0 within 3 % of the truth; without one (pi_occ_w 0), eq 5 is chosen.
// A 1 kW power limit keeps every point at the top clock (at 400 W the a100 config fits 6
// points at 1/32 and 1/8 occupancy only, which cannot tell the term).
func TestStaticTermByBIC(t *testing.T) {
	t.Parallel()
	opt := Options{Precisions: []kernels.Precision{kernels.FP32}, Intensities: QuickIntensities, Occupancies: DefaultOccupancies}
	// By default one board with the term and the other without (seed 7 is an h200, 8 an
	// a100): each of BIC's two verdicts on each board's sweep once; all four where the slow
	// tests run (CI), issue 30 (0.46 -> 0.23 s of CPU).
	for _, tc := range []struct {
		seed  uint64
		piOcc float64
		slow  bool
	}{{7, 40, false}, {8, 40, true}, {7, 0, true}, {8, 0, false}} {
		if tc.slow && !testkit.SlowOn() {
			continue
		}
		rep, cfg, _ := runHidden(t, hidden(tc.seed, fmt.Sprintf(`,"pi_occ_w":%g,"power_limit_w":1000`, tc.piOcc)), opt)
		gain := cfg.Sensors["energy.total"].Model.Gain
		c := rep.Results["fp32"].Checks
		if c == nil || len(c.Models) != 2 {
			t.Fatalf("seed %d: checks %+v", tc.seed, c)
		}
		want := ModelEq5Name
		if tc.piOcc > 0 {
			want = ModelOcc
		}
		m := c.Models[1]
		t.Logf("seed %d pi_occ %g: chosen %q; BIC eq 5 %.1f, with the term %.1f (pi0 %.4g, pi_occ %.4g; truth %.4g, %.4g on the board's scale)",
			tc.seed, tc.piOcc, c.Chosen, c.Models[0].BIC, m.BIC, m.Pi0W, m.PiOccW, gain*cfg.Pi0.Watts(), gain*tc.piOcc)
		if c.Chosen != want {
			t.Errorf("seed %d pi_occ %g: chose %q, want %q", tc.seed, tc.piOcc, c.Chosen, want)
		}
		if tc.piOcc > 0 && (math.Abs(m.PiOccW/(gain*tc.piOcc)-1) > 0.15 || math.Abs(m.Pi0W/(gain*cfg.Pi0.Watts())-1) > 0.03) {
			t.Errorf("seed %d: pi_occ %.4g, pi0 %.4g; truth %.4g, %.4g", tc.seed, m.PiOccW, m.Pi0W, gain*tc.piOcc, gain*cfg.Pi0.Watts())
		}
	}
}

// TestReanalyseH200: a results.json written before the intervals existed (the H200 full
// sweep of results/nvidia-h200/2026-11-21-archline, GPU-35f85153, gzipped in testdata) fitted again from its points gives the same parameters
// as the run reported, with intervals around them, the card's pi0 and the checks. On that
// sweep eq 5 is chosen over the static term of occupied SMs, the flop, copy and baseline
// kernels lie below the fit, and eq 6's eps_flop lies outside eq 5's interval: the
// figures docs/archline.md gives.
func TestReanalyseH200(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/h200-archline-2026-11-21.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rep Result
	if err := json.NewDecoder(zr).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][3]float64{}
	for p, r := range rep.Results {
		want[p] = [3]float64{r.EpsFlopPJ, r.EpsMemPJPerByte, r.Pi0W}
	}
	Reanalyse(&rep)
	for p, w := range want {
		r := rep.Results[p]
		got := [3]float64{r.EpsFlopPJ, r.EpsMemPJPerByte, r.Pi0W}
		cis := [3][2]float64{r.EpsFlopCI, r.EpsMemCI, r.Pi0CI}
		for i := range got {
			if math.Abs(got[i]/w[i]-1) > 1e-9 || !(cis[i][0] < got[i] && got[i] < cis[i][1]) {
				t.Errorf("%s param %d: %.6g, the run's %.6g, interval %v", p, i, got[i], w[i], cis[i])
			}
		}
		c := r.Checks
		if c == nil || c.Chosen != ModelEq5Name || len(c.PerOccupancy) != 4 || len(c.LeaveOneOut) != 4 || len(c.Forms) != 3 {
			t.Fatalf("%s checks %+v", p, c)
		}
		if f := c.Forms[1]; p == "fp32" && f.EpsFlopPJ > r.EpsFlopCI[0] && f.EpsFlopPJ < r.EpsFlopCI[1] {
			t.Errorf("fp32 eq 6 eps_flop %.4g inside eq 5's interval %v", f.EpsFlopPJ, r.EpsFlopCI)
		}
		t.Logf("%s: eps_flop %s, eps_mem %s, pi0 %s; forms differ by %.1f/%.1f/%.1f %%; LOO 1/32 %+.1f %%", p, PM(got[0], cis[0]), PM(got[1], cis[1]), PM(got[2], cis[2]),
			c.FormSpreadPct[0], c.FormSpreadPct[1], c.FormSpreadPct[2], c.LeaveOneOut[0].MeanPct)
	}
	if rep.Pi0 == nil || rep.Pi0.Error != "" || !(rep.Pi0.Pi0CI[0] < rep.Pi0.Pi0W && rep.Pi0.Pi0W < rep.Pi0.Pi0CI[1]) {
		t.Fatalf("card's pi0 %+v", rep.Pi0)
	}
	t.Logf("card's pi0 %s W, eps_mem %s pJ/B", PM(rep.Pi0.Pi0W, rep.Pi0.Pi0CI), PM(rep.Pi0.EpsMemPJPerByte, rep.Pi0.EpsMemCI))
}

// TestMemorySplitH200Trace: the H200 sweep of 2026-11-21 (GPU-35f85153, the card whose
// eps_mem was 75 pJ/B against 89-92 on four others) recorded power.memory.average in its
// trace: each point's memory power taken from it (setMemory) splits eps_mem into the
// memory rail's part and the rest, the figures docs/archline.md and the 2026-11-24 H200
// run's README compare with the other card.
func TestMemorySplitH200Trace(t *testing.T) {
	t.Parallel()
	dir := "../../results/nvidia-h200/2026-11-21-archline/archline/"
	b, err := os.ReadFile(dir + "results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep Result
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Load(dir + "trace.csv")
	if err != nil {
		t.Fatal(err)
	}
	set := func(ps []Point) {
		for i := range ps {
			setMemory(tr, 0, &ps[i])
		}
	}
	set(rep.Baseline)
	set(rep.Copy)
	for _, r := range rep.Results {
		set(r.Points)
	}
	Reanalyse(&rep)
	for _, p := range []string{"fp32", "fp64"} {
		r := rep.Results[p]
		m := r.Memory
		if m == nil || m.Error != "" || m.Channel != "power.memory.average" || m.Points < 40 {
			t.Fatalf("%s: split %+v", p, m)
		}
		// The parts add up to the board's eps_mem (the same points, linear fits).
		if d := m.RailPJPerByte + m.RestPJPerByte - r.EpsMemPJPerByte; math.Abs(d) > 1e-6*r.EpsMemPJPerByte {
			t.Errorf("%s: rail %.4g + rest %.4g != eps_mem %.4g", p, m.RailPJPerByte, m.RestPJPerByte, r.EpsMemPJPerByte)
		}
		if !(m.RailPJPerByteCI[0] < m.RailPJPerByte && m.RailPJPerByte < m.RailPJPerByteCI[1]) || m.RailShare < 0.2 || m.RailShare > 0.5 {
			t.Errorf("%s: rail %s, share %.2f", p, PM(m.RailPJPerByte, m.RailPJPerByteCI), m.RailShare)
		}
		t.Logf("%s: eps_mem %s pJ/B = memory rail %s + rest %s (rail share %.0f %%, rail pi0 %s W, R² %.4f)", p, PM(r.EpsMemPJPerByte, r.EpsMemCI),
			PM(m.RailPJPerByte, m.RailPJPerByteCI), PM(m.RestPJPerByte, m.RestPJPerByteCI), 100*m.RailShare, PM(m.RailPi0W, m.RailPi0WCI), m.R2)
	}
}

// TestPooledRunsKeepMisfit: three runs that repeat one run's points exactly (a misfit of
// the model that repeats from run to run) pool to intervals about as wide as the one run's:
// the misfit is no independent draw (each point of the sweep gets one residual sign in
// every run). Drawing the signs run by run made eps_mem's 24 % narrower (ratio 0.76).
func TestPooledRunsKeepMisfit(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/h200-archline-2026-11-21.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rep Result
	if err := json.NewDecoder(zr).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	Reanalyse(&rep)
	pts := rep.Results["fp32"].Points
	_, one, err := FitIntervals(Runs{pts})
	if err != nil {
		t.Fatal(err)
	}
	_, three, err := FitIntervals(Runs{pts, pts, pts})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range [][2][2]float64{{one.EpsFlopPJ, three.EpsFlopPJ}, {one.EpsMemPJPerByte, three.EpsMemPJPerByte}, {one.Pi0W, three.Pi0W}} {
		w1, w3 := c[0][1]-c[0][0], c[1][1]-c[1][0]
		r := w3 / w1
		if r < 0.85 || r > 1.18 {
			t.Errorf("param %d: one run %v, three copies %v (width ratio %.2f)", i, c[0], c[1], r)
		}
		t.Logf("param %d: width ratio %.3f", i, r)
	}
}
