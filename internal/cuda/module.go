package cuda

import (
	"math"
	"runtime"
	"strconv"
	"strings"
)

// OptLevel is the JIT's optimisation level.
type OptLevel int

// Optimisation levels. The zero value keeps the driver's default (level 4, the highest).
const (
	OptDefault OptLevel = iota
	OptLevel0
	OptLevel1
	OptLevel2
	OptLevel3
	OptLevel4
)

// JITOptions tune LoadPTXOptions. The zero value is the driver's defaults.
type JITOptions struct {
	Optimization OptLevel
	// Verbose asks the JIT for an info log (CU_JIT_LOG_VERBOSE): ptxas' register and
	// memory use per kernel, kept in Module.InfoLog.
	Verbose bool
}

// Module is a module loaded from PTX. The Context owns it: Unload it, or Close unloads it.
type Module struct {
	c *Context
	h uintptr
	// InfoLog is the JIT's info log (with JITOptions.Verbose: ptxas' resource use).
	InfoLog string

	alive bool                 // context thread only
	funcs map[string]*Function // context thread only
}

// LoadPTX JIT-compiles PTX text for the Context's device and loads it
// (cuModuleLoadDataEx). When the JIT rejects the text, the error matches ErrInvalidPTX and
// carries the JIT's error log (Error.Log; Error() shows it on one line).
func (c *Context) LoadPTX(ptx string) (*Module, error) {
	return c.LoadPTXOptions(ptx, JITOptions{})
}

// LoadPTXOptions is LoadPTX with JIT options.
func (c *Context) LoadPTXOptions(ptx string, o JITOptions) (*Module, error) {
	var m *Module
	err := c.run(symModuleLoadDataEx, func() error {
		var err error
		m, err = c.loadPTX(ptx, o)
		return err
	})
	return m, err
}

// loadPTX runs on the context thread.
func (c *Context) loadPTX(ptx string, o JITOptions) (*Module, error) {
	if c.lib.cuModuleLoadDataEx == nil {
		return nil, missing(symModuleLoadDataEx)
	}
	if c.lib.cuModuleUnload == nil {
		return nil, missing(symModuleUnload)
	}
	if i := strings.IndexByte(ptx, 0); i >= 0 {
		return nil, refuse(ErrorInvalidValue, symModuleLoadDataEx, "PTX text holds a NUL byte at offset "+strconv.Itoa(i))
	}
	if o.Optimization < OptDefault || o.Optimization > OptLevel4 {
		return nil, refuse(ErrorInvalidValue, symModuleLoadDataEx, "optimisation level out of range")
	}
	arena, err := c.arenaPtr()
	if err != nil {
		return nil, err
	}
	// The option arrays and both logs live in the pinned arena: the option values hold
	// pointers to the logs, and C must not be handed Go memory that holds pointers.
	n := 0
	put := func(opt jitOption, val uintptr) {
		*(*int32)(cptr(arena + jitOptsOff + 4*uintptr(n))) = int32(opt)
		*(*uintptr)(cptr(arena + jitValsOff + 8*uintptr(n))) = val
		n++
	}
	errLog, infoLog := arena+jitErrLogOff, arena+jitInfLogOff
	*(*byte)(cptr(errLog)) = 0
	*(*byte)(cptr(infoLog)) = 0
	put(jitErrorLogBuffer, errLog)
	put(jitErrorLogBufferSizeBytes, jitLogSize)
	put(jitInfoLogBuffer, infoLog)
	put(jitInfoLogBufferSizeBytes, jitLogSize)
	if o.Optimization != OptDefault {
		put(jitOptimizationLevel, uintptr(o.Optimization-OptLevel0))
	}
	if o.Verbose {
		put(jitLogVerbose, 1)
	}
	// The image: a NUL-terminated copy in Go memory (no pointers in it), read by the
	// driver during the call only.
	img := make([]byte, len(ptx)+1)
	copy(img, ptx)
	var h uintptr
	r := c.lib.cuModuleLoadDataEx(&h, &img[0], uint32(n), arena+jitOptsOff, arena+jitValsOff)
	runtime.KeepAlive(img)
	elog, ilog := goString(errLog, jitLogSize), goString(infoLog, jitLogSize)
	if r != Success {
		if elog == "" {
			elog = ilog
		}
		return nil, &Error{Code: r, Func: symModuleLoadDataEx, Log: elog}
	}
	m := &Module{c: c, h: h, InfoLog: ilog, alive: true, funcs: map[string]*Function{}}
	c.modules[m] = struct{}{}
	return m, nil
}

