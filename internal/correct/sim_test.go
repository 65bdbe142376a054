package correct_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

const ms = time.Millisecond

// simModel is the sensormodel.Model of a sim channel's own sensor model: what a perfect
// characterisation of the channel (the `sensor` verb's job) would find.
func simModel(m sensormodel.Model) sensormodel.Model {
	switch {
	case m.Window > 0:
		return sensormodel.Model{Window: m.Window, Tau: m.Tau, Period: m.Period, Delay: m.Delay}
	case m.Tau > 0:
		return sensormodel.Model{Tau: m.Tau, Period: m.Period, Delay: m.Delay}
	}
	return sensormodel.Model{Period: m.Period, Delay: m.Delay}
}

// boardChannels are the sim's channels that observe the board's power (those a preset
// lacks are left out by the Sampler).
var boardChannels = []string{"power.usage", "power.instant", "power.average", "power.samples"}

// load is one entry of the script: a level as a fraction of the way from the preset's
// active idle to its power limit.
type load struct {
	start, end time.Duration
	frac       float64
}

// script has steps, bursts of 300 and 200 ms, a step from one level to another and a
// 40 ms blip; between them the board sits at active idle (idle before the first).
var script = []load{
	{2000 * ms, 6000 * ms, 0.6},    // a 4 s step
	{7500 * ms, 7800 * ms, 1.0},    // a 300 ms burst
	{9000 * ms, 10500 * ms, 0.35},  // a step up ...
	{10500 * ms, 12500 * ms, 0.85}, // ... to a higher level
	{14000 * ms, 14200 * ms, 0.9},  // a 200 ms burst
	{15500 * ms, 15540 * ms, 0.5},  // a 40 ms blip
}

// region is a part of the script to measure, placed on and around its changes.
type region struct {
	name string
	a, b time.Duration
}

var regions = []region{
	{"idle", 1000 * ms, 1500 * ms},
	{"step start, on the edge", 2000 * ms, 2500 * ms},
	{"step start, around it", 1800 * ms, 2400 * ms},
	{"inside the step", 3000 * ms, 3200 * ms},
	{"whole step", 2000 * ms, 6000 * ms},
	{"step end, on the edge", 5700 * ms, 6000 * ms},
	{"after the step", 6000 * ms, 6500 * ms},
	{"300 ms burst, on its edges", 7500 * ms, 7800 * ms},
	{"300 ms burst, around it", 7300 * ms, 8000 * ms},
	{"step up, across it", 10300 * ms, 10700 * ms},
	{"200 ms burst, on its edges", 14000 * ms, 14200 * ms},
	{"200 ms burst, around it", 13900 * ms, 14400 * ms},
	{"40 ms blip, around it", 15300 * ms, 15800 * ms},
	{"everything", 1000 * ms, 17000 * ms},
}

// phases shift the whole script against the sensors' update instants (which sit at a
// preset's own phase): a 25 ms window every 100 ms sees a step or not depending on it.
var phases = []time.Duration{0, 17 * ms, 43 * ms, 71 * ms}

// recording is a sim device recorded through the script by the Sampler.
type recording struct {
	dev    *sim.Device
	series map[string][]trace.Sample
}

func record(t testing.TB, preset string, opt sensor.Options, phase time.Duration) *recording {
	t.Helper()
	sm := simtest.Open(t, preset)
	cfg, dev := sm.Cfg, sm.Dev
	lo, hi := float64(cfg.ActiveIdle), float64(cfg.PowerLimit)
	for _, l := range script {
		dev.AddLoad(l.start+phase, l.end+phase, units.Power(lo+l.frac*(hi-lo)))
	}
	var names []string
	for _, n := range boardChannels {
		if dev.Sensor(n) != nil {
			names = append(names, n)
		}
	}
	r := &recording{dev: dev, series: simtest.Series(sm.Record(t, names, opt, 18*time.Second))}
	return r
}

// truth is what a perfect reading of a channel integrates to over [a, b]: the board's
// gain × the true energy + its offset × the length (the gain and offset errors are the
// board's; no model of the sensor's dynamics can see them).
func (r *recording) truth(ch string, a, b time.Duration) float64 {
	m, _ := r.dev.Model(ch)
	return m.Gain*r.dev.TrueEnergy(a, b).Joules() + float64(m.Offset)*(b-a).Seconds()
}

