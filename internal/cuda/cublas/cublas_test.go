package cublas

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/cuda/cublas/cublastest"
)

func TestOpenMissing(t *testing.T) {
	_, err := Open("/nonexistent/libcublas.so.12")
	if !errors.Is(err, ErrLibraryNotFound) || strings.Contains(err.Error(), "\n") ||
		!strings.HasPrefix(err.Error(), "cuBLAS not available: cannot load libcublas (tried /nonexistent/libcublas.so.12): ") {
		t.Errorf("Open = %v", err)
	}
	if _, err := Open("libc.so.6"); err == nil || !strings.Contains(err.Error(), "is not libcublas") {
		t.Errorf("Open(libc) = %v", err)
	}
}

func ptr(x []float32) uint64 { return uint64(uintptr(unsafe.Pointer(&x[0]))) }

// The binding on the fake: a product of host arrays (the fake treats device pointers as
// host addresses) against one computed here, the status codes as errors, and handles.
func TestFake(t *testing.T) {
	path := cublastest.Build(t)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Create()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Version(); err != nil || v != cublastest.Version {
		t.Errorf("Version = %d, %v", v, err)
	}
	if err := h.SetStream(0); err != nil {
		t.Error(err)
	}
	if err := h.SetMathMode(TF32Math); err != nil {
		t.Error(err)
	}
	if err := h.SetMathMode(9); !errors.Is(err, ErrInvalidValue) || err.Error() != "cublasSetMathMode: CUBLAS_STATUS_INVALID_VALUE (7)" {
		t.Errorf("SetMathMode(9) = %v", err)
	}
	// Row-major Y (2×3) = X (2×4) · W (4×3), as the GEMM workload calls it: column-major
	// Yᵀ (3×2) = Wᵀ (3×4) · Xᵀ (4×2), i.e. Sgemm(N, N, 3, 2, 4, W, 3, X, 4, Y, 3).
	x := []float32{1, 2, 3, 4, -1, 0, 1, 2}
	w := []float32{1, 0, 2, 0, 1, 0, -1, 0, 1, 0.5, 0.5, 0.5}
	y := make([]float32, 6)
	if err := h.Sgemm(OpN, OpN, 3, 2, 4, 1, ptr(w), 3, ptr(x), 4, 0, ptr(y), 3); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for j := range 3 {
			var s float32
			for p := range 4 {
				s += x[4*i+p] * w[3*p+j]
			}
			if y[3*i+j] != s {
				t.Errorf("y[%d][%d] = %g, want %g", i, j, y[3*i+j], s)
			}
		}
	}
	if err := h.Sgemm(OpN, OpN, 3, 2, 4, 1, 0, 3, ptr(x), 4, 0, ptr(y), 3); !errors.Is(err, ErrExecFailed) {
		t.Errorf("Sgemm(NULL) = %v", err)
	}
	if err := h.Sgemm(OpN, OpN, 3, 2, 4, 1, ptr(w), 1, ptr(x), 4, 0, ptr(y), 3); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Sgemm(lda 1) = %v", err)
	}
	if cublastest.Live(t, path) != 1 || cublastest.Gemms(t, path) != 3 {
		t.Errorf("live %d, gemms %d", cublastest.Live(t, path), cublastest.Gemms(t, path))
	}
	if err := h.Destroy(); err != nil {
		t.Error(err)
	}
	if err := h.Destroy(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("second Destroy = %v", err)
	}
	if err := (&Handle{l: l, h: 200}).SetStream(0); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("SetStream(unknown) = %v", err)
	}
	if cublastest.Live(t, path) != 0 {
		t.Error("handles left")
	}
	if s := Status(99).String(); s != "CUBLAS_STATUS_99" {
		t.Error(s)
	}
}
