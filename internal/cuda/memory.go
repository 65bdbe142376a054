package cuda

import (
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Alloc allocates n bytes of device memory (cuMemAlloc_v2). The Context owns it: Free it,
// or Close frees it.
func (c *Context) Alloc(n int64) (DevicePtr, error) {
	var p DevicePtr
	err := c.run(symMemAlloc, func() error {
		if c.lib.cuMemAlloc == nil {
			return missing(symMemAlloc)
		}
		if n <= 0 {
			return refuse(ErrorInvalidValue, symMemAlloc, "size "+strconv.FormatInt(n, 10)+" bytes")
		}
		var d DevicePtr
		if err := check(c.lib.cuMemAlloc(&d, uint64(n)), symMemAlloc); err != nil {
			return err
		}
		c.buffers[d] = n
		p = d
		return nil
	})
	return p, err
}

// Free frees device memory from Alloc (cuMemFree_v2). A pointer this Context did not
// allocate, or already freed, gives an error matching ErrInvalidValue.
func (c *Context) Free(p DevicePtr) error {
	return c.run(symMemFree, func() error { return c.free(p) })
}

func (c *Context) free(p DevicePtr) error {
	if _, ok := c.buffers[p]; !ok {
		return refuse(ErrorInvalidValue, symMemFree, "not allocated by this context (or already freed)")
	}
	if c.lib.cuMemFree == nil {
		return missing(symMemFree)
	}
	delete(c.buffers, p)
	return check(c.lib.cuMemFree(p), symMemFree)
}

// MemsetD8 sets n bytes at p to v (cuMemsetD8_v2).
func (c *Context) MemsetD8(p DevicePtr, v uint8, n int64) error {
	return c.run(symMemsetD8, func() error {
		if c.lib.cuMemsetD8 == nil {
			return missing(symMemsetD8)
		}
		if n < 0 {
			return refuse(ErrorInvalidValue, symMemsetD8, "negative count")
		}
		return check(c.lib.cuMemsetD8(p, v, uint64(n)), symMemsetD8)
	})
}

// MemsetD32 sets n 32-bit words at p (4-byte aligned) to v (cuMemsetD32_v2).
func (c *Context) MemsetD32(p DevicePtr, v uint32, n int64) error {
	return c.run(symMemsetD32, func() error {
		if c.lib.cuMemsetD32 == nil {
			return missing(symMemsetD32)
		}
		if n < 0 {
			return refuse(ErrorInvalidValue, symMemsetD32, "negative count")
		}
		return check(c.lib.cuMemsetD32(p, v, uint64(n)), symMemsetD32)
	})
}

// CopyHtoD copies src to device memory at dst and returns when the copy is done
// (cuMemcpyHtoD_v2). src may be any Go memory: the driver reads it during the call only.
func (c *Context) CopyHtoD(dst DevicePtr, src []byte) error {
	return c.run(symMemcpyHtoD, func() error {
		if c.lib.cuMemcpyHtoD == nil {
			return missing(symMemcpyHtoD)
		}
		if len(src) == 0 {
			return nil
		}
		// src is on the heap (this closure escapes) and stays reachable during the call.
		return check(c.lib.cuMemcpyHtoD(dst, unsafe.Pointer(&src[0]), uint64(len(src))), symMemcpyHtoD)
	})
}

// CopyDtoH copies len(dst) bytes from device memory at src into dst (cuMemcpyDtoH_v2).
func (c *Context) CopyDtoH(dst []byte, src DevicePtr) error {
	return c.run(symMemcpyDtoH, func() error {
		if c.lib.cuMemcpyDtoH == nil {
			return missing(symMemcpyDtoH)
		}
		if len(dst) == 0 {
			return nil
		}
		return check(c.lib.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), src, uint64(len(dst))), symMemcpyDtoH)
	})
}

// CopyDtoD copies n bytes between device buffers (cuMemcpyDtoD_v2).
func (c *Context) CopyDtoD(dst, src DevicePtr, n int64) error {
	return c.run(symMemcpyDtoD, func() error {
		if c.lib.cuMemcpyDtoD == nil {
			return missing(symMemcpyDtoD)
		}
		if n < 0 {
			return refuse(ErrorInvalidValue, symMemcpyDtoD, "negative size")
		}
		return check(c.lib.cuMemcpyDtoD(dst, src, uint64(n)), symMemcpyDtoD)
	})
}

// CopyHtoDAsync queues a copy of src to dst on stream s (nil: the NULL stream) and returns
// at once (cuMemcpyHtoDAsync_v2). src must lie inside a live HostBuffer of this Context
// (pinned memory that the driver may read after the call); other memory is refused with
// an error matching ErrInvalidValue. Do not change src until the stream has passed the copy.
func (c *Context) CopyHtoDAsync(dst DevicePtr, src []byte, s *Stream) error {
	return c.run(symMemcpyHtoDAsync, func() error {
		if c.lib.cuMemcpyHtoDAsync == nil {
			return missing(symMemcpyHtoDAsync)
		}
		sh, err := c.streamHandle(s, symMemcpyHtoDAsync)
		if err != nil || len(src) == 0 {
			return err
		}
		p, err := c.pinned(src, symMemcpyHtoDAsync)
		if err != nil {
			return err
		}
		return check(c.lib.cuMemcpyHtoDAsync(dst, p, uint64(len(src)), sh), symMemcpyHtoDAsync)
	})
}

