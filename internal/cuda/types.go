package cuda

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// DevicePtr is a CUdeviceptr: an address in the GPU's (unified) address space. It is
// passed to kernels with Ptr.
type DevicePtr uint64

// Add returns p advanced by off bytes.
func (p DevicePtr) Add(off int64) DevicePtr { return DevicePtr(int64(p) + off) }

// Attribute is a CUdevice_attribute.
type Attribute int32

// Device attributes (cuda.h CUdevice_attribute; values checked against CUDA 12.6).
const (
	AttrMaxThreadsPerBlock               Attribute = 1
	AttrMaxBlockDimX                     Attribute = 2
	AttrMaxGridDimX                      Attribute = 5
	AttrMaxSharedMemoryPerBlock          Attribute = 8
	AttrTotalConstantMemory              Attribute = 9
	AttrWarpSize                         Attribute = 10
	AttrMaxRegistersPerBlock             Attribute = 12
	AttrClockRate                        Attribute = 13 // kHz: the SM clock's typical (maximum boost) rate
	AttrMultiprocessorCount              Attribute = 16
	AttrKernelExecTimeout                Attribute = 17
	AttrIntegrated                       Attribute = 18
	AttrComputeMode                      Attribute = 20
	AttrConcurrentKernels                Attribute = 31
	AttrECCEnabled                       Attribute = 32
	AttrPCIBusID                         Attribute = 33
	AttrPCIDeviceID                      Attribute = 34
	AttrMemoryClockRate                  Attribute = 36 // kHz: the peak memory clock
	AttrGlobalMemoryBusWidth             Attribute = 37 // bits
	AttrL2CacheSize                      Attribute = 38 // bytes
	AttrMaxThreadsPerMultiprocessor      Attribute = 39
	AttrAsyncEngineCount                 Attribute = 40
	AttrUnifiedAddressing                Attribute = 41
	AttrPCIDomainID                      Attribute = 50
	AttrComputeCapabilityMajor           Attribute = 75
	AttrComputeCapabilityMinor           Attribute = 76
	AttrMaxSharedMemoryPerMultiprocessor Attribute = 81 // bytes
	AttrMaxRegistersPerMultiprocessor    Attribute = 82
	AttrManagedMemory                    Attribute = 83
	AttrMultiGPUBoard                    Attribute = 84
	AttrSingleToDoublePrecisionPerfRatio Attribute = 87
	AttrCooperativeLaunch                Attribute = 95
	AttrMaxSharedMemoryPerBlockOptin     Attribute = 97 // bytes, with cuFuncSetAttribute
	AttrMaxBlocksPerMultiprocessor       Attribute = 106
	AttrMaxPersistingL2CacheSize         Attribute = 108
	AttrReservedSharedMemoryPerBlock     Attribute = 111
	AttrClusterLaunch                    Attribute = 120
	AttrNUMAID                           Attribute = 131
)

