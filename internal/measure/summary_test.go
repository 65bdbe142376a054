package measure

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// synthetic builds a trace of one GPU drawing 100 W, then 300 W during [1 s, 3 s], then
// 100 W again until 4 s: a power channel sampled every 10 ms, an energy counter every
// 100 ms, an SM clock and a throttle mask with sw_power_cap set during [2 s, 3 s].
func synthetic() *Result {
	start, end := time.Second, 3*time.Second
	p := func(t time.Duration) float64 {
		if t >= start && t < end {
			return 300
		}
		return 100
	}
	var ss []trace.Sample
	for t := time.Duration(0); t <= 4*time.Second; t += 10 * time.Millisecond {
		ss = append(ss, trace.Sample{T: t, Channel: "power.samples", Value: p(t)})
	}
	// The counter: exact integral of the step function.
	e := 0.0
	var prev time.Duration
	for t := time.Duration(0); t <= 4*time.Second; t += time.Millisecond {
		e += p(prev) * (t - prev).Seconds()
		prev = t
		if t%(100*time.Millisecond) == 0 {
			ss = append(ss, trace.Sample{T: t, Channel: "energy.total", Value: 5000 + e})
		}
	}
	ss = append(ss,
		trace.Sample{T: 0, Channel: "clock.sm", Value: 1980e6},
		trace.Sample{T: 2 * time.Second, Channel: "clock.sm", Value: 1515e6},
		trace.Sample{T: 0, Channel: "throttle.reasons", Value: 0},
		trace.Sample{T: 2 * time.Second, Channel: "throttle.reasons", Value: 4},
		trace.Sample{T: 3 * time.Second, Channel: "throttle.reasons", Value: 0},
	)
	tr := &trace.Trace{
		Meta: trace.Meta{
			Device: "test",
			GPUs:   []trace.GPU{{Index: 0, Name: "Test GPU", UUID: "GPU-test", PowerLimitW: 700}},
			Channels: []trace.Channel{
				{Name: "power.samples", Quantity: trace.QPower, Unit: "W", Buffered: true, Stats: &trace.ChannelStats{UpdatePeriod: 0.01}},
				// Read every 1 ms: each new value is seen within 1 ms of its update.
				{Name: "energy.total", Quantity: trace.QEnergy, Unit: "J", Cumulative: true, Stats: &trace.ChannelStats{UpdatePeriod: 0.1, PollInterval: 0.001}},
				{Name: "clock.sm", Quantity: trace.QFrequency, Unit: "Hz"},
				{Name: "throttle.reasons", Quantity: trace.QReasons, Unit: "mask"},
			},
			Duration: 4,
			Poll:     trace.Poll{Mode: "adaptive"},
		},
	}
	sortSamples(ss)
	tr.Samples = ss
	return &Result{Trace: tr, Start: start, End: end}
}

func sortSamples(ss []trace.Sample) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].T < ss[j-1].T; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSummarizeKnownTruth(t *testing.T) {
	t.Parallel()
	s := Summarize(synthetic(), []string{"load"}, time.Second)
	if len(s.GPUs) != 1 {
		t.Fatalf("GPUs = %d", len(s.GPUs))
	}
	g := s.GPUs[0]
	if s.DurationS != 2 {
		t.Errorf("duration = %v, want 2", s.DurationS)
	}
	if g.EnergySource != "energy.total" || !near(g.EnergyJ, 600, 0.5) {
		t.Errorf("energy = %v J from %s, want 600 J from energy.total", g.EnergyJ, g.EnergySource)
	}
	if !near(g.IdlePowerW, 100, 0.5) || !near(g.EnergyAboveIdleJ, 400, 1) {
		t.Errorf("idle %v W, above idle %v J; want 100 W, 400 J", g.IdlePowerW, g.EnergyAboveIdleJ)
	}
	// The maximum is the calibrated channel's on the counter's scale: within the
	// calibration's error of 300 W, and not below the mean.
	if !near(g.MeanPowerW, 300, 0.3) || !near(g.MaxPowerW, 300, 0.3) || g.MaxPowerW < g.MeanPowerW {
		t.Errorf("mean %v W, max %v W; want 300, 300 (max >= mean)", g.MeanPowerW, g.MaxPowerW)
	}
	var ps *ChannelSummary
	for i := range g.Channels {
		if g.Channels[i].Channel == "power.samples" {
			ps = &g.Channels[i]
		}
	}
	// Trapezoids across the 10 ms edge at 3 s smear 1 J of the step.
	if ps == nil || !near(ps.EnergyJ, 600, 1.5) || !near(ps.IdlePowerW, 100, 1.5) {
		t.Fatalf("power.samples summary = %+v", ps)
	}
	if g.SMClockMHz == nil || g.SMClockMHz.Min != 1515 || g.SMClockMHz.Max != 1980 {
		t.Errorf("SM clock = %+v", g.SMClockMHz)
	}
	if len(g.Throttle) != 1 || g.Throttle[0].Reason != "sw_power_cap" || !near(g.Throttle[0].Share, 0.5, 1e-9) {
		t.Errorf("throttle = %+v, want sw_power_cap 50 %%", g.Throttle)
	}
	if !strings.Contains(strings.Join(status.Strings(g.Warnings), "\n"), "power limit") {
		t.Errorf("no power-cap warning in %q", g.Warnings)
	}
}

