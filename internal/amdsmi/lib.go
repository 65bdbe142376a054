// Package amdsmi is a small binding to AMD's System Management Interface library
// (libamd_smi, ROCm) through purego: no cgo, so gpuwatt builds anywhere and loads the
// library at run time, never at start-up, as package nvml does for NVIDIA.
//
// A Lib is a struct of function fields filled by Open. amdsmi_init and amdsmi_shut_down are
// required; every other symbol is looked up with Dlsym and left nil when the library lacks
// it, in which case the call returns an error matching ErrNotSupported that names the
// symbol. Every status becomes an *Error that matches the sentinel of its code with
// errors.Is. Nothing panics.
//
// The library's structs changed between ROCm releases (amdsmi_power_info_t: ROCm 5.7 had
// no current_socket_power; 6.0–6.3 hold 17 uint32 fields; 6.4 put a uint64 socket_power
// first; 7.x widened the voltages to uint64 and the reserved tail to 18 uint64s, and
// amdsmi_version_t lost its year). Init reads amdsmi_get_lib_version and picks the layout
// of that version (Layout); a version the binding does not know is refused with an error
// matching ErrUnsupportedVersion instead of being misread. Every struct handed to C is a
// zeroed buffer at least as large as the largest layout known, so a size the binding did
// not expect cannot overrun Go memory; only the offsets read depend on the version.
package amdsmi

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpuwatt/gpuwatt/internal/dl"
)

// DefaultPaths are the names Open tries when given none: the loader's path, then ROCm's
// default install directory (not always on the loader path).
var DefaultPaths = []string{"libamd_smi.so", "/opt/rocm/lib/libamd_smi.so"}

// NoLibrary starts the message of a library that could not be loaded.
const NoLibrary = "no AMD GPU driver found: "

// InitAMDGPUs is AMDSMI_INIT_AMD_GPUS, the flag Init passes to amdsmi_init.
const InitAMDGPUs = 1 << 1

// Symbol names.
const (
	symInit           = "amdsmi_init"
	symShutDown       = "amdsmi_shut_down"
	symStatusString   = "amdsmi_status_code_to_string"
	symLibVersion     = "amdsmi_get_lib_version"
	symSocketHandles  = "amdsmi_get_socket_handles"
	symProcHandles    = "amdsmi_get_processor_handles"
	symASICInfo       = "amdsmi_get_gpu_asic_info"
	symUUID           = "amdsmi_get_gpu_device_uuid"
	symBDF            = "amdsmi_get_gpu_device_bdf"
	symPowerInfo      = "amdsmi_get_power_info"
	symPowerCapInfo   = "amdsmi_get_power_cap_info"
	symEnergyCount    = "amdsmi_get_energy_count"
	symClockInfo      = "amdsmi_get_clock_info"
	symTempMetric     = "amdsmi_get_temp_metric"
	symActivity       = "amdsmi_get_gpu_activity"
	maxHandles        = 1024
	structBufferBytes = 4096 // larger than any struct read here in any known version
)

// Lib is a loaded libamd_smi. Its symbol fields are 0 for functions the library lacks. A
// Lib is never unloaded.
type Lib struct {
	path   string
	handle uintptr

	init, shutDown, statusString, libVersion uintptr
	socketHandles, procHandles               uintptr
	asicInfo, uuid, bdf                      uintptr
	powerInfo, powerCapInfo, energyCount     uintptr
	clockInfo, tempMetric, activity          uintptr
	mu                                       sync.Mutex
	version                                  Version
	layout                                   *Layout
}

