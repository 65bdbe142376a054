// Package cuda is a small binding to the CUDA driver API (libcuda) through purego: no cgo,
// so gpuwatt builds anywhere and loads the driver at run time, never at start-up.
//
// A Lib is a struct of function fields filled by Open. cuInit, cuDriverGetVersion,
// cuDeviceGetCount and cuDeviceGet are required; every other symbol is looked up with
// Dlsym and left nil when the driver lacks it, in which case the call returns a
// *SymbolError matching ErrNotSupported. Every CUresult becomes an *Error that matches the
// sentinel of its code with errors.Is. Nothing panics.
//
// Device queries (Lib, Device) are safe from any goroutine. Work on a GPU goes through a
// Context: it owns the device's primary context and one OS thread, on which every call of
// that context runs (see Context).
//
// Go memory and C: the driver never keeps a Go pointer after a call returns. Kernel
// parameter blocks, JIT option arrays and JIT logs live in pinned host memory that the
// Context allocates with cuMemHostAlloc; Go byte slices are handed to the synchronous
// copies only for the duration of the call; the asynchronous copies take pinned
// HostBuffers only.
package cuda

import (
	"errors"
	"strconv"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpuwatt/gpuwatt/internal/dl"
)

// DefaultPaths are the names Open tries when given none: the driver's versioned soname
// first, then the development symlink.
var DefaultPaths = []string{"libcuda.so.1", "libcuda.so"}

// Lib is a loaded libcuda. Its function fields are nil for symbols the library lacks. A Lib
// is never unloaded (dlclose is not called): the driver keeps threads of its own.
type Lib struct {
	path   string
	handle uintptr

	initOnce sync.Once
	initErr  error

	cuInit             func(flags uint32) Result
	cuDriverGetVersion func(v *int32) Result
	cuGetErrorName     func(r Result, s *uintptr) Result
	cuGetErrorString   func(r Result, s *uintptr) Result

	cuDeviceGetCount     func(n *int32) Result
	cuDeviceGet          func(d *int32, ordinal int32) Result
	cuDeviceGetName      func(buf *byte, n int32, d int32) Result
	cuDeviceGetUuid      func(u *[16]byte, d int32) Result // _v2 when present
	cuDeviceTotalMem     func(b *uint64, d int32) Result
	cuDeviceGetAttribute func(v *int32, a Attribute, d int32) Result
	cuDeviceGetPCIBusId  func(buf *byte, n int32, d int32) Result

	cuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) Result
	cuDevicePrimaryCtxRelease func(d int32) Result
	cuCtxSetCurrent           func(ctx uintptr) Result
	cuCtxSynchronize          func() Result
	cuMemGetInfo              func(free, total *uint64) Result

	cuModuleLoadDataEx  func(m *uintptr, image *byte, n uint32, opts, vals uintptr) Result
	cuModuleUnload      func(m uintptr) Result
	cuModuleGetFunction func(f *uintptr, m uintptr, name *byte) Result
	cuFuncGetAttribute  func(v *int32, a FuncAttribute, f uintptr) Result
	cuFuncSetAttribute  func(f uintptr, a FuncAttribute, v int32) Result
	cuLaunchKernel      func(f uintptr, grid, block Dim3, shared uint32, stream, params uintptr) Result

	cuMemAlloc          func(p *DevicePtr, n uint64) Result
	cuMemFree           func(p DevicePtr) Result
	cuMemsetD8          func(p DevicePtr, v uint8, n uint64) Result
	cuMemsetD32         func(p DevicePtr, v uint32, n uint64) Result
	cuMemcpyHtoD        func(dst DevicePtr, src unsafe.Pointer, n uint64) Result
	cuMemcpyDtoH        func(dst unsafe.Pointer, src DevicePtr, n uint64) Result
	cuMemcpyDtoD        func(dst, src DevicePtr, n uint64) Result
	cuMemcpyHtoDAsync   func(dst DevicePtr, src uintptr, n uint64, s uintptr) Result // src: pinned memory
	cuMemcpyDtoHAsync   func(dst uintptr, src DevicePtr, n uint64, s uintptr) Result // dst: pinned memory
	cuMemcpyDtoDAsync   func(dst, src DevicePtr, n uint64, s uintptr) Result
	cuMemHostAlloc      func(p *uintptr, n uint64, flags HostAllocFlags) Result
	cuMemFreeHost       func(p uintptr) Result
	cuStreamCreate      func(s *uintptr, flags StreamFlags) Result
	cuStreamSynchronize func(s uintptr) Result
	cuStreamDestroy     func(s uintptr) Result
	cuEventCreate       func(e *uintptr, flags EventFlags) Result
	cuEventRecord       func(e, s uintptr) Result
	cuEventSynchronize  func(e uintptr) Result
	cuEventQuery        func(e uintptr) Result                       // optional: Event.Wait polls it
	cuStreamQuery       func(s uintptr) Result                       // optional: Stream.Wait polls it
	cuEventElapsedTime  func(ms *float32, start, end uintptr) Result // _v2 when present
	cuEventDestroy      func(e uintptr) Result

	symUUID, symElapsed, symRelease string // the names bound where there is a choice
}