var attrNames = map[Attribute]string{
	AttrMaxThreadsPerBlock:               "MAX_THREADS_PER_BLOCK",
	AttrMaxBlockDimX:                     "MAX_BLOCK_DIM_X",
	AttrMaxGridDimX:                      "MAX_GRID_DIM_X",
	AttrMaxSharedMemoryPerBlock:          "MAX_SHARED_MEMORY_PER_BLOCK",
	AttrTotalConstantMemory:              "TOTAL_CONSTANT_MEMORY",
	AttrWarpSize:                         "WARP_SIZE",
	AttrMaxRegistersPerBlock:             "MAX_REGISTERS_PER_BLOCK",
	AttrClockRate:                        "CLOCK_RATE",
	AttrMultiprocessorCount:              "MULTIPROCESSOR_COUNT",
	AttrKernelExecTimeout:                "KERNEL_EXEC_TIMEOUT",
	AttrIntegrated:                       "INTEGRATED",
	AttrComputeMode:                      "COMPUTE_MODE",
	AttrConcurrentKernels:                "CONCURRENT_KERNELS",
	AttrECCEnabled:                       "ECC_ENABLED",
	AttrPCIBusID:                         "PCI_BUS_ID",
	AttrPCIDeviceID:                      "PCI_DEVICE_ID",
	AttrMemoryClockRate:                  "MEMORY_CLOCK_RATE",
	AttrGlobalMemoryBusWidth:             "GLOBAL_MEMORY_BUS_WIDTH",
	AttrL2CacheSize:                      "L2_CACHE_SIZE",
	AttrMaxThreadsPerMultiprocessor:      "MAX_THREADS_PER_MULTIPROCESSOR",
	AttrAsyncEngineCount:                 "ASYNC_ENGINE_COUNT",
	AttrUnifiedAddressing:                "UNIFIED_ADDRESSING",
	AttrPCIDomainID:                      "PCI_DOMAIN_ID",
	AttrComputeCapabilityMajor:           "COMPUTE_CAPABILITY_MAJOR",
	AttrComputeCapabilityMinor:           "COMPUTE_CAPABILITY_MINOR",
	AttrMaxSharedMemoryPerMultiprocessor: "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
	AttrMaxRegistersPerMultiprocessor:    "MAX_REGISTERS_PER_MULTIPROCESSOR",
	AttrManagedMemory:                    "MANAGED_MEMORY",
	AttrMultiGPUBoard:                    "MULTI_GPU_BOARD",
	AttrSingleToDoublePrecisionPerfRatio: "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO",
	AttrCooperativeLaunch:                "COOPERATIVE_LAUNCH",
	AttrMaxSharedMemoryPerBlockOptin:     "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
	AttrMaxBlocksPerMultiprocessor:       "MAX_BLOCKS_PER_MULTIPROCESSOR",
	AttrMaxPersistingL2CacheSize:         "MAX_PERSISTING_L2_CACHE_SIZE",
	AttrReservedSharedMemoryPerBlock:     "RESERVED_SHARED_MEMORY_PER_BLOCK",
	AttrClusterLaunch:                    "CLUSTER_LAUNCH",
	AttrNUMAID:                           "NUMA_ID",
}

// String returns the attribute's cuda.h name without the CU_DEVICE_ATTRIBUTE_ prefix.
func (a Attribute) String() string {
	if s, ok := attrNames[a]; ok {
		return s
	}
	return "ATTRIBUTE(" + strconv.Itoa(int(a)) + ")"
}

// FuncAttribute is a CUfunction_attribute.
type FuncAttribute int32

// Function attributes (cuda.h CUfunction_attribute).
const (
	FuncMaxThreadsPerBlock        FuncAttribute = 0
	FuncSharedSizeBytes           FuncAttribute = 1 // static shared memory
	FuncConstSizeBytes            FuncAttribute = 2
	FuncLocalSizeBytes            FuncAttribute = 3 // local memory (spills) per thread
	FuncNumRegs                   FuncAttribute = 4
	FuncPTXVersion                FuncAttribute = 5 // major*10 + minor
	FuncBinaryVersion             FuncAttribute = 6 // major*10 + minor
	FuncCacheModeCA               FuncAttribute = 7
	FuncMaxDynamicSharedSizeBytes FuncAttribute = 8
	FuncPreferredSharedCarveout   FuncAttribute = 9
)

// jitOption is a CUjit_option.
type jitOption int32

// JIT options used by LoadPTX (cuda.h CUjit_option).
const (
	jitInfoLogBuffer           jitOption = 3
	jitInfoLogBufferSizeBytes  jitOption = 4
	jitErrorLogBuffer          jitOption = 5
	jitErrorLogBufferSizeBytes jitOption = 6
	jitOptimizationLevel       jitOption = 7
	jitLogVerbose              jitOption = 12
)

// StreamFlags are cuStreamCreate flags.
type StreamFlags uint32

// Stream flags (CUstream_flags).
const (
	StreamDefault     StreamFlags = 0x0
	StreamNonBlocking StreamFlags = 0x1 // does not synchronise with the NULL stream
)

// EventFlags are cuEventCreate flags.
type EventFlags uint32

// Event flags (CUevent_flags).
const (
	EventDefault       EventFlags = 0x0
	EventBlockingSync  EventFlags = 0x1 // Synchronize sleeps instead of spinning
	EventDisableTiming EventFlags = 0x2 // cheaper, but ElapsedTime fails
)

// HostAllocFlags are cuMemHostAlloc flags.
type HostAllocFlags uint32

// Host allocation flags (CU_MEMHOSTALLOC_*).
const (
	HostAllocDefault       HostAllocFlags = 0x0
	HostAllocPortable      HostAllocFlags = 0x1
	HostAllocDeviceMap     HostAllocFlags = 0x2
	HostAllocWriteCombined HostAllocFlags = 0x4
)

