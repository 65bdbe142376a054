package cufft

import (
	"errors"
	"math"
	"math/cmplx"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/cuda/cufft/cuffttest"
)

func TestOpenMissing(t *testing.T) {
	_, err := Open("/nonexistent/libcufft.so.12", "/nonexistent/libcufft.so")
	if !errors.Is(err, ErrLibraryNotFound) || strings.Contains(err.Error(), "\n") ||
		!strings.HasPrefix(err.Error(), "cuFFT not available: cannot load libcufft (tried /nonexistent/libcufft.so.12, /nonexistent/libcufft.so): ") {
		t.Errorf("Open = %v", err)
	}
	// A library that loads but is not cuFFT.
	if _, err := Open("libc.so.6"); err == nil || !strings.Contains(err.Error(), "is not libcufft") {
		t.Errorf("Open(libc) = %v", err)
	}
}

func TestFakeErrors(t *testing.T) {
	path := cuffttest.Build(t)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := l.Version(); err != nil || v != cuffttest.Version {
		t.Errorf("Version = %d, %v", v, err)
	}
	for _, c := range []struct {
		n, batch int
		want     error
		code     Result
	}{
		{100000, 1, ErrInvalidSize, InvalidSize},
		{3, 1, ErrAllocFailed, AllocFailed},
		{0, 1, ErrInvalidSize, InvalidSize}, // refused before the call
	} {
		_, err := l.Plan1d(c.n, c.batch)
		var e *Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) || e.Code != c.code || e.Func != "cufftPlan1d" {
			t.Errorf("Plan1d(%d, %d) = %v, want %v", c.n, c.batch, err, c.want)
		}
	}
	p, err := l.Plan1d(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetStream(0); err != nil {
		t.Error(err)
	}
	if err := p.ExecC2C(0, 0, Forward); !errors.Is(err, ErrExecFailed) || err.Error() != "cufftExecC2C: CUFFT_EXEC_FAILED (6)" {
		t.Errorf("ExecC2C(NULL) = %v", err)
	}
	if err := p.ExecC2C(1, 1, 0); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("ExecC2C(dir 0) = %v", err)
	}
	// A transform of host memory (the fake treats pointers as host addresses).
	x := make([]complex64, 8)
	x[1] = 1
	y := make([]complex64, 8)
	if err := p.ExecC2C(uint64(uintptr(unsafe.Pointer(&x[0]))), uint64(uintptr(unsafe.Pointer(&y[0]))), Forward); err != nil {
		t.Fatal(err)
	}
	for k, v := range y {
		if w := cmplx.Rect(1, -2*math.Pi*float64(k)/8); cmplx.Abs(complex128(v)-w) > 1e-6 {
			t.Errorf("y[%d] = %v, want %v", k, v, w)
		}
	}
	if cuffttest.Live(t, path) != 1 {
		t.Error("want one live plan")
	}
	if err := p.Destroy(); err != nil {
		t.Error(err)
	}
	if err := p.Destroy(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("second Destroy = %v", err)
	}
	if err := (&Plan{l: l, h: 200}).SetStream(0); !errors.Is(err, ErrInvalidPlan) || errors.Is(err, ErrInvalidValue) {
		t.Errorf("SetStream(unknown plan) = %v", err)
	}
	if cuffttest.Live(t, path) != 0 {
		t.Error("plans left")
	}
	if s := Result(99).String(); s != "CUFFT_RESULT_99" {
		t.Error(s)
	}
}
