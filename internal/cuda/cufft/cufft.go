// Package cufft is a small binding to NVIDIA's cuFFT through purego, loaded at run time:
// one-dimensional complex-to-complex plans (cufftPlan1d with CUFFT_C2C), bound to a stream
// (cufftSetStream), executed forward or inverse (cufftExecC2C) and destroyed (cufftDestroy).
//
// cuFFT works on the CUDA context current on the calling thread: create, run and destroy
// plans inside cuda.Worker.Run (or cuda.Context.Do), where the context is current. Every
// cufftResult other than CUFFT_SUCCESS becomes an *Error that matches its sentinel with
// errors.Is. A machine without the library gets one line naming libcufft from Open.
package cufft

import (
	"errors"
	"fmt"

	"github.com/gpuwatt/gpuwatt/internal/dl"
)

// DefaultPaths are the names Open tries when given none: the CUDA 12 soname on the loader
// path, the development symlink, then the toolkit's usual directories.
var DefaultPaths = []string{
	"libcufft.so.12", "libcufft.so.13", "libcufft.so.11", "libcufft.so",
	"/usr/local/cuda/lib64/libcufft.so.12", "/usr/local/cuda/lib64/libcufft.so",
	"/usr/local/cuda/targets/x86_64-linux/lib/libcufft.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcufft.so",
}

// Result is a cufftResult.
type Result int32

// cufftResult values (cufft.h).
const (
	Success                 Result = 0x0
	InvalidPlan             Result = 0x1
	AllocFailed             Result = 0x2
	InvalidType             Result = 0x3
	InvalidValue            Result = 0x4
	InternalError           Result = 0x5
	ExecFailed              Result = 0x6
	SetupFailed             Result = 0x7
	InvalidSize             Result = 0x8
	UnalignedData           Result = 0x9
	IncompleteParameterList Result = 0xA
	InvalidDevice           Result = 0xB
	ParseError              Result = 0xC
	NoWorkspace             Result = 0xD
	NotImplemented          Result = 0xE
	LicenseError            Result = 0xF
	NotSupported            Result = 0x10
)

var names = map[Result]string{
	Success: "CUFFT_SUCCESS", InvalidPlan: "CUFFT_INVALID_PLAN", AllocFailed: "CUFFT_ALLOC_FAILED",
	InvalidType: "CUFFT_INVALID_TYPE", InvalidValue: "CUFFT_INVALID_VALUE", InternalError: "CUFFT_INTERNAL_ERROR",
	ExecFailed: "CUFFT_EXEC_FAILED", SetupFailed: "CUFFT_SETUP_FAILED", InvalidSize: "CUFFT_INVALID_SIZE",
	UnalignedData: "CUFFT_UNALIGNED_DATA", IncompleteParameterList: "CUFFT_INCOMPLETE_PARAMETER_LIST",
	InvalidDevice: "CUFFT_INVALID_DEVICE", ParseError: "CUFFT_PARSE_ERROR", NoWorkspace: "CUFFT_NO_WORKSPACE",
	NotImplemented: "CUFFT_NOT_IMPLEMENTED", LicenseError: "CUFFT_LICENSE_ERROR", NotSupported: "CUFFT_NOT_SUPPORTED",
}

// String returns the cufft.h name of r, or "CUFFT_RESULT_<n>".
func (r Result) String() string {
	if s, ok := names[r]; ok {
		return s
	}
	return fmt.Sprintf("CUFFT_RESULT_%d", int32(r))
}

// Sentinels that errors from this package match with errors.Is.
var (
	ErrLibraryNotFound = errors.New("cuFFT library not found")
	ErrInvalidPlan     = errors.New("invalid cuFFT plan")
	ErrAllocFailed     = errors.New("cuFFT allocation failed")
	ErrInvalidType     = errors.New("invalid cuFFT transform type")
	ErrInvalidValue    = errors.New("invalid value")
	ErrInvalidSize     = errors.New("invalid transform size")
	ErrExecFailed      = errors.New("cuFFT execution failed")
	ErrInternal        = errors.New("cuFFT internal error")
	ErrNotSupported    = errors.New("not supported by this cuFFT")
)

// Error is a failed cuFFT call.
type Error struct {
	Code Result
	Func string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Func, e.Code, int32(e.Code))
}