func TestSummarizeDisagreementWarns(t *testing.T) {
	t.Parallel()
	r := synthetic()
	// A channel that sees only 75 % of the power: must be flagged against the counter.
	for i, x := range r.Trace.Samples {
		if x.Channel == "power.samples" {
			r.Trace.Samples[i].Value *= 0.75
		}
	}
	g := Summarize(r, []string{"load"}, time.Second).GPUs[0]
	w := strings.Join(status.Strings(g.Warnings), "\n")
	if !strings.Contains(w, "power.samples and energy.total disagree by -25.") {
		t.Errorf("warnings = %q", g.Warnings)
	}
}

func TestSummarizeNoBaseline(t *testing.T) {
	t.Parallel()
	r := synthetic()
	r.Start = 0
	g := Summarize(r, []string{"load"}, 0).GPUs[0]
	if !strings.Contains(strings.Join(status.Strings(g.Warnings), "\n"), "no idle baseline") {
		t.Errorf("warnings = %q", g.Warnings)
	}
}

func TestCancelledRunnerIsAnInterruption(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, err := ExecRunner{}.Run(ctx, []string{"true"})
	if code != 130 || errors.Is(err, ErrCommandNotFound) || !errors.Is(err, context.Canceled) {
		t.Fatalf("code %d, err %v: want 130 and context.Canceled", code, err)
	}
}

func TestBaselineCounterAtOneInstant(t *testing.T) {
	t.Parallel()
	s := []trace.Sample{{T: 500 * time.Millisecond, Value: 10}, {T: 500 * time.Millisecond, Value: 10.001}, {T: 1500 * time.Millisecond, Value: 200}}
	if p := baselinePowerForTest(s); p != 0 {
		t.Fatalf("idle power %v from readings at one instant, want 0", p)
	}
}

// baselinePowerForTest runs region.Summarize on a counter with the given baseline readings.
func baselinePowerForTest(s []trace.Sample) float64 {
	for i := range s {
		s[i].Channel = "energy.total"
	}
	tr := &trace.Trace{Samples: append(s, trace.Sample{T: 3 * time.Second, Channel: "energy.total", Value: 500})}
	tr.Meta.Channels = []trace.Channel{{Name: "energy.total", Quantity: trace.QEnergy, Cumulative: true}}
	return region.Summarize(tr, trace.GPU{}, time.Second, 2*time.Second, 0, time.Second, region.Options{}).Channels[0].IdlePowerW
}

// TestTotalAddsBoundsAndNamesAMissingBoard: the GPUs' total adds their bounds (their
// intervals share the command's edges), and where a board has no figure the total is
// the others', marked partial, with the board named (before issue 27 it had no interval
// at all, written as absent keys).
func TestTotalAddsBoundsAndNamesAMissingBoard(t *testing.T) {
	t.Parallel()
	a := GPUSummary{Index: 0, EnergySource: "energy.total", EnergyAboveIdleJ: 60,
		Interval: energy.Interval{EnergyJ: 100, LowJ: 98, HighJ: 102, AbsoluteLowJ: 94, AbsoluteHighJ: 106}}
	b := a
	b.Index, b.Interval = 1, energy.Interval{EnergyJ: 50, LowJ: 49, HighJ: 51, AbsoluteLowJ: 47, AbsoluteHighJ: 53, Partial: true}
	got := total([]GPUSummary{a, b}, 10)
	want := energy.Interval{EnergyJ: 150, LowJ: 147, HighJ: 153, AbsoluteLowJ: 141, AbsoluteHighJ: 159, Partial: true}
	if got.Interval != want || got.Missing != "" || got.MeanPowerW != 15 || got.EnergyAboveIdleJ != 120 {
		t.Errorf("total %+v, want %+v, 15 W, 120 J above idle, nothing missing", *got, want)
	}
	none := GPUSummary{Index: 2}
	got = total([]GPUSummary{a, none}, 10)
	if got.Interval != (energy.Interval{EnergyJ: 100, LowJ: 98, HighJ: 102, AbsoluteLowJ: 94, AbsoluteHighJ: 106, Partial: true}) || got.Missing != "no energy figure for GPU 2" {
		t.Errorf("total with a board without a figure: %+v", *got)
	}
	if total([]GPUSummary{a}, 10) != nil {
		t.Error("a total of one GPU")
	}
}

// TestSlowCounterCallsWarned: counter readings the Sampler left out because their calls
// were too slow to place in time are told as a warning naming the channel and the count;
// none, no warning.
func TestSlowCounterCallsWarned(t *testing.T) {
	t.Parallel()
	r := synthetic()
	s := Summarize(r, []string{"load"}, time.Second)
	for _, w := range s.GPUs[0].Warnings {
		if w.Code == region.CodeSlowCalls {
			t.Fatalf("no slow calls, but warned: %s", w.Message)
		}
	}
	r = synthetic()
	for i := range r.Trace.Meta.Channels {
		if c := &r.Trace.Meta.Channels[i]; c.Name == "energy.total" {
			c.Stats.Polls, c.Stats.SlowDropped, c.Stats.SlowestCall = 40, 9, 2.9
		}
	}
	s = Summarize(r, []string{"load"}, time.Second)
	var got []string
	for _, w := range s.GPUs[0].Warnings {
		if w.Code == region.CodeSlowCalls {
			got = append(got, w.Message)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "energy.total: 9 of 40 readings left out") || !strings.Contains(got[0], "2.9 s") {
		t.Errorf("slow-call warnings %q", got)
	}
}
