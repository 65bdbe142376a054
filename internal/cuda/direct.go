package cuda

import (
	"fmt"
	"runtime"
	"strconv"
	"time"
)

// A Worker calls the driver straight from the goroutine that uses it, instead of handing
// each call to the Context's thread. The CUDA driver lets one context be current on many
// threads at once; Worker.Run locks the calling goroutine to its OS thread, makes the
// Context's (primary) context current there (cuCtxSetCurrent), runs a function with a
// Thread whose methods call the driver directly, then clears the current context and
// unlocks the thread. Several Workers of one Context run side by side, one per goroutine,
// with no hand-over: this is how N host goroutines submit work on N streams of one GPU at
// the rate of N C++ host threads (`gpuwatt loadlevel`'s users).
//
// What a Worker uses (device memory, pinned HostBuffers, streams, modules) is created and
// freed through the Context as usual; it must stay alive while a Worker uses it. A Worker
// is for one goroutine at a time (it owns a small pinned block for kernel parameters).
type Worker struct {
	c      *Context
	params *HostBuffer
	t      Thread
}

// Thread is the handle that Worker.Run passes to its function: the driver calls it offers
// run on the calling OS thread, where the Context is current. It is valid only during Run.
type Thread struct {
	w      *Worker
	active bool
}

const workerParamBytes = 16 * maxArgs // kernelParams pointers, then one 8-byte slot each

// NewWorker returns a Worker of the Context. Its parameter block (pinned host memory) is
// owned by the Context and freed by Close.
func (c *Context) NewWorker() (*Worker, error) {
	if c.lib.cuCtxSetCurrent == nil {
		return nil, missing(symCtxSetCurrent)
	}
	p, err := c.AllocHost(workerParamBytes, HostAllocDefault)
	if err != nil {
		return nil, err
	}
	w := &Worker{c: c, params: p}
	w.t.w = w
	return w, nil
}

// Context returns the Worker's Context.
func (w *Worker) Context() *Context { return w.c }

// Run runs f on the calling goroutine's OS thread with the Context current there. f must
// call the driver only through t (and libraries, such as cuFFT, that use the current
// context): the Context's own methods would hand their calls to its thread, and one called
// while Close waits would deadlock. Close waits for a Run in progress; Run after Close
// returns an error matching ErrContextClosed. A panic in f propagates after clean-up.
func (w *Worker) Run(f func(t *Thread) error) error {
	if w == nil || w.c == nil {
		return fmt.Errorf("cuda: Worker.Run on a nil Worker: %w", ErrContextClosed)
	}
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return fmt.Errorf("cuda: Worker.Run: %w", ErrContextClosed)
	}
	if w.t.active {
		return refuse(ErrorInvalidValue, symCtxSetCurrent, "Worker.Run called inside Run of the same Worker")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check(c.lib.cuCtxSetCurrent(c.h), symCtxSetCurrent); err != nil {
		return err
	}
	// The thread goes back to the Go scheduler with no CUDA context current.
	defer c.lib.cuCtxSetCurrent(0)
	w.t.active = true
	defer func() { w.t.active = false }()
	return f(&w.t)
}

func (t *Thread) check(fn string) (*Context, error) {
	if t == nil || !t.active {
		return nil, refuse(ErrorInvalidContext, fn, "Thread used outside Worker.Run")
	}
	return t.w.c, nil
}

// stream returns the CUstream of s (0 for nil) after checking it belongs to c.
func (t *Thread) stream(c *Context, s *Stream, fn string) (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.c != c {
		return 0, refuse(ErrorInvalidHandle, fn, "stream of another context")
	}
	return s.h, nil
}

// hostRange returns the address of b[off:off+n] after checking it.
func hostRange(c *Context, b *HostBuffer, off, n int, fn string) (uintptr, error) {
	switch {
	case b == nil || b.freed.Load():
		return 0, refuse(ErrorInvalidValue, fn, "nil or freed HostBuffer")
	case b.c != c:
		return 0, refuse(ErrorInvalidValue, fn, "HostBuffer of another context")
	case off < 0 || n < 0 || off+n > b.n:
		return 0, refuse(ErrorInvalidValue, fn, "range ["+strconv.Itoa(off)+", "+strconv.Itoa(off+n)+") outside the HostBuffer's "+strconv.Itoa(b.n)+" bytes")
	}
	return b.p + uintptr(off), nil
}

// CopyHtoDAsync queues a copy of n bytes of src, from byte off, to dst on stream s
// (cuMemcpyHtoDAsync_v2).
func (t *Thread) CopyHtoDAsync(dst DevicePtr, src *HostBuffer, off, n int, s *Stream) error {
	c, err := t.check(symMemcpyHtoDAsync)
	if err != nil {
		return err
	}
	if c.lib.cuMemcpyHtoDAsync == nil {
		return missing(symMemcpyHtoDAsync)
	}
	sh, err := t.stream(c, s, symMemcpyHtoDAsync)
	if err != nil {
		return err
	}
	p, err := hostRange(c, src, off, n, symMemcpyHtoDAsync)
	if err != nil || n == 0 {
		return err
	}
	return check(c.lib.cuMemcpyHtoDAsync(dst, p, uint64(n), sh), symMemcpyHtoDAsync)
}