// Context returns the module's Context.
func (m *Module) Context() *Context { return m.c }

// Unload unloads the module (cuModuleUnload); its Functions become invalid.
func (m *Module) Unload() error {
	if m == nil {
		return refuse(ErrorInvalidHandle, symModuleUnload, "nil Module")
	}
	return m.c.run(symModuleUnload, func() error { return m.c.unloadModule(m) })
}

func (c *Context) unloadModule(m *Module) error {
	if !m.alive {
		return refuse(ErrorInvalidHandle, symModuleUnload, "module already unloaded")
	}
	m.alive = false
	delete(c.modules, m)
	return check(c.lib.cuModuleUnload(m.h), symModuleUnload)
}

// Function returns the kernel name of the module (cuModuleGetFunction). A name the module
// lacks gives an error matching ErrNotFound.
func (m *Module) Function(name string) (*Function, error) {
	if m == nil {
		return nil, refuse(ErrorInvalidHandle, symModuleGetFunction, "nil Module")
	}
	c := m.c
	var f *Function
	err := c.run(symModuleGetFunction, func() error {
		if c.lib.cuModuleGetFunction == nil {
			return missing(symModuleGetFunction)
		}
		if !m.alive {
			return refuse(ErrorInvalidHandle, symModuleGetFunction, "module unloaded")
		}
		if g, ok := m.funcs[name]; ok {
			f = g
			return nil
		}
		if strings.IndexByte(name, 0) >= 0 {
			return refuse(ErrorInvalidValue, symModuleGetFunction, "name holds a NUL byte")
		}
		cname := append([]byte(name), 0)
		var h uintptr
		if r := c.lib.cuModuleGetFunction(&h, m.h, &cname[0]); r != Success {
			return &Error{Code: r, Func: symModuleGetFunction, Log: "kernel " + strconv.Quote(name)}
		}
		f = &Function{m: m, h: h, name: name}
		m.funcs[name] = f
		return nil
	})
	return f, err
}

// Function is a kernel of a loaded Module.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// Module returns the kernel's module.
func (f *Function) Module() *Module { return f.m }

// funcHandle returns f's CUfunction for a call fn of c. Thread only.
func (c *Context) funcHandle(f *Function, fn string) (uintptr, error) {
	switch {
	case f == nil:
		return 0, refuse(ErrorInvalidHandle, fn, "nil Function")
	case f.m.c != c:
		return 0, refuse(ErrorInvalidHandle, fn, "function of another context")
	case !f.m.alive:
		return 0, refuse(ErrorInvalidHandle, fn, "module of "+f.name+" unloaded")
	}
	return f.h, nil
}

// Attribute returns an attribute of the kernel (cuFuncGetAttribute).
func (f *Function) Attribute(a FuncAttribute) (int, error) {
	if f == nil {
		return 0, refuse(ErrorInvalidHandle, symFuncGetAttribute, "nil Function")
	}
	c := f.m.c
	var v int
	err := c.run(symFuncGetAttribute, func() error {
		if c.lib.cuFuncGetAttribute == nil {
			return missing(symFuncGetAttribute)
		}
		h, err := c.funcHandle(f, symFuncGetAttribute)
		if err != nil {
			return err
		}
		var x int32
		if err := check(c.lib.cuFuncGetAttribute(&x, a, h), symFuncGetAttribute); err != nil {
			return err
		}
		v = int(x)
		return nil
	})
	return v, err
}

// SetAttribute sets an attribute of the kernel (cuFuncSetAttribute).
func (f *Function) SetAttribute(a FuncAttribute, v int) error {
	if f == nil {
		return refuse(ErrorInvalidHandle, symFuncSetAttribute, "nil Function")
	}
	c := f.m.c
	return c.run(symFuncSetAttribute, func() error {
		if c.lib.cuFuncSetAttribute == nil {
			return missing(symFuncSetAttribute)
		}
		h, err := c.funcHandle(f, symFuncSetAttribute)
		if err != nil {
			return err
		}
		if v < -1<<31 || v > 1<<31-1 {
			return refuse(ErrorInvalidValue, symFuncSetAttribute, "value out of range")
		}
		return check(c.lib.cuFuncSetAttribute(h, a, int32(v)), symFuncSetAttribute)
	})
}

