package nvml

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpuwatt/gpuwatt/internal/dl"
)

// DefaultPaths are the names Open tries when given none: the driver's versioned soname
// first, then the development symlink.
var DefaultPaths = []string{"libnvidia-ml.so.1", "libnvidia-ml.so"}

// Lib is a loaded libnvidia-ml. Its function fields are nil for symbols the library lacks.
// A Lib is never unloaded (dlclose is not called): NVML keeps threads and state of its own.
type Lib struct {
	path   string
	handle uintptr

	init        func() Return
	shutdown    func() Return
	errorString func(Return) string

	systemGetDriverVersion func(a *args, buf *byte, n uint32) Return
	systemGetNVMLVersion   func(a *args, buf *byte, n uint32) Return
	deviceGetCount         func(a *args, n *uint32) Return
	deviceGetHandleByIndex func(a *args, i uint32, h *uintptr) Return

	deviceGetName                         func(a *args, d uintptr, buf *byte, n uint32) Return
	deviceGetUUID                         func(a *args, d uintptr, buf *byte, n uint32) Return
	deviceGetPciInfo                      func(a *args, d uintptr, p *pciInfo) Return
	deviceGetPowerUsage                   func(a *args, d uintptr, mw *uint32) Return
	deviceGetFieldValues                  func(a *args, d uintptr, n uint32, v *fieldValue) Return
	deviceGetTotalEnergyConsumption       func(a *args, d uintptr, mj *uint64) Return
	deviceGetSamples                      func(a *args, d uintptr, typ uint32, lastSeen uint64, valType *uint32, n *uint32, s *sample) Return
	deviceGetClockInfo                    func(a *args, d uintptr, typ uint32, mhz *uint32) Return
	deviceGetTemperature                  func(a *args, d uintptr, sensor uint32, c *uint32) Return
	deviceGetEnforcedPowerLimit           func(a *args, d uintptr, mw *uint32) Return
	deviceGetPowerManagementDefaultLimit  func(a *args, d uintptr, mw *uint32) Return
	deviceGetPerformanceState             func(a *args, d uintptr, p *uint32) Return
	deviceGetCurrentClocksEventReasons    func(a *args, d uintptr, m *uint64) Return
	deviceGetCurrentClocksThrottleReasons func(a *args, d uintptr, m *uint64) Return
	deviceGetUtilizationRates             func(a *args, d uintptr, u *utilization) Return
	deviceGetProcessUtilization           func(a *args, d uintptr, u *processUtilizationSample, n *uint32, lastSeen uint64) Return
}

// Symbol names, versioned where NVML versions them.
const (
	symInit                  = "nvmlInit_v2"
	symShutdown              = "nvmlShutdown"
	symErrorString           = "nvmlErrorString"
	symDriverVersion         = "nvmlSystemGetDriverVersion"
	symNVMLVersion           = "nvmlSystemGetNVMLVersion"
	symDeviceCount           = "nvmlDeviceGetCount_v2"
	symHandleByIndex         = "nvmlDeviceGetHandleByIndex_v2"
	symName                  = "nvmlDeviceGetName"
	symUUID                  = "nvmlDeviceGetUUID"
	symPciInfo               = "nvmlDeviceGetPciInfo_v3"
	symPowerUsage            = "nvmlDeviceGetPowerUsage"
	symFieldValues           = "nvmlDeviceGetFieldValues"
	symTotalEnergy           = "nvmlDeviceGetTotalEnergyConsumption"
	symSamples               = "nvmlDeviceGetSamples"
	symClockInfo             = "nvmlDeviceGetClockInfo"
	symTemperature           = "nvmlDeviceGetTemperature"
	symEnforcedPowerLimit    = "nvmlDeviceGetEnforcedPowerLimit"
	symDefaultPowerLimit     = "nvmlDeviceGetPowerManagementDefaultLimit"
	symPerformanceState      = "nvmlDeviceGetPerformanceState"
	symClocksEventReasons    = "nvmlDeviceGetCurrentClocksEventReasons"
	symClocksThrottleReasons = "nvmlDeviceGetCurrentClocksThrottleReasons"
	symUtilizationRates      = "nvmlDeviceGetUtilizationRates"
	symProcessUtilization    = "nvmlDeviceGetProcessUtilization"
)

const (
	maxScratchSamples     = 1 << 14 // larger sample buffers are not kept in the pool
	maxScratchFieldValues = 16      // larger field requests allocate their C array
)

