package nvmlgpu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// The real GPU runs gpuwatt's kernels through the CUDA driver (gpu.Executor). The CUDA
// context is opened on the first Prepare, on the CUDA device with the NVML device's UUID.
var _ gpu.Executor = (*Device)(nil)

// executor is a Device's CUDA side.
type executor struct {
	once  sync.Once
	ctx   *cuda.Context
	props gpu.Props
	err   error

	// timeout is the bound of a wait for the GPU (0: DefaultKernelTimeout): see
	// cudaKernel.bound.
	timeout time.Duration
	mu      sync.Mutex
	hung    error    // set once a kernel hangs: the GPU runs nothing more
	paths   []string // where libcuda is looked for (nil: cudaPaths)
}

// DefaultKernelTimeout bounds a wait for the GPU whose time is not known (a kernel's first
// run, an event on an idle stream); a run of n launches of a kernel whose launches took
// per each is given that plus KernelTimeoutFactor × n × per. gpuwatt's kernels take
// milliseconds a launch, and a run about a second: a bound a hundred times longer than
// that is not reached by a kernel that works.
const (
	DefaultKernelTimeout = 20 * time.Second
	KernelTimeoutFactor  = 10
)

func (e *executor) close() error {
	if e.ctx == nil || e.hungErr() != nil {
		// Closing the context waits for the GPU (cuCtxSynchronize), which a kernel that
		// hangs never lets finish: it is left for the process's end to release.
		return nil
	}
	return e.ctx.Close()
}

func (e *executor) hungErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hung
}

// cudaPaths lets tests point the CUDA binding at a fake library.
var cudaPaths []string

// open finds the CUDA device that is this NVML device and opens its context.
func (d *Device) open() (*cuda.Context, gpu.Props, error) {
	e := &d.exec
	e.once.Do(func() {
		paths := cudaPaths
		if e.paths != nil {
			paths = e.paths
		}
		lib, err := cuda.Open(paths...)
		if err != nil {
			e.err = err
			return
		}
		n, err := lib.DeviceCount()
		if err != nil {
			e.err = err
			return
		}
		var dev cuda.Device
		found := false
		for i := 0; i < n && !found; i++ {
			cd, err := lib.Device(i)
			if err != nil {
				continue
			}
			if u, err := cd.UUID(); err == nil && u != "" && strings.EqualFold(u, d.info.UUID) {
				dev, found = cd, true
			} else if b, err := cd.PCIBusID(); err == nil && samePCI(b, d.info.PCIBusID) {
				dev, found = cd, true
			}
		}
		if !found {
			e.err = fmt.Errorf("GPU %d (%s): no CUDA device with UUID %s", d.info.Index, d.info.Name, d.info.UUID)
			return
		}
		p, err := dev.Properties()
		if err != nil {
			e.err = err
			return
		}
		e.props = gpu.Props{
			Name: p.Name, ComputeCapability: p.ComputeCapability(), SMs: p.SMs,
			MaxSMClockHz: p.SMClock.Hz(), MemClockHz: p.MemoryClock.Hz(), MemBusWidthBits: p.MemoryBusWidthBits,
			L2Bytes: int64(p.L2Bytes), MemoryBytes: p.MemoryBytes, MaxThreadsPerSM: p.MaxThreadsPerSM, SharedPerSM: p.SharedPerSMBytes,
		}
		e.ctx, e.err = cuda.NewContext(dev)
	})
	return e.ctx, e.props, e.err
}

// samePCI compares PCI bus ids written with 4- or 8-digit domains.
func samePCI(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		if i := strings.Index(s, ":"); i > 0 {
			s = strings.TrimLeft(s[:i], "0") + s[i:]
		}
		return s
	}
	return a != "" && b != "" && norm(a) == norm(b)
}

// Props implements gpu.Executor (zero if the CUDA driver cannot be opened; Prepare says why).
func (d *Device) Props() gpu.Props {
	_, p, _ := d.open()
	return p
}