// Symbol names, versioned where cuda.h versions them.
const (
	symInit               = "cuInit"
	symDriverGetVersion   = "cuDriverGetVersion"
	symGetErrorName       = "cuGetErrorName"
	symGetErrorString     = "cuGetErrorString"
	symDeviceGetCount     = "cuDeviceGetCount"
	symDeviceGet          = "cuDeviceGet"
	symDeviceGetName      = "cuDeviceGetName"
	symDeviceGetUuidV2    = "cuDeviceGetUuid_v2"
	symDeviceGetUuid      = "cuDeviceGetUuid"
	symDeviceTotalMem     = "cuDeviceTotalMem_v2"
	symDeviceGetAttribute = "cuDeviceGetAttribute"
	symDeviceGetPCIBusId  = "cuDeviceGetPCIBusId"
	symPrimaryCtxRetain   = "cuDevicePrimaryCtxRetain"
	symPrimaryCtxRelease2 = "cuDevicePrimaryCtxRelease_v2"
	symPrimaryCtxRelease  = "cuDevicePrimaryCtxRelease"
	symCtxSetCurrent      = "cuCtxSetCurrent"
	symCtxSynchronize     = "cuCtxSynchronize"
	symMemGetInfo         = "cuMemGetInfo_v2"
	symModuleLoadDataEx   = "cuModuleLoadDataEx"
	symModuleUnload       = "cuModuleUnload"
	symModuleGetFunction  = "cuModuleGetFunction"
	symFuncGetAttribute   = "cuFuncGetAttribute"
	symFuncSetAttribute   = "cuFuncSetAttribute"
	symLaunchKernel       = "cuLaunchKernel"
	symMemAlloc           = "cuMemAlloc_v2"
	symMemFree            = "cuMemFree_v2"
	symMemsetD8           = "cuMemsetD8_v2"
	symMemsetD32          = "cuMemsetD32_v2"
	symMemcpyHtoD         = "cuMemcpyHtoD_v2"
	symMemcpyDtoH         = "cuMemcpyDtoH_v2"
	symMemcpyDtoD         = "cuMemcpyDtoD_v2"
	symMemcpyHtoDAsync    = "cuMemcpyHtoDAsync_v2"
	symMemcpyDtoHAsync    = "cuMemcpyDtoHAsync_v2"
	symMemcpyDtoDAsync    = "cuMemcpyDtoDAsync_v2"
	symMemHostAlloc       = "cuMemHostAlloc"
	symMemFreeHost        = "cuMemFreeHost"
	symStreamCreate       = "cuStreamCreate"
	symStreamSynchronize  = "cuStreamSynchronize"
	symStreamDestroy      = "cuStreamDestroy_v2"
	symEventCreate        = "cuEventCreate"
	symEventRecord        = "cuEventRecord"
	symEventSynchronize   = "cuEventSynchronize"
	symEventQuery         = "cuEventQuery"
	symStreamQuery        = "cuStreamQuery"
	symEventElapsedTimeV2 = "cuEventElapsedTime_v2"
	symEventElapsedTime   = "cuEventElapsedTime"
	symEventDestroy       = "cuEventDestroy_v2"
)

const ()

