package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

var (
	_ gpu.Executor = (*Device)(nil)
	_ gpu.Kernel   = (*Kernel)(nil)
)

// reasonSWPowerCap is the sw_power_cap bit of the clock event reasons
// (nvmlClocksEventReasonSwPowerCap).
const reasonSWPowerCap = 0x4

// tensorSaturatingThreadsPerSM is the resident threads an SM needs to keep its tensor
// cores busy (8 warps: two per sub-partition).
const tensorSaturatingThreadsPerSM = 256

// maxThreadsPerBlock is CUDA's limit on the threads of one block.
const maxThreadsPerBlock = 1024

// LaunchTruth is what one launch of a kernel descriptor truly does on the sim device:
// the model's answer, which measurements are compared with. The equations are in the
// package documentation ("Kernels").
type LaunchTruth struct {
	// Seconds is the time of one launch, exact (a Duration would be rounded to the
	// nanosecond; Run rounds n × Seconds once).
	Seconds float64
	// Energy is the board energy of one launch: Dynamic + pi0 × Seconds.
	Energy units.Energy
	// Dynamic is Σ ops × eps_op + Σ bytes × eps_level, the measured class's eps_op times
	// the operand-data factor of the descriptor's data (Config.DataFactor).
	Dynamic units.Energy
	// Power is the board power while the kernel runs (Energy / Seconds), at most the
	// power limit; MemoryPower the memory rail's.
	Power, MemoryPower units.Power
	// ClockHz is the SM clock the kernel runs at: max_sm_clock_hz unless Capped.
	ClockHz float64
	// Capped says the power limit lowered the clock (and set the sw_power_cap reason).
	Capped bool
	// Occupancy is the factor (0, 1] that scales the SMs' throughput.
	Occupancy float64
	// ComputeSeconds is the compute time of one launch at ClockHz, MemorySeconds the
	// longest memory level's; Seconds = max(both) + launch overhead, or longer when the
	// power limit could not be met by the clock alone.
	ComputeSeconds, MemorySeconds float64
	// Limiter is what set the time: "compute", a memory level ("dram", "l2", "shared",
	// "const"), or "power" when the clock alone could not meet the power limit and the
	// whole launch was slowed down.
	Limiter string
}

// Duration is Seconds rounded to the nanosecond.
func (l LaunchTruth) Duration() time.Duration { return sensormodel.Seconds(l.Seconds) }

// LaunchModel returns the truth of one launch of d on this device, or the error Prepare
// would give.
func (d *Device) LaunchModel(desc kernels.Descriptor) (LaunchTruth, error) {
	return d.cfg.launch(desc)
}

// TrueLaunch returns the truth of one launch of d: its duration (rounded to the ns; Run
// uses the exact one), board energy, board power and SM clock. All are zero when
// Prepare would refuse d (LaunchModel says why).
func (d *Device) TrueLaunch(desc kernels.Descriptor) (dur time.Duration, energy units.Energy, power units.Power, clockHz float64) {
	l, err := d.cfg.launch(desc)
	if err != nil {
		return 0, 0, 0, 0
	}
	return l.Duration(), l.Energy, l.Power, l.ClockHz
}

// Props implements gpu.Executor, from the config. As on the real GPU, where it opens the
// CUDA context to ask the driver, it opens gpuwatt's context (OpenContext) if none is.
func (d *Device) Props() gpu.Props {
	d.openExecContext()
	c := &d.cfg
	return gpu.Props{
		Name:              c.Name,
		ComputeCapability: c.ComputeCapability,
		SMs:               c.SMs,
		MaxSMClockHz:      float64(c.MaxSMClock),
		MemClockHz:        float64(c.MemClock),
		MemBusWidthBits:   c.MemBusWidthBits,
		L2Bytes:           c.L2Bytes,
		MemoryBytes:       c.MemoryBytes,
		MaxThreadsPerSM:   c.MaxThreadsPerSM,
		SharedPerSM:       c.SharedPerSM,
	}
}

// Prepare implements gpu.Executor: it checks the descriptor (some work, classes and
// levels this device runs, counts >= 0, 1 to 1024 threads per block, at least one block)
// and returns a kernel whose launches follow the model. The PTX is not looked at. The
// first call opens gpuwatt's CUDA context (as Props does), held until the system closes:
// between runs the device draws active idle.
func (d *Device) Prepare(desc kernels.Descriptor) (gpu.Kernel, error) {
	d.openExecContext()
	l, err := d.cfg.launch(desc)
	if err != nil {
		return nil, err
	}
	return &Kernel{dev: d, desc: desc, truth: l}, nil
}

// Kernel is a kernel prepared on the sim device.
type Kernel struct {
	dev   *Device
	desc  kernels.Descriptor
	truth LaunchTruth

	mu     sync.Mutex
	closed bool
}

