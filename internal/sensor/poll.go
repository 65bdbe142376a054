package sensor

import (
	"fmt"
	"strings"
	"time"
)

// PollMode says how often the Sampler reads its channels.
type PollMode int

const (
	// Adaptive learns each channel's update period and polls just often enough to catch
	// every update with a timestamp error of a small fraction of the period.
	Adaptive PollMode = iota
	// Max busy-polls every channel back to back, as the K20 paper did.
	Max
	// Fixed polls every channel at one interval.
	Fixed
)

func (m PollMode) String() string {
	switch m {
	case Adaptive:
		return "adaptive"
	case Max:
		return "max"
	case Fixed:
		return "fixed"
	}
	return fmt.Sprintf("PollMode(%d)", int(m))
}

// Options configure a Sampler. The zero value is adaptive polling with the defaults below.
type Options struct {
	Mode     PollMode
	Interval time.Duration // for Fixed

	// Divisor: in adaptive mode a power channel is polled every UpdatePeriod/Divisor, so a
	// reading's timestamp is within half of that of the update it reports (default 8).
	Divisor int
	// MinInterval and MaxInterval bound the adaptive poll interval (defaults 0.5 ms, 50 ms).
	MinInterval, MaxInterval time.Duration
	// StateInterval is the poll interval, in adaptive mode, of a channel that has shown
	// nothing new for 200 polls: a constant clock, state or limit (default 100 ms).
	StateInterval time.Duration
	// CPUShare caps the time a counter's calls may take, as a share of wall time: a counter
	// whose call takes L is polled at most every L/CPUShare (default 0.002). The H200's
	// energy counter costs ~3.8 ms of CPU a call, so it is read every ~1.9 s (and on Poke).
	CPUShare float64
	// CounterEvery, when > 0, reads the GPU's energy counter (energy.total) every
	// CounterEvery instead of as CPUShare allows (measure --counter-every): a denser
	// anchor for loads no power channel resolves, at the counter's CPU cost (an H200's
	// call busy-waits 3.4-6.3 ms: every 100 ms is 3.5-6 % of a core;
	// results/nvidia-h200/2026-11-28-counter-cost). 0 (the default) leaves it to CPUShare.
	CounterEvery time.Duration
	// SlowShare, when > 0, caps the time every other slow channel's calls may take too (a
	// call slower than 100 µs, the driver buffer aside; in adaptive mode only state
	// channels: clocks, temperature, the throttle mask), as CPUShare does a counter's: such
	// a channel is polled at most every L/SlowShare. 0 (the default) leaves them at their
	// interval. gpuwatt serve and measure set it: on an H200 clock.sm and throttle.reasons
	// took 1.2-1.5 ms a call, and polled every 100 ms they were most of the lanes' CPU.
	SlowShare float64
	// PhaseLock (--poll lock) polls a regular channel in short windows around its expected
	// updates, once nine precisely stamped updates show that they keep time: stamps within
	// ~1 ms for about four calls per period. Off by default: on the H200 the power channels
	// update 101 ± 5 ms apart, each interval drawn anew, and the windows did not pay (see
	// docs/sampling.md).
	PhaseLock bool
	// Lean (--poll lean, measure's default) is adaptive polling with state channels
	// (clocks, temperature, the throttle mask) read at most every LeanStateInterval: the
	// summary takes their ranges and time shares, which a 250 ms sample-and-hold gives.
	// Power channels, the ring and the counter are polled as in Adaptive (the counter is
	// already capped by CPUShare: ~every 2 s on an H200, whose call costs ~3.8 ms; read more
	// sparsely, the ring's calibration to it, which wants 10 readings, fails on runs under
	// ~20 s).
	Lean bool
	// VirtualStep is the busy-poll interval on a virtual clock, where calls take no time
	// (default 100 µs).
	VirtualStep time.Duration
	// HangTimeout is how long, on a real clock, Stop and Poke wait for a lane whose call
	// has not returned before they take the call as hung and go on without it (default
	// DefaultHangTimeout): a driver call that never returns must not hold up the end of
	// a run (Sampler.Hung names it).
	HangTimeout time.Duration
	// ThreadCPU keeps each lane (the channels of one GPU, or a slow channel alone) on an OS
	// thread of its own for the recording, so that the thread's CPU time is that GPU's
	// polling cost (GPUCPUTime; measure reports it). It costs a handoff between threads at
	// every wakeup: 8 sim GPUs polled every 100 ms took 1.0-1.1 % of a core with it against
	// 0.72-0.74 % without (BenchmarkServe8GPUs), so only measure sets it.
	ThreadCPU bool
}

// LeanStateInterval is the shortest poll interval of a state channel under Options.Lean.
const LeanStateInterval = 250 * time.Millisecond

