package kernels

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Target is the PTX target of a generated module: the .target sm_XY and the .version
// (PTX ISA) that it needs.
type Target struct {
	SM  int    // 90 for sm_90
	ISA string // PTX ISA version, "7.8"
	// Suffix is "a" for an architecture-specific target (sm_90a: wgmma), else "".
	Suffix string
}

// String returns "sm_90 (PTX 7.8)".
func (t Target) String() string { return fmt.Sprintf("sm_%d%s (PTX %s)", t.SM, t.Suffix, t.ISA) }

// minISA is the first PTX ISA version that knows each target (PTX ISA manual, "PTX
// Module Directives: .target", the target's introduction). Every instruction the
// generators use is older than sm_80 / PTX 7.0 except fma.rn.bf16x2 (sm_80, PTX 7.0).
var minISA = map[int]string{
	70: "6.0", 72: "6.1", 75: "6.3",
	80: "7.0", 86: "7.1", 87: "7.4", 89: "7.8",
	90:  "7.8",
	100: "8.6", 101: "8.6", 103: "8.8", 110: "9.0",
	120: "8.7", 121: "8.8",
}

// TargetFor returns the target for a compute capability ("9.0", "8.0"; "sm_90" and "90"
// are accepted too): sm_XY at the oldest PTX ISA that knows it, so that the oldest driver
// able to run the GPU can JIT the module.
func TargetFor(cc string) (Target, error) {
	sm, err := parseCC(cc)
	if err != nil {
		return Target{}, err
	}
	isa, ok := minISA[sm]
	if !ok {
		return Target{}, fmt.Errorf("kernels: compute capability %q: no PTX target known for sm_%d (%s)", cc, sm, KnownTargets)
	}
	return Target{SM: sm, ISA: isa}, nil
}

// KnownTargets says which GPUs the generators target, for messages.
const KnownTargets = "gpuwatt generates PTX for compute capability 7.0 to 12.1: Volta and newer"

// KernelVerbs are the verbs that run gpuwatt's own kernels, for messages.
const KernelVerbs = "micro, archline and profile"

// Unsupported says why gpuwatt's own kernels cannot run on a GPU of compute capability cc
// ("" when they can).
func Unsupported(cc string) string {
	if _, err := TargetFor(orDefault(cc)); err != nil {
		return strings.TrimPrefix(err.Error(), "kernels: ")
	}
	return ""
}

// parseCC turns "9.0", "sm_90" or "90" into 90.
func parseCC(cc string) (int, error) {
	s := strings.TrimPrefix(strings.TrimSpace(cc), "sm_")
	if maj, min, ok := strings.Cut(s, "."); ok {
		a, err1 := strconv.Atoi(maj)
		b, err2 := strconv.Atoi(min)
		if err1 == nil && err2 == nil && a > 0 && b >= 0 && b <= 9 {
			return a*10 + b, nil
		}
	} else if n, err := strconv.Atoi(s); err == nil && n >= 10 {
		return n, nil
	}
	return 0, fmt.Errorf("kernels: compute capability %q: want major.minor, e.g. 9.0", cc)
}

// Device is what the generators need to know about the GPU. gpu.Props maps onto it
// (ComputeCapability, SMs, MaxThreadsPerSM, MaxSMClockHz). Zero fields take the
// defaults of an H100/H200 (DefaultDevice).
type Device struct {
	CC           string  // compute capability, "9.0": picks the PTX target
	SMs          int     // streaming multiprocessors: 132
	ThreadsPerSM int     // resident threads per SM: 2048
	ClockHz      float64 // SM clock, for sizing launches only: 1.98e9
	// Bandwidths in bytes per second, for sizing launches only.
	DRAMBytesPerSec float64 // 4.0e12 (FACTS.md: H200 grid-stride copy 3978 GB/s)
	L2BytesPerSec   float64 // 7.0e12 (an estimate)
}

// DefaultDevice is an H100 SXM / H200: compute capability 9.0, 132 SMs, 2048 threads per
// SM, 1.98 GHz, about 4 TB/s of DRAM bandwidth.
var DefaultDevice = Device{
	CC: "9.0", SMs: 132, ThreadsPerSM: 2048, ClockHz: 1.98e9,
	DRAMBytesPerSec: 4.0e12, L2BytesPerSec: 7.0e12,
}

// withDefaults fills zero fields from DefaultDevice and checks the rest.
func (d Device) withDefaults() (Device, Target, error) {
	def := DefaultDevice
	if d.CC == "" {
		d.CC = def.CC
	}
	if d.SMs == 0 {
		d.SMs = def.SMs
	}
	if d.ThreadsPerSM == 0 {
		d.ThreadsPerSM = def.ThreadsPerSM
	}
	if d.ClockHz == 0 {
		d.ClockHz = def.ClockHz
	}
	if d.DRAMBytesPerSec == 0 {
		d.DRAMBytesPerSec = def.DRAMBytesPerSec
	}
	if d.L2BytesPerSec == 0 {
		d.L2BytesPerSec = def.L2BytesPerSec
	}
	switch {
	case d.SMs < 1:
		return d, Target{}, fmt.Errorf("kernels: %d SMs: want at least 1", d.SMs)
	case d.ThreadsPerSM < 32 || d.ThreadsPerSM%32 != 0:
		return d, Target{}, fmt.Errorf("kernels: %d threads per SM: want a positive multiple of 32", d.ThreadsPerSM)
	case !(d.ClockHz > 0) || !(d.DRAMBytesPerSec > 0) || !(d.L2BytesPerSec > 0):
		return d, Target{}, fmt.Errorf("kernels: clock and bandwidths must be positive")
	}
	t, err := TargetFor(d.CC)
	return d, t, err
}

