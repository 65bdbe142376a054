// Package cublas is a small binding to NVIDIA's cuBLAS through purego, loaded at run time:
// a handle (cublasCreate_v2), bound to a stream (cublasSetStream_v2), its math mode
// (cublasSetMathMode: TF32 tensor cores or plain FP32), single-precision matrix products
// (cublasSgemm_v2, column-major, host pointer mode) and cublasDestroy_v2.
//
// cuBLAS works on the CUDA context current on the calling thread: create, use and destroy
// handles inside cuda.Worker.Run, where the context is current. Every cublasStatus_t other
// than CUBLAS_STATUS_SUCCESS becomes an *Error that matches its sentinel with errors.Is. A
// machine without the library gets one line naming libcublas from Open.
package cublas

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/dl"
)

// DefaultPaths are the names Open tries when given none: the CUDA 12 and 13 sonames on the
// loader path, the development symlink, then the toolkit's usual directories.
var DefaultPaths = []string{
	"libcublas.so.12", "libcublas.so.13", "libcublas.so.11", "libcublas.so",
	"/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so",
	"/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
	"/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so",
}

// Status is a cublasStatus_t.
type Status int32

// cublasStatus_t values (cublas_api.h).
const (
	Success         Status = 0
	NotInitialized  Status = 1
	AllocFailed     Status = 3
	InvalidValue    Status = 7
	ArchMismatch    Status = 8
	MappingError    Status = 11
	ExecutionFailed Status = 13
	InternalError   Status = 14
	NotSupported    Status = 15
	LicenseError    Status = 16
)

var names = map[Status]string{
	Success: "CUBLAS_STATUS_SUCCESS", NotInitialized: "CUBLAS_STATUS_NOT_INITIALIZED", AllocFailed: "CUBLAS_STATUS_ALLOC_FAILED",
	InvalidValue: "CUBLAS_STATUS_INVALID_VALUE", ArchMismatch: "CUBLAS_STATUS_ARCH_MISMATCH", MappingError: "CUBLAS_STATUS_MAPPING_ERROR",
	ExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED", InternalError: "CUBLAS_STATUS_INTERNAL_ERROR", NotSupported: "CUBLAS_STATUS_NOT_SUPPORTED",
	LicenseError: "CUBLAS_STATUS_LICENSE_ERROR",
}

// String returns the cublas_api.h name of s, or "CUBLAS_STATUS_<n>".
func (s Status) String() string {
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("CUBLAS_STATUS_%d", int32(s))
}

// Sentinels that errors from this package match with errors.Is.
var (
	ErrLibraryNotFound = errors.New("cuBLAS library not found")
	ErrNotInitialized  = errors.New("cuBLAS handle not initialized")
	ErrAllocFailed     = errors.New("cuBLAS allocation failed")
	ErrInvalidValue    = errors.New("invalid value")
	ErrExecFailed      = errors.New("cuBLAS execution failed")
	ErrNotSupported    = errors.New("not supported by this cuBLAS or GPU")
	ErrInternal        = errors.New("cuBLAS internal error")
)

// Error is a failed cuBLAS call.
type Error struct {
	Code Status
	Func string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Func, e.Code, int32(e.Code)) }

// Is matches the sentinel of the code.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case NotInitialized:
		return target == ErrNotInitialized
	case AllocFailed:
		return target == ErrAllocFailed
	case InvalidValue:
		return target == ErrInvalidValue
	case ExecutionFailed, MappingError:
		return target == ErrExecFailed
	case ArchMismatch, NotSupported:
		return target == ErrNotSupported
	case InternalError:
		return target == ErrInternal
	}
	return false
}

func check(s Status, fn string) error {
	if s == Success {
		return nil
	}
	return &Error{Code: s, Func: fn}
}

// Math modes (cublasMath_t).
const (
	// DefaultMath is plain FP32 arithmetic (CUBLAS_DEFAULT_MATH).
	DefaultMath = 0
	// TF32Math lets single-precision products use TF32 tensor cores
	// (CUBLAS_TF32_TENSOR_OP_MATH): inputs rounded to a 10-bit mantissa, FP32 accumulation.
	TF32Math = 3
)

// Operations (cublasOperation_t).
const (
	OpN = 0
	OpT = 1
)