// Prepare implements gpu.Executor: JIT-compiles the PTX, allocates and zeroes the buffers,
// and creates the stream and events the runs use.
func (d *Device) Prepare(desc kernels.Descriptor) (gpu.Kernel, error) {
	ctx, _, err := d.open()
	if err != nil {
		return nil, err
	}
	if err := d.exec.hungErr(); err != nil {
		return nil, fmt.Errorf("%s: not run: %w", desc.Name, err)
	}
	k := &cudaKernel{d: d, ctx: ctx, desc: desc}
	if err := k.prepare(); err != nil {
		k.Close()
		return nil, fmt.Errorf("%s: %w", desc.Name, err)
	}
	return k, nil
}

type cudaKernel struct {
	d      *Device
	ctx    *cuda.Context
	desc   kernels.Descriptor
	mod    *cuda.Module
	fn     *cuda.Function
	bufs   []cuda.DevicePtr
	args   []cuda.Arg
	stream *cuda.Stream
	ev     [3]*cuda.Event
	per    time.Duration // the time of a launch in the last run (0: none yet)
}

// bound is how long a run of n launches may take before it is taken to hang: the
// executor's timeout, plus KernelTimeoutFactor × the run's expected time where an earlier
// run of the kernel timed a launch.
func (k *cudaKernel) bound(n int) time.Duration {
	b := k.d.exec.timeout
	if b <= 0 {
		b = DefaultKernelTimeout
	}
	return b + time.Duration(KernelTimeoutFactor*float64(n)*float64(k.per))
}