// NumRegs returns the registers per thread the kernel uses.
func (f *Function) NumRegs() (int, error) { return f.Attribute(FuncNumRegs) }

// MaxThreadsPerBlock returns the largest block the kernel can be launched with.
func (f *Function) MaxThreadsPerBlock() (int, error) { return f.Attribute(FuncMaxThreadsPerBlock) }

// SetMaxDynamicSharedMemory lets the kernel be launched with up to bytes of dynamic shared
// memory (needed above 48 KiB; the device's limit is AttrMaxSharedMemoryPerBlockOptin).
func (f *Function) SetMaxDynamicSharedMemory(bytes int) error {
	return f.SetAttribute(FuncMaxDynamicSharedSizeBytes, bytes)
}

// LaunchConfig is the shape of a launch.
type LaunchConfig struct {
	Grid, Block Dim3    // zero Y and Z count as 1; X must be > 0
	SharedBytes int     // dynamic shared memory per block
	Stream      *Stream // nil: the NULL stream
}

// Launch queues kernel f with arguments args (cuLaunchKernel) and returns without waiting
// for it. The arguments must match the kernel's parameter list in number, order and size
// (the driver cannot check them): Ptr and U64/I64/F64 for 8-byte parameters, U32/I32/F32 for
// 4-byte ones. They are written into the Context's pinned arena, which C may read safely;
// the driver copies them during the call, so Launch keeps nothing.
func (c *Context) Launch(f *Function, cfg LaunchConfig, args ...Arg) error {
	return c.run(symLaunchKernel, func() error { return c.launch(f, cfg, args) })
}

// Launch is Context.Launch on f's Context.
func (f *Function) Launch(cfg LaunchConfig, args ...Arg) error {
	if f == nil {
		return refuse(ErrorInvalidHandle, symLaunchKernel, "nil Function")
	}
	return f.m.c.Launch(f, cfg, args...)
}

// launch runs on the context thread.
func (c *Context) launch(f *Function, cfg LaunchConfig, args []Arg) error {
	if c.lib.cuLaunchKernel == nil {
		return missing(symLaunchKernel)
	}
	fh, err := c.funcHandle(f, symLaunchKernel)
	if err != nil {
		return err
	}
	sh, err := c.streamHandle(cfg.Stream, symLaunchKernel)
	if err != nil {
		return err
	}
	g, b := cfg.Grid.norm(), cfg.Block.norm()
	switch {
	case g.X == 0 || b.X == 0:
		return refuse(ErrorInvalidValue, symLaunchKernel, "empty grid "+g.String()+" or block "+b.String())
	case cfg.SharedBytes < 0 || int64(cfg.SharedBytes) > math.MaxUint32:
		return refuse(ErrorInvalidValue, symLaunchKernel, "shared memory size out of range")
	case len(args) > maxArgs:
		return refuse(ErrorInvalidValue, symLaunchKernel, strconv.Itoa(len(args))+" arguments (at most "+strconv.Itoa(maxArgs)+")")
	}
	var params uintptr
	if len(args) > 0 {
		arena, err := c.arenaPtr()
		if err != nil {
			return err
		}
		for i, a := range args {
			slot := arena + argValsOff + 8*uintptr(i)
			switch a.Kind.Size() {
			case 4:
				*(*uint32)(cptr(slot)) = uint32(a.Bits)
			case 8:
				*(*uint64)(cptr(slot)) = a.Bits
			default:
				return refuse(ErrorInvalidValue, symLaunchKernel, "argument "+strconv.Itoa(i)+" is invalid (zero Arg)")
			}
			*(*uintptr)(cptr(arena + argPtrsOff + 8*uintptr(i))) = slot
		}
		params = arena + argPtrsOff
	}
	if r := c.lib.cuLaunchKernel(fh, g, b, uint32(cfg.SharedBytes), sh, params); r != Success {
		return &Error{Code: r, Func: symLaunchKernel, Log: "kernel " + f.name + " grid " + g.String() + " block " + b.String()}
	}
	return nil
}
