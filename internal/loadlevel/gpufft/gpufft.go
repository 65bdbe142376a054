// Package gpufft is the GPU side of `gpuwatt loadlevel`'s FFT workload: transactions that
// copy an input in, transform it on the GPU and copy the result out, as in the SPEC GPGPU
// paper (von Kistowski et al., ICPE'19). Two variants:
//
//   - gpu: gpuwatt's own radix-2 FFT in PTX (kernels.FFT), JIT-compiled by the driver;
//   - cufft: NVIDIA's cuFFT, loaded at run time (cufft.Open), one plan per user.
//
// A Runtime opens the GPU once: the CUDA library, the device and one cuda.Context (the
// device's primary context). Each User's context (Chauffeur's execution context) holds
// its own stream, device buffers (input, output and the twiddle table, uploaded once),
// pinned host buffers and a cuda.Worker. A transaction runs entirely on the goroutine of
// the user that takes it: Worker.Run makes the CUDA context current on that goroutine's
// locked OS thread and the copy in, the kernel (or cufftExecC2C), the copy out and the
// stream synchronisation are direct driver calls there. N users are N host threads
// submitting on N streams at once, as N threads of a C++ program would; no call is funnelled
// through one thread.
package gpufft

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cublas"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cufft"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
)

// Variants.
const (
	Own   = "gpu"
	CuFFT = "cufft"
)

// Options of Open.
type Options struct {
	// CUDAPaths, CUFFTPaths and CUBLASPaths override where the libraries are looked for (tests).
	CUDAPaths, CUFFTPaths, CUBLASPaths []string
	// UUID selects the CUDA device with this UUID (the NVML device measured); "" takes
	// device 0.
	UUID string
	// WaitTimeout bounds a transaction's wait for its stream (0: DefaultWaitTimeout): a
	// transaction whose GPU work has not finished then is taken to hang (see Runtime.Hung).
	WaitTimeout time.Duration
}

// DefaultWaitTimeout is Options.WaitTimeout's default: a transaction takes milliseconds.
const DefaultWaitTimeout = 20 * time.Second

// Runtime is one GPU opened for FFT transactions.
type Runtime struct {
	opt  Options
	ctx  *cuda.Context
	name string
	cc   string

	mu   sync.Mutex
	fns  map[string]*cuda.Function // own kernels by descriptor name, loaded once
	fft  *cufft.Lib
	ferr error
	fone sync.Once
	blas *cublas.Lib
	berr error
	bone sync.Once

	hmu  sync.Mutex
	hung error // set once a transaction hangs: nothing more runs, is freed or closed
}

// Hung is the error of the transaction that hung on this GPU (matching gpu.ErrKernelHung),
// nil while none has.
func (r *Runtime) Hung() error {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	return r.hung
}

// wait waits for stream s within the bound (on th, in a Worker's Run), and marks the
// runtime hung, naming the transaction, where it does not finish.
func (r *Runtime) wait(th *cuda.Thread, s *cuda.Stream, what string) error {
	b := r.opt.WaitTimeout
	if b <= 0 {
		b = DefaultWaitTimeout
	}
	err := th.Wait(s, b)
	if errors.Is(err, cuda.ErrHung) {
		r.hmu.Lock()
		if r.hung == nil {
			r.hung = fmt.Errorf("%w: a %s transaction's GPU work had not finished after %s (cuStreamQuery polled); the GPU runs nothing more until gpuwatt exits", gpu.ErrKernelHung, what, b)
		}
		err = r.hung
		r.hmu.Unlock()
	}
	return err
}

// Open loads libcuda, finds the device and opens its context.
func Open(o Options) (*Runtime, error) {
	lib, err := cuda.Open(o.CUDAPaths...)
	if err != nil {
		return nil, err
	}
	n, err := lib.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the CUDA driver sees no GPU")
	}
	dev, err := lib.Device(0)
	if err != nil {
		return nil, err
	}
	if o.UUID != "" {
		found := false
		for i := range n {
			d, err := lib.Device(i)
			if err != nil {
				continue
			}
			if u, err := d.UUID(); err == nil && strings.EqualFold(u, o.UUID) {
				dev, found = d, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no CUDA device with UUID %s", o.UUID)
		}
	}
	p, err := dev.Properties()
	if err != nil {
		return nil, err
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		return nil, err
	}
	return &Runtime{opt: o, ctx: ctx, name: p.Name, cc: p.ComputeCapability(), fns: map[string]*cuda.Function{}}, nil
}