// changes returns the true power steps in [a, b] as seen by a channel (× its gain), in W.
func (r *recording) changes(ch string, a, b time.Duration) []float64 {
	m, _ := r.dev.Model(ch)
	var out []float64
	prev := float64(r.dev.Board().Initial())
	for _, s := range r.dev.Board().Steps() {
		if s.T >= a && s.T <= b && float64(s.P) != prev {
			out = append(out, m.Gain*math.Abs(float64(s.P)-prev))
		}
		prev = float64(s.P)
	}
	return out
}

// class is what a channel's model lets Energy do.
type class int

const (
	classRC      class = iota // an RC lag: inverted exactly, ends fitted
	classDense                // a boxcar of W >= 1.5 T: deconvolved
	classTiled                // a boxcar of W ~ T: windows tile the time
	classPartial              // a boxcar of W < T: W of every T seen
)

func classOf(m sensormodel.Model) class {
	switch {
	case m.Kind() == sensormodel.RC:
		return classRC
	case 2*m.Window >= 3*m.Period:
		return classDense
	case m.Window >= m.Period:
		return classTiled
	}
	return classPartial
}

// outcome is one region measured on one channel.
type outcome struct {
	preset, ch string
	phase      time.Duration
	rg         region
	m          sensormodel.Model // the generating model (the test's knowledge)
	used       sensormodel.Model // the model that corrected: fitted by gpuwatt sensor
	truth      float64
	corr, raw  float64 // relative errors
	nChanges   int     // power changes that move the readings inside the region
	stepSum    float64 // W, the sizes of the changes in [a − W − T, b + T]
	bound      float64 // J, for partial channels: the sampling limit
}

