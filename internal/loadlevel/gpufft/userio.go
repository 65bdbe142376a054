package gpufft

import "github.com/gpuwatt/gpuwatt/internal/cuda"

// userIO is what every user of a transaction holds on the GPU side: its stream, an input and
// an output buffer on the device, and pinned host buffers of the same size (the FFT's and the
// GEMM's users alike).
type userIO struct {
	s         *cuda.Stream
	dIn, dOut cuda.DevicePtr
	hin, hout *cuda.HostBuffer
	bytes     int
}

// open makes the stream and the four buffers of bytes each on c. After a failure, close
// frees what it did make.
func (u *userIO) open(c *cuda.Context, bytes int) error {
	u.bytes = bytes
	var err error
	if u.s, err = c.NewStream(cuda.StreamNonBlocking); err != nil {
		return err
	}
	if u.dIn, err = c.Alloc(int64(bytes)); err != nil {
		return err
	}
	if u.dOut, err = c.Alloc(int64(bytes)); err != nil {
		return err
	}
	if u.hin, err = c.AllocHost(bytes, cuda.HostAllocDefault); err != nil {
		return err
	}
	u.hout, err = c.AllocHost(bytes, cuda.HostAllocDefault)
	return err
}

// close waits for the stream, destroys it and frees the buffers that open made.
func (u *userIO) close(c *cuda.Context) []error {
	var errs []error
	if u.s != nil {
		errs = append(errs, u.s.Synchronize(), u.s.Destroy())
	}
	for _, p := range []cuda.DevicePtr{u.dIn, u.dOut} {
		if p != 0 {
			errs = append(errs, c.Free(p))
		}
	}
	for _, h := range []*cuda.HostBuffer{u.hin, u.hout} {
		if h != nil {
			errs = append(errs, h.Free())
		}
	}
	return errs
}
