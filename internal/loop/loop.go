// Package loop is the measurement loop of seed 002 (§4.2.3) as a Go API: a Meter records
// the GPUs with a Sampler throughout (init); Measure warms a kernel up to its top clock
// state, chooses the number of launches so that the measurement spans enough sensor
// updates, and brackets them with events whose times lie on the trace's clock (start, end);
// Stop turns every measurement into energy, power, clocks and clock-event shares from the
// recorded trace. Several GPUs may be measured at once, from one goroutine each.
package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Options of one measurement. The zero value gives the defaults.
type Options struct {
	// Warmup is how long the kernel runs back to back before the measurement, so the GPU
	// reaches the clock state it holds under this load (default 1 s; negative: none).
	Warmup time.Duration
	// MinUpdates is how many updates of the GPU's power channels one measurement must span
	// (default 50).
	MinUpdates int
	// MinDuration and MaxDuration bound one measurement (defaults 0 and 30 s).
	MinDuration, MaxDuration time.Duration
	// Launches fixes the number of launches (0: chosen from the above).
	Launches int
}

// Validate reports the first option out of range, naming its flag.
func (o Options) Validate() error {
	switch {
	case o.MinUpdates < 0:
		return fmt.Errorf("--min-updates %d: want a positive count", o.MinUpdates)
	case o.MinDuration < 0:
		return fmt.Errorf("--min-duration %s: want a positive duration", o.MinDuration)
	case o.MaxDuration < 0:
		return fmt.Errorf("max duration %s: want a positive duration", o.MaxDuration)
	case o.MaxDuration > 0 && o.MinDuration > o.MaxDuration:
		return fmt.Errorf("--min-duration %s: longer than the longest measurement (%s)", o.MinDuration, o.MaxDuration)
	case o.Launches < 0:
		return fmt.Errorf("launches %d: want a positive count", o.Launches)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Warmup == 0 {
		o.Warmup = time.Second
	}
	if o.MinUpdates <= 0 {
		o.MinUpdates = 50
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = 30 * time.Second
	}
	return o
}

// Measurement is one measured kernel.
type Measurement struct {
	Name      string        `json:"name"`
	GPU       int           `json:"gpu"`
	Launches  int           `json:"launches"`
	Start     time.Duration `json:"-"` // first launch's start, on the trace's axis
	End       time.Duration `json:"-"` // last launch's end
	StartS    float64       `json:"start_s"`
	EndS      float64       `json:"end_s"`
	PerLaunch float64       `json:"time_per_launch_s"`
	// WarmupLaunches ran before the measurement; UpdatePeriodS is the sensor update period
	// the number of launches was chosen from, Updates how many it spans.
	WarmupLaunches int     `json:"warmup_launches"`
	UpdatePeriodS  float64 `json:"update_period_s"`
	Updates        float64 `json:"updates_spanned"`
	// Region holds energy, power, clocks and clock events over [Start, End], filled by
	// Meter.Stop; its idle baseline is the Idle pause before the warm-up, if any.
	Region   region.Summary   `json:"region"`
	Warnings []status.Warning `json:"warnings"`

	idle [2]time.Duration // the GPU's idle window when the measurement was taken
}

// CodeCapped is the warning that a measurement was cut at Options.MaxDuration before it
// spanned the sensor updates it wanted.
const CodeCapped status.Code = "duration_capped"

// Meter records GPUs while kernels are measured.
type Meter struct {
	clk  clock.Clock
	smp  *sensor.Sampler
	devs []gpu.Device

	mu    sync.Mutex
	ms    []*Measurement
	marks []trace.Mark
	idle  map[int][2]time.Duration // per GPU: the last idle window recorded
	cals  map[int]*energy.Calibration
	done  bool
}

// Idle records d of the GPU doing nothing; its power is the idle baseline (pi0's
// counterpart, shown apart from the dynamic energy) of the measurements that follow.
func (m *Meter) Idle(ctx context.Context, gpuIndex int, d time.Duration) error {
	t0 := m.clk.Now()
	if err := m.clk.Sleep(ctx, d); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.idle == nil {
		m.idle = map[int][2]time.Duration{}
	}
	m.idle[gpuIndex] = [2]time.Duration{t0, m.clk.Now()}
	m.marks = append(m.marks, trace.Mark{T: t0.Seconds(), Name: fmt.Sprintf("gpu%d.idle.start", gpuIndex)}, trace.Mark{T: m.clk.Now().Seconds(), Name: fmt.Sprintf("gpu%d.idle.end", gpuIndex)})
	return nil
}

// Start begins recording every channel of the given devices.
func Start(ctx context.Context, clk clock.Clock, devs []gpu.Device, poll sensor.Options) (*Meter, error) {
	var sensors []sensor.Sensor
	for _, d := range devs {
		sensors = append(sensors, d.Sensors()...)
	}
	smp := sensor.New(clk, sensors, poll)
	if err := smp.Start(ctx); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	return &Meter{clk: clk, smp: smp, devs: devs}, nil
}

// Sampler is the Meter's Sampler (for its learned periods and channel list).
func (m *Meter) Sampler() *sensor.Sampler { return m.smp }

// Measure measures kernel k of device gpuIndex (an index into the Meter's devices' Info
// indices). The returned Measurement has its timing now; its Region is filled by Stop.
func (m *Meter) Measure(ctx context.Context, gpuIndex int, k gpu.Kernel, name string, opt Options) (*Measurement, error) {
	opt = opt.withDefaults()
	me := &Measurement{Name: name, GPU: gpuIndex, Warnings: []status.Warning{}}
	m.mu.Lock()
	me.idle = m.idle[gpuIndex]
	m.mu.Unlock()
	// Warm-up: one launch to time it, then batches of about 0.1 s until Warmup has passed.
	per := time.Duration(0)
	if opt.Warmup > 0 {
		t0 := m.clk.Now()
		for m.clk.Now()-t0 < opt.Warmup {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := 1
			if per > 0 {
				n = max(1, int(100*time.Millisecond/per))
			}
			s, e, err := k.Run(n)
			if err != nil {
				return nil, fmt.Errorf("%s: warm-up: %w", name, err)
			}
			per = (e - s) / time.Duration(n)
			me.WarmupLaunches += n
		}
	}
	n := opt.Launches
	T := m.updatePeriod(gpuIndex)
	me.UpdatePeriodS = T.Seconds()
	if n <= 0 {
		if per <= 0 {
			s, e, err := k.Run(1)
			if err != nil {
				return nil, fmt.Errorf("%s: timing launch: %w", name, err)
			}
			per = e - s
		}
		want := max(time.Duration(opt.MinUpdates)*T, opt.MinDuration)
		want = min(want, opt.MaxDuration)
		n = max(1, int(math.Ceil(float64(want)/float64(max(per, time.Nanosecond)))))
	}
	m.smp.Poke()
	start, end, err := k.Run(n)
	m.smp.Poke()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	me.Launches, me.Start, me.End = n, start, end
	me.StartS, me.EndS = start.Seconds(), end.Seconds()
	me.PerLaunch = (end - start).Seconds() / float64(n)
	if T > 0 {
		me.Updates = float64(end-start) / float64(T)
		if me.Updates < float64(opt.MinUpdates)*0.95 && opt.Launches == 0 {
			me.Warnings = append(me.Warnings, status.Warning{Code: CodeCapped, Key: fmt.Sprintf("spans few sensor updates (capped at %s)", opt.MaxDuration),
				Value: math.Round(me.Updates), Unit: "updates", Message: fmt.Sprintf("spans only %.0f sensor updates (capped at %s)", me.Updates, opt.MaxDuration)})
		}
	}
	m.mu.Lock()
	m.ms = append(m.ms, me)
	m.marks = append(m.marks, trace.Mark{T: start.Seconds(), Name: name + ".start"}, trace.Mark{T: end.Seconds(), Name: name + ".end"})
	m.mu.Unlock()
	return me, nil
}

// updatePeriod is the longest learned update period of the GPU's power channels (the one
// that limits how well a measurement is resolved), at most 1 s. Counters are left out:
// they are read at both ends of a measurement, and a counter read sparingly to save CPU
// (the H200's, every ~1-2 s) shows its poll interval as its period, not its 100 ms updates;
// the sample ring is left out too (it sees every 20 ms sample anyway).
func (m *Meter) updatePeriod(gpuIndex int) time.Duration {
	var T time.Duration
	for _, ch := range m.smp.Channels() {
		if ch.GPU != gpuIndex || ch.Setting || ch.Buffered || ch.Cumulative {
			continue
		}
		if ch.Quantity == trace.QPower {
			T = max(T, m.smp.UpdatePeriod(ch.GPU, ch.Name))
		}
	}
	return min(T, time.Second)
}

// Stop ends the recording, fills every measurement's Region from the trace (each
// measurement's energy from the counter where it has enough readings inside, else from the
// sample ring on the counter's scale, calibrated over the whole session), and returns
// the trace (its Meta has channels, samples, marks and the GPUs; the caller adds the rest).
func (m *Meter) Stop() (*trace.Trace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil, errors.New("meter already stopped")
	}
	m.done = true
	chans, samples := m.smp.Stop()
	_, end := m.smp.Span()
	tr := &trace.Trace{Meta: trace.Meta{
		Format:      trace.Format,
		Start:       m.clk.Epoch(),
		Duration:    end.Seconds(),
		Channels:    chans,
		Unavailable: m.smp.Unavailable(),
		Marks:       m.marks,
	}, Samples: samples}
	info := map[int]trace.GPU{}
	for _, d := range m.devs {
		i := d.Info()
		info[i.Index] = i
		tr.Meta.GPUs = append(tr.Meta.GPUs, i)
	}
	// One calibration per GPU over the whole session, idle included: every counter reading
	// recorded against the ring's integral up to it (see energy.FitCalibration).
	cals := map[int]*energy.Calibration{}
	for _, g := range tr.Meta.GPUs {
		if c, err := energy.FitCalibration(tr, g.Index, 0, 0); err == nil {
			cals[g.Index] = &c
		}
	}
	m.cals = cals
	// Every measurement's region is estimated on the one trace: each channel prepared once.
	cache := &energy.Cache{}
	for _, me := range m.ms {
		me.Region = region.Summarize(tr, info[me.GPU], me.Start, me.End, me.idle[0], me.idle[1], region.Options{What: "the measurement", Steady: true, Calibration: cals[me.GPU], EnergyCache: cache, IdleLevel: correct.ActiveIdle})
	}
	return tr, nil
}