// Open loads libnvidia-ml from the first of paths that loads (DefaultPaths when none are
// given) and binds its symbols. It does not initialise NVML: call Init. When no path loads,
// the error matches ErrLibraryNotFound and reads, on one line,
// "no NVIDIA driver found: cannot load libnvidia-ml.so.1: <why>".
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
	if l.errorString != nil {
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

// bind fills l's function fields from l.handle. Optional symbols that are missing stay nil;
// a missing nvmlInit_v2 or nvmlShutdown is an error (after every other field is bound).
func (l *Lib) bind() error {
	l.init = bind(l, symInit, mkVoid)
	l.shutdown = bind(l, symShutdown, mkVoid)
	if p := l.sym(symErrorString); p != 0 {
		// Not a hot path: let purego copy the C string.
		purego.RegisterFunc(&l.errorString, p)
	}
	l.systemGetDriverVersion = bind(l, symDriverVersion, mkBuf)
	l.systemGetNVMLVersion = bind(l, symNVMLVersion, mkBuf)
	l.deviceGetCount = bind(l, symDeviceCount, mkPtr[uint32])
	l.deviceGetHandleByIndex = bind(l, symHandleByIndex, mkIndexHandle)
	l.deviceGetName = bind(l, symName, mkDevBuf)
	l.deviceGetUUID = bind(l, symUUID, mkDevBuf)
	l.deviceGetPciInfo = bind(l, symPciInfo, mkDevPtr[pciInfo])
	l.deviceGetPowerUsage = bind(l, symPowerUsage, mkDevPtr[uint32])
	l.deviceGetFieldValues = bind(l, symFieldValues, mkDevU32Ptr[fieldValue])
	l.deviceGetTotalEnergyConsumption = bind(l, symTotalEnergy, mkDevPtr[uint64])
	l.deviceGetSamples = bind(l, symSamples, mkSamples)
	l.deviceGetClockInfo = bind(l, symClockInfo, mkDevU32Ptr[uint32])
	l.deviceGetTemperature = bind(l, symTemperature, mkDevU32Ptr[uint32])
	l.deviceGetEnforcedPowerLimit = bind(l, symEnforcedPowerLimit, mkDevPtr[uint32])
	l.deviceGetPowerManagementDefaultLimit = bind(l, symDefaultPowerLimit, mkDevPtr[uint32])
	l.deviceGetPerformanceState = bind(l, symPerformanceState, mkDevPtr[uint32])
	l.deviceGetCurrentClocksEventReasons = bind(l, symClocksEventReasons, mkDevPtr[uint64])
	l.deviceGetCurrentClocksThrottleReasons = bind(l, symClocksThrottleReasons, mkDevPtr[uint64])
	l.deviceGetUtilizationRates = bind(l, symUtilizationRates, mkDevPtr[utilization])
	l.deviceGetProcessUtilization = bind(l, symProcessUtilization, mkProcessUtil)
	switch {
	case l.init == nil:
		return &openError{msg: dl.NoDriver + l.path + " is not libnvidia-ml (it has no " + symInit + ")"}
	case l.shutdown == nil:
		return &openError{msg: dl.NoDriver + l.path + " is not libnvidia-ml (it has no " + symShutdown + ")"}
	}
	return nil
}

// sym returns the address of name in l, or 0.
func (l *Lib) sym(name string) uintptr { return dl.Sym(l.handle, name) }

// bind looks name up and wraps its address with mk; the zero F (nil) when it is missing.
func bind[F any](l *Lib, name string, mk func(uintptr) F) F { return dl.Bind(l.handle, name, mk) }

// The wrappers below call C through purego.SyscallN rather than RegisterFunc's reflection.
// SyscallN is go:uintptrescapes, so the variadic array of a plain call is heap-allocated
// each time; the wrappers instead pass a slice of args, an array inside the pooled scratch,
// and calls do not allocate. This is safe because every pointer handed to a wrapper points
// into the heap (the scratch, or a slice made for the call; pointers passed through a func
// value escape anyway), Go's heap objects do not move, and runtime.KeepAlive keeps them
// reachable until C returns. nvmlReturn_t is a 32-bit enum: the upper half of the return
// register is undefined, hence Return(uint32(r)).

// args is the argument block of one call.
type args [6]uintptr

func call(p uintptr, a []uintptr) Return {
	r, _, _ := purego.SyscallN(p, a...)
	return Return(uint32(r))
}

func mkVoid(p uintptr) func() Return {
	return func() Return { return call(p, nil) }
}

func mkPtr[T any](p uintptr) func(*args, *T) Return {
	return func(a *args, x *T) Return {
		a[0] = uintptr(unsafe.Pointer(x))
		r := call(p, a[:1])
		runtime.KeepAlive(x)
		return r
	}
}

func mkBuf(p uintptr) func(*args, *byte, uint32) Return {
	return func(a *args, b *byte, n uint32) Return {
		a[0], a[1] = uintptr(unsafe.Pointer(b)), uintptr(n)
		r := call(p, a[:2])
		runtime.KeepAlive(b)
		return r
	}
}

func mkIndexHandle(p uintptr) func(*args, uint32, *uintptr) Return {
	return func(a *args, i uint32, h *uintptr) Return {
		a[0], a[1] = uintptr(i), uintptr(unsafe.Pointer(h))
		r := call(p, a[:2])
		runtime.KeepAlive(h)
		return r
	}
}

func mkDevPtr[T any](p uintptr) func(*args, uintptr, *T) Return {
	return func(a *args, d uintptr, x *T) Return {
		a[0], a[1] = d, uintptr(unsafe.Pointer(x))
		r := call(p, a[:2])
		runtime.KeepAlive(x)
		return r
	}
}

func mkDevBuf(p uintptr) func(*args, uintptr, *byte, uint32) Return {
	return func(a *args, d uintptr, b *byte, n uint32) Return {
		a[0], a[1], a[2] = d, uintptr(unsafe.Pointer(b)), uintptr(n)
		r := call(p, a[:3])
		runtime.KeepAlive(b)
		return r
	}
}

func mkDevU32Ptr[T any](p uintptr) func(*args, uintptr, uint32, *T) Return {
	return func(a *args, d uintptr, v uint32, x *T) Return {
		a[0], a[1], a[2] = d, uintptr(v), uintptr(unsafe.Pointer(x))
		r := call(p, a[:3])
		runtime.KeepAlive(x)
		return r
	}
}

func mkSamples(p uintptr) func(*args, uintptr, uint32, uint64, *uint32, *uint32, *sample) Return {
	return func(a *args, d uintptr, typ uint32, last uint64, vt, n *uint32, s *sample) Return {
		a[0], a[1], a[2] = d, uintptr(typ), uintptr(last)
		a[3], a[4], a[5] = uintptr(unsafe.Pointer(vt)), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(s))
		r := call(p, a[:6])
		runtime.KeepAlive(vt)
		runtime.KeepAlive(n)
		runtime.KeepAlive(s)
		return r
	}
}

