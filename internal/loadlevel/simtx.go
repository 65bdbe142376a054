package loadlevel

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// KernelModel is a device whose kernels' time and power are known from a model: the sim
// device (*sim.Device: its execution model, the equations in its package documentation).
type KernelModel interface {
	Props() gpu.Props
	TrueLaunch(d kernels.Descriptor) (dur time.Duration, energy units.Energy, power units.Power, clockHz float64)
}

// The host side of a transaction on the sim: what the H200 showed (results/nvidia-h200/
// 2026-11-21-loadlevel-*: about 19 µs of host round trip per transaction and user) and a
// PCIe Gen5 x16 link's usual pinned-copy rate.
const (
	SimRoundTrip = 19 * time.Microsecond
	SimPCIe      = 25e9 // bytes/s each way
)

// SimTx is a transaction run on the sim device on its virtual clock: its kernels
// (kernel descriptors: the own FFT's, or the GEMM's FMAs and DRAM bytes) take the time
// and draw the power of the sim's execution model (KernelModel), on a GPU shared by the
// users: a transaction copies its input in (after half the round trip; the users share the
// link, SimPCIe each way), waits for one of the device's slots, runs its kernels, and
// copies its result out (then the other half of the round trip). A
// device has one slot per share of it that one transaction's largest kernel fills (a
// one-CTA FFT fills 1/132 of an H200's SMs, so up to the users' number run at once), and
// over each millisecond it draws active idle plus the busy share of the way to the
// kernels' power (SimLoad with Full). Where Inner is set (the FFT of one array of at most
// 4096 points), a transaction's input is a seed, and a result picked for verification is
// computed then, on the CPU (the float32 FFT from the seed's points), and checked against
// the float64 reference; elsewhere nothing is computed and Verify has nothing to check.
type SimTx struct {
	Label   string
	Kernels []kernels.Descriptor // one transaction's launches, in order
	In, Out int64                // bytes copied in and out
	Inner   *FFT                 // nil: nothing computed
	Load    *SimLoad             // told each transaction's span on the device

	clk     *clock.Virtual
	gpuTime time.Duration
	power   float64 // W while one slot is busy (the kernels' mean power)
	free    []time.Duration
	// linkIn and linkOut are when the host link is next free in each direction: the
	// users' copies share it.
	linkIn, linkOut time.Duration
}

// NewSimTx sizes the kernels on dev; load's Full and Users are set to match.
func NewSimTx(label string, dev KernelModel, clk *clock.Virtual, ks []kernels.Descriptor, in, out int64, users int, load *SimLoad) (*SimTx, error) {
	t := &SimTx{Label: label, Kernels: ks, In: in, Out: out, Load: load, clk: clk}
	p := dev.Props()
	var energy float64
	fill := 0.0
	for _, k := range ks {
		d, e, _, _ := dev.TrueLaunch(k)
		if d <= 0 {
			return nil, fmt.Errorf("the sim cannot run kernel %s (%d blocks of %d threads)", k.Name, k.Blocks, k.Threads)
		}
		t.gpuTime += d
		energy += float64(e)
		if p.SMs > 0 && p.MaxThreadsPerSM > 0 {
			fill = max(fill, min(1, float64(k.TotalThreads())/float64(p.SMs*p.MaxThreadsPerSM)))
		}
	}
	slots := 1
	if fill > 0 && fill < 1 {
		slots = min(max(int(1/fill), 1), max(users, 1))
	}
	t.free = make([]time.Duration, slots)
	t.power = energy / t.gpuTime.Seconds()
	if load != nil {
		load.Full, load.Users = t.power, 1
	}
	return t, nil
}

// Slots is how many transactions' kernels the device runs at once.
func (t *SimTx) Slots() int { return len(t.free) }

// GPUTime is one transaction's kernel time; Power its kernels' mean power.
func (t *SimTx) GPUTime() time.Duration { return t.gpuTime }

// Power is the board power while one slot is busy.
func (t *SimTx) Power() float64 { return t.power }

// Name implements Transaction.
func (t *SimTx) Name() string { return t.Label }

// NewContext implements Transaction.
func (t *SimTx) NewContext() any { return nil }

// Generate implements Transaction: a seed for the input (Inner), else nothing.
func (t *SimTx) Generate(u *User) any {
	if t.Inner != nil {
		return u.Rand.Uint64()
	}
	return nil
}

// Process implements Transaction: the kernels' time is ModelTime's; nothing is computed.
func (t *SimTx) Process(*User, any) (any, error) { return nil, nil }

