package cuda

import (
	"fmt"
	"math"
	"time"
)

// Stream is a CUDA stream of a Context. A nil *Stream stands for the NULL (default) stream
// wherever a stream is asked for.
type Stream struct {
	c     *Context
	h     uintptr
	flags StreamFlags
	alive bool // context thread only
}

// NewStream creates a stream (cuStreamCreate); StreamNonBlocking makes it independent of
// the NULL stream. The Context owns it: Destroy it, or Close destroys it.
func (c *Context) NewStream(flags StreamFlags) (*Stream, error) {
	var s *Stream
	err := c.run(symStreamCreate, func() error {
		if c.lib.cuStreamCreate == nil {
			return missing(symStreamCreate)
		}
		if c.lib.cuStreamDestroy == nil {
			return missing(symStreamDestroy)
		}
		var h uintptr
		if err := check(c.lib.cuStreamCreate(&h, flags), symStreamCreate); err != nil {
			return err
		}
		s = &Stream{c: c, h: h, flags: flags, alive: true}
		c.streams[s] = struct{}{}
		return nil
	})
	return s, err
}

// Flags returns the flags the stream was created with.
func (s *Stream) Flags() StreamFlags { return s.flags }

// Context returns the stream's Context.
func (s *Stream) Context() *Context { return s.c }

// streamHandle returns the CUstream of s for a call fn of c: 0 for nil. Thread only.
func (c *Context) streamHandle(s *Stream, fn string) (uintptr, error) {
	switch {
	case s == nil:
		return 0, nil
	case s.c != c:
		return 0, refuse(ErrorInvalidHandle, fn, "stream of another context")
	case !s.alive:
		return 0, refuse(ErrorInvalidHandle, fn, "stream destroyed")
	}
	return s.h, nil
}

// Synchronize waits until the stream's work is done (cuStreamSynchronize).
func (s *Stream) Synchronize() error {
	if s == nil {
		return refuse(ErrorInvalidHandle, symStreamSynchronize, "nil Stream (use Context.Synchronize)")
	}
	c := s.c
	return c.run(symStreamSynchronize, func() error {
		if c.lib.cuStreamSynchronize == nil {
			return missing(symStreamSynchronize)
		}
		h, err := c.streamHandle(s, symStreamSynchronize)
		if err != nil {
			return err
		}
		return check(c.lib.cuStreamSynchronize(h), symStreamSynchronize)
	})
}

// Destroy destroys the stream (cuStreamDestroy_v2); work already queued still completes.
func (s *Stream) Destroy() error {
	if s == nil {
		return refuse(ErrorInvalidHandle, symStreamDestroy, "nil Stream")
	}
	return s.c.run(symStreamDestroy, func() error { return s.c.destroyStream(s) })
}

func (c *Context) destroyStream(s *Stream) error {
	if _, err := c.streamHandle(s, symStreamDestroy); err != nil {
		return err
	}
	s.alive = false
	delete(c.streams, s)
	return check(c.lib.cuStreamDestroy(s.h), symStreamDestroy)
}

// Event is a CUDA event of a Context: a marker in a stream whose completion can be waited
// for and timed.
type Event struct {
	c     *Context
	h     uintptr
	flags EventFlags
	alive bool // context thread only
}

// NewEvent creates an event (cuEventCreate). EventDefault times and spins on Synchronize;
// EventBlockingSync sleeps instead. The Context owns it: Destroy it, or Close destroys it.
func (c *Context) NewEvent(flags EventFlags) (*Event, error) {
	var e *Event
	err := c.run(symEventCreate, func() error {
		if c.lib.cuEventCreate == nil {
			return missing(symEventCreate)
		}
		if c.lib.cuEventDestroy == nil {
			return missing(symEventDestroy)
		}
		var h uintptr
		if err := check(c.lib.cuEventCreate(&h, flags), symEventCreate); err != nil {
			return err
		}
		e = &Event{c: c, h: h, flags: flags, alive: true}
		c.events[e] = struct{}{}
		return nil
	})
	return e, err
}

// eventHandle returns the CUevent of e for a call fn of c. Thread only.
func (c *Context) eventHandle(e *Event, fn string) (uintptr, error) {
	switch {
	case e == nil:
		return 0, refuse(ErrorInvalidHandle, fn, "nil Event")
	case e.c != c:
		return 0, refuse(ErrorInvalidHandle, fn, "event of another context")
	case !e.alive:
		return 0, refuse(ErrorInvalidHandle, fn, "event destroyed")
	}
	return e.h, nil
}

// Record records the event in stream s (nil: the NULL stream) (cuEventRecord).
func (e *Event) Record(s *Stream) error {
	if e == nil {
		return refuse(ErrorInvalidHandle, symEventRecord, "nil Event")
	}
	c := e.c
	return c.run(symEventRecord, func() error {
		if c.lib.cuEventRecord == nil {
			return missing(symEventRecord)
		}
		h, err := c.eventHandle(e, symEventRecord)
		if err != nil {
			return err
		}
		sh, err := c.streamHandle(s, symEventRecord)
		if err != nil {
			return err
		}
		return check(c.lib.cuEventRecord(h, sh), symEventRecord)
	})
}