// Open loads libcuda from the first of paths that loads (DefaultPaths when none are
// given) and binds its symbols. It does not initialise the driver: cuInit(0) runs on first
// use. When no path loads, the error matches ErrLibraryNotFound and reads, on one line,
// "no NVIDIA driver found: cannot load libcuda.so.1: <why>".
func Open(paths ...string) (*Lib, error) {
	if len(paths) == 0 {
		paths = DefaultPaths
	}
	var l *Lib
	err := dl.Open(paths, func(h uintptr, path string) error {
		l = &Lib{path: path, handle: h}
		return l.bind()
	})
	if err != nil {
		var le *dl.LoadError
		if errors.As(err, &le) {
			return nil, &openError{msg: le.Error()}
		}
		return nil, err
	}
	if l.cuGetErrorString != nil {
		f := l.errorString
		errorString.Store(&f)
	}
	return l, nil
}

// Path returns the name the library was loaded from.
func (l *Lib) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// sym returns the address of name in l, or 0.
func (l *Lib) sym(name string) uintptr { return dl.Sym(l.handle, name) }

// bind looks name up and wraps its address with mk; the zero F (nil) when it is missing.
func bind[F any](l *Lib, name string, mk func(uintptr) F) F { return dl.Bind(l.handle, name, mk) }

// bindFirst binds the first of names that l exports and returns the name bound.
func bindFirst[F any](l *Lib, mk func(uintptr) F, names ...string) (F, string) {
	for _, n := range names {
		if p := l.sym(n); p != 0 {
			return mk(p), n
		}
	}
	var zero F
	return zero, names[0]
}

// call calls the C function at fn. Every argument of the driver API is an integer or a
// pointer, passed in integer registers (or on the stack past the sixth), and CUresult is a
// 32-bit enum: the upper half of the return register is undefined.
//
// go:uintptrescapes: a pointer converted to uintptr in the argument list of a call to
// call is moved to the heap (Go's heap does not move) and kept alive until call returns,
// which is what lets the wrappers below pass out-parameters and byte slices to C.
//
//go:uintptrescapes
func call(fn uintptr, a ...uintptr) Result {
	r, _, _ := purego.SyscallN(fn, a...)
	return Result(uint32(r))
}