func measureAll(t *testing.T, opt sensor.Options, presets []string, fitted bool) []outcome {
	t.Helper()
	var out []outcome
	for _, preset := range presets {
		var fit map[string]sensormodel.Model
		if fitted {
			fit = fittedModels(t, preset)
			for _, ch := range boardChannels {
				if m, ok := fit[ch]; ok {
					t.Logf("%s %s: fitted %s", preset, ch, m)
				}
			}
		}
		for _, ph := range phases {
			r := record(t, preset, opt, ph)
			for _, ch := range boardChannels {
				s := r.series[ch]
				if len(s) == 0 {
					continue
				}
				sm, _ := r.dev.Model(ch)
				m := simModel(sm) // the truth's: for what the test knows of the channel
				use := m          // what corrects: the fitted model
				if fitted {
					fm, ok := fit[ch]
					if !ok {
						t.Fatalf("%s: the characterisation fitted no model for %s", preset, ch)
					}
					use = fm
				}
				ser := correct.Prepare(s, use, correct.Options{})
				for _, rg := range regions {
					a, b := rg.a+ph, rg.b+ph
					res := ser.Energy(a, b)
					tr := r.truth(ch, a, b)
					o := outcome{preset: preset, ch: ch, phase: ph, rg: rg, m: m, used: use, truth: tr,
						corr: (res.Energy.Joules() - tr) / tr, raw: (res.EnergyRaw.Joules() - tr) / tr}
					// Changes that move the readings of the region: up to a window (or
					// three time constants) before it.
					reach := m.Window
					if m.Kind() == sensormodel.RC {
						reach = 3 * m.Tau
					}
					o.nChanges = len(r.changes(ch, a-reach+1, b-1))
					for _, dp := range r.changes(ch, a-m.Window-sm.Period, b+sm.Period) {
						o.stepSum += dp
					}
					// A partial channel places a step it did not see at the middle of the
					// unseen part of its period: up to (T − W)/2 off (plus the update jitter).
					T := sm.Period.Seconds()
					for _, dp := range r.changes(ch, a-sm.Period, b+sm.Period) {
						o.bound += dp * ((T-sm.Window.Seconds())/2 + sm.Jitter*T + 1e-3)
					}
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// TestSimPresets records every preset through the script (Sampler busy-polling, so that
// timestamps are exact to 0.1 ms), for four phases of the script against the sensors'
// updates, and measures every region with each board channel's model as gpuwatt's own
// `sensor --quick` fitted it on a separate twin (fittedModels: tau, window and delay a
// little off the generating ones, never those). The truth stays step-shaped here; ramps,
// fast square waves, cap steps and the intervals are internal/energy's
// TestIntervalCalibration. With the fitted models:
//
//   - the K20's RC channel and the 1 s moving averages: within 2 % of the truth for every
//     region of 500 ms or more and within 3 % for the 200–300 ms bursts measured on their
//     edges (a fitted delay a few ms off shifts both edges: 4 ms is 2 % of 200 ms), where
//     the naive integration misses by 5 % to 200 %;
//   - the 20 ms buffer whose windows tile the time (Hopper, A100): the same;
//   - the H200's power.samples (a 14 ms lag read every 20 ms): the same, also on regions
//     whose edges fall on a step of the power (inverted with the edges as breakpoints);
//   - the partial windows (25 ms of every 100 ms on A100/H100/H200, 10 of 20 ms on the
//     V100): within 2 % where the power is steady; where it changes inside or near the
//     region, no model can do better than placing each unseen step somewhere in the unseen
//     75 ms of its period, and the error is checked against that limit instead: up to 14 %
//     on a 200 ms burst measured on its edges, 20 % on 500 ms right after a step down, 23 %
//     on 500 ms around a 40 ms blip (docs/energy.md has the figures).
//
// The NVIDIA presets only: the AMD twin's channel (power.socket_current, 1 ms) is not among
// the channels checked here, and recording it cost 6 s for nothing; serve's
// TestEnergyAgainstTruth checks its corrected energy against the twin's truth.
func TestSimPresets(t *testing.T) {
	var presets []string
	for _, p := range sim.Presets() {
		if cfg, _ := sim.Preset(p); cfg.Vendor != sim.VendorAMD {
			presets = append(presets, p)
		}
	}
	// Without GPUWATT_SLOW_TESTS: a part-time boxcar board (v100: 10 ms of every 20) and an
	// RC board (k20), the cheapest two.
	presets = testkit.Presets(t, presets, "v100", "k20")
	outs := measureAll(t, sensor.Options{Mode: sensor.Max}, presets, true)
	for _, o := range outs {
		what := fmt.Sprintf("%s %s (fitted %s), phase %v, %s [%v, %v]: truth %.2f J, corrected %+.2f %%, naive %+.2f %%",
			o.preset, o.ch, o.used, o.phase, o.rg.name, o.rg.a+o.phase, o.rg.b+o.phase, o.truth, 100*o.corr, 100*o.raw)
		switch classOf(o.m) {
		case classRC, classDense, classTiled:
			if tol := fittedTolerance(o.rg); math.Abs(o.corr) > tol {
				t.Errorf("%s: want within %.0f %%", what, 100*tol)
			}
		case classPartial:
			if o.nChanges == 0 && o.bound == 0 && math.Abs(o.corr) > 0.02 {
				t.Errorf("%s: steady, want within 2 %%", what)
			}
			if lim := o.bound + 0.01*o.truth; math.Abs(o.corr*o.truth) > lim {
				t.Errorf("%s: beyond the sampling limit of %.2f J", what, lim)
			}
		}
		// The naive integration of a lagging channel misses by much more wherever the
		// power changed within its reach (long regions average the lag out).
		// (A lag far shorter than the region, the H200's 14 ms, costs the naive sum little.)
		if c := classOf(o.m); (c == classRC && o.m.Tau >= 100*time.Millisecond || c == classDense) && o.nChanges > 0 && o.rg.b-o.rg.a <= 4*time.Second {
			if math.Abs(o.raw) < 0.05 || math.Abs(o.raw) < 5*math.Abs(o.corr) {
				t.Errorf("%s: want the naive error >= 5 %% and >= 5 × the corrected one", what)
			}
		}
	}
	logSummary(t, "exact timestamps (--poll max)", outs)
}

// TestSimPresetsAdaptivePoll is TestSimPresets (fitted models) with the Sampler's default
// adaptive polling, whose timestamps are off by up to ±T/16 × 1.25 (±8 ms for a 100 ms
// channel). The K20's RC channel keeps within TestSimPresets' tolerance. A 1 s boxcar's deconvolution multiplies a timestamp error δ
// on a ramp into an energy error of ΔP·δ per reading it uses near a change: it keeps
// within 2 % + 2 × ΔP × 8 ms per change in reach (up to about 10 % on a 500 ms region right
// after a 350 W step), still far below the naive integration's 40–200 %.
func TestSimPresetsAdaptivePoll(t *testing.T) {
	testkit.Slow(t) // 21 s: a second pass over the presets
	if testing.Short() {
		t.Skip("a second pass over the presets")
	}
	outs := measureAll(t, sensor.Options{}, []string{"h100", "k20"}, true)
	for _, o := range outs {
		what := fmt.Sprintf("%s %s (fitted %s), phase %v, %s: truth %.2f J, corrected %+.2f %%, naive %+.2f %%",
			o.preset, o.ch, o.used, o.phase, o.rg.name, o.truth, 100*o.corr, 100*o.raw)
		tol := fittedTolerance(o.rg)
		switch classOf(o.m) {
		case classRC, classTiled:
			if math.Abs(o.corr) > tol {
				t.Errorf("%s: want within %.0f %%", what, 100*tol)
			}
		case classDense:
			lim := 2 * o.stepSum * 0.008
			if math.Abs(o.corr*o.truth) > tol*o.truth+lim {
				t.Errorf("%s: want within %.0f %% + %.2f J", what, 100*tol, lim)
			}
		}
	}
	logSummary(t, "adaptive polling (the default)", outs)
}

// logSummary logs, per preset and channel, the worst corrected and naive errors over the
// phases, for docs/energy.md (go test -run TestSimPresets -v ./internal/correct).
func logSummary(t *testing.T, title string, outs []outcome) {
	type key struct{ preset, ch, rg string }
	type worst struct{ corr, raw float64 }
	w := map[key]worst{}
	var order []key
	for _, o := range outs {
		k := key{o.preset, o.ch, o.rg.name}
		v, ok := w[k]
		if !ok {
			order = append(order, k)
		}
		if math.Abs(o.corr) > math.Abs(v.corr) {
			v.corr = o.corr
		}
		if math.Abs(o.raw) > math.Abs(v.raw) {
			v.raw = o.raw
		}
		w[k] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "worst error over %d phases, %s:\n", len(phases), title)
	last := ""
	for _, k := range order {
		if k.preset+k.ch != last {
			fmt.Fprintf(&b, "%s %s\n", k.preset, k.ch)
			last = k.preset + k.ch
		}
		fmt.Fprintf(&b, "  %-28s corrected %+7.2f %%   naive %+8.2f %%\n", k.rg, 100*w[k].corr, 100*w[k].raw)
	}
	t.Log(b.String())
}

// fittedTolerance is the error allowed with fitted models: 2 %, or 3 % on regions shorter
// than 500 ms (a fitted delay a few ms off moves both edges of a 200 ms burst).
func fittedTolerance(rg region) float64 {
	if rg.b-rg.a < 500*time.Millisecond {
		return 0.03
	}
	return 0.02
}

// fittedModels characterises preset's sensors with gpuwatt's own `sensor` (quick) on a twin
// of its own (another seed than the recordings'), as a user would before correcting: the
// models carry fitted values, a few per cent off the generating ones, never those.
func fittedModels(t testing.TB, preset string) map[string]sensormodel.Model {
	t.Helper()
	cfg := simtest.Preset(t, preset)
	cfg.Seed += 1000
	sm := simtest.OpenConfig(t, cfg)
	rep, err := sensorchar.Measure(context.Background(), sm.Clock, sm.Dev, sm.Dev, sensorchar.Options{Quick: true})
	if err != nil {
		t.Fatalf("%s: characterising the twin: %v", preset, err)
	}
	out := map[string]sensormodel.Model{}
	for name, c := range rep.Profile().Channels {
		out[name] = c.Model
	}
	return out
}
