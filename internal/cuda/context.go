package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Context is a device's primary context together with the one OS thread that uses it.
//
// NewContext starts a goroutine, locks it to its OS thread (runtime.LockOSThread), retains
// the device's primary context (cuDevicePrimaryCtxRetain) and makes it current there
// (cuCtxSetCurrent). Every CUDA call of the Context then runs on that goroutine: the
// typed methods submit themselves, and Do runs any function there. Callers on other
// goroutines wait for their call's result, so a Context is safe to use from many
// goroutines (calls are serialised in arrival order); several Contexts, on one GPU or
// several, run side by side on threads of their own.
//
// Inside a function run by Do, the Context's methods run directly (no second hop), so
// Do is also the way to batch many calls, e.g. a loop of launches, into one hand-over. A
// hand-over wakes the locked thread and then the caller: on the H200 test machine an
// empty-kernel launch took 16.7 µs of host time submitted on its own and 3.4 µs inside Do
// (REAL_GPU_NOTES.md).
//
// The Context owns what it creates: device memory, pinned host buffers, modules, streams
// and events. Close synchronises the context, destroys and frees all of them, releases
// the primary context (cuDevicePrimaryCtxRelease_v2), clears the thread's current context
// and unlocks the thread. A Context that is never closed keeps its goroutine forever.
type Context struct {
	lib *Lib
	dev Device
	h   uintptr // the CUcontext

	work   chan *task
	exited chan struct{}

	mu       sync.RWMutex // guards closed against enqueueing
	closed   bool
	closeErr error // set by the thread before exited is closed

	tid  atomic.Int64 // the thread's OS id while it runs tasks, else -1
	busy atomic.Bool  // the thread is running a task

	// Owned by the context thread: touched only in tasks.
	arena   uintptr // pinned block for kernel parameters and JIT options and logs; 0 until needed
	buffers map[DevicePtr]int64
	hosts   map[*HostBuffer]struct{}
	modules map[*Module]struct{}
	streams map[*Stream]struct{}
	events  map[*Event]struct{}
}

// task is one function to run on the context thread.
type task struct {
	f        func() error
	err      error
	panicked bool
	pv       any
	stack    []byte
	done     chan struct{}
}

var taskPool = sync.Pool{New: func() any { return &task{done: make(chan struct{}, 1)} }}

func (t *task) run() {
	defer func() {
		if r := recover(); r != nil {
			t.panicked, t.pv, t.stack = true, r, debug.Stack()
		}
		t.done <- struct{}{}
	}()
	t.err = t.f()
}

// NewContext starts d's context thread and retains d's primary context on it.
func NewContext(d Device) (*Context, error) {
	if !d.Valid() {
		return nil, d.invalid(symPrimaryCtxRetain)
	}
	l := d.lib
	for _, req := range []struct {
		ok   bool
		name string
	}{
		{l.cuDevicePrimaryCtxRetain != nil, symPrimaryCtxRetain},
		{l.cuDevicePrimaryCtxRelease != nil, symPrimaryCtxRelease2},
		{l.cuCtxSetCurrent != nil, symCtxSetCurrent},
	} {
		if !req.ok {
			return nil, missing(req.name)
		}
	}
	if err := l.Init(); err != nil {
		return nil, err
	}
	c := &Context{
		lib:     l,
		dev:     d,
		work:    make(chan *task),
		exited:  make(chan struct{}),
		buffers: map[DevicePtr]int64{},
		hosts:   map[*HostBuffer]struct{}{},
		modules: map[*Module]struct{}{},
		streams: map[*Stream]struct{}{},
		events:  map[*Event]struct{}{},
	}
	c.tid.Store(-1)
	ready := make(chan error, 1)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// loop is the context thread.
func (c *Context) loop(ready chan<- error) {
	runtime.LockOSThread()
	// A thread whose CUDA state is in doubt is not handed back to the Go scheduler: a
	// goroutine that exits while locked takes its thread with it.
	unlock := false
	defer func() {
		c.tid.Store(-1)
		if unlock {
			runtime.UnlockOSThread()
		}
		close(c.exited)
	}()
	c.tid.Store(gettid())

	var h uintptr
	if err := check(c.lib.cuDevicePrimaryCtxRetain(&h, c.dev.h), symPrimaryCtxRetain); err != nil {
		ready <- err
		unlock = true
		return
	}
	if err := check(c.lib.cuCtxSetCurrent(h), symCtxSetCurrent); err != nil {
		_ = c.lib.cuDevicePrimaryCtxRelease(c.dev.h)
		ready <- err
		return
	}
	c.h = h
	ready <- nil

	for t := range c.work {
		c.busy.Store(true)
		t.run()
		c.busy.Store(false)
	}

	c.busy.Store(true) // releaseAll runs on the thread too
	err := c.releaseAll()
	if rerr := check(c.lib.cuDevicePrimaryCtxRelease(c.dev.h), c.lib.symRelease); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if serr := check(c.lib.cuCtxSetCurrent(0), symCtxSetCurrent); serr != nil {
		err = errors.Join(err, serr)
	} else {
		unlock = true
	}
	c.busy.Store(false)
	c.closeErr = err
}

// onThread reports whether the caller is the context thread (running a task). Only the
// goroutine locked to that OS thread can run on it, so comparing thread ids is exact.
func (c *Context) onThread() bool {
	return c.busy.Load() && gettid() == c.tid.Load()
}

// Do runs f on the context thread, where the context is current, and returns its error.
// f may call the Context's methods (and those of its objects): they run directly. f must
// not keep running after the Context is closed, must not call Close, and must not block
// waiting for another goroutine's call on the same Context (that call waits for f). A
// panic in f is re-raised in the caller's goroutine. After Close, Do returns an error
// matching ErrContextClosed.
func (c *Context) Do(f func() error) error {
	return c.run("Do", f)
}

// run is Do, naming fn in the error after Close.
func (c *Context) run(fn string, f func() error) error {
	if c == nil {
		return fmt.Errorf("cuda: %s on a nil Context: %w", fn, ErrContextClosed)
	}
	if c.onThread() {
		return f()
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return fmt.Errorf("cuda: %s: %w", fn, ErrContextClosed)
	}
	t := taskPool.Get().(*task)
	t.f = f
	c.work <- t
	c.mu.RUnlock()
	<-t.done
	err, panicked, pv, stack := t.err, t.panicked, t.pv, t.stack
	*t = task{done: t.done}
	taskPool.Put(t)
	if panicked {
		panic(fmt.Sprintf("cuda: panic on the context thread: %v\n\n%s", pv, stack))
	}
	return err
}

// Close releases everything the Context owns and its primary-context reference, then
// stops its thread. It waits for calls already submitted; later calls fail with
// ErrContextClosed. Close is idempotent; it must not be called from inside Do. The error
// joins every failure of the clean-up (the clean-up goes on past a failure).
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	if c.onThread() {
		return errors.New("cuda: Context.Close called on the context thread (inside Do)")
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.exited
		return nil
	}
	c.closed = true
	close(c.work)
	c.mu.Unlock()
	<-c.exited
	return c.closeErr
}