// Synchronize waits until the work before the event's last Record is done
// (cuEventSynchronize).
func (e *Event) Synchronize() error {
	if e == nil {
		return refuse(ErrorInvalidHandle, symEventSynchronize, "nil Event")
	}
	c := e.c
	return c.run(symEventSynchronize, func() error {
		if c.lib.cuEventSynchronize == nil {
			return missing(symEventSynchronize)
		}
		h, err := c.eventHandle(e, symEventSynchronize)
		if err != nil {
			return err
		}
		return check(c.lib.cuEventSynchronize(h), symEventSynchronize)
	})
}

// Destroy destroys the event (cuEventDestroy_v2).
func (e *Event) Destroy() error {
	if e == nil {
		return refuse(ErrorInvalidHandle, symEventDestroy, "nil Event")
	}
	return e.c.run(symEventDestroy, func() error { return e.c.destroyEvent(e) })
}

func (c *Context) destroyEvent(e *Event) error {
	if _, err := c.eventHandle(e, symEventDestroy); err != nil {
		return err
	}
	e.alive = false
	delete(c.events, e)
	return check(c.lib.cuEventDestroy(e.h), symEventDestroy)
}

// ElapsedTime returns the time between two recorded, completed events of one Context in
// milliseconds, with the driver's resolution of about 0.5 µs (cuEventElapsedTime_v2, or
// cuEventElapsedTime on older drivers). An event not yet complete gives an error matching
// ErrNotReady; one never recorded, or created with EventDisableTiming, ErrInvalidHandle.
func ElapsedTime(start, end *Event) (float32, error) {
	if start == nil || end == nil {
		return 0, refuse(ErrorInvalidHandle, symEventElapsedTimeV2, "nil Event")
	}
	c := start.c
	var ms float32
	err := c.run(symEventElapsedTimeV2, func() error {
		if c.lib.cuEventElapsedTime == nil {
			return missing(symEventElapsedTimeV2)
		}
		a, err := c.eventHandle(start, c.lib.symElapsed)
		if err != nil {
			return err
		}
		b, err := c.eventHandle(end, c.lib.symElapsed)
		if err != nil {
			return err
		}
		var v float32
		if err := check(c.lib.cuEventElapsedTime(&v, a, b), c.lib.symElapsed); err != nil {
			return err
		}
		ms = v
		return nil
	})
	return ms, err
}

// Elapsed is ElapsedTime as a time.Duration (rounded to the nanosecond).
func Elapsed(start, end *Event) (time.Duration, error) {
	ms, err := ElapsedTime(start, end)
	if err != nil {
		return 0, err
	}
	return time.Duration(math.Round(float64(ms) * 1e6)), nil
}

// Wait is Synchronize with a bound: it polls cuEventQuery until the work before the event's
// last Record is done, and returns an error matching ErrHung when it is not done after
// timeout (a kernel that never ends), instead of waiting for ever as cuEventSynchronize
// would. It spins for the first millisecond (a short wait's end is seen within
// microseconds, as Synchronize's spin sees it), then sleeps between polls (up to 2 ms).
// Without cuEventQuery in the driver (or timeout <= 0) it is Synchronize.
func (e *Event) Wait(timeout time.Duration) error {
	if e == nil {
		return refuse(ErrorInvalidHandle, symEventQuery, "nil Event")
	}
	c := e.c
	if c.lib.cuEventQuery == nil || timeout <= 0 {
		return e.Synchronize()
	}
	return c.run(symEventQuery, func() error {
		h, err := c.eventHandle(e, symEventQuery)
		if err != nil {
			return err
		}
		return poll(func() Result { return c.lib.cuEventQuery(h) }, symEventQuery, "the work before the event", timeout)
	})
}

// Wait is Synchronize with a bound, polling cuStreamQuery (see Event.Wait).
func (s *Stream) Wait(timeout time.Duration) error {
	if s == nil {
		return refuse(ErrorInvalidHandle, symStreamQuery, "nil Stream")
	}
	c := s.c
	if c.lib.cuStreamQuery == nil || timeout <= 0 {
		return s.Synchronize()
	}
	return c.run(symStreamQuery, func() error {
		h, err := c.streamHandle(s, symStreamQuery)
		if err != nil {
			return err
		}
		return poll(func() Result { return c.lib.cuStreamQuery(h) }, symStreamQuery, "the stream's work", timeout)
	})
}

// poll calls query until it returns Success (nil), an error other than
// CUDA_ERROR_NOT_READY (that error), or timeout has passed (an error matching ErrHung).
func poll(query func() Result, fn, what string, timeout time.Duration) error {
	t0 := time.Now()
	spin, nap := t0.Add(time.Millisecond), 20*time.Microsecond
	for {
		switch r := query(); r {
		case Success:
			return nil
		case ErrorNotReady:
		default:
			return check(r, fn)
		}
		now := time.Now()
		if now.Sub(t0) >= timeout {
			return fmt.Errorf("cuda: %s: %s had not finished after %s: %w", fn, what, timeout, ErrHung)
		}
		if now.After(spin) {
			time.Sleep(nap)
			nap = min(2*nap, 2*time.Millisecond)
		}
	}
}
