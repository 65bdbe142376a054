package nvmlgpu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
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
}

func (e *executor) close() error {
	if e.ctx == nil {
		return nil
	}
	return e.ctx.Close()
}

// cudaPaths lets tests point the CUDA binding at a fake library.
var cudaPaths []string

// open finds the CUDA device that is this NVML device and opens its context.
func (d *Device) open() (*cuda.Context, gpu.Props, error) {
	e := &d.exec
	e.once.Do(func() {
		lib, err := cuda.Open(cudaPaths...)
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
	var h0 time.Duration
	err = k.ctx.Do(func() error {
		if err := k.ev[0].Record(k.stream); err != nil {
			return err
		}
		if err := k.ev[0].Synchronize(); err != nil {
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
		return k.ev[2].Synchronize()
	})
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
	return start, start + run, nil
}

// Close implements gpu.Kernel.
func (k *cudaKernel) Close() error {
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