// CopyDtoHAsync queues a copy of n bytes from src into dst, from byte off, on stream s
// (cuMemcpyDtoHAsync_v2). Read dst after Synchronize.
func (t *Thread) CopyDtoHAsync(dst *HostBuffer, off, n int, src DevicePtr, s *Stream) error {
	c, err := t.check(symMemcpyDtoHAsync)
	if err != nil {
		return err
	}
	if c.lib.cuMemcpyDtoHAsync == nil {
		return missing(symMemcpyDtoHAsync)
	}
	sh, err := t.stream(c, s, symMemcpyDtoHAsync)
	if err != nil {
		return err
	}
	p, err := hostRange(c, dst, off, n, symMemcpyDtoHAsync)
	if err != nil || n == 0 {
		return err
	}
	return check(c.lib.cuMemcpyDtoHAsync(p, src, uint64(n), sh), symMemcpyDtoHAsync)
}

// Launch queues kernel f (cuLaunchKernel), as Context.Launch does, with the arguments
// written into the Worker's own pinned block.
func (t *Thread) Launch(f *Function, cfg LaunchConfig, args ...Arg) error {
	c, err := t.check(symLaunchKernel)
	if err != nil {
		return err
	}
	if c.lib.cuLaunchKernel == nil {
		return missing(symLaunchKernel)
	}
	if f == nil || f.m == nil || f.m.c != c {
		return refuse(ErrorInvalidHandle, symLaunchKernel, "nil Function or a function of another context")
	}
	sh, err := t.stream(c, cfg.Stream, symLaunchKernel)
	if err != nil {
		return err
	}
	g, b := cfg.Grid.norm(), cfg.Block.norm()
	switch {
	case g.X == 0 || b.X == 0:
		return refuse(ErrorInvalidValue, symLaunchKernel, "empty grid "+g.String()+" or block "+b.String())
	case cfg.SharedBytes < 0 || int64(cfg.SharedBytes) > 1<<32-1:
		return refuse(ErrorInvalidValue, symLaunchKernel, "shared memory size out of range")
	case len(args) > maxArgs:
		return refuse(ErrorInvalidValue, symLaunchKernel, strconv.Itoa(len(args))+" arguments (at most "+strconv.Itoa(maxArgs)+")")
	}
	var params uintptr
	if len(args) > 0 {
		base := t.w.params.p
		for i, a := range args {
			slot := base + 8*maxArgs + 8*uintptr(i)
			switch a.Kind.Size() {
			case 4:
				*(*uint32)(cptr(slot)) = uint32(a.Bits)
			case 8:
				*(*uint64)(cptr(slot)) = a.Bits
			default:
				return refuse(ErrorInvalidValue, symLaunchKernel, "argument "+strconv.Itoa(i)+" is invalid (zero Arg)")
			}
			*(*uintptr)(cptr(base + 8*uintptr(i))) = slot
		}
		params = base
	}
	if r := c.lib.cuLaunchKernel(f.h, g, b, uint32(cfg.SharedBytes), sh, params); r != Success {
		return &Error{Code: r, Func: symLaunchKernel, Log: "kernel " + f.name + " grid " + g.String() + " block " + b.String()}
	}
	return nil
}

// Synchronize waits until stream s has finished its work (cuStreamSynchronize; nil: the
// whole context, cuCtxSynchronize).
func (t *Thread) Synchronize(s *Stream) error {
	c, err := t.check(symStreamSynchronize)
	if err != nil {
		return err
	}
	if s == nil {
		if c.lib.cuCtxSynchronize == nil {
			return missing(symCtxSynchronize)
		}
		return check(c.lib.cuCtxSynchronize(), symCtxSynchronize)
	}
	if c.lib.cuStreamSynchronize == nil {
		return missing(symStreamSynchronize)
	}
	sh, err := t.stream(c, s, symStreamSynchronize)
	if err != nil {
		return err
	}
	return check(c.lib.cuStreamSynchronize(sh), symStreamSynchronize)
}

// Wait is Synchronize of stream s with a bound: it polls cuStreamQuery and returns an
// error matching ErrHung when the stream's work is not done after timeout (see
// Event.Wait). Without cuStreamQuery (or timeout <= 0, or a nil s) it is Synchronize.
func (t *Thread) Wait(s *Stream, timeout time.Duration) error {
	c, err := t.check(symStreamQuery)
	if err != nil {
		return err
	}
	if s == nil || c.lib.cuStreamQuery == nil || timeout <= 0 {
		return t.Synchronize(s)
	}
	sh, err := t.stream(c, s, symStreamQuery)
	if err != nil {
		return err
	}
	return poll(func() Result { return c.lib.cuStreamQuery(sh) }, symStreamQuery, "the stream's work", timeout)
}

// Handle returns the CUstream, for libraries that take one (cufftSetStream). Zero for nil.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}