// CopyDtoHAsync queues a copy from src into dst on stream s (cuMemcpyDtoHAsync_v2). dst
// must lie inside a live HostBuffer of this Context; read it after the stream has passed
// the copy (Stream.Synchronize, or an Event).
func (c *Context) CopyDtoHAsync(dst []byte, src DevicePtr, s *Stream) error {
	return c.run(symMemcpyDtoHAsync, func() error {
		if c.lib.cuMemcpyDtoHAsync == nil {
			return missing(symMemcpyDtoHAsync)
		}
		sh, err := c.streamHandle(s, symMemcpyDtoHAsync)
		if err != nil || len(dst) == 0 {
			return err
		}
		p, err := c.pinned(dst, symMemcpyDtoHAsync)
		if err != nil {
			return err
		}
		return check(c.lib.cuMemcpyDtoHAsync(p, src, uint64(len(dst)), sh), symMemcpyDtoHAsync)
	})
}

// CopyDtoDAsync queues a device-to-device copy of n bytes on stream s (cuMemcpyDtoDAsync_v2).
func (c *Context) CopyDtoDAsync(dst, src DevicePtr, n int64, s *Stream) error {
	return c.run(symMemcpyDtoDAsync, func() error {
		if c.lib.cuMemcpyDtoDAsync == nil {
			return missing(symMemcpyDtoDAsync)
		}
		if n < 0 {
			return refuse(ErrorInvalidValue, symMemcpyDtoDAsync, "negative size")
		}
		sh, err := c.streamHandle(s, symMemcpyDtoDAsync)
		if err != nil {
			return err
		}
		return check(c.lib.cuMemcpyDtoDAsync(dst, src, uint64(n), sh), symMemcpyDtoDAsync)
	})
}

// pinned returns the address of b if it lies inside a live HostBuffer of c. Thread only.
func (c *Context) pinned(b []byte, fn string) (uintptr, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for h := range c.hosts {
		if p >= h.p && p+uintptr(len(b)) <= h.p+uintptr(h.n) {
			return p, nil
		}
	}
	return 0, refuse(ErrorInvalidValue, fn, "host memory is not a live pinned HostBuffer of this context")
}

// HostBuffer is page-locked host memory from cuMemHostAlloc: C memory, outside Go's heap,
// which the GPU reads and writes by DMA and the asynchronous copies accept.
type HostBuffer struct {
	c     *Context
	p     uintptr
	n     int
	freed atomic.Bool
}

// AllocHost allocates n bytes of pinned host memory (cuMemHostAlloc). The Context owns it:
// Free it, or Close frees it.
func (c *Context) AllocHost(n int, flags HostAllocFlags) (*HostBuffer, error) {
	var hb *HostBuffer
	err := c.run(symMemHostAlloc, func() error {
		if c.lib.cuMemHostAlloc == nil {
			return missing(symMemHostAlloc)
		}
		if c.lib.cuMemFreeHost == nil {
			return missing(symMemFreeHost)
		}
		if n <= 0 {
			return refuse(ErrorInvalidValue, symMemHostAlloc, "size "+strconv.Itoa(n)+" bytes")
		}
		var p uintptr
		if err := check(c.lib.cuMemHostAlloc(&p, uint64(n), flags), symMemHostAlloc); err != nil {
			return err
		}
		hb = &HostBuffer{c: c, p: p, n: n}
		c.hosts[hb] = struct{}{}
		return nil
	})
	return hb, err
}

// Bytes returns the buffer as a Go slice over the C memory (no copy). The slice is valid
// until Free or the Context's Close, and must not be used after; after Free, Bytes
// returns nil.
func (b *HostBuffer) Bytes() []byte {
	if b == nil || b.freed.Load() {
		return nil
	}
	return unsafe.Slice((*byte)(cptr(b.p)), b.n)
}

// Len returns the buffer's size in bytes.
func (b *HostBuffer) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// Free frees the buffer (cuMemFreeHost). A second Free gives an error matching
// ErrInvalidValue.
func (b *HostBuffer) Free() error {
	if b == nil {
		return refuse(ErrorInvalidValue, symMemFreeHost, "nil HostBuffer")
	}
	return b.c.run(symMemFreeHost, func() error { return b.c.freeHost(b) })
}

func (c *Context) freeHost(b *HostBuffer) error {
	if _, ok := c.hosts[b]; !ok {
		return refuse(ErrorInvalidValue, symMemFreeHost, "host buffer already freed")
	}
	delete(c.hosts, b)
	b.freed.Store(true)
	return check(c.lib.cuMemFreeHost(b.p), symMemFreeHost)
}