// Calibration is the calibration of GPU gpuIndex's best complete board channel to its
// energy counter, fitted by Stop over every counter reading of the session (nil before
// Stop, or where none could be fitted: then each measurement's Region says why).
func (m *Meter) Calibration(gpuIndex int) *energy.Calibration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cals[gpuIndex]
}

// Failure is a kernel MeasureAll could not measure, and why.
type Failure struct {
	Name string
	Err  error
}

// MeasureAll prepares and measures each descriptor in turn on GPU gpuIndex. The result has
// one entry per descriptor, nil for a kernel that could not be prepared or measured (it is
// listed among the failures and the rest go on) or was not reached. An interruption (ctx)
// ends the run and returns ctx's error; a kernel that hangs (gpu.ErrKernelHung) ends it
// with that error, the kernel listed among the failures. progress is told each kernel before it runs (its
// name as the Step, I of N).
func (m *Meter) MeasureAll(ctx context.Context, gpuIndex int, exec gpu.Executor, ds []kernels.Descriptor, opt Options, progress status.Progress) ([]*Measurement, []Failure, error) {
	out := make([]*Measurement, len(ds))
	var failed []Failure
	for i, d := range ds {
		if err := ctx.Err(); err != nil {
			return out, failed, err
		}
		progress.Emit(status.Event{Step: d.Name, I: i + 1, N: len(ds)})
		k, err := exec.Prepare(d)
		if err != nil {
			failed = append(failed, Failure{d.Name, err})
			continue
		}
		me, err := m.Measure(ctx, gpuIndex, k, d.Name, opt)
		k.Close()
		if ctx.Err() != nil {
			return out, failed, ctx.Err()
		}
		if errors.Is(err, gpu.ErrKernelHung) {
			// The GPU is still running it: the kernels after it cannot run. The run ends
			// with what was measured before it, naming the kernel.
			failed = append(failed, Failure{d.Name, err})
			return out, failed, err
		}
		if err != nil {
			failed = append(failed, Failure{d.Name, err})
			continue
		}
		out[i] = me
	}
	return out, failed, nil
}

