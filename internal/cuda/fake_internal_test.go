package cuda

import (
	"errors"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
)

// TestFakeRefusesCallsOffTheContextThread shows that the fake holds the binding to the
// driver's rule (a context is current per thread): a raw call from the test goroutine has
// no context, the same call inside Do has.
func TestFakeRefusesCallsOffTheContextThread(t *testing.T) {
	path := cudatest.Build(t)
	fake := cudatest.Control(t, path)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewContext(d)
	if err != nil {
		t.Fatal(err)
	}
	var p DevicePtr
	if r := l.cuMemAlloc(&p, 16); r != ErrorInvalidContext {
		t.Errorf("cuMemAlloc off the context thread = %v, want CUDA_ERROR_INVALID_CONTEXT", r)
	}
	if c.onThread() {
		t.Error("the test goroutine claims to be the context thread")
	}
	err = c.Do(func() error {
		if !c.onThread() {
			return errors.New("Do does not run on the context thread")
		}
		if err := check(l.cuMemAlloc(&p, 16), symMemAlloc); err != nil {
			return err
		}
		return check(l.cuMemFree(p), symMemFree)
	})
	if err != nil {
		t.Error(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fake.Counts(); n.WrongThread != 1 || n.Outstanding() != 0 {
		t.Errorf("counts = %+v, want exactly the one deliberate wrong-thread call", n)
	}
	if c.tid.Load() != -1 {
		t.Error("thread id kept after Close")
	}
}
