package profile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// MaxSyncAge is how long the online variant trusts a clock sync: the paper found the
// host's and the GPU's clocks drift apart too far after about 0.2 s.
const MaxSyncAge = 200 * time.Millisecond

// MeasureOnline measures the online profile of kernel k on channel s (the paper's Alg. 2): it
// syncs to an update of the channel (polls until the value changes), launches the kernel
// at a chosen offset before the predicted next update, and takes one reading per run: the
// value of that update, caught by polling only a short window around its predicted time
// (±(T/25 + 2 polls): the update instants jitter, and a prediction alone would blur the
// profile by that much). A caught update re-syncs the clocks; without one for MaxSyncAge
// the channel is synced again by polling. Between runs the host is idle. Where the
// window is longer than the kernel, the offsets are stratified over the stretch where the
// window's start falls within the kernel, so the update comes after the kernel has ended
// and the kernel runs undisturbed; otherwise over the whole range as in Run, and updates
// during the kernel are placed at their predicted time.
func MeasureOnline(ctx context.Context, clk clock.Clock, s sensor.Sensor, k gpu.Kernel, name string, opt MeasureOptions) (*Result, error) {
	buffered := s.Channel().Buffered
	opt = opt.withDefaults(buffered)
	opt.buffered = buffered
	if err := opt.check(); err != nil {
		return nil, err
	}
	if buffered {
		return runOnlineGrid(ctx, clk, s, k, name, opt)
	}
	T, W, D := opt.Sensor.Period, opt.Sensor.Window, opt.Sensor.Delay
	pr, err := probe(k, name, opt)
	if err != nil {
		return nil, err
	}
	tex, rng, lo, hi := pr.tex, pr.rng, pr.lo, pr.hi
	trailing := W+lo >= tex+opt.Poll // lo = -m
	var plan []time.Duration
	if trailing {
		plan = strata(rng, opt.Runs, W+lo, hi, 0, 0)
	} else {
		plan = stratify(rng, opt.Runs, lo, hi, tex, W)
	}
	win := T/25 + 2*opt.Poll
	predicted := 0
	gap := max(T, D+W+time.Millisecond)
	var rbuf []sensor.Reading
	read := func() (float64, error) {
		rs, err := s.Read(rbuf[:0])
		rbuf = rs
		if err != nil {
			return 0, err
		}
		if len(rs) == 0 {
			return 0, fmt.Errorf("channel %s returned nothing", s.Channel().Name)
		}
		return rs[len(rs)-1].Value, nil
	}
	syncs := 0
	sync := func() (time.Duration, error) {
		syncs++
		last, err := read()
		if err != nil {
			return 0, err
		}
		prev := clk.Now()
		for t0 := prev; clk.Now()-t0 < 3*T; {
			if err := clk.Sleep(ctx, opt.Poll); err != nil {
				return 0, err
			}
			v, err := read()
			if err != nil {
				return 0, err
			}
			now := clk.Now()
			if v != last {
				return prev + (now-prev)/2, nil
			}
			prev = now
		}
		return 0, fmt.Errorf("channel %s did not update within %s", s.Channel().Name, 3*T)
	}
	tsync, err := sync()
	if err != nil {
		return nil, err
	}
	var runs []run
	var pts []Point
	prevEnd := pr.end
	var hung error // a run that hangs: the runs before it are analysed
	for i := 0; i < opt.Runs && ctx.Err() == nil; i++ {
		earliest := max(clk.Now(), prevEnd+gap)
		place := func() (time.Duration, time.Duration) {
			j := int((earliest - tsync + D + plan[i] + T - 1) / T)
			u := tsync + time.Duration(j)*T
			return u, u - D - plan[i]
		}
		u, start := place()
		if u-tsync > MaxSyncAge {
			if tsync, err = sync(); err != nil {
				break
			}
			earliest = max(clk.Now(), prevEnd+gap)
			u, start = place()
		}
		if err := clk.Sleep(ctx, start-clk.Now()); err != nil {
			break
		}
		before, err := read()
		if err != nil {
			return nil, err
		}
		rs, re, err := k.Run(1)
		if errors.Is(err, gpu.ErrKernelHung) && len(runs) > 0 {
			hung = fmt.Errorf("%s: run %d: %w", name, i+1, err)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: run %d: %w", name, i+1, err)
		}
		runs = append(runs, run{rs, re})
		prevEnd = re
		if err := clk.Sleep(ctx, u-win-clk.Now()); err != nil {
			break
		}
		v, err := read()
		if err != nil {
			return nil, err
		}
		if v == before {
			// poll the window around the predicted update for the actual one
			prev := clk.Now()
			for clk.Now() < u+win {
				if err := clk.Sleep(ctx, opt.Poll); err != nil {
					break
				}
				if v, err = read(); err != nil {
					return nil, err
				}
				now := clk.Now()
				if v != before {
					u, tsync = prev+(now-prev)/2, prev+(now-prev)/2
					syncs++
					break
				}
				prev = now
			}
			if v == before {
				continue // missed: no reading for this run
			}
		} else {
			predicted++ // the update came during the kernel (or before the window)
		}
		pts = append(pts, newPoint(runs, len(runs)-1, u-D, v, opt.Sensor, horizon(opt.Sensor, tex)))
		runDone(opt.Progress, i+1, opt.Runs)
	}
	if len(runs) == 0 {
		return nil, ctx.Err()
	}
	res := newResult(name, s.Channel().Name, "online", opt, runs)
	res.Syncs = syncs
	if predicted > 0 {
		res.Warnf(CodePredicted, "%d of %d readings are placed at their predicted update time (±%.2g ms of jitter)", predicted, len(pts), float64(win)/1e6)
	}
	if miss := len(runs) - len(pts); miss > 0 {
		res.Warnf(CodeMissedRuns, "%d runs saw no update near the predicted time", miss)
	}
	analyse(res, pts, meanRun(runs), opt)
	if ctx.Err() != nil {
		res.MarkIncomplete(fmt.Sprintf("%s after %d of %d runs", status.Interrupted(ctx), len(runs), opt.Runs))
	}
	markHung(res, hung, len(runs), opt.Runs)
	return res, nil
}

