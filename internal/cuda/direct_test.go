package cuda_test

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
)

// Workers on several goroutines at once: each copies in, launches fill_u32 on its own
// stream, copies out and synchronises, on its own OS thread. The fake refuses any call made
// on a thread where no context is current, and openFake's clean-up checks that none was.
func TestFakeWorkersConcurrent(t *testing.T) {
	l, fake := openFake(t)
	c := newContext(t, l, fake, 0)
	m, err := c.LoadPTX(testPTX)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := m.Function("fill_u32")
	if err != nil {
		t.Fatal(err)
	}
	const users, words, rounds = 4, 64, 200
	var wg sync.WaitGroup
	errs := make([]error, users)
	for u := range users {
		s, err := c.NewStream(cuda.StreamNonBlocking)
		if err != nil {
			t.Fatal(err)
		}
		dev, err := c.Alloc(4 * words)
		if err != nil {
			t.Fatal(err)
		}
		in, err1 := c.AllocHost(4*words, cuda.HostAllocDefault)
		out, err2 := c.AllocHost(4*words, cuda.HostAllocDefault)
		w, err3 := c.NewWorker()
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				v := uint32(1000*u + r)
				binary.LittleEndian.PutUint32(in.Bytes()[4:], 7)
				err := w.Run(func(th *cuda.Thread) error {
					// The copy in puts 7 at word 1; the kernel overwrites words [0, 1) only.
					return errors.Join(
						th.CopyHtoDAsync(dev, in, 0, 4*words, s),
						th.Launch(fill, cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(32), Stream: s}, cuda.Ptr(dev), cuda.U32(v), cuda.U32(1)),
						th.CopyDtoHAsync(out, 0, 4*words, dev, s),
						th.Synchronize(s))
				})
				if err != nil {
					errs[u] = err
					return
				}
				b := out.Bytes()
				if got := binary.LittleEndian.Uint32(b); got != v || binary.LittleEndian.Uint32(b[4:]) != 7 {
					errs[u] = errors.New("wrong result")
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := fake.Counts(); n.WrongThread != 0 || n.Launches != users*rounds {
		t.Errorf("counts %+v: want no wrong-thread calls and %d launches", n, users*rounds)
	}
}

func TestFakeWorkerMisuse(t *testing.T) {
	l, fake := openFake(t)
	d, _ := l.Device(0)
	c, err := cuda.NewContext(d)
	if err != nil {
		t.Fatal(err)
	}
	other := newContext(t, l, fake, 1)
	w, err := c.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := c.AllocHost(64, cuda.HostAllocDefault)
	foreign, _ := other.AllocHost(64, cuda.HostAllocDefault)
	dev, _ := c.Alloc(64)
	var kept *cuda.Thread
	err = w.Run(func(th *cuda.Thread) error {
		kept = th
		if err := th.CopyHtoDAsync(dev, hb, 32, 64, nil); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("copy past the buffer's end: %v", err)
		}
		if err := th.CopyDtoHAsync(foreign, 0, 8, dev, nil); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("copy into another context's buffer: %v", err)
		}
		if err := th.Launch(nil, cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}); !errors.Is(err, cuda.ErrInvalidHandle) {
			t.Errorf("nil function: %v", err)
		}
		return th.Synchronize(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Synchronize(nil); !errors.Is(err, cuda.ErrInvalidContext) {
		t.Errorf("Thread used after Run: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(func(*cuda.Thread) error { return nil }); !errors.Is(err, cuda.ErrContextClosed) {
		t.Errorf("Run after Close: %v", err)
	}
}
