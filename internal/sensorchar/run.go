// Package sensorchar characterises the power sensors of a GPU (`gpuwatt sensor`): for each
// power channel its call latency, update period T and jitter, delay, boxcar window W or
// first-order lag tau, from a step response and the square-wave loads of Yang et al.
// (periods T/2 and T/4, eight phases), all fitted against the known schedule of gpuwatt's
// own fp32 FMA kernel; the steady-state agreement of the channels with each other and
// with the energy counter; and the anomaly tests of Burtscher et al. (seed 003): doubling,
// back-to-back and the tail energy after a kernel, on corrected and on naive energy.
package sensorchar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Options of a characterisation. The zero value is the full run with --poll max.
type Options struct {
	// Quick shortens every phase (about 25 s of GPU time instead of about 45 s).
	Quick bool
	// Poll overrides the Sampler's options (default: Max, busy polling; on a virtual
	// clock every 100 µs).
	Poll *sensor.Options
	// Progress is told each phase as it starts (stage "sensor").
	Progress status.Progress
	// GPU is the GPU to characterise (index in the opened system; Options.Run).
	GPU int
}

// plan is the length of each phase.
type plan struct {
	idle, step, gap, b2bGap, tail, single time.Duration
	phases                                int
}

func (o Options) plan() plan {
	if o.Quick {
		return plan{idle: 1500 * time.Millisecond, step: 3500 * time.Millisecond, gap: 2500 * time.Millisecond, b2bGap: time.Second,
			tail: 4 * time.Second, single: time.Second, phases: 4}
	}
	return plan{idle: 2 * time.Second, step: 5 * time.Second, gap: 3 * time.Second, b2bGap: time.Second,
		tail: 8 * time.Second, single: time.Second, phases: 8}
}

// segment is a named span of the recording.
type segment struct {
	name       string
	start, end time.Duration
}

// recording is what run produced: the trace, the load's on-intervals and the phases.
type recording struct {
	tr        *trace.Trace
	on        [][2]float64 // every kernel run of the characterisation, s
	idle      segment      // initial idle
	step      segment      // the step load
	waves     []segment    // square waves, one per (T, L)
	waveLoad  []float64    // L of each wave, s
	charEnd   time.Duration
	runs      map[string]segment // anomaly runs: A (single), B (double), C, D (back-to-back)
	tailEnd   time.Duration
	periods   []time.Duration // distinct update periods the waves were built for
	perLaunch time.Duration
}

// channels returns the sensors to characterise: power channels and energy counters.
func channels(dev gpu.Device) []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range dev.Sensors() {
		ch := s.Channel()
		if ch.Setting || ch.Name == trace.ChPowerLimit {
			continue
		}
		if ch.Quantity == trace.QPower || (ch.Quantity == trace.QEnergy && ch.Cumulative) {
			out = append(out, s)
		}
	}
	return out
}