// bind fills l's function fields from l.handle. Optional symbols that are missing stay nil;
// a library without the four required ones is not libcuda.
func (l *Lib) bind() error {
	l.cuInit = bind(l, symInit, func(p uintptr) func(uint32) Result {
		return func(f uint32) Result { return call(p, uintptr(f)) }
	})
	l.cuDriverGetVersion = bind(l, symDriverGetVersion, func(p uintptr) func(*int32) Result {
		return func(v *int32) Result { return call(p, uintptr(unsafe.Pointer(v))) }
	})
	mkErrStr := func(p uintptr) func(Result, *uintptr) Result {
		return func(r Result, s *uintptr) Result { return call(p, uintptr(r), uintptr(unsafe.Pointer(s))) }
	}
	l.cuGetErrorName = bind(l, symGetErrorName, mkErrStr)
	l.cuGetErrorString = bind(l, symGetErrorString, mkErrStr)

	l.cuDeviceGetCount = bind(l, symDeviceGetCount, func(p uintptr) func(*int32) Result {
		return func(n *int32) Result { return call(p, uintptr(unsafe.Pointer(n))) }
	})
	l.cuDeviceGet = bind(l, symDeviceGet, func(p uintptr) func(*int32, int32) Result {
		return func(d *int32, i int32) Result { return call(p, uintptr(unsafe.Pointer(d)), uintptr(i)) }
	})
	mkDevBuf := func(p uintptr) func(*byte, int32, int32) Result {
		return func(b *byte, n, d int32) Result { return call(p, uintptr(unsafe.Pointer(b)), uintptr(n), uintptr(d)) }
	}
	l.cuDeviceGetName = bind(l, symDeviceGetName, mkDevBuf)
	l.cuDeviceGetPCIBusId = bind(l, symDeviceGetPCIBusId, mkDevBuf)
	l.cuDeviceGetUuid, l.symUUID = bindFirst(l, func(p uintptr) func(*[16]byte, int32) Result {
		return func(u *[16]byte, d int32) Result { return call(p, uintptr(unsafe.Pointer(u)), uintptr(d)) }
	}, symDeviceGetUuidV2, symDeviceGetUuid)
	l.cuDeviceTotalMem = bind(l, symDeviceTotalMem, func(p uintptr) func(*uint64, int32) Result {
		return func(b *uint64, d int32) Result { return call(p, uintptr(unsafe.Pointer(b)), uintptr(d)) }
	})
	l.cuDeviceGetAttribute = bind(l, symDeviceGetAttribute, func(p uintptr) func(*int32, Attribute, int32) Result {
		return func(v *int32, a Attribute, d int32) Result {
			return call(p, uintptr(unsafe.Pointer(v)), uintptr(a), uintptr(d))
		}
	})

	l.cuDevicePrimaryCtxRetain = bind(l, symPrimaryCtxRetain, func(p uintptr) func(*uintptr, int32) Result {
		return func(c *uintptr, d int32) Result { return call(p, uintptr(unsafe.Pointer(c)), uintptr(d)) }
	})
	l.cuDevicePrimaryCtxRelease, l.symRelease = bindFirst(l, mkDev, symPrimaryCtxRelease2, symPrimaryCtxRelease)
	l.cuCtxSetCurrent = bind(l, symCtxSetCurrent, mkHandle)
	l.cuCtxSynchronize = bind(l, symCtxSynchronize, func(p uintptr) func() Result {
		return func() Result { return call(p) }
	})
	l.cuMemGetInfo = bind(l, symMemGetInfo, func(p uintptr) func(*uint64, *uint64) Result {
		return func(f, t *uint64) Result { return call(p, uintptr(unsafe.Pointer(f)), uintptr(unsafe.Pointer(t))) }
	})

	l.cuModuleLoadDataEx = bind(l, symModuleLoadDataEx, func(p uintptr) func(*uintptr, *byte, uint32, uintptr, uintptr) Result {
		return func(m *uintptr, img *byte, n uint32, opts, vals uintptr) Result {
			return call(p, uintptr(unsafe.Pointer(m)), uintptr(unsafe.Pointer(img)), uintptr(n), opts, vals)
		}
	})
	l.cuModuleUnload = bind(l, symModuleUnload, mkHandle)
	l.cuModuleGetFunction = bind(l, symModuleGetFunction, func(p uintptr) func(*uintptr, uintptr, *byte) Result {
		return func(f *uintptr, m uintptr, name *byte) Result {
			return call(p, uintptr(unsafe.Pointer(f)), m, uintptr(unsafe.Pointer(name)))
		}
	})
	l.cuFuncGetAttribute = bind(l, symFuncGetAttribute, func(p uintptr) func(*int32, FuncAttribute, uintptr) Result {
		return func(v *int32, a FuncAttribute, f uintptr) Result {
			return call(p, uintptr(unsafe.Pointer(v)), uintptr(a), f)
		}
	})
	l.cuFuncSetAttribute = bind(l, symFuncSetAttribute, func(p uintptr) func(uintptr, FuncAttribute, int32) Result {
		return func(f uintptr, a FuncAttribute, v int32) Result { return call(p, f, uintptr(a), uintptr(uint32(v))) }
	})
	l.cuLaunchKernel = bind(l, symLaunchKernel, func(p uintptr) func(uintptr, Dim3, Dim3, uint32, uintptr, uintptr) Result {
		return func(f uintptr, g, b Dim3, shared uint32, s, params uintptr) Result {
			// kernelParams is C memory (the context's pinned arena); extra is NULL.
			return call(p, f, uintptr(g.X), uintptr(g.Y), uintptr(g.Z), uintptr(b.X), uintptr(b.Y), uintptr(b.Z),
				uintptr(shared), s, params, 0)
		}
	})

	l.cuMemAlloc = bind(l, symMemAlloc, func(p uintptr) func(*DevicePtr, uint64) Result {
		return func(d *DevicePtr, n uint64) Result { return call(p, uintptr(unsafe.Pointer(d)), uintptr(n)) }
	})
	l.cuMemFree = bind(l, symMemFree, func(p uintptr) func(DevicePtr) Result {
		return func(d DevicePtr) Result { return call(p, uintptr(d)) }
	})
	l.cuMemsetD8 = bind(l, symMemsetD8, func(p uintptr) func(DevicePtr, uint8, uint64) Result {
		return func(d DevicePtr, v uint8, n uint64) Result { return call(p, uintptr(d), uintptr(v), uintptr(n)) }
	})
	l.cuMemsetD32 = bind(l, symMemsetD32, func(p uintptr) func(DevicePtr, uint32, uint64) Result {
		return func(d DevicePtr, v uint32, n uint64) Result { return call(p, uintptr(d), uintptr(v), uintptr(n)) }
	})
	l.cuMemcpyHtoD = bind(l, symMemcpyHtoD, func(p uintptr) func(DevicePtr, unsafe.Pointer, uint64) Result {
		return func(d DevicePtr, src unsafe.Pointer, n uint64) Result {
			return call(p, uintptr(d), uintptr(src), uintptr(n))
		}
	})
	l.cuMemcpyDtoH = bind(l, symMemcpyDtoH, func(p uintptr) func(unsafe.Pointer, DevicePtr, uint64) Result {
		return func(dst unsafe.Pointer, s DevicePtr, n uint64) Result {
			return call(p, uintptr(dst), uintptr(s), uintptr(n))
		}
	})
	l.cuMemcpyDtoD = bind(l, symMemcpyDtoD, func(p uintptr) func(DevicePtr, DevicePtr, uint64) Result {
		return func(d, s DevicePtr, n uint64) Result { return call(p, uintptr(d), uintptr(s), uintptr(n)) }
	})
	l.cuMemcpyHtoDAsync = bind(l, symMemcpyHtoDAsync, func(p uintptr) func(DevicePtr, uintptr, uint64, uintptr) Result {
		return func(d DevicePtr, src uintptr, n uint64, s uintptr) Result {
			return call(p, uintptr(d), src, uintptr(n), s)
		}
	})
	l.cuMemcpyDtoHAsync = bind(l, symMemcpyDtoHAsync, func(p uintptr) func(uintptr, DevicePtr, uint64, uintptr) Result {
		return func(dst uintptr, src DevicePtr, n uint64, s uintptr) Result {
			return call(p, dst, uintptr(src), uintptr(n), s)
		}
	})
	l.cuMemcpyDtoDAsync = bind(l, symMemcpyDtoDAsync, func(p uintptr) func(DevicePtr, DevicePtr, uint64, uintptr) Result {
		return func(d, src DevicePtr, n uint64, s uintptr) Result {
			return call(p, uintptr(d), uintptr(src), uintptr(n), s)
		}
	})
	l.cuMemHostAlloc = bind(l, symMemHostAlloc, func(p uintptr) func(*uintptr, uint64, HostAllocFlags) Result {
		return func(h *uintptr, n uint64, f HostAllocFlags) Result {
			return call(p, uintptr(unsafe.Pointer(h)), uintptr(n), uintptr(f))
		}
	})
	l.cuMemFreeHost = bind(l, symMemFreeHost, mkHandle)
	l.cuStreamCreate = bind(l, symStreamCreate, func(p uintptr) func(*uintptr, StreamFlags) Result {
		return func(s *uintptr, f StreamFlags) Result { return call(p, uintptr(unsafe.Pointer(s)), uintptr(f)) }
	})
	l.cuStreamSynchronize = bind(l, symStreamSynchronize, mkHandle)
	l.cuStreamDestroy = bind(l, symStreamDestroy, mkHandle)
	l.cuEventCreate = bind(l, symEventCreate, func(p uintptr) func(*uintptr, EventFlags) Result {
		return func(e *uintptr, f EventFlags) Result { return call(p, uintptr(unsafe.Pointer(e)), uintptr(f)) }
	})
	l.cuEventRecord = bind(l, symEventRecord, func(p uintptr) func(uintptr, uintptr) Result {
		return func(e, s uintptr) Result { return call(p, e, s) }
	})
	l.cuEventSynchronize = bind(l, symEventSynchronize, mkHandle)
	l.cuEventQuery = bind(l, symEventQuery, mkHandle)
	l.cuStreamQuery = bind(l, symStreamQuery, mkHandle)
	l.cuEventElapsedTime, l.symElapsed = bindFirst(l, func(p uintptr) func(*float32, uintptr, uintptr) Result {
		return func(ms *float32, a, b uintptr) Result { return call(p, uintptr(unsafe.Pointer(ms)), a, b) }
	}, symEventElapsedTimeV2, symEventElapsedTime)
	l.cuEventDestroy = bind(l, symEventDestroy, mkHandle)

	for _, req := range []struct {
		ok   bool
		name string
	}{
		{l.cuInit != nil, symInit},
		{l.cuDriverGetVersion != nil, symDriverGetVersion},
		{l.cuDeviceGetCount != nil, symDeviceGetCount},
		{l.cuDeviceGet != nil, symDeviceGet},
	} {
		if !req.ok {
			return &openError{msg: dl.NoDriver + l.path + " is not libcuda (it has no " + req.name + ")"}
		}
	}
	return nil
}