// Truth returns the truth of one launch.
func (k *Kernel) Truth() LaunchTruth { return k.truth }

// Run implements gpu.Kernel: n launches back to back from the clock's now t0 to
// t1 = t0 + n × Seconds (rounded to the ns). The device's truths hold the kernel's board
// power, memory power, clock and throttle reasons over [t0, t1), then active idle; on a
// Virtual clock Run advances it to t1 (a Sampler registered on it polls on the way), on
// any other clock it sleeps until t1. Runs of one device are serialised, as on one stream.
func (k *Kernel) Run(n int) (start, end time.Duration, err error) {
	if n < 1 {
		return 0, 0, fmt.Errorf("sim: kernel %q: run %d launches: want >= 1", k.desc.Name, n)
	}
	total := float64(n) * k.truth.Seconds
	if total > sensormodel.MaxSeconds {
		return 0, 0, fmt.Errorf("sim: kernel %q: %d launches take %.3g s, more than the sim's %g s", k.desc.Name, n, total, float64(sensormodel.MaxSeconds))
	}
	d := k.dev
	d.runMu.Lock()
	defer d.runMu.Unlock()
	k.mu.Lock()
	closed := k.closed
	k.mu.Unlock()
	if closed {
		return 0, 0, fmt.Errorf("sim: kernel %q: %w", k.desc.Name, errClosed)
	}
	dur := max(sensormodel.Seconds(total), 1)
	a := d.kernelActivity(k.truth)
	d.mu.Lock()
	t0 := d.clk.Now()
	a.start, a.end = t0, t0+dur
	d.add(a)
	d.mu.Unlock()
	if v, ok := d.clk.(*clock.Virtual); ok {
		v.AdvanceTo(a.end)
	} else if err := d.clk.Sleep(context.Background(), a.end-d.clk.Now()); err != nil {
		return t0, a.end, err
	}
	return t0, a.end, nil
}

var errClosed = errors.New("kernel closed")

// Close implements gpu.Kernel.
func (k *Kernel) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	return nil
}

// kernelActivity is the activity of a kernel (start and end to be set): its powers, and the
// levels at which the clock.sm and throttle.reasons channels read its clock and reasons.
func (d *Device) kernelActivity(l LaunchTruth) activity {
	reasons := 0.0
	if l.Capped {
		reasons = reasonSWPowerCap
	}
	return activity{
		p:   l.Power,
		mem: l.MemoryPower,
		clk: d.level(trace.ChClockSM, l.ClockHz),
		rsn: d.level(trace.ChThrottleReasons, reasons),
	}
}

// level returns the truth at which channel name, whose model reads offset + gain × truth,
// reads v; 1 (the level of a command) when the channel's gain is 0.
func (d *Device) level(name string, v float64) float64 {
	sc, ok := d.cfg.Sensors[name]
	if !ok || sc.Model.Gain == 0 {
		return 1
	}
	return (v - float64(sc.Model.Offset)) / sc.Model.Gain
}

// TrueSMClock is the SM clock at t as the clock.sm channel's model sees it: its idle clock
// when nothing runs, its top clock while a command or scripted load runs, a kernel's clock
// while one runs.
func (d *Device) TrueSMClock(t time.Duration) units.Frequency {
	m := d.cfg.Sensors[trace.ChClockSM].Model
	return units.Frequency(float64(m.Offset) + m.Gain*float64(d.smClock.Power(t)))
}

// TrueThrottleReasons is the clock event reasons mask at t as the throttle.reasons
// channel's model sees it: 0x1 (gpu_idle) when nothing runs, 0 while a load runs,
// 0x4 (sw_power_cap) while a power-capped kernel runs.
func (d *Device) TrueThrottleReasons(t time.Duration) uint64 {
	m := d.cfg.Sensors[trace.ChThrottleReasons].Model
	v := math.Round(float64(m.Offset) + m.Gain*float64(d.reasons.Power(t)))
	return uint64(max(v, 0))
}