// Snapshot implements Transaction: with Inner, the input drawn from the seed and its
// transform.
func (t *SimTx) Snapshot(in, _ any) (any, any) {
	seed, ok := in.(uint64)
	if t.Inner == nil || !ok {
		return nil, nil
	}
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]complex64, t.Inner.N)
	for i := range x {
		x[i] = complex(float32(2*r.Float64()-1), float32(2*r.Float64()-1))
	}
	y := make([]complex64, len(x))
	t.Inner.plan.Transform(y, x)
	return x, y
}

// Verify implements Transaction.
func (t *SimTx) Verify(in, out any, tol float64) error {
	if t.Inner == nil || in == nil {
		return nil
	}
	return t.Inner.Verify(in, out, tol)
}

func copyTime(bytes int64) time.Duration {
	return time.Duration(float64(bytes) / SimPCIe * 1e9)
}

// ModelTime implements Modeller: called at the transaction's start (the engine runs them
// in order of their starts), it queues the copy in on the link, the kernels on the
// earliest free slot and the copy out on the link, and tells Load the kernels' span.
func (t *SimTx) ModelTime(any) time.Duration {
	now := t.clk.Now()
	in := max(now+SimRoundTrip/2, t.linkIn)
	ready := in + copyTime(t.In)
	t.linkIn = ready
	k := 0
	for i, f := range t.free {
		if f < t.free[k] {
			k = i
		}
	}
	start := max(ready, t.free[k])
	end := start + t.gpuTime
	t.free[k] = end
	if t.Load != nil {
		t.Load.Busy(start, end)
	}
	out := max(end, t.linkOut)
	t.linkOut = out + copyTime(t.Out)
	return t.linkOut + SimRoundTrip/2 - now
}

// simBusy is the engine's BusyObserver when a SimTx reports the device's spans itself:
// the engine's per-user spans are dropped, its flushes reach the SimLoad.
type simBusy struct{ l *SimLoad }

func (s simBusy) Busy(time.Duration, time.Duration) {}
func (s simBusy) Flush(t time.Duration)             { s.l.Flush(t) }

// SimKernels are the kernels of one transaction of w on the sim device: the own FFT's
// (kernels.FFT for one array of at most 4096 points, one CTA per array; FFTBitrev and
// log2(n) FFTStage launches above), or for the GEMM one launch per layer with its FP32
// FMAs and DRAM bytes (the weights and the activations). The sim has no tensor-core
// class: TF32 GEMMs are modelled as FP32 FMAs. It also returns the bytes copied in and
// out.
func SimKernels(w Work, cc string) (ks []kernels.Descriptor, in, out int64, err error) {
	dev := kernels.Device{CC: cc}
	switch w.Workload {
	case WorkloadGEMM:
		k, rows := int64(w.Size), int64(w.Batch)
		d := kernels.Descriptor{Name: fmt.Sprintf("gemm.%dx%d", w.Size, w.Batch), Group: "gemm",
			Blocks: 1024, Threads: 256, // cuBLAS fills the device (tiles, split-K, streams)
			Ops:   map[kernels.OpClass]int64{kernels.FP32FMA: rows * k * k},
			Bytes: map[kernels.MemLevel]int64{kernels.DRAM: 4*k*k + 8*rows*k}}
		for range w.Layers {
			ks = append(ks, d)
		}
		return ks, 4 * k * rows, 4 * k * rows, nil
	default:
		n, b := w.Size, w.Batch
		bytes := 8 * int64(n) * int64(b)
		if n <= kernels.FFTMaxSize {
			d, err := kernels.FFT(n, dev)
			if err != nil {
				return nil, 0, 0, err
			}
			d.Blocks = b
			d.Ops, d.Overhead, d.Bytes = scaled(d.Ops, b), scaled(d.Overhead, b), scaled(d.Bytes, b)
			return []kernels.Descriptor{d}, bytes, bytes, nil
		}
		rev, err := kernels.FFTBitrev(n, b, dev)
		if err != nil {
			return nil, 0, 0, err
		}
		st, err := kernels.FFTStage(n, b, dev)
		if err != nil {
			return nil, 0, 0, err
		}
		ks = append(ks, rev)
		for range bits.TrailingZeros(uint(n)) {
			ks = append(ks, st)
		}
		return ks, bytes, bytes, nil
	}
}

func scaled[K comparable](m map[K]int64, f int) map[K]int64 {
	out := make(map[K]int64, len(m))
	for k, v := range m {
		out[k] = v * int64(f)
	}
	return out
}