// mkHandle wraps a function of one pointer-sized handle.
func mkHandle(p uintptr) func(uintptr) Result {
	return func(h uintptr) Result { return call(p, h) }
}

// mkDev wraps a function of one CUdevice.
func mkDev(p uintptr) func(int32) Result {
	return func(d int32) Result { return call(p, uintptr(d)) }
}

// errorString returns cuGetErrorString(r), or "" when the driver does not know r.
func (l *Lib) errorString(r Result) string {
	var s uintptr
	if l.cuGetErrorString(r, &s) != Success {
		return ""
	}
	return goString(s, 1024)
}

// ErrorName returns cuGetErrorName(r) as the driver spells it, falling back on this
// package's table (Result.String) when the driver lacks the call or the code.
func (l *Lib) ErrorName(r Result) string {
	if l != nil && l.cuGetErrorName != nil {
		var s uintptr
		if l.cuGetErrorName(r, &s) == Success && s != 0 {
			return goString(s, 256)
		}
	}
	return r.String()
}

// ErrorString returns the driver's description of r (cuGetErrorString), or "".
func (l *Lib) ErrorString(r Result) string {
	if l == nil || l.cuGetErrorString == nil {
		return ""
	}
	return l.errorString(r)
}

// Init initialises the driver (cuInit(0)) once; later calls return the first call's
// result. Every call that needs the driver initialised calls it, so calling it is only
// useful to see the error early. A machine with the library but no GPU gives an error
// matching ErrNoDevice; the toolkit's stub library one matching ErrLibraryNotFound.
func (l *Lib) Init() error {
	if l == nil || l.cuInit == nil {
		return missing(symInit)
	}
	l.initOnce.Do(func() { l.initErr = check(l.cuInit(0), symInit) })
	return l.initErr
}