// Name is the GPU's name.
func (r *Runtime) Name() string { return r.name }

// Close releases the context and everything in it; after a transaction hung, nothing (each
// release would wait for the GPU for ever): the process's end releases it.
func (r *Runtime) Close() error {
	if r.Hung() != nil {
		return nil
	}
	return r.ctx.Close()
}

// CuFFT loads libcufft (once) and returns it, or why it cannot be had.
func (r *Runtime) CuFFT() (*cufft.Lib, error) {
	r.fone.Do(func() { r.fft, r.ferr = cufft.Open(r.opt.CUFFTPaths...) })
	return r.fft, r.ferr
}

// load returns the kernel of descriptor d, JIT-compiling it on first use.
func (r *Runtime) load(d kernels.Descriptor, err error) (*cuda.Function, kernels.Descriptor, error) {
	if err != nil {
		return nil, d, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.fns[d.Name]; ok {
		return f, d, nil
	}
	m, err := r.ctx.LoadPTX(d.PTX)
	if err != nil {
		return nil, d, fmt.Errorf("%s: %w", d.Name, err)
	}
	f, err := m.Function(d.Entry)
	if err != nil {
		return nil, d, err
	}
	r.fns[d.Name] = f
	return f, d, nil
}

// Tx is the FFT transaction of batch transforms of n points on the GPU: generate the input
// on the CPU into the user's pinned buffer, copy it in (cuMemcpyHtoDAsync), transform,
// copy the result out (cuMemcpyDtoHAsync), synchronise the user's stream.
type Tx struct {
	r       *Runtime
	variant string
	n       int
	batch   int
	fn      *cuda.Function
	desc    kernels.Descriptor
	// fnRev and fnStage are the own FFT's global-memory passes above kernels.FFTMaxSize.
	fnRev, fnStage     *cuda.Function
	descRev, descStage kernels.Descriptor
	fft                *cufft.Lib
	tw                 []float32
	ref                *loadlevel.FFT // verification against the float64 reference
	// Corrupt, when set, plants a wrong result (tests of the verification).
	Corrupt func(user int, seq int64) bool
}

var (
	_ loadlevel.Transaction   = (*Tx)(nil)
	_ loadlevel.ContextOpener = (*Tx)(nil)
	_ loadlevel.ContextCloser = (*Tx)(nil)
)

// NewTx returns the transaction of variant (Own or CuFFT) for batch transforms of n points.
func (r *Runtime) NewTx(variant string, n, batch int) (*Tx, error) {
	ref, err := loadlevel.NewFFT(n)
	if err != nil {
		return nil, err
	}
	if batch < 1 || int64(n)*int64(batch) > 1<<28 {
		return nil, fmt.Errorf("batch %d of %d points: want 1 to %d", batch, n, (1<<28)/n)
	}
	t := &Tx{r: r, variant: variant, n: n, batch: batch, ref: ref}
	dev := kernels.Device{CC: r.cc}
	switch variant {
	case Own:
		if n <= kernels.FFTMaxSize {
			if t.fn, t.desc, err = r.load(kernels.FFT(n, dev)); err != nil {
				return nil, err
			}
		} else {
			if t.fnRev, t.descRev, err = r.load(kernels.FFTBitrev(n, batch, dev)); err != nil {
				return nil, err
			}
			if t.fnStage, t.descStage, err = r.load(kernels.FFTStage(n, batch, dev)); err != nil {
				return nil, err
			}
		}
		t.tw = kernels.FFTTwiddles(n)
	case CuFFT:
		if t.fft, err = r.CuFFT(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("variant %q: want %s or %s", variant, Own, CuFFT)
	}
	return t, nil
}

// Name implements loadlevel.Transaction: "fft-64/gpu", "fft-64/cufft", "fft-1048576x16/cufft"
// (16 transforms per transaction).
func (t *Tx) Name() string {
	if t.batch > 1 {
		return fmt.Sprintf("fft-%dx%d/%s", t.n, t.batch, t.variant)
	}
	return fmt.Sprintf("fft-%d/%s", t.n, t.variant)
}

// user is a User's execution context.
type user struct {
	userIO
	w               *cuda.Worker
	dtw             cuda.DevicePtr
	in, out         []complex64 // views of hin and hout
	pool            []complex64 // random points the inputs of large transactions are drawn from
	plan            *cufft.Plan
	closed, corrupt bool
}

// NewContext implements loadlevel.Transaction; Run uses OpenContext instead.
func (t *Tx) NewContext() any {
	c, err := t.OpenContext()
	if err != nil {
		return &user{closed: true}
	}
	return c
}

// OpenContext implements loadlevel.ContextOpener: the user's stream, device buffers,
// pinned host buffers, worker, and (cuFFT) plan bound to the stream. The own FFT's twiddle
// table is uploaded here, once per user.
func (t *Tx) OpenContext() (any, error) {
	c := t.r.ctx
	u := &user{}
	fail := func(e error) (any, error) {
		_ = t.CloseContext(u)
		return nil, e
	}
	var err error
	if err = u.open(c, 8*t.n*t.batch); err != nil {
		return fail(err)
	}
	u.in = unsafe.Slice((*complex64)(unsafe.Pointer(unsafe.SliceData(u.hin.Bytes()))), t.n*t.batch)
	u.out = unsafe.Slice((*complex64)(unsafe.Pointer(unsafe.SliceData(u.hout.Bytes()))), t.n*t.batch)
	if t.n*t.batch > largeInput {
		u.pool = randomPoints(t.n, uint64(len(t.tw))+uint64(t.n)*7919+uint64(t.batch))
	}
	if u.w, err = c.NewWorker(); err != nil {
		return fail(err)
	}
	switch t.variant {
	case Own:
		if u.dtw, err = c.Alloc(int64(4 * len(t.tw))); err != nil {
			return fail(err)
		}
		if err := c.CopyHtoD(u.dtw, cuda.AsBytes(t.tw)); err != nil {
			return fail(err)
		}
	case CuFFT:
		err = u.w.Run(func(*cuda.Thread) error {
			p, err := t.fft.Plan1d(t.n, t.batch)
			if err != nil {
				return err
			}
			u.plan = p
			return p.SetStream(u.s.Handle())
		})
		if err != nil {
			return fail(err)
		}
	}
	return u, nil
}

// CloseContext implements loadlevel.ContextCloser.
func (t *Tx) CloseContext(ctx any) error {
	u, ok := ctx.(*user)
	if !ok || u == nil || u.closed {
		return nil
	}
	u.closed = true
	if t.r.Hung() != nil {
		return nil // see Runtime.Close
	}
	c := t.r.ctx
	var errs []error
	if u.plan != nil && u.w != nil {
		errs = append(errs, u.w.Run(func(*cuda.Thread) error { return u.plan.Destroy() }))
	}
	errs = append(errs, u.userIO.close(c)...)
	if u.dtw != 0 {
		errs = append(errs, c.Free(u.dtw))
	}
	u.in, u.out = nil, nil
	return errors.Join(errs...)
}

// input is one transaction's input: the user's pinned buffer, and which of its transforms
// is copied for verification if the result is picked.
type input struct {
	data []complex64
	pick int
}

// largeInput is the number of points above which a transaction's input is drawn from the
// user's pool rather than generated point by point: generating 2^20 random points takes
// milliseconds of the host, longer than the GPU's transform.
const largeInput = 1 << 16

// randomPoints returns n uniform random points in [-1,1)².
func randomPoints(n int, seed uint64) []complex64 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	p := make([]complex64, n)
	for i := range p {
		p[i] = complex(float32(2*r.Float64()-1), float32(2*r.Float64()-1))
	}
	return p
}

// Generate implements loadlevel.Transaction: uniform random points in [-1,1)² written
// straight into the user's pinned input buffer. Above largeInput points in all, each
// transform's input is the user's pool of n random points rotated by a random offset (two
// copies instead of n random draws).
func (t *Tx) Generate(u *loadlevel.User) any {
	c := u.Context.(*user)
	if c.pool == nil {
		for i := range c.in {
			c.in[i] = complex(float32(2*u.Rand.Float64()-1), float32(2*u.Rand.Float64()-1))
		}
		return input{data: c.in, pick: u.Rand.IntN(t.batch)}
	}
	for b := range t.batch {
		x := c.in[b*t.n : (b+1)*t.n]
		off := u.Rand.IntN(t.n)
		k := copy(x, c.pool[off:])
		copy(x[k:], c.pool[:off])
	}
	return input{data: c.in, pick: u.Rand.IntN(t.batch)}
}

// Process implements loadlevel.Transaction: copy in, transform, copy out, synchronise,
// all on the calling goroutine's thread. The result is the user's pinned output buffer,
// valid until its next transaction.
func (t *Tx) Process(u *loadlevel.User, _ any) (any, error) {
	c := u.Context.(*user)
	if c.closed {
		return nil, errors.New("user context is closed (or could not be made)")
	}
	if err := t.r.Hung(); err != nil {
		return nil, err
	}
	err := c.w.Run(func(th *cuda.Thread) error {
		if err := th.CopyHtoDAsync(c.dIn, c.hin, 0, c.bytes, c.s); err != nil {
			return err
		}
		switch {
		case t.variant == Own && t.fn != nil:
			cfg := cuda.LaunchConfig{Grid: cuda.D1(t.batch), Block: cuda.D1(t.desc.Threads), Stream: c.s}
			if err := th.Launch(t.fn, cfg, cuda.Ptr(c.dIn), cuda.Ptr(c.dOut), cuda.Ptr(c.dtw)); err != nil {
				return err
			}
		case t.variant == Own:
			cfg := cuda.LaunchConfig{Grid: cuda.D1(t.descRev.Blocks), Block: cuda.D1(kernels.FFTLargeThreads), Stream: c.s}
			if err := th.Launch(t.fnRev, cfg, cuda.Ptr(c.dIn), cuda.Ptr(c.dOut)); err != nil {
				return err
			}
			cfg.Grid = cuda.D1(t.descStage.Blocks)
			for st := 0; 1<<st < t.n; st++ {
				if err := th.Launch(t.fnStage, cfg, cuda.Ptr(c.dOut), cuda.Ptr(c.dtw), cuda.U32(uint32(st))); err != nil {
					return err
				}
			}
		default:
			if err := c.plan.ExecC2C(uint64(c.dIn), uint64(c.dOut), cufft.Forward); err != nil {
				return err
			}
		}
		if err := th.CopyDtoHAsync(c.hout, 0, c.bytes, c.dOut, c.s); err != nil {
			return err
		}
		return t.r.wait(th, c.s, t.Name())
	})
	if err != nil {
		return nil, err
	}
	if t.Corrupt != nil && t.Corrupt(u.ID, u.Seq) {
		c.out[len(c.out)/3] += 1
	}
	return c.out, nil
}

// Snapshot implements loadlevel.Transaction: copies of one transform's input and output
// (the one Generate picked at random).
func (t *Tx) Snapshot(in, out any) (any, any) {
	x := in.(input)
	a, b := x.pick*t.n, (x.pick+1)*t.n
	return append([]complex64(nil), x.data[a:b]...), append([]complex64(nil), out.([]complex64)[a:b]...)
}

// Verify implements loadlevel.Transaction: against the float64 reference FFT.
func (t *Tx) Verify(in, out any, tol float64) error { return t.ref.Verify(in, out, tol) }

// Descriptor is the own FFT kernel's descriptor (zero for cuFFT).
func (t *Tx) Descriptor() kernels.Descriptor { return t.desc }