func (k *cudaKernel) prepare() error {
	var err error
	if k.mod, err = k.ctx.LoadPTX(k.desc.PTX); err != nil {
		return err
	}
	if k.fn, err = k.mod.Function(k.desc.Entry); err != nil {
		return err
	}
	if k.desc.SharedBytes > 48<<10 {
		if err := k.fn.SetMaxDynamicSharedMemory(k.desc.SharedBytes); err != nil {
			return err
		}
	}
	for _, p := range k.desc.Params {
		switch p.Kind {
		case kernels.Buffer:
			b, err := k.ctx.Alloc(p.Size)
			if err != nil {
				return fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			k.bufs = append(k.bufs, b)
			if err := k.ctx.MemsetD8(b, 0, p.Size); err != nil {
				return err
			}
			k.args = append(k.args, cuda.Ptr(b))
		case kernels.U32:
			k.args = append(k.args, cuda.U32(uint32(p.Int)))
		case kernels.U64:
			k.args = append(k.args, cuda.U64(p.Int))
		case kernels.F32:
			k.args = append(k.args, cuda.F32(float32(p.Real)))
		case kernels.F64:
			k.args = append(k.args, cuda.F64(p.Real))
		default:
			return fmt.Errorf("parameter %s: unknown kind %d", p.Name, p.Kind)
		}
	}
	if k.stream, err = k.ctx.NewStream(cuda.StreamNonBlocking); err != nil {
		return err
	}
	for i := range k.ev {
		if k.ev[i], err = k.ctx.NewEvent(cuda.EventDefault); err != nil {
			return err
		}
	}
	// The memsets ran on the default stream, which the runs' non-blocking stream does not
	// wait for: the buffers are zero only once the context has caught up.
	return k.ctx.Synchronize()
}

// Run implements gpu.Kernel. Everything happens in one call on the context's thread: an
// event recorded and waited for on an idle stream marks a host instant h0; then events
// bracket the n launches, and their elapsed times from the first event place the run on
// the host's clock (to within the wake-up latency of the wait, microseconds).
func (k *cudaKernel) Run(n int) (start, end time.Duration, err error) {
	if n < 1 {
		return 0, 0, errors.New("run: n must be at least 1")
	}
	cfg := cuda.LaunchConfig{Grid: cuda.D1(k.desc.Blocks), Block: cuda.D1(k.desc.Threads), SharedBytes: k.desc.SharedBytes, Stream: k.stream}
	if err := k.d.exec.hungErr(); err != nil {
		return 0, 0, err
	}
	var h0 time.Duration
	bound := k.bound(n)
	err = k.ctx.Do(func() error {
		if err := k.ev[0].Record(k.stream); err != nil {
			return err
		}
		if err := k.ev[0].Wait(k.bound(0)); err != nil {
			return err
		}
		h0 = k.d.clk.Now()
		if err := k.ev[1].Record(k.stream); err != nil {
			return err
		}
		for range n {
			if err := k.ctx.Launch(k.fn, cfg, k.args...); err != nil {
				return err
			}
		}
		if err := k.ev[2].Record(k.stream); err != nil {
			return err
		}
		return k.ev[2].Wait(bound)
	})
	if errors.Is(err, cuda.ErrHung) {
		// The GPU is still running it: nothing more can be run, freed or closed.
		what := fmt.Sprintf("%d launches of %s", n, k.desc.Name)
		if k.per > 0 {
			what += fmt.Sprintf(" (expected to take %s)", time.Duration(n)*k.per)
		}
		err = fmt.Errorf("%w: %s had not finished after %s (cuEventQuery polled); the GPU runs nothing more until gpuwatt exits", gpu.ErrKernelHung, what, bound)
		k.d.exec.mu.Lock()
		if k.d.exec.hung == nil {
			k.d.exec.hung = fmt.Errorf("%w: %s did not finish", gpu.ErrKernelHung, k.desc.Name)
		}
		k.d.exec.mu.Unlock()
	}
	if err != nil {
		return 0, 0, err
	}
	lead, err := cuda.Elapsed(k.ev[0], k.ev[1])
	if err != nil {
		return 0, 0, err
	}
	run, err := cuda.Elapsed(k.ev[1], k.ev[2])
	if err != nil {
		return 0, 0, err
	}
	start = h0 + lead
	k.per = run / time.Duration(n)
	return start, start + run, nil
}

// Close implements gpu.Kernel. After a kernel hangs it frees nothing (each free would wait
// for the GPU for ever): the process's end releases it all.
func (k *cudaKernel) Close() error {
	if k.d.exec.hungErr() != nil {
		return nil
	}
	var errs []error
	for _, e := range k.ev {
		if e != nil {
			errs = append(errs, e.Destroy())
		}
	}
	if k.stream != nil {
		errs = append(errs, k.stream.Destroy())
	}
	for _, b := range k.bufs {
		errs = append(errs, k.ctx.Free(b))
	}
	if k.mod != nil {
		errs = append(errs, k.mod.Unload())
	}
	return errors.Join(errs...)
}

// CUDAExecutor is the CUDA side of a Device alone, without NVML: gpuwatt's kernels run on
// the CUDA device of a given UUID. Tests run the verbs' kernels through it on the fake
// libcuda (beside the sim's sensors) to see what a kernel that hangs does to a run.
type CUDAExecutor struct{ d *Device }

var _ gpu.Executor = (*CUDAExecutor)(nil)

// NewCUDAExecutor runs kernels on the CUDA device with UUID uuid of the libcuda found at
// paths (none: the default places), its runs placed on clk, each wait for the GPU bounded
// by timeout (0: DefaultKernelTimeout) plus KernelTimeoutFactor × its expected time.
func NewCUDAExecutor(uuid string, clk clock.Clock, timeout time.Duration, paths ...string) *CUDAExecutor {
	d := &Device{info: trace.GPU{UUID: uuid}, clk: clk}
	d.exec.timeout, d.exec.paths = timeout, paths
	return &CUDAExecutor{d: d}
}

// Props implements gpu.Executor.
func (x *CUDAExecutor) Props() gpu.Props { return x.d.Props() }

// Prepare implements gpu.Executor.
func (x *CUDAExecutor) Prepare(desc kernels.Descriptor) (gpu.Kernel, error) { return x.d.Prepare(desc) }

// Close closes the CUDA context (not after a kernel hangs: see gpu.ErrKernelHung).
func (x *CUDAExecutor) Close() error { return x.d.exec.close() }