// Lib is a loaded libcublas.
type Lib struct {
	path string

	create      func(h *uintptr) Status
	destroy     func(h uintptr) Status
	setStream   func(h uintptr, stream uintptr) Status
	setMathMode func(h uintptr, mode int32) Status
	sgemm       func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32) Status
	getVersion  func(h uintptr, v *int32) Status
}

// Open loads libcublas from the first of paths that loads (DefaultPaths when none are
// given). When none does, the error matches ErrLibraryNotFound and reads, on one line,
// "cuBLAS not available: cannot load libcublas (tried ...): WHY".
func Open(paths ...string) (*Lib, error) {
	if len(paths) == 0 {
		paths = DefaultPaths
	}
	l := &Lib{}
	need := map[string]any{
		"cublasCreate_v2": &l.create, "cublasDestroy_v2": &l.destroy, "cublasSetStream_v2": &l.setStream,
		"cublasSetMathMode": &l.setMathMode, "cublasSgemm_v2": &l.sgemm,
	}
	path, err := dl.OpenOptional(dl.Optional{What: "cuBLAS", Stem: "libcublas", NotFound: ErrLibraryNotFound}, paths, need,
		map[string]any{"cublasGetVersion_v2": &l.getVersion})
	if err != nil {
		return nil, err
	}
	l.path = path
	return l, nil
}

// Path returns the name the library was loaded from.
func (l *Lib) Path() string { return l.path }

// Handle is a cuBLAS handle.
type Handle struct {
	l    *Lib
	h    uintptr
	dead bool
}

// Create makes a handle (cublasCreate_v2). Call it where a CUDA context is current.
func (l *Lib) Create() (*Handle, error) {
	var h uintptr
	if err := check(l.create(&h), "cublasCreate_v2"); err != nil {
		return nil, err
	}
	return &Handle{l: l, h: h}, nil
}

func (h *Handle) ok(fn string) error {
	if h == nil || h.dead {
		return &Error{Code: NotInitialized, Func: fn}
	}
	return nil
}

// Version returns cublasGetVersion_v2 (e.g. 120804).
func (h *Handle) Version() (int, error) {
	if err := h.ok("cublasGetVersion_v2"); err != nil {
		return 0, err
	}
	if h.l.getVersion == nil {
		return 0, &Error{Code: NotSupported, Func: "cublasGetVersion_v2"}
	}
	var v int32
	if err := check(h.l.getVersion(h.h, &v), "cublasGetVersion_v2"); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetStream makes the handle's work run on a CUDA stream (cuda.Stream.Handle).
func (h *Handle) SetStream(stream uintptr) error {
	if err := h.ok("cublasSetStream_v2"); err != nil {
		return err
	}
	return check(h.l.setStream(h.h, stream), "cublasSetStream_v2")
}

// SetMathMode sets DefaultMath or TF32Math.
func (h *Handle) SetMathMode(mode int) error {
	if err := h.ok("cublasSetMathMode"); err != nil {
		return err
	}
	return check(h.l.setMathMode(h.h, int32(mode)), "cublasSetMathMode")
}

// Sgemm queues C = alpha·op(A)·op(B) + beta·C on the handle's stream: column-major m×k
// op(A), k×n op(B), m×n C, device arrays of float32 with leading dimensions lda, ldb, ldc.
func (h *Handle) Sgemm(ta, tb, m, n, k int, alpha float32, a uint64, lda int, b uint64, ldb int, beta float32, c uint64, ldc int) error {
	if err := h.ok("cublasSgemm_v2"); err != nil {
		return err
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v < 0 || v > 1<<30 {
			return &Error{Code: InvalidValue, Func: "cublasSgemm_v2"}
		}
	}
	return check(h.l.sgemm(h.h, int32(ta), int32(tb), int32(m), int32(n), int32(k), unsafe.Pointer(&alpha), a, int32(lda), b, int32(ldb), unsafe.Pointer(&beta), c, int32(ldc)), "cublasSgemm_v2")
}

// Destroy frees the handle (cublasDestroy_v2). A second Destroy is an error matching
// ErrNotInitialized.
func (h *Handle) Destroy() error {
	if err := h.ok("cublasDestroy_v2"); err != nil {
		return err
	}
	h.dead = true
	return check(h.l.destroy(h.h), "cublasDestroy_v2")
}