// Open loads libamd_smi from the first of paths that loads (DefaultPaths when none are
// given) and binds its symbols. It does not initialise the library: call Init. When no
// path loads, the error matches ErrLibraryNotFound and reads, on one line,
// "no AMD GPU driver found: cannot load libamd_smi.so: <why>".
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
			return nil, &openError{msg: NoLibrary + le.Why}
		}
		return nil, err
	}
	if l.statusString != 0 {
		f := l.describe
		describe.Store(&f)
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

func (l *Lib) sym(name string) uintptr { return dl.Sym(l.handle, name) }

func (l *Lib) bind() error {
	l.init, l.shutDown = l.sym(symInit), l.sym(symShutDown)
	l.statusString, l.libVersion = l.sym(symStatusString), l.sym(symLibVersion)
	l.socketHandles, l.procHandles = l.sym(symSocketHandles), l.sym(symProcHandles)
	l.asicInfo, l.uuid, l.bdf = l.sym(symASICInfo), l.sym(symUUID), l.sym(symBDF)
	l.powerInfo, l.powerCapInfo, l.energyCount = l.sym(symPowerInfo), l.sym(symPowerCapInfo), l.sym(symEnergyCount)
	l.clockInfo, l.tempMetric, l.activity = l.sym(symClockInfo), l.sym(symTempMetric), l.sym(symActivity)
	for _, s := range []struct {
		p    uintptr
		name string
	}{{l.init, symInit}, {l.shutDown, symShutDown}} {
		if s.p == 0 {
			return &openError{msg: NoLibrary + l.path + " is not libamd_smi (it has no " + s.name + ")"}
		}
	}
	return nil
}

// call runs a C function of the library; every amdsmi function returns amdsmi_status_t, a
// 32-bit enum (the upper half of the register is undefined). Like purego.SyscallN it is
// go:uintptrescapes: a pointer converted to uintptr in its argument list is moved to the heap
// and kept alive until the call returns.
//
//go:uintptrescapes
func call(p uintptr, args ...uintptr) Status {
	r, _, _ := purego.SyscallN(p, args...)
	return Status(uint32(r))
}

// describe is amdsmi_status_code_to_string.
func (l *Lib) describe(s Status) string {
	out := new(*byte)
	r, _, _ := purego.SyscallN(l.statusString, uintptr(s), uintptr(unsafe.Pointer(out)))
	runtime.KeepAlive(out)
	if Status(uint32(r)) != StatusSuccess || *out == nil {
		return ""
	}
	return cString(*out, 256)
}

// Init initialises the library for AMD GPUs (amdsmi_init(AMDSMI_INIT_AMD_GPUS)) and checks
// its version. A version whose layouts the binding does not know is shut down again and
// refused with an error matching ErrUnsupportedVersion.
func (l *Lib) Init() error {
	if l == nil || l.init == 0 {
		return missing(symInit)
	}
	if err := check(call(l.init, InitAMDGPUs), symInit); err != nil {
		return err
	}
	v, err := l.readVersion()
	if err != nil {
		_ = l.ShutDown()
		return err
	}
	lay, err := LayoutFor(v)
	if err != nil {
		_ = l.ShutDown()
		return err
	}
	l.mu.Lock()
	l.version, l.layout = v, lay
	l.mu.Unlock()
	return nil
}

// ShutDown undoes Init (amdsmi_shut_down).
func (l *Lib) ShutDown() error {
	if l == nil || l.shutDown == 0 {
		return missing(symShutDown)
	}
	return check(call(l.shutDown), symShutDown)
}

// Version returns the library's version as Init read it.
func (l *Lib) Version() Version {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// Layout returns the struct layout Init chose, nil before Init.
func (l *Lib) Layout() *Layout {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.layout
}

// versionRaw is amdsmi_version_t in either of its shapes: {year, major, minor, release,
// build} (ROCm 6.0–6.3) or {major, minor, release, build} (6.4 and later). Both are 24 bytes
// with the build string's pointer at offset 16.
type versionRaw struct {
	w     [4]uint32
	build *byte
}

var (
	_ [unsafe.Sizeof(versionRaw{}) - 24]struct{}
	_ [24 - unsafe.Sizeof(versionRaw{})]struct{}
	_ [unsafe.Offsetof(versionRaw{}.build) - 16]struct{}
	_ [16 - unsafe.Offsetof(versionRaw{}.build)]struct{}
)

func (l *Lib) readVersion() (Version, error) {
	if l.libVersion == 0 {
		return Version{}, &versionError{msg: fmt.Sprintf("%s has no %s: a library older than ROCm 6.0, whose structs this binding does not know", l.path, symLibVersion)}
	}
	raw := new([2]versionRaw) // twice the size: a longer struct cannot overrun
	if err := check(call(l.libVersion, uintptr(unsafe.Pointer(raw))), symLibVersion); err != nil {
		return Version{}, err
	}
	runtime.KeepAlive(raw)
	v := ParseVersion(raw[0].w)
	if raw[0].build != nil {
		v.Build = cString(raw[0].build, 64)
	}
	return v, nil
}

// cString copies the NUL-terminated string at p, at most n bytes.
func cString(p *byte, n int) string {
	if p == nil {
		return ""
	}
	b := make([]byte, 0, 32)
	for i := range n {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// bufString is the NUL-terminated string at the start of b.
func bufString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// GPUs returns the handles of every GPU processor of every socket, in the library's order
// (amdsmi_get_socket_handles, then amdsmi_get_processor_handles per socket; the library was
// initialised for AMD GPUs only).
func (l *Lib) GPUs() ([]Processor, error) {
	if l == nil || l.socketHandles == 0 {
		return nil, missing(symSocketHandles)
	}
	if l.procHandles == 0 {
		return nil, missing(symProcHandles)
	}
	sockets, err := l.handles(func(n *uint32, buf *uintptr) Status {
		r := call(l.socketHandles, uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(buf)))
		runtime.KeepAlive(n)
		runtime.KeepAlive(buf)
		return r
	}, symSocketHandles)
	if err != nil {
		return nil, err
	}
	var out []Processor
	for _, s := range sockets {
		ps, err := l.handles(func(n *uint32, buf *uintptr) Status {
			r := call(l.procHandles, s, uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(buf)))
			runtime.KeepAlive(n)
			runtime.KeepAlive(buf)
			return r
		}, symProcHandles)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, Processor{lib: l, h: p})
		}
	}
	return out, nil
}

// handles runs one of the count-then-fill handle getters: a first call with a NULL buffer
// gives the count, a second fills a buffer of that many handles.
func (l *Lib) handles(f func(n *uint32, buf *uintptr) Status, name string) ([]uintptr, error) {
	n := new(uint32)
	if err := check(f(n, nil), name); err != nil {
		return nil, err
	}
	if *n == 0 {
		return nil, nil
	}
	if *n > maxHandles {
		return nil, fmt.Errorf("%s: %d handles, more than %d: %w", name, *n, maxHandles, ErrInvalidArgument)
	}
	buf := make([]uintptr, *n)
	if err := check(f(n, &buf[0]), name); err != nil {
		return nil, err
	}
	return buf[:min(int(*n), len(buf))], nil
}