func mkProcessUtil(p uintptr) func(*args, uintptr, *processUtilizationSample, *uint32, uint64) Return {
	return func(a *args, d uintptr, u *processUtilizationSample, n *uint32, last uint64) Return {
		a[0], a[1], a[2], a[3] = d, uintptr(unsafe.Pointer(u)), uintptr(unsafe.Pointer(n)), uintptr(last)
		r := call(p, a[:4])
		runtime.KeepAlive(u)
		runtime.KeepAlive(n)
		return r
	}
}

// scratch holds the out-parameters handed to C. It lives on the heap (SyscallN makes
// every pointer argument escape anyway) and is pooled so that calls do not allocate.
type scratch struct {
	args    args
	u32     uint32
	u32b    uint32
	u64     uint64
	handle  uintptr
	util    utilization
	pci     pciInfo
	str     [deviceNameBufferSize]byte
	fields  [maxScratchFieldValues]fieldValue
	samples []sample
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.samples) > maxScratchSamples {
		s.samples = nil
	}
	scratchPool.Put(s)
}

// Init initialises NVML (nvmlInit_v2). Calls nest: each Init needs a Shutdown.
func (l *Lib) Init() error {
	if l == nil || l.init == nil {
		return missing(symInit)
	}
	return check(l.init(), symInit)
}

// Shutdown undoes one Init (nvmlShutdown).
func (l *Lib) Shutdown() error {
	if l == nil || l.shutdown == nil {
		return missing(symShutdown)
	}
	return check(l.shutdown(), symShutdown)
}

// DriverVersion returns the kernel driver's version, e.g. "580.159.04".
func (l *Lib) DriverVersion() (string, error) {
	if l == nil {
		return "", missing(symDriverVersion)
	}
	return l.version(l.systemGetDriverVersion, symDriverVersion)
}

// NVMLVersion returns the library's version, e.g. "13.580.159.04".
func (l *Lib) NVMLVersion() (string, error) {
	if l == nil {
		return "", missing(symNVMLVersion)
	}
	return l.version(l.systemGetNVMLVersion, symNVMLVersion)
}

func (l *Lib) version(f func(*args, *byte, uint32) Return, name string) (string, error) {
	if f == nil {
		return "", missing(name)
	}
	s := getScratch()
	defer putScratch(s)
	s.str = [len(s.str)]byte{}
	if err := check(f(&s.args, &s.str[0], systemVersionBufferSize), name); err != nil {
		return "", err
	}
	return cString(s.str[:]), nil
}

// DeviceCount returns the number of GPUs NVML sees (nvmlDeviceGetCount_v2).
func (l *Lib) DeviceCount() (int, error) {
	if l == nil || l.deviceGetCount == nil {
		return 0, missing(symDeviceCount)
	}
	s := getScratch()
	defer putScratch(s)
	s.u32 = 0
	if err := check(l.deviceGetCount(&s.args, &s.u32), symDeviceCount); err != nil {
		return 0, err
	}
	return int(s.u32), nil
}

// DeviceByIndex returns the handle of GPU i in NVML's order (nvmlDeviceGetHandleByIndex_v2).
func (l *Lib) DeviceByIndex(i int) (Device, error) {
	if l == nil || l.deviceGetHandleByIndex == nil {
		return Device{}, missing(symHandleByIndex)
	}
	if i < 0 || i > int(^uint32(0)) {
		return Device{}, check(ErrorInvalidArgument, symHandleByIndex)
	}
	s := getScratch()
	defer putScratch(s)
	s.handle = 0
	if err := check(l.deviceGetHandleByIndex(&s.args, uint32(i), &s.handle), symHandleByIndex); err != nil {
		return Device{}, err
	}
	return Device{lib: l, h: s.handle}, nil
}