// record runs the experiment on dev while a Sampler records its power channels.
func record(ctx context.Context, clk clock.Clock, dev gpu.Device, exec gpu.Executor, opt Options) (out *recording, err error) {
	p := opt.plan()
	props := exec.Props()
	kd := kernels.Device{CC: props.ComputeCapability, SMs: props.SMs, ThreadsPerSM: props.MaxThreadsPerSM, ClockHz: props.MaxSMClockHz}
	desc, err := kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kd, LaunchTime: 500 * time.Microsecond})
	if err != nil {
		// An older board than the PTX targets know (the sim's K20): the lowest target.
		kd.CC = "7.0"
		desc, err = kernels.Arith(kernels.FP32FMA, kernels.Opts{Device: kd, LaunchTime: 500 * time.Microsecond})
	}
	if err != nil {
		return nil, fmt.Errorf("fp32 FMA kernel: %w", err)
	}
	k, err := exec.Prepare(desc)
	if err != nil {
		return nil, fmt.Errorf("fp32 FMA kernel: %w", err)
	}
	defer k.Close()
	progress := func(x string) { opt.Progress.Emit(status.Event{Stage: "sensor", Step: x}) }
	var per time.Duration // one launch, timed at the start of the step

	popt := sensor.Options{Mode: sensor.Max}
	if opt.Poll != nil {
		popt = *opt.Poll
	}
	sens := channels(dev)
	if len(sens) == 0 {
		return nil, errors.New("the GPU has no power channel")
	}
	smp := sensor.New(clk, sens, popt)
	if err := smp.Start(ctx); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	rec := &recording{runs: map[string]segment{}}
	var marks []trace.Mark
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		chans, samples := smp.Stop()
		_, end := smp.Span()
		rec.tr = &trace.Trace{Meta: trace.Meta{Format: trace.Format, Start: clk.Epoch(), Duration: end.Seconds(),
			Channels: chans, Unavailable: smp.Unavailable(), Marks: marks, GPUs: []trace.GPU{dev.Info()}}, Samples: samples}
	}
	defer stop()
	defer func() {
		if err != nil && ctx.Err() != nil {
			out = rec // cut short: the recording so far (stop, deferred before, fills its trace)
		}
	}()

	load := func(d time.Duration) (segment, error) {
		n := max(1, int(math.Round(float64(d)/float64(per))))
		s, e, err := k.Run(n)
		if err != nil {
			return segment{}, err
		}
		rec.on = append(rec.on, [2]float64{s.Seconds(), e.Seconds()})
		return segment{start: s, end: e}, nil
	}
	sleep := func(d time.Duration) error { return clk.Sleep(ctx, d) }
	mark := func(name string, t time.Duration) { marks = append(marks, trace.Mark{T: t.Seconds(), Name: name}) }

	// 1. Idle: the update periods, and the idle level.
	progress("idle")
	t0 := clk.Now()
	if err := sleep(p.idle); err != nil {
		return nil, err
	}
	rec.idle = segment{"idle", t0, clk.Now()}
	mark("idle.start", t0)
	mark("idle.end", clk.Now())
	gpuIdx := dev.Info().Index
	var found []time.Duration
	for _, ch := range smp.Channels() {
		if ch.Quantity != trace.QPower {
			continue
		}
		T := smp.UpdatePeriod(gpuIdx, ch.Name).Round(time.Millisecond)
		if T >= 2*time.Millisecond && T <= time.Second {
			found = append(found, T)
		}
	}
	rec.periods = distinctPeriods(found, opt.Quick)

	// 2. The step: idle → steady load.
	progress("step response")
	s1, e1, err := k.Run(1)
	if err != nil {
		return nil, fmt.Errorf("fp32 FMA kernel: %w", err)
	}
	per = max(e1-s1, time.Microsecond)
	rec.perLaunch = per
	st, err := load(p.step - per)
	if err != nil {
		return nil, err
	}
	st.start = s1
	rec.on[len(rec.on)-1][0] = s1.Seconds()
	st.name = "step"
	rec.step = st
	mark("step.start", st.start)
	mark("step.end", st.end)

	// 3. Phase-stepped edges and square waves, for each distinct update period T, with no
	// idle in between, so that the GPU stays at active idle between loads.
	for _, T := range rec.periods {
		progress(fmt.Sprintf("square waves for T = %v", T))
		for i := range p.phases {
			d := 3*T + time.Duration(i)*T/time.Duration(p.phases)
			if _, err := load(d); err != nil {
				return nil, err
			}
			if err := sleep(d); err != nil {
				return nil, err
			}
		}
		for _, L := range []time.Duration{T / 2, T / 4} {
			w0 := clk.Now()
			cycles := max(2, int(2*T/L))
			for i := range p.phases {
				if err := sleep(time.Duration(i) * L / time.Duration(p.phases)); err != nil {
					return nil, err
				}
				for range cycles {
					if _, err := load(L / 2); err != nil {
						return nil, err
					}
					if err := sleep(L / 2); err != nil {
						return nil, err
					}
				}
			}
			rec.waves = append(rec.waves, segment{fmt.Sprintf("wave T=%v L=%v", T, L), w0, clk.Now()})
			rec.waveLoad = append(rec.waveLoad, L.Seconds())
			mark(fmt.Sprintf("wave.%v.%v.start", T, L), w0)
			mark(fmt.Sprintf("wave.%v.%v.end", T, L), clk.Now())
		}
	}
	rec.charEnd = clk.Now()

	// 4. The anomaly tests of seed 003.
	progress("doubling, back-to-back and tail tests")
	runs := []struct {
		name      string
		gapBefore time.Duration
		d         time.Duration
	}{{"A", p.gap, p.single}, {"B", p.gap, 2 * p.single}, {"C", p.gap, p.single}, {"D", p.b2bGap, p.single}}
	nOn := len(rec.on)
	for _, r := range runs {
		if err := sleep(r.gapBefore); err != nil {
			return nil, err
		}
		seg, err := load(r.d)
		if err != nil {
			return nil, err
		}
		seg.name = r.name
		rec.runs[r.name] = seg
		mark("run."+r.name+".start", seg.start)
		mark("run."+r.name+".end", seg.end)
	}
	rec.on = rec.on[:nOn] // the fits use the characterisation's loads only
	if err := sleep(p.tail); err != nil {
		return nil, err
	}
	rec.tailEnd = clk.Now()
	smp.Poke()
	stop()
	return rec, nil
}

// distinctPeriods are the update periods the square waves are built for, longest first:
// each distinct one, and with quick only those more than 5 % apart (an H200's power.usage
// and power.instant learn 100 and 101 ms: one set of waves serves both, and saves ~4.5 s).
func distinctPeriods(ts []time.Duration, quick bool) []time.Duration {
	ts = slices.Clone(ts)
	slices.Sort(ts)
	slices.Reverse(ts)
	var out []time.Duration
	for _, T := range ts {
		if n := len(out); n > 0 && (out[n-1] == T || (quick && float64(out[n-1]-T) <= 0.05*float64(out[n-1]))) {
			continue
		}
		out = append(out, T)
	}
	return out
}