// releaseAll frees what the Context owns, in dependency order, after waiting for the GPU.
func (c *Context) releaseAll() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.lib.cuCtxSynchronize != nil {
		add(check(c.lib.cuCtxSynchronize(), symCtxSynchronize))
	}
	for e := range c.events {
		add(c.destroyEvent(e))
	}
	for s := range c.streams {
		add(c.destroyStream(s))
	}
	for m := range c.modules {
		add(c.unloadModule(m))
	}
	for p := range c.buffers {
		add(c.free(p))
	}
	for b := range c.hosts {
		add(c.freeHost(b))
	}
	if c.arena != 0 {
		add(check(c.lib.cuMemFreeHost(c.arena), symMemFreeHost))
		c.arena = 0
	}
	return errors.Join(errs...)
}

// Device returns the Context's device.
func (c *Context) Device() Device { return c.dev }

// Handle returns the CUcontext, for calls made through Do.
func (c *Context) Handle() uintptr { return c.h }

// Synchronize waits until the GPU has finished all work of the context (cuCtxSynchronize).
func (c *Context) Synchronize() error {
	return c.run(symCtxSynchronize, func() error {
		if c.lib.cuCtxSynchronize == nil {
			return missing(symCtxSynchronize)
		}
		return check(c.lib.cuCtxSynchronize(), symCtxSynchronize)
	})
}

// MemInfo returns the free and total device memory in bytes, as the driver sees them for
// the whole GPU (cuMemGetInfo_v2).
func (c *Context) MemInfo() (free, total int64, err error) {
	err = c.run(symMemGetInfo, func() error {
		if c.lib.cuMemGetInfo == nil {
			return missing(symMemGetInfo)
		}
		var f, t uint64
		if err := check(c.lib.cuMemGetInfo(&f, &t), symMemGetInfo); err != nil {
			return err
		}
		free, total = int64(f), int64(t)
		return nil
	})
	return free, total, err
}

// Live counts what a Context owns now.
type Live struct {
	Buffers, HostBuffers, Modules, Streams, Events int
	DeviceBytes                                    int64
}

// Live returns the counts of what the Context owns (all zero after Close).
func (c *Context) Live() Live {
	var l Live
	_ = c.run("Live", func() error {
		l = Live{
			Buffers: len(c.buffers), HostBuffers: len(c.hosts), Modules: len(c.modules),
			Streams: len(c.streams), Events: len(c.events),
		}
		for _, n := range c.buffers {
			l.DeviceBytes += n
		}
		return nil
	})
	return l
}

// Arena layout: one pinned block per Context, reused by every launch and module load
// (they run one at a time on the context thread). The driver reads kernel parameters
// during cuLaunchKernel and JIT options during cuModuleLoadDataEx, so reuse is safe.
const (
	maxArgs      = 64
	maxJITOpts   = 16
	argPtrsOff   = 0                         // void*[maxArgs]: kernelParams
	argValsOff   = argPtrsOff + 8*maxArgs    // 8-byte slots, one per argument
	jitOptsOff   = argValsOff + 8*maxArgs    // CUjit_option[maxJITOpts] (4 bytes each)
	jitValsOff   = jitOptsOff + 4*maxJITOpts // void*[maxJITOpts]
	jitErrLogOff = 2048                      // char[jitLogSize]
	jitInfLogOff = jitErrLogOff + jitLogSize // char[jitLogSize]
	jitLogSize   = 16 << 10
	arenaSize    = jitInfLogOff + jitLogSize
)

// The option arrays fit below the logs (fails to compile otherwise).
var _ [jitErrLogOff - (jitValsOff + 8*maxJITOpts)]struct{}

// arenaPtr returns the Context's pinned arena, allocating it on first use. Thread only.
func (c *Context) arenaPtr() (uintptr, error) {
	if c.arena != 0 {
		return c.arena, nil
	}
	if c.lib.cuMemHostAlloc == nil {
		return 0, missing(symMemHostAlloc)
	}
	if c.lib.cuMemFreeHost == nil {
		return 0, missing(symMemFreeHost)
	}
	var p uintptr
	if err := check(c.lib.cuMemHostAlloc(&p, arenaSize, HostAllocDefault), symMemHostAlloc); err != nil {
		return 0, err
	}
	c.arena = p
	return p, nil
}