// Dim3 is a grid or block size. A zero Y or Z counts as 1.
type Dim3 struct{ X, Y, Z uint32 }

// D1 returns the one-dimensional size n.
func D1(n int) Dim3 { return Dim3{X: clampU32(n), Y: 1, Z: 1} }

// D2 returns the two-dimensional size x × y.
func D2(x, y int) Dim3 { return Dim3{X: clampU32(x), Y: clampU32(y), Z: 1} }

func clampU32(n int) uint32 {
	switch {
	case n < 0:
		return 0
	case uint64(n) > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(n)
}

// norm returns d with zero Y and Z replaced by 1.
func (d Dim3) norm() Dim3 {
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// Count returns X×Y×Z (zero Y and Z counting as 1).
func (d Dim3) Count() int64 {
	n := d.norm()
	return int64(n.X) * int64(n.Y) * int64(n.Z)
}

func (d Dim3) String() string {
	n := d.norm()
	return fmt.Sprintf("(%d,%d,%d)", n.X, n.Y, n.Z)
}

// ArgKind is the type of a kernel argument.
type ArgKind uint8

// Argument kinds: the PTX parameter types they match.
const (
	KindPtr ArgKind = iota + 1 // .u64 holding a device address
	KindU32                    // .u32 / .s32 / .b32
	KindU64                    // .u64 / .s64 / .b64
	KindF32                    // .f32
	KindF64                    // .f64
)

var kindNames = [...]string{KindPtr: "ptr", KindU32: "u32", KindU64: "u64", KindF32: "f32", KindF64: "f64"}

func (k ArgKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Size returns the argument's size in bytes (4 or 8; 0 for an unknown kind).
func (k ArgKind) Size() int {
	switch k {
	case KindU32, KindF32:
		return 4
	case KindPtr, KindU64, KindF64:
		return 8
	}
	return 0
}

// Arg is one kernel argument, by value: build it with Ptr, U32, I32, U64, I64, F32 or F64.
// The zero Arg is invalid (Launch refuses it).
type Arg struct {
	Kind ArgKind
	Bits uint64 // the value's bits, little-endian in the low Kind.Size() bytes
}

// Ptr is a device-pointer argument.
func Ptr(p DevicePtr) Arg { return Arg{KindPtr, uint64(p)} }

// U32 is a 32-bit unsigned argument.
func U32(v uint32) Arg { return Arg{KindU32, uint64(v)} }

// I32 is a 32-bit signed argument.
func I32(v int32) Arg { return Arg{KindU32, uint64(uint32(v))} }

// U64 is a 64-bit unsigned argument.
func U64(v uint64) Arg { return Arg{KindU64, v} }

// I64 is a 64-bit signed argument.
func I64(v int64) Arg { return Arg{KindU64, uint64(v)} }

// F32 is a single-precision argument.
func F32(v float32) Arg { return Arg{KindF32, uint64(math.Float32bits(v))} }

// F64 is a double-precision argument.
func F64(v float64) Arg { return Arg{KindF64, math.Float64bits(v)} }

func (a Arg) String() string {
	switch a.Kind {
	case KindPtr:
		return fmt.Sprintf("ptr(%#x)", a.Bits)
	case KindU32:
		return fmt.Sprintf("u32(%d)", uint32(a.Bits))
	case KindU64:
		return fmt.Sprintf("u64(%d)", a.Bits)
	case KindF32:
		return fmt.Sprintf("f32(%g)", math.Float32frombits(uint32(a.Bits)))
	case KindF64:
		return fmt.Sprintf("f64(%g)", math.Float64frombits(a.Bits))
	}
	return "invalid"
}

// Number is the element types that AsBytes accepts: plain numbers, which hold no Go
// pointers and so may be handed to the driver for the duration of a call.
type Number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// AsBytes returns the bytes of s (no copy), for the memory copies.
func AsBytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// cptr turns an address of C memory into an unsafe.Pointer. The memory is not Go's: the
// garbage collector ignores it, and it stays valid until the C side frees it.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// goString copies the NUL-terminated C string at p (at most max bytes).
func goString(p uintptr, max int) string {
	if p == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(cptr(p)), max)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