// DriverVersion returns the CUDA version the driver supports (cuDriverGetVersion), as
// 1000*major + 10*minor, e.g. 13000 for CUDA 13.0. It does not need Init.
func (l *Lib) DriverVersion() (int, error) {
	if l == nil || l.cuDriverGetVersion == nil {
		return 0, missing(symDriverGetVersion)
	}
	var v int32
	if err := check(l.cuDriverGetVersion(&v), symDriverGetVersion); err != nil {
		return 0, err
	}
	return int(v), nil
}

// FormatVersion renders a CUDA version number as "major.minor", e.g. 13000 as "13.0".
func FormatVersion(v int) string {
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}

// DeviceCount returns the number of GPUs the driver sees (cuDeviceGetCount).
func (l *Lib) DeviceCount() (int, error) {
	if err := l.Init(); err != nil {
		return 0, err
	}
	var n int32
	if err := check(l.cuDeviceGetCount(&n), symDeviceGetCount); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns GPU i in the driver's order (cuDeviceGet). An ordinal out of range gives
// an error matching ErrInvalidDevice.
func (l *Lib) Device(i int) (Device, error) {
	if err := l.Init(); err != nil {
		return Device{}, err
	}
	if i < 0 || i > 1<<30 {
		return Device{}, refuse(ErrorInvalidDevice, symDeviceGet, "ordinal "+strconv.Itoa(i)+" out of range")
	}
	var d int32
	if err := check(l.cuDeviceGet(&d, int32(i)), symDeviceGet); err != nil {
		return Device{}, err
	}
	return Device{lib: l, ordinal: i, h: d}, nil
}