// Is matches the sentinel of the code.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case InvalidPlan:
		return target == ErrInvalidPlan
	case AllocFailed:
		return target == ErrAllocFailed
	case InvalidType:
		return target == ErrInvalidType
	case InvalidValue:
		return target == ErrInvalidValue
	case InvalidSize:
		return target == ErrInvalidSize
	case ExecFailed:
		return target == ErrExecFailed
	case InternalError, SetupFailed:
		return target == ErrInternal
	case NotImplemented, NotSupported:
		return target == ErrNotSupported
	}
	return false
}

func check(r Result, fn string) error {
	if r == Success {
		return nil
	}
	return &Error{Code: r, Func: fn}
}

// Transform types and directions (cufft.h).
const (
	typeC2C = 0x29
	// Forward is CUFFT_FORWARD (exp(-2πi jk/n)); Inverse is CUFFT_INVERSE (unnormalised).
	Forward = -1
	Inverse = 1
)

// Lib is a loaded libcufft.
type Lib struct {
	path string

	plan1d     func(plan *int32, nx, typ, batch int32) Result
	setStream  func(plan int32, stream uintptr) Result
	execC2C    func(plan int32, in, out uint64, dir int32) Result
	destroy    func(plan int32) Result
	getVersion func(v *int32) Result
}

// Open loads libcufft from the first of paths that loads (DefaultPaths when none are
// given). When none does, the error matches ErrLibraryNotFound and reads, on one line,
// "cuFFT not available: cannot load libcufft (tried ...): WHY".
func Open(paths ...string) (*Lib, error) {
	if len(paths) == 0 {
		paths = DefaultPaths
	}
	l := &Lib{}
	need := map[string]any{
		"cufftPlan1d": &l.plan1d, "cufftSetStream": &l.setStream, "cufftExecC2C": &l.execC2C, "cufftDestroy": &l.destroy,
	}
	path, err := dl.OpenOptional(dl.Optional{What: "cuFFT", Stem: "libcufft", NotFound: ErrLibraryNotFound}, paths, need,
		map[string]any{"cufftGetVersion": &l.getVersion})
	if err != nil {
		return nil, err
	}
	l.path = path
	return l, nil
}

// Path returns the name the library was loaded from.
func (l *Lib) Path() string { return l.path }

// Version returns cufftGetVersion (e.g. 11203).
func (l *Lib) Version() (int, error) {
	if l.getVersion == nil {
		return 0, &Error{Code: NotSupported, Func: "cufftGetVersion"}
	}
	var v int32
	if err := check(l.getVersion(&v), "cufftGetVersion"); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Plan is a cuFFT plan.
type Plan struct {
	l    *Lib
	h    int32
	n    int
	dead bool
}

// Plan1d creates a plan of batch complex-to-complex single-precision transforms of n
// points (cufftPlan1d with CUFFT_C2C). Call it where a CUDA context is current.
func (l *Lib) Plan1d(n, batch int) (*Plan, error) {
	if n <= 0 || n > 1<<30 || batch <= 0 || batch > 1<<30 {
		return nil, &Error{Code: InvalidSize, Func: "cufftPlan1d"}
	}
	var h int32
	if err := check(l.plan1d(&h, int32(n), typeC2C, int32(batch)), "cufftPlan1d"); err != nil {
		return nil, fmt.Errorf("%d points, batch %d: %w", n, batch, err)
	}
	return &Plan{l: l, h: h, n: n}, nil
}

// N returns the plan's transform size.
func (p *Plan) N() int { return p.n }

// SetStream makes the plan run on a CUDA stream (a CUstream, cuda.Stream.Handle).
func (p *Plan) SetStream(stream uintptr) error {
	if p == nil || p.dead {
		return &Error{Code: InvalidPlan, Func: "cufftSetStream"}
	}
	return check(p.l.setStream(p.h, stream), "cufftSetStream")
}

// ExecC2C queues the transform of the device array in into out (they may be equal) in
// direction dir (Forward or Inverse) on the plan's stream.
func (p *Plan) ExecC2C(in, out uint64, dir int) error {
	if p == nil || p.dead {
		return &Error{Code: InvalidPlan, Func: "cufftExecC2C"}
	}
	if dir != Forward && dir != Inverse {
		return &Error{Code: InvalidValue, Func: "cufftExecC2C"}
	}
	return check(p.l.execC2C(p.h, in, out, int32(dir)), "cufftExecC2C")
}

// Destroy frees the plan (cufftDestroy). A second Destroy is an error matching
// ErrInvalidPlan.
func (p *Plan) Destroy() error {
	if p == nil || p.dead {
		return &Error{Code: InvalidPlan, Func: "cufftDestroy"}
	}
	p.dead = true
	return check(p.l.destroy(p.h), "cufftDestroy")
}