// Opts are the options of one generator. Zero fields take defaults; each generator's
// comment says which fields it reads.
type Opts struct {
	Device // the GPU; zero fields from DefaultDevice

	// Threads per block (default 256) and Blocks (default: enough for one full wave,
	// SMs × ThreadsPerSM / Threads). The PTX asks ptxas for that occupancy with
	// .maxntid and .minnctapersm.
	Threads, Blocks int
	// Iters is the trip count of the measured loop: unrolled iterations for arithmetic,
	// shared and constant kernels, passes over the buffer for the streaming kernels.
	// Default: sized so that one launch takes about LaunchTime on Device.
	Iters int
	// Unroll is the number of measured instructions per loop iteration and thread:
	// arithmetic instructions (default 512, a multiple of Chains) or memory accesses
	// (default 4; 2 for L2, 8 for shared and constant).
	Unroll int
	// Chains is the number of independent dependency chains per thread of an arithmetic
	// kernel (default 8).
	Chains int
	// Bytes is the buffer size of a streaming kernel (DRAM kernels: default 1 GiB; L2:
	// the working set, default 8 MiB), rounded down to whole loop steps (at least one
	// step: Unroll accesses by every thread).
	Bytes int64
	// LaunchTime is the duration the default Iters aims at (default 5 ms).
	LaunchTime time.Duration
	// Operands is an arithmetic kernel's operand pattern (PatternsFor). "" gives the
	// kernel without a pattern, whose data is not controlled (FMA chains converging to 1):
	// archline's flop points, which share their data with its roofline kernels. Other
	// kernels ignore it.
	Operands Operands
}

// shape is a checked Opts: the launch geometry and the loop sizes.
type shape struct {
	dev             Device
	target          Target
	threads, blocks int
	total           int64 // threads of the launch
	iters, unroll   int   // iters 0: size it
	chains          int
	bytes           int64
	launch          time.Duration
	ctas            int // blocks per SM the PTX asks room for (0: as many as fit)
}

func (o Opts) shape(defUnroll int) (shape, error) {
	dev, target, err := o.Device.withDefaults()
	if err != nil {
		return shape{}, err
	}
	s := shape{dev: dev, target: target, threads: o.Threads, blocks: o.Blocks, iters: o.Iters,
		unroll: o.Unroll, chains: o.Chains, bytes: o.Bytes, launch: o.LaunchTime}
	if s.threads == 0 {
		s.threads = min(256, dev.ThreadsPerSM)
	}
	if s.threads < 32 || s.threads > 1024 || s.threads%32 != 0 {
		return s, fmt.Errorf("kernels: %d threads per block: want a multiple of 32 from 32 to 1024", s.threads)
	}
	if s.blocks == 0 {
		s.blocks = dev.SMs * max(1, dev.ThreadsPerSM/s.threads)
	}
	if s.blocks < 1 {
		return s, fmt.Errorf("kernels: %d blocks: want at least 1", s.blocks)
	}
	if s.iters < 0 {
		return s, fmt.Errorf("kernels: %d iterations: want at least 1 (or 0 for the default)", s.iters)
	}
	if s.unroll == 0 {
		s.unroll = defUnroll
	}
	if s.unroll < 1 || s.unroll > 4096 {
		return s, fmt.Errorf("kernels: unroll %d: want 1 to 4096", s.unroll)
	}
	if s.chains == 0 {
		s.chains = 8
	}
	if s.chains < 1 || s.chains > 32 {
		return s, fmt.Errorf("kernels: %d chains: want 1 to 32", s.chains)
	}
	if s.bytes < 0 {
		return s, fmt.Errorf("kernels: %d bytes: want > 0 (or 0 for the default)", s.bytes)
	}
	if s.launch == 0 {
		s.launch = 5 * time.Millisecond
	}
	if s.launch < 0 {
		return s, fmt.Errorf("kernels: launch time %v: want > 0", s.launch)
	}
	s.total = int64(s.blocks) * int64(s.threads)
	return s, nil
}

// sizeIters returns the trip count for a loop of which one trip takes perTrip seconds
// at the expected rate: the configured Iters, else enough trips for the launch time.
func (s shape) sizeIters(perTrip float64) int {
	if s.iters > 0 {
		return s.iters
	}
	n := s.launch.Seconds() / perTrip
	return int(max(1, min(n+0.5, 1<<30)))
}

// maxBlocksPerSM is the most resident blocks per SM (CUDA C++ Programming Guide,
// "Compute Capabilities", technical specifications); 16 where not listed.
var maxBlocksPerSM = map[int]int{70: 32, 72: 32, 80: 32, 87: 32, 89: 24, 90: 32, 100: 32, 103: 32, 110: 32, 120: 24, 121: 24}

// minCTAs is the blocks per SM that the PTX asks ptxas to make room for (.minnctapersm,
// with .maxntid the PTX form of __launch_bounds__): the registers then fit a full SM.
func (s shape) minCTAs() int {
	if s.ctas > 0 {
		return s.ctas
	}
	m, ok := maxBlocksPerSM[s.target.SM]
	if !ok {
		m = 16
	}
	return max(1, min(m, s.dev.ThreadsPerSM/s.threads))
}