// runOnlineGrid is the online variant on a buffered channel (the driver's ring of
// timestamped samples). Its samples are taken on a regular grid, so the clock sync of the
// paper is a fit of that grid to the driver's timestamps (correct.Lattice) rather than a
// wait for a change of value: each run is launched so that a chosen grid instant falls at
// a chosen offset into the kernel, the ring is read once that sample can be there, and
// that one sample is the run's reading. Every read brings fresh timestamps; the grid is
// refitted from them when it is older than MaxSyncAge.
func runOnlineGrid(ctx context.Context, clk clock.Clock, s sensor.Sensor, k gpu.Kernel, name string, opt MeasureOptions) (*Result, error) {
	T, W, D := opt.Sensor.Period, opt.Sensor.Window, opt.Sensor.Delay
	pr, err := probe(k, name, opt)
	if err != nil {
		return nil, err
	}
	tex, rng, lo, hi := pr.tex, pr.rng, pr.lo, pr.hi
	plan := stratify(rng, opt.Runs, lo, hi, tex, W)
	gap := max(T, D+W+time.Millisecond)
	var rbuf []sensor.Reading
	var stamps []time.Duration
	type sample struct {
		t time.Duration
		v float64
	}
	var fresh []sample // the samples read lately
	var lastDrv int64
	read := func() error {
		rs, err := s.Read(rbuf[:0])
		rbuf = rs
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.DriverUS != 0 && r.DriverUS == lastDrv {
				continue
			}
			lastDrv = r.DriverUS
			stamps = append(stamps, r.T)
			fresh = append(fresh, sample{r.T, r.Value})
		}
		if n := len(fresh); n > 128 {
			fresh = append(fresh[:0], fresh[n-64:]...)
		}
		if n := len(stamps); n > 400 {
			stamps = append(stamps[:0], stamps[n-300:]...)
		}
		return nil
	}
	syncs := 0
	var grid correct.Lattice
	var synced time.Duration
	sync := func() error {
		syncs++
		t0 := clk.Now()
		for {
			if err := read(); err != nil {
				return err
			}
			if len(stamps) >= 24 {
				if g, ok := correct.FitLattice(stamps, T); ok {
					grid, synced = g, clk.Now()
					return nil
				}
			}
			if clk.Now()-t0 > 3*time.Second+40*T {
				return fmt.Errorf("channel %s: no regular grid of sample times found in %s (%d samples)", s.Channel().Name, clk.Now()-t0, len(stamps))
			}
			if err := clk.Sleep(ctx, opt.Poll); err != nil {
				return err
			}
		}
	}
	if err := sync(); err != nil {
		return nil, err
	}
	var runs []run
	var pts []Point
	missed := 0
	prevEnd := pr.end
	var hung error // a run that hangs: the runs before it are analysed
	for i := 0; i < opt.Runs && ctx.Err() == nil; i++ {
		if clk.Now()-synced > MaxSyncAge {
			if err := sync(); err != nil {
				break
			}
		}
		earliest := max(clk.Now(), prevEnd+gap)
		u := grid.Next(earliest + D + plan[i])
		start := u - D - plan[i]
		if err := clk.Sleep(ctx, start-clk.Now()); err != nil {
			break
		}
		rs, re, err := k.Run(1)
		if errors.Is(err, gpu.ErrKernelHung) && len(runs) > 0 {
			hung = fmt.Errorf("%s: run %d: %w", name, i+1, err)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: run %d: %w", name, i+1, err)
		}
		runs = append(runs, run{rs, re})
		prevEnd = re
		// The sample of instant u: read once it can be in the ring (the driver publishes a
		// sample 5-10 ms after its instant, now and then much later), at most three times.
		var got *sample
		for try := 0; try < 3 && got == nil; try++ {
			if err := clk.Sleep(ctx, u+time.Duration(try+1)*T-clk.Now()); err != nil {
				break
			}
			if err := read(); err != nil {
				return nil, err
			}
			for j := len(fresh) - 1; j >= 0; j-- { // the samples read so far, newest first
				if d := grid.Snap(fresh[j].t) - u; d > -T/4 && d < T/4 {
					got = &fresh[j]
					break
				}
			}
		}
		if got == nil {
			missed++
			continue
		}
		pts = append(pts, newPoint(runs, len(runs)-1, u-D, got.v, opt.Sensor, horizon(opt.Sensor, tex)))
		runDone(opt.Progress, i+1, opt.Runs)
	}
	if len(runs) == 0 {
		return nil, ctx.Err()
	}
	res := newResult(name, s.Channel().Name, "online", opt, runs)
	res.Syncs = syncs
	res.PeriodS = grid.Period.Seconds()
	res.Grid = &Grid{PeriodS: grid.Period.Seconds(), R: grid.R, OnGrid: grid.OnGrid, EarlyS: grid.Early.Seconds()}
	if missed > 0 {
		res.Warnf(CodeMissedRuns, "%d runs: their sample was not in the ring %s after its instant", missed, 3*T)
	}
	analyse(res, pts, meanRun(runs), opt)
	if ctx.Err() != nil {
		res.MarkIncomplete(fmt.Sprintf("%s after %d of %d runs", status.Interrupted(ctx), len(runs), opt.Runs))
	}
	markHung(res, hung, len(runs), opt.Runs)
	return res, nil
}

// probed is a first run of a kernel: its length tex and end, the range [lo, hi] of the
// phases of a run against the sensor's windows, and the runs' random source (opt.Seed).
type probed struct {
	tex, end, lo, hi time.Duration
	rng              *rand.Rand
}

// probe times one run of k (Alg. 1, lines 1-5) for the online variants.
func probe(k gpu.Kernel, name string, opt MeasureOptions) (probed, error) {
	s0, e0, err := k.Run(1)
	if err != nil {
		return probed{}, fmt.Errorf("%s: %w", name, err)
	}
	p := probed{tex: e0 - s0, end: e0, rng: rand.New(rand.NewPCG(opt.Seed, 0x7f4a7c159e3779b9))}
	p.lo, p.hi = phaseRange(p.tex, opt.Sensor.Window, opt.Sensor.Period)
	return p, nil
}