// Suite is a run of RunSuite.
type Suite struct {
	// Measured has one entry per descriptor, nil where the kernel was not measured.
	Measured []*Measurement
	Failed   []Failure
	Trace    *trace.Trace
	// Calibration is the sample ring's calibration to the energy counter (nil: none).
	Calibration *energy.Calibration
	// Err is what ended the run early (ctx's error for an interruption); nil: it ran through.
	Err error
}

// RunSuite idles GPU gpuIndex for idle, measures ds in turn (MeasureAll) and stops the
// Meter. The error is the Meter's failure to stop, after which there is no trace; an
// early end of the run is Suite.Err, with what was measured before it kept.
func (m *Meter) RunSuite(ctx context.Context, gpuIndex int, exec gpu.Executor, ds []kernels.Descriptor, idle time.Duration, opt Options, progress status.Progress) (Suite, error) {
	var s Suite
	s.Err = m.Idle(ctx, gpuIndex, idle)
	if s.Err == nil {
		s.Measured, s.Failed, s.Err = m.MeasureAll(ctx, gpuIndex, exec, ds, opt, progress)
	}
	tr, err := m.Stop()
	if err != nil {
		return Suite{}, err
	}
	if hung := m.smp.Hung(); len(hung) > 0 && s.Err == nil {
		// A driver call that never returned: what was measured before it is kept, and
		// the run says it is incomplete, naming the call (as measure does).
		s.Err = errors.New("a driver call hangs: " + strings.Join(hung, "; "))
	}
	s.Trace, s.Calibration = tr, m.Calibration(gpuIndex)
	return s, nil
}

// Tell puts the run's failures on st as warnings with code (subject: the kernel) and marks
// st incomplete where the run ended early ("interrupted" where ctx ended it); it returns
// the names of the kernels that failed.
func (s Suite) Tell(ctx context.Context, st *status.Status, code status.Code) []string {
	var names []string
	for _, f := range s.Failed {
		st.Warn(status.Warning{Code: code, Subject: f.Name, Message: fmt.Sprintf("not measured: %v", f.Err)})
		names = append(names, f.Name)
	}
	if s.Err != nil {
		if ctx.Err() != nil {
			st.MarkIncomplete(status.Interrupted(ctx))
		} else {
			st.MarkIncomplete(s.Err.Error())
		}
	}
	return names
}
