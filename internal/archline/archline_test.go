package archline

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

// runSim runs the sweep on a sim config given as JSON, on a virtual clock.
func runSim(t *testing.T, js string, opt Options) (*Result, sim.Config) {
	t.Helper()
	cfg, err := sim.LoadConfig(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	m, err := loop.Start(context.Background(), clk, sys.Devices(), sensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Measure(context.Background(), m, sys.Device(0), opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep, cfg
}

// checkTruth compares the fits with the sim's truth × gain (the energy counter's gain).
func checkTruth(t *testing.T, name string, rep *Result, cfg sim.Config, gain float64) {
	t.Helper()
	truth := map[string][3]float64{
		"fp32": {cfg.EpsFlopFP32.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
		"fp64": {cfg.EpsFlopFP64.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%s: %d results", name, len(rep.Results))
	}
	for prec, res := range rep.Results {
		tr := truth[prec]
		got := [3]float64{res.EpsFlopPJ, res.EpsMemPJPerByte, res.Pi0W}
		for i, what := range []string{"eps_flop", "eps_mem", "pi0"} {
			want := gain * tr[i]
			if rel := got[i]/want - 1; math.Abs(rel) > 0.02 {
				t.Errorf("%s %s: %s = %.4g, truth %.4g (%+.2f %%)", name, prec, what, got[i], want, 100*rel)
			}
		}
		if res.R2 < 0.99 || res.R2All < 0.99 {
			t.Errorf("%s %s: R² %.5f, R²* %.5f", name, prec, res.R2, res.R2All)
		}
		if res.Fitted < 10 {
			t.Errorf("%s %s: only %d points fitted", name, prec, res.Fitted)
		}
		t.Logf("%s %s: eps_flop %.4g (%.4g) eps_mem %.4g (%.4g) pi0 %.4g (%.4g) R² %.5f R²* %.5f fitted %d off %d",
			name, prec, got[0], gain*tr[0], got[1], gain*tr[1], got[2], gain*tr[2], res.R2, res.R2All, res.Fitted, res.OffClock)
		t.Logf("  CIs %v %v %v", res.EpsFlopCI, res.EpsMemCI, res.Pi0CI)
	}
}

// TestPresetsRecoverTruth runs the full sweep on the default presets as they are (the
// energy counter with the board's own gain error): the fit finds gain × truth within 1 %
// (in practice 0.5 %), and so the truth within the counter's gain error plus 1 %, the
// figures docs/archline.md gives (at most h100 +2.4 %, h200 −1.6 %, a100 +3.6 %, v100 −2.5 %).
func TestPresetsRecoverTruth(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	for _, preset := range []string{"h100", "h200", "a100", "v100"} {
		t.Run(preset, func(t *testing.T) {
			rep, cfg := runSim(t, `{"preset":"`+preset+`"}`, Options{})
			gain := cfg.Sensors["energy.total"].Model.Gain
			checkTruth(t, preset, rep, cfg, gain)
			truth := map[string][3]float64{
				"fp32": {cfg.EpsFlopFP32.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
				"fp64": {cfg.EpsFlopFP64.Joules() * 1e12, cfg.EpsMemPerByte.Joules() * 1e12, cfg.Pi0.Watts()},
			}
			for prec, res := range rep.Results {
				for i, got := range []float64{res.EpsFlopPJ, res.EpsMemPJPerByte, res.Pi0W} {
					want := truth[prec][i]
					if math.Abs(got/(gain*want)-1) > 0.01 || math.Abs(got/want-1) > math.Abs(gain-1)+0.01 {
						t.Errorf("%s %s param %d: %.4g, truth %.4g (%+.2f %%), counter gain %.3f", preset, prec, i, got, want, 100*(got/want-1), gain)
					}
				}
			}
			// The cross-checks agree with the fit within 5 %.
			for prec, res := range rep.Results {
				if len(res.References) != 3 {
					t.Fatalf("%s: %d references", prec, len(res.References))
				}
				for _, ref := range res.References {
					if math.Abs(ref.Value/ref.Fitted-1) > 0.05 {
						t.Errorf("%s %s kernel: %s %.4g, fit %.4g", prec, ref.Kernel, ref.Param, ref.Value, ref.Fitted)
					}
				}
				d := res.Derived
				if d.EtaFlop <= 0 || d.EtaFlop >= 1 || d.BTau <= 0 || d.BEps <= 0 || d.BEffective <= 0 || d.PiFlopW <= 0 || d.PiMemW <= 0 {
					t.Errorf("%s derived %+v", prec, d)
				}
				if d.PeakFlopsPerS < 0.95*d.SpecFlopsPerS {
					t.Errorf("%s: peak %.3g flop/s, spec %.3g", prec, d.PeakFlopsPerS, d.SpecFlopsPerS)
				}
			}
		})
	}
}

// TestRandomConfigsRecoverTruth draws pi0, eps_flop and eps_mem within plausible ranges.
func TestRandomConfigsRecoverTruth(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	rng := rand.New(rand.NewPCG(2, 7))
	u := func(a, b float64) float64 { return a + (b-a)*rng.Float64() }
	for i := range 4 {
		preset := []string{"h100", "h200", "a100", "h100"}[i]
		fp32 := u(2, 12)
		js := fmt.Sprintf(`{"preset":%q,"seed":%d,"pi0_w":%.2f,"eps_flop_fp32_pj":%.3f,"eps_flop_fp64_pj":%.3f,"eps_mem_pj_per_byte":%.2f,"sensors":{"energy.total":{"gain":1}}}`,
			preset, i+11, u(60, 220), fp32, fp32*u(1.5, 3), u(40, 160))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			// Every intensity at the lowest and the highest occupancy (half the points)
			// recovers the three parameters; all four occupancies are TestPresetsRecoverTruth's.
			rep, cfg := runSim(t, js, Options{Occupancies: QuickOccupancies})
			checkTruth(t, js, rep, cfg, 1)
		})
	}
}

func TestClockFilter(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	// A low power limit caps many points: they are kept, marked and not fitted, and the
	// fit on the rest still recovers the truth.
	rep, cfg := runSim(t, `{"preset":"h200","power_limit_w":450,"sensors":{"energy.total":{"gain":1}}}`, Options{})
	for prec, res := range rep.Results {
		if res.OffClock == 0 {
			t.Errorf("%s: no point off the top clock at a 450 W limit", prec)
		}
		for _, p := range res.Points {
			if p.Kernel == "roofline" && p.OffClock == p.Fitted {
				t.Errorf("%s: off_clock %v fitted %v", p.Name, p.OffClock, p.Fitted)
			}
			if p.OffClock && p.ClockMHz >= 0.98*res.TopClock {
				t.Errorf("%s: off clock at %.0f MHz of %.0f", p.Name, p.ClockMHz, res.TopClock)
			}
		}
		if res.Derived.PowerLimitW != 450 || res.Derived.CappedFromFlop <= 0 {
			t.Errorf("%s: power limit %v, capped from %v", prec, res.Derived.PowerLimitW, res.Derived.CappedFromFlop)
		}
		if res.Derived.PowerlineCapped(res.Derived.BTau) != 450 {
			t.Errorf("%s: capped powerline at B_tau %v", prec, res.Derived.PowerlineCapped(res.Derived.BTau))
		}
	}
	checkTruth(t, "h200 450 W", rep, cfg, 1)
}

func TestOLSAndDerived(t *testing.T) {
	t.Parallel()
	// Exact data: the fit returns the parameters and R² = 1.
	var pts []Point
	for i, I := range []float64{0.125, 1, 8, 64} {
		for _, T := range []float64{1e-3, 3e-3} {
			W := 1e9 * float64(i+1)
			Q := W / I
			pts = append(pts, Point{W: W, Q: Q, TimeS: T, Interval: energy.Interval{EnergyJ: W*5e-12 + Q*100e-12 + T*150}})
		}
	}
	f := fitPoints(pts, 5)
	if math.Abs(f.EpsFlopPJ-5) > 1e-6 || math.Abs(f.EpsMemPJPerByte-100) > 1e-5 || math.Abs(f.Pi0W-150) > 1e-5 || f.R2 < 1-1e-12 {
		t.Errorf("fit %+v", f)
	}
	for _, form := range []int{6, 7} {
		if g := fitPoints(pts, form); math.Abs(g.EpsFlopPJ-5) > 1e-5 || math.Abs(g.Pi0W-150) > 1e-4 {
			t.Errorf("eq %d: %+v", form, g)
		}
	}
	if g := fitPoints(pts[:2], 5); g.Error == "" {
		t.Error("2 points, 3 parameters: no error")
	}
	// The thesis's A100 40GB FP32 (Tables 6 and 7): eta 55.14 %, pi_flop 121 W.
	d := derive(Fit{EpsFlopPJ: 6.21, EpsMemPJPerByte: 93.48, Pi0W: 98.42}, 19.5e12, 1.56e12, 0, 4, 400)
	if math.Abs(d.EtaFlop-0.5514) > 0.001 || math.Abs(d.PiFlopW-121.0) > 0.2 || math.Abs(d.EpsMopPJ-373.9) > 0.1 {
		t.Errorf("derived %+v", d)
	}
	// Eq 9 is the model's E/W: eps_flop + eps_mem/I + pi0 T/W with T = max(W tau_flop, Q tau_mem).
	for _, I := range []float64{0.5, 12.5, 100} {
		T := math.Max(1/19.5e12, 1/(I*1.56e12))
		want := 1 / (6.21e-12 + 93.48e-12/I + 98.42*T)
		if got := d.Archline(I); math.Abs(got/want-1) > 1e-9 {
			t.Errorf("archline(%g) = %g, want %g", I, got, want)
		}
		// Eq 10 is E/T of the same model.
		P := (6.21e-12 + 93.48e-12/I + 98.42*T) / T
		if got := d.Powerline(I, 0); math.Abs(got/P-1) > 1e-9 {
			t.Errorf("powerline(%g) = %g, want %g", I, got, P)
		}
	}
	// The effective balance point is a fixed point of eq 8.
	if math.Abs(d.BHat(d.BEffective)-d.BEffective) > 1e-9 {
		t.Errorf("B̂(%g) = %g", d.BEffective, d.BHat(d.BEffective))
	}
}

func TestPlanAndPage(t *testing.T) {
	t.Parallel()
	ds, err := Plan(h100Props(t), Options{Precisions: []kernels.Precision{kernels.FP64}, Intensities: []float64{1, 2}, Occupancies: []float64{0.5, 1}})
	if err != nil {
		t.Fatal(err)
	}
	// baseline + 2 copy + 2 flop + 2 × 2 roofline
	if len(ds) != 9 || ds[0].Group != "baseline" || ds[len(ds)-1].Name != "roofline.fp64.i2@100%" {
		t.Errorf("%d kernels, first %s last %s", len(ds), ds[0].Name, ds[len(ds)-1].Name)
	}
	for _, bad := range []Options{{Occupancies: []float64{0}}, {Intensities: []float64{1e5}}} {
		if _, err := Plan(h100Props(t), bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	rep, _ := runSim(t, `{"preset":"a100"}`, Options{Intensities: QuickIntensities, Occupancies: QuickOccupancies})
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil || !strings.Contains(b.String(), "Table 7 and 9") && !strings.Contains(b.String(), "Tables 7 and 9") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	pg := Page(rep)
	plots := 0
	for _, s := range pg.Sections {
		plots += len(s.Plots)
	}
	if plots != 8 {
		t.Errorf("%d plots, want 4 per precision", plots)
	}
	var h strings.Builder
	if err := pg.Render(&h); err != nil || !strings.Contains(h.String(), "powerline") {
		t.Errorf("render: %v", err)
	}
}

func h100Props(t *testing.T) gpu.Props {
	t.Helper()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clock.NewVirtual(time.Time{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sys.Device(0).Props()
}

// TestEnergyFromRing: where the energy counter is read (here: updates) only every 1.5 s,
// a 2 s point has one or two readings inside, and its energy comes from the sample ring,
// calibrated to the counter over the session (the measurement loop's, internal/region),
// with the counter's figure and the readings beside it. Where the counter updates every
// 100 ms it has enough readings inside every point and gives the energy itself.
func TestEnergyFromRing(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	for _, tc := range []struct {
		name, js string
		ring     bool
	}{
		{"rare counter", `{"preset":"h100","sensors":{"energy.total":{"gain":1,"period_s":1.5}}}`, true},
		{"fast counter", `{"preset":"h100","sensors":{"energy.total":{"gain":1}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := runSim(t, tc.js, Options{Intensities: QuickIntensities, Occupancies: QuickOccupancies})
			c := rep.EnergyCalibration
			if c == nil || c.Readings < energy.MinCalibrationReadings || math.Abs(c.Gain-1) > 0.05 || rep.EnergyNote == "" {
				t.Fatalf("calibration %+v, note %q", c, rep.EnergyNote)
			}
			t.Logf("%s: %s", tc.name, rep.EnergyNote)
			for _, res := range rep.Results {
				for _, p := range res.Points {
					if got := strings.HasPrefix(p.EnergySource, samplesChannel); got != tc.ring {
						t.Errorf("%s: source %q, %d readings (counter %d)", p.Name, p.EnergySource, p.EnergyReadings, p.CounterReadings)
					}
					if tc.ring && (p.EnergyReadings < energy.MinChannelReadings || p.SamplesReadings != p.EnergyReadings || p.CounterReadings >= energy.MinCounterReadings) {
						t.Errorf("%s: %d readings of %s, %d of the ring, %d of the counter", p.Name, p.EnergyReadings, p.EnergySource, p.SamplesReadings, p.CounterReadings)
					}
					if !tc.ring && math.Abs(p.CounterDiffPct) > 1e-9 {
						t.Errorf("%s: counter %+.2f %% from the headline, which is the counter", p.Name, p.CounterDiffPct)
					}
					// (A rare counter may have no reading after the last point: no figure.)
					if p.EndS <= p.StartS || (p.CounterEnergyJ <= 0 && !tc.ring) || p.SamplesEnergyJ <= 0 {
						t.Errorf("%s: [%g, %g] s, counter %g J (%+.1f %%), ring %g J", p.Name, p.StartS, p.EndS, p.CounterEnergyJ, p.CounterDiffPct, p.SamplesEnergyJ)
					}
				}
			}
		})
	}
}

// TestOccupancyGeometry: every SM runs the same share of its threads.
func TestOccupancyGeometry(t *testing.T) {
	t.Parallel()
	props := h100Props(t)
	ds, err := Plan(props, Options{Precisions: []kernels.Precision{kernels.FP32}, Intensities: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		o := d.Variant["occupancy"]
		if d.Group == "baseline" {
			continue
		}
		perSM := float64(d.Blocks*d.Threads) / float64(props.SMs)
		if d.Blocks%props.SMs != 0 || math.Abs(perSM/float64(props.MaxThreadsPerSM)-o) > 1e-9 {
			t.Errorf("%s: %d blocks of %d threads on %d SMs, occupancy %g", d.Name, d.Blocks, d.Threads, props.SMs, o)
		}
	}
}

// TestDeriveWithoutFit: a run cut short before its flop points has no flop energy; its
// derived figures were NaN (the powerline), and characterize's results.json could not be
// written at all after a Ctrl-C in archline (issue 20).
func TestDeriveWithoutFit(t *testing.T) {
	t.Parallel()
	d := derive(Fit{Pi0W: 100}, 19.5e12, 1.56e12, 0, 4, 400)
	if _, err := json.Marshal(d); err != nil {
		t.Fatalf("derived figures of an empty fit: %v", err)
	}
}