// launch is the execution model: the truth of one launch of desc.
func (c *Config) launch(desc kernels.Descriptor) (LaunchTruth, error) {
	fail := func(format string, a ...any) (LaunchTruth, error) {
		return LaunchTruth{}, fmt.Errorf("sim: kernel %q: %s", desc.Name, fmt.Sprintf(format, a...))
	}
	if desc.Blocks < 1 || desc.Threads < 1 {
		return fail("grid %d × %d threads: want at least one block of at least one thread", desc.Blocks, desc.Threads)
	}
	if desc.Threads > maxThreadsPerBlock {
		return fail("%d threads per block: want at most %d", desc.Threads, maxThreadsPerBlock)
	}
	sms := float64(c.SMs)
	fmax := float64(c.MaxSMClock)

	// Occupancy: the SMs that hold a block, each at the share of its saturating threads
	// that it holds (threads spread evenly over them).
	active := min(float64(desc.Blocks), sms)
	perSM := float64(desc.TotalThreads()) / active
	sat := float64(c.SaturatingThreadsPerSM)
	if desc.Measured.Tensor() {
		// The tensor pipes saturate with two warps per sub-partition: gpuwatt's wgmma
		// kernels (two warpgroups per SM) reached 96-99 % of the dense peak on an H100.
		sat = min(sat, tensorSaturatingThreadsPerSM)
	}
	occ := active / sms * min(1, perSM/sat)

	for op := range desc.Ops {
		if !known(opClasses, op) {
			return fail("unknown instruction class %q", op)
		}
	}
	for l := range desc.Bytes {
		if !known(memLevels, l) {
			return fail("unknown memory level %q", l)
		}
	}

	work := false
	var dyn float64     // dynamic energy, J
	var compute float64 // compute cycles (time = cycles / f)
	for _, op := range desc.Classes() {
		n := desc.Ops[op]
		switch {
		case n < 0:
			return fail("ops[%q] = %d: want >= 0", op, n)
		case n == 0:
			continue
		}
		rate := c.OpsPerCycleSM[op]
		if rate <= 0 {
			return fail("instruction class %q is not supported by the %s (compute capability %s)", op, c.Name, c.ComputeCapability)
		}
		e, _ := c.OpEnergy(op)
		work = true
		compute += float64(n) / (rate * sms)
		f := 1.0
		if op == desc.Measured { // the data is that of the measured instructions
			f = c.DataFactor(desc.Data)
		}
		dyn += float64(n) * float64(e) * f
	}
	compute /= occ
	// Shared memory and the constant cache are per SM and in the SM clock's domain, like
	// compute: their time is cycles / f too. DRAM and L2 move data at their own rate.
	cycles, limiter := compute, "compute"
	var memCycles, dramL2 float64
	memLimiter := ""
	for _, l := range memLevels {
		n := desc.Bytes[l]
		switch {
		case n < 0:
			return fail("bytes[%q] = %d: want >= 0", l, n)
		case n == 0:
			continue
		}
		bw := c.Bandwidth[l]
		if bw <= 0 {
			return fail("memory level %q is not modelled by this config (bandwidth_bytes_per_s)", l)
		}
		e, _ := c.ByteEnergy(l)
		work = true
		dyn += float64(n) * float64(e)
		switch l {
		case kernels.Shared, kernels.Const:
			cyc := float64(n) / (bw / fmax) / occ
			memCycles = max(memCycles, cyc)
			if cyc > cycles {
				cycles, limiter = cyc, string(l)
			}
		default:
			if t := float64(n) / bw; t > dramL2 {
				dramL2, memLimiter = t, string(l)
			}
		}
	}
	if !work {
		return fail("describes no work (no instruction or byte counted)")
	}

	overhead := c.LaunchOverhead.Seconds()
	timeAt := func(f float64) float64 { return max(cycles/f, dramL2) + overhead }
	f := fmax
	T := timeAt(f)
	// pi0 and the static power of the occupied thread slots (pi_occ_w × their share).
	slots := float64(c.MaxThreadsPerSM) * sms
	share := 1.0
	if slots > 0 {
		share = min(1, float64(desc.TotalThreads())/slots)
	}
	pi0 := float64(c.Pi0) + float64(c.PiOcc)*share
	limit := float64(c.PowerLimit)
	capped, stretched := false, false
	if pi0+dyn/T > limit {
		capped = true
		need := dyn / (limit - pi0) // the shortest launch that meets the limit
		f = float64(c.MinSMClock)
		if cycles > 0 {
			// T(f) = cycles/f + overhead = need, rounded down to a whole MHz.
			f = max(math.Floor(cycles/(need-overhead)/1e6)*1e6, float64(c.MinSMClock))
		}
		T = timeAt(f)
		if T < need {
			T, stretched = need, true
		}
	}
	computeS := compute / f
	memS := max(memCycles/f, dramL2)
	if cycles/f < dramL2 {
		limiter = memLimiter
	}
	if stretched {
		limiter = "power"
	}
	energy := dyn + pi0*T
	return LaunchTruth{
		Seconds:        T,
		Energy:         units.Energy(energy),
		Dynamic:        units.Energy(dyn),
		Power:          units.Power(energy / T),
		MemoryPower:    c.MemoryIdle + units.Power(float64(desc.Bytes[kernels.DRAM])*float64(c.EpsMemRail)/T),
		ClockHz:        f,
		Capped:         capped,
		Occupancy:      occ,
		ComputeSeconds: computeS,
		MemorySeconds:  memS,
		Limiter:        limiter,
	}, nil
}

func known[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