// DefaultSlowShare is the SlowShare that measure and serve poll with: a slow state channel
// (a clock, the throttle mask: 1.2-1.5 ms a call on an H200) takes at most 0.05 % of a core,
// so an H200's clock.sm is read every ~3 s and its throttle mask every ~2.4 s. At 0.2 % each
// (before issue 35), the four slow state channels of an H200 took ~0.8 % of a core: most
// of the 1 % a GPU may cost.
const DefaultSlowShare = 0.0005

// DefaultHangTimeout is Options.HangTimeout's default: a thousand times the slowest call
// seen on an H200 (the energy counter, ~3.8 ms; a busy driver has taken 0.1 s).
const DefaultHangTimeout = 2 * time.Second

func (o Options) withDefaults() Options {
	if o.Divisor <= 0 {
		o.Divisor = 8
	}
	if o.MinInterval <= 0 {
		o.MinInterval = 500 * time.Microsecond
	}
	if o.MaxInterval <= 0 {
		o.MaxInterval = 50 * time.Millisecond
	}
	if o.StateInterval <= 0 {
		o.StateInterval = 100 * time.Millisecond
	}
	if o.CPUShare <= 0 {
		o.CPUShare = 0.002
	}
	if o.Mode == Fixed && o.Interval < MinFixedInterval {
		o.Interval = MinFixedInterval
	}
	if o.VirtualStep <= 0 {
		o.VirtualStep = 100 * time.Microsecond
	}
	if o.HangTimeout <= 0 {
		o.HangTimeout = DefaultHangTimeout
	}
	return o
}

// MinFixedInterval is the shortest fixed poll interval the Sampler accepts. Below it a
// lane cannot keep its schedule (each call and its bookkeeping take microseconds): it would
// be always late, busy-polling without the pauses its interval promises; --poll max says
// that honestly. A shorter Options.Interval is raised to it.
const MinFixedInterval = 100 * time.Microsecond

// ParsePoll parses a --poll value: "adaptive", "max", or a duration such as "5ms" (at
// least MinFixedInterval).
func ParsePoll(s string) (Options, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "adaptive", "auto":
		return Options{Mode: Adaptive}, nil
	case "max":
		return Options{Mode: Max}, nil
	case "lock":
		return Options{Mode: Adaptive, PhaseLock: true}, nil
	case "lean":
		return Options{Mode: Adaptive, Lean: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Options{}, fmt.Errorf("--poll %q: want lean, adaptive, lock, max, or a positive duration such as 5ms", s)
	}
	o, err := FixedPoll(d)
	if err != nil {
		return Options{}, fmt.Errorf("--poll %v; use --poll max to poll as fast as the driver answers", err)
	}
	return o, nil
}

// MinCounterEvery and MaxCounterEvery bound Options.CounterEvery: below 10 ms an H200's
// counter call (3.4-6.3 ms, busy-waiting) would take most of a core, and its counter steps
// only every 100 ms; above a minute it is sparser than the default reads it.
const (
	MinCounterEvery = 10 * time.Millisecond
	MaxCounterEvery = time.Minute
)

// ParseCounterEvery parses a --counter-every value: "" or "default" (0: as CPUShare allows)
// or a duration between MinCounterEvery and MaxCounterEvery, such as 100ms.
func ParseCounterEvery(s string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "default":
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("--counter-every %q: want default or a duration such as 100ms", s)
	}
	if err := CheckCounterEvery(d); err != nil {
		return 0, fmt.Errorf("--counter-every %v", err)
	}
	return d, nil
}

// CheckCounterEvery says whether d is a CounterEvery the Sampler keeps: 0 (the default) or
// between MinCounterEvery and MaxCounterEvery. Its error names d and the bound.
func CheckCounterEvery(d time.Duration) error {
	switch {
	case d == 0:
		return nil
	case d < 0:
		return fmt.Errorf("%s: want a positive interval", d)
	case d < MinCounterEvery:
		return fmt.Errorf("%s: shorter than %s (an H200's counter call busy-waits 3.4-6.3 ms and its counter steps every 100 ms)", d, MinCounterEvery)
	case d > MaxCounterEvery:
		return fmt.Errorf("%s: longer than %s (the default reads the counter every ~2-10 s)", d, MaxCounterEvery)
	}
	return nil
}

// FixedPoll is polling every d, which must be positive and at least MinFixedInterval. Its
// errors name d and the bound, not where d came from: ParsePoll says --poll, the library
// Options.Poll.
func FixedPoll(d time.Duration) (Options, error) {
	switch {
	case d <= 0:
		return Options{}, fmt.Errorf("%s: want a positive interval", d)
	case d < MinFixedInterval:
		return Options{}, fmt.Errorf("%s: shorter than the %s a poll interval can keep", d, MinFixedInterval)
	}
	return Options{Mode: Fixed, Interval: d}, nil
}

// String is the --poll value that gives o.
func (o Options) String() string {
	if o.Mode == Fixed {
		return o.Interval.String()
	}
	if o.Mode == Adaptive && o.PhaseLock {
		return "lock"
	}
	if o.Mode == Adaptive && o.Lean {
		return "lean"
	}
	return o.Mode.String()
}
