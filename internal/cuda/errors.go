package cuda

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
)

// Result is a CUresult status code of the CUDA driver API.
type Result uint32

// The CUresult codes of cuda.h (CUDA 12.x and 13.x; checked against the 12.6 header).
const (
	Success                           Result = 0
	ErrorInvalidValue                 Result = 1
	ErrorOutOfMemory                  Result = 2
	ErrorNotInitialized               Result = 3
	ErrorDeinitialized                Result = 4
	ErrorProfilerDisabled             Result = 5
	ErrorProfilerNotInitialized       Result = 6
	ErrorProfilerAlreadyStarted       Result = 7
	ErrorProfilerAlreadyStopped       Result = 8
	ErrorStubLibrary                  Result = 34
	ErrorDeviceUnavailable            Result = 46
	ErrorNoDevice                     Result = 100
	ErrorInvalidDevice                Result = 101
	ErrorDeviceNotLicensed            Result = 102
	ErrorInvalidImage                 Result = 200
	ErrorInvalidContext               Result = 201
	ErrorContextAlreadyCurrent        Result = 202
	ErrorMapFailed                    Result = 205
	ErrorUnmapFailed                  Result = 206
	ErrorArrayIsMapped                Result = 207
	ErrorAlreadyMapped                Result = 208
	ErrorNoBinaryForGPU               Result = 209
	ErrorAlreadyAcquired              Result = 210
	ErrorNotMapped                    Result = 211
	ErrorNotMappedAsArray             Result = 212
	ErrorNotMappedAsPointer           Result = 213
	ErrorECCUncorrectable             Result = 214
	ErrorUnsupportedLimit             Result = 215
	ErrorContextAlreadyInUse          Result = 216
	ErrorPeerAccessUnsupported        Result = 217
	ErrorInvalidPTX                   Result = 218
	ErrorInvalidGraphicsContext       Result = 219
	ErrorNVLinkUncorrectable          Result = 220
	ErrorJITCompilerNotFound          Result = 221
	ErrorUnsupportedPTXVersion        Result = 222
	ErrorJITCompilationDisabled       Result = 223
	ErrorUnsupportedExecAffinity      Result = 224
	ErrorUnsupportedDevsideSync       Result = 225
	ErrorContained                    Result = 226
	ErrorInvalidSource                Result = 300
	ErrorFileNotFound                 Result = 301
	ErrorSharedObjectSymbolNotFound   Result = 302
	ErrorSharedObjectInitFailed       Result = 303
	ErrorOperatingSystem              Result = 304
	ErrorInvalidHandle                Result = 400
	ErrorIllegalState                 Result = 401
	ErrorLossyQuery                   Result = 402
	ErrorNotFound                     Result = 500
	ErrorNotReady                     Result = 600
	ErrorIllegalAddress               Result = 700
	ErrorLaunchOutOfResources         Result = 701
	ErrorLaunchTimeout                Result = 702
	ErrorLaunchIncompatibleTexturing  Result = 703
	ErrorPeerAccessAlreadyEnabled     Result = 704
	ErrorPeerAccessNotEnabled         Result = 705
	ErrorPrimaryContextActive         Result = 708
	ErrorContextIsDestroyed           Result = 709
	ErrorAssert                       Result = 710
	ErrorTooManyPeers                 Result = 711
	ErrorHostMemoryAlreadyRegistered  Result = 712
	ErrorHostMemoryNotRegistered      Result = 713
	ErrorHardwareStackError           Result = 714
	ErrorIllegalInstruction           Result = 715
	ErrorMisalignedAddress            Result = 716
	ErrorInvalidAddressSpace          Result = 717
	ErrorInvalidPC                    Result = 718
	ErrorLaunchFailed                 Result = 719
	ErrorCooperativeLaunchTooLarge    Result = 720
	ErrorTensorMemoryLeak             Result = 721
	ErrorNotPermitted                 Result = 800
	ErrorNotSupported                 Result = 801
	ErrorSystemNotReady               Result = 802
	ErrorSystemDriverMismatch         Result = 803
	ErrorCompatNotSupportedOnDevice   Result = 804
	ErrorMPSConnectionFailed          Result = 805
	ErrorMPSRPCFailure                Result = 806
	ErrorMPSServerNotReady            Result = 807
	ErrorMPSMaxClientsReached         Result = 808
	ErrorMPSMaxConnectionsReached     Result = 809
	ErrorMPSClientTerminated          Result = 810
	ErrorCDPNotSupported              Result = 811
	ErrorCDPVersionMismatch           Result = 812
	ErrorStreamCaptureUnsupported     Result = 900
	ErrorStreamCaptureInvalidated     Result = 901
	ErrorStreamCaptureMerge           Result = 902
	ErrorStreamCaptureUnmatched       Result = 903
	ErrorStreamCaptureUnjoined        Result = 904
	ErrorStreamCaptureIsolation       Result = 905
	ErrorStreamCaptureImplicit        Result = 906
	ErrorCapturedEvent                Result = 907
	ErrorStreamCaptureWrongThread     Result = 908
	ErrorTimeout                      Result = 909
	ErrorGraphExecUpdateFailure       Result = 910
	ErrorExternalDevice               Result = 911
	ErrorInvalidClusterSize           Result = 912
	ErrorFunctionNotLoaded            Result = 913
	ErrorInvalidResourceType          Result = 914
	ErrorInvalidResourceConfiguration Result = 915
	ErrorKeyRotation                  Result = 916
	ErrorStreamDetached               Result = 917
	ErrorGraphRecaptureFailure        Result = 918
	ErrorUnknown                      Result = 999
)

// resultNames maps every known code to its cuda.h name.
var resultNames = map[Result]string{
	Success:                           "CUDA_SUCCESS",
	ErrorInvalidValue:                 "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:                  "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:               "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:                "CUDA_ERROR_DEINITIALIZED",
	ErrorProfilerDisabled:             "CUDA_ERROR_PROFILER_DISABLED",
	ErrorProfilerNotInitialized:       "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
	ErrorProfilerAlreadyStarted:       "CUDA_ERROR_PROFILER_ALREADY_STARTED",
	ErrorProfilerAlreadyStopped:       "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
	ErrorStubLibrary:                  "CUDA_ERROR_STUB_LIBRARY",
	ErrorDeviceUnavailable:            "CUDA_ERROR_DEVICE_UNAVAILABLE",
	ErrorNoDevice:                     "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:                "CUDA_ERROR_INVALID_DEVICE",
	ErrorDeviceNotLicensed:            "CUDA_ERROR_DEVICE_NOT_LICENSED",
	ErrorInvalidImage:                 "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:               "CUDA_ERROR_INVALID_CONTEXT",
	ErrorContextAlreadyCurrent:        "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	ErrorMapFailed:                    "CUDA_ERROR_MAP_FAILED",
	ErrorUnmapFailed:                  "CUDA_ERROR_UNMAP_FAILED",
	ErrorArrayIsMapped:                "CUDA_ERROR_ARRAY_IS_MAPPED",
	ErrorAlreadyMapped:                "CUDA_ERROR_ALREADY_MAPPED",
	ErrorNoBinaryForGPU:               "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorAlreadyAcquired:              "CUDA_ERROR_ALREADY_ACQUIRED",
	ErrorNotMapped:                    "CUDA_ERROR_NOT_MAPPED",
	ErrorNotMappedAsArray:             "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	ErrorNotMappedAsPointer:           "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
	ErrorECCUncorrectable:             "CUDA_ERROR_ECC_UNCORRECTABLE",
	ErrorUnsupportedLimit:             "CUDA_ERROR_UNSUPPORTED_LIMIT",
	ErrorContextAlreadyInUse:          "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	ErrorPeerAccessUnsupported:        "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	ErrorInvalidPTX:                   "CUDA_ERROR_INVALID_PTX",
	ErrorInvalidGraphicsContext:       "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	ErrorNVLinkUncorrectable:          "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	ErrorJITCompilerNotFound:          "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	ErrorUnsupportedPTXVersion:        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorJITCompilationDisabled:       "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	ErrorUnsupportedExecAffinity:      "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	ErrorUnsupportedDevsideSync:       "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
	ErrorContained:                    "CUDA_ERROR_CONTAINED",
	ErrorInvalidSource:                "CUDA_ERROR_INVALID_SOURCE",
	ErrorFileNotFound:                 "CUDA_ERROR_FILE_NOT_FOUND",
	ErrorSharedObjectSymbolNotFound:   "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	ErrorSharedObjectInitFailed:       "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	ErrorOperatingSystem:              "CUDA_ERROR_OPERATING_SYSTEM",
	ErrorInvalidHandle:                "CUDA_ERROR_INVALID_HANDLE",
	ErrorIllegalState:                 "CUDA_ERROR_ILLEGAL_STATE",
	ErrorLossyQuery:                   "CUDA_ERROR_LOSSY_QUERY",
	ErrorNotFound:                     "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:                     "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:               "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfResources:         "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchTimeout:                "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorLaunchIncompatibleTexturing:  "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	ErrorPeerAccessAlreadyEnabled:     "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	ErrorPeerAccessNotEnabled:         "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	ErrorPrimaryContextActive:         "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
	ErrorContextIsDestroyed:           "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	ErrorAssert:                       "CUDA_ERROR_ASSERT",
	ErrorTooManyPeers:                 "CUDA_ERROR_TOO_MANY_PEERS",
	ErrorHostMemoryAlreadyRegistered:  "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	ErrorHostMemoryNotRegistered:      "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	ErrorHardwareStackError:           "CUDA_ERROR_HARDWARE_STACK_ERROR",
	ErrorIllegalInstruction:           "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	ErrorMisalignedAddress:            "CUDA_ERROR_MISALIGNED_ADDRESS",
	ErrorInvalidAddressSpace:          "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	ErrorInvalidPC:                    "CUDA_ERROR_INVALID_PC",
	ErrorLaunchFailed:                 "CUDA_ERROR_LAUNCH_FAILED",
	ErrorCooperativeLaunchTooLarge:    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	ErrorTensorMemoryLeak:             "CUDA_ERROR_TENSOR_MEMORY_LEAK",
	ErrorNotPermitted:                 "CUDA_ERROR_NOT_PERMITTED",
	ErrorNotSupported:                 "CUDA_ERROR_NOT_SUPPORTED",
	ErrorSystemNotReady:               "CUDA_ERROR_SYSTEM_NOT_READY",
	ErrorSystemDriverMismatch:         "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrorCompatNotSupportedOnDevice:   "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	ErrorMPSConnectionFailed:          "CUDA_ERROR_MPS_CONNECTION_FAILED",
	ErrorMPSRPCFailure:                "CUDA_ERROR_MPS_RPC_FAILURE",
	ErrorMPSServerNotReady:            "CUDA_ERROR_MPS_SERVER_NOT_READY",
	ErrorMPSMaxClientsReached:         "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
	ErrorMPSMaxConnectionsReached:     "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
	ErrorMPSClientTerminated:          "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	ErrorCDPNotSupported:              "CUDA_ERROR_CDP_NOT_SUPPORTED",
	ErrorCDPVersionMismatch:           "CUDA_ERROR_CDP_VERSION_MISMATCH",
	ErrorStreamCaptureUnsupported:     "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	ErrorStreamCaptureInvalidated:     "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	ErrorStreamCaptureMerge:           "CUDA_ERROR_STREAM_CAPTURE_MERGE",
	ErrorStreamCaptureUnmatched:       "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	ErrorStreamCaptureUnjoined:        "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	ErrorStreamCaptureIsolation:       "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	ErrorStreamCaptureImplicit:        "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
	ErrorCapturedEvent:                "CUDA_ERROR_CAPTURED_EVENT",
	ErrorStreamCaptureWrongThread:     "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	ErrorTimeout:                      "CUDA_ERROR_TIMEOUT",
	ErrorGraphExecUpdateFailure:       "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
	ErrorExternalDevice:               "CUDA_ERROR_EXTERNAL_DEVICE",
	ErrorInvalidClusterSize:           "CUDA_ERROR_INVALID_CLUSTER_SIZE",
	ErrorFunctionNotLoaded:            "CUDA_ERROR_FUNCTION_NOT_LOADED",
	ErrorInvalidResourceType:          "CUDA_ERROR_INVALID_RESOURCE_TYPE",
	ErrorInvalidResourceConfiguration: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
	ErrorKeyRotation:                  "CUDA_ERROR_KEY_ROTATION",
	ErrorStreamDetached:               "CUDA_ERROR_STREAM_DETACHED",
	ErrorGraphRecaptureFailure:        "CUDA_ERROR_GRAPH_RECAPTURE_FAILURE",
	ErrorUnknown:                      "CUDA_ERROR_UNKNOWN",
}

// String returns the cuda.h name of r, e.g. "CUDA_ERROR_INVALID_PTX", or "CUDA_ERROR(n)"
// for a code this package does not know.
func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return "CUDA_ERROR(" + strconv.FormatUint(uint64(r), 10) + ")"
}

// Sentinel errors. Every *Error matches the sentinel of its code with errors.Is, so callers
// write errors.Is(err, cuda.ErrOutOfMemory) without looking at codes.
var (
	// ErrLibraryNotFound: libcuda could not be loaded (no NVIDIA driver on this machine),
	// or the library loaded is the toolkit's stub (CUDA_ERROR_STUB_LIBRARY).
	ErrLibraryNotFound = errors.New("CUDA driver library not found")
	// ErrNotSupported: CUDA_ERROR_NOT_SUPPORTED, or a symbol missing from the loaded
	// libcuda (an older driver): see *SymbolError.
	ErrNotSupported = errors.New("not supported")
	// ErrNoDevice: CUDA_ERROR_NO_DEVICE, the driver sees no GPU.
	ErrNoDevice = errors.New("no CUDA device")
	// ErrInvalidDevice: CUDA_ERROR_INVALID_DEVICE, e.g. an ordinal out of range.
	ErrInvalidDevice = errors.New("invalid device")
	// ErrInvalidPTX: the JIT rejected the PTX (CUDA_ERROR_INVALID_PTX or
	// CUDA_ERROR_UNSUPPORTED_PTX_VERSION); the *Error's Log holds the JIT's error log.
	ErrInvalidPTX = errors.New("invalid PTX")
	// ErrOutOfMemory: CUDA_ERROR_OUT_OF_MEMORY.
	ErrOutOfMemory = errors.New("out of memory")
	// ErrNotFound: CUDA_ERROR_NOT_FOUND, e.g. no kernel of that name in the module.
	ErrNotFound = errors.New("not found")
	// ErrInvalidValue: CUDA_ERROR_INVALID_VALUE, or an argument the binding refused.
	ErrInvalidValue = errors.New("invalid value")
	// ErrInvalidHandle: CUDA_ERROR_INVALID_HANDLE, or a stream, event, module or function
	// used after it was destroyed (or with another context).
	ErrInvalidHandle = errors.New("invalid handle")
	// ErrInvalidContext: CUDA_ERROR_INVALID_CONTEXT (no current context on the thread).
	ErrInvalidContext = errors.New("invalid context")
	// ErrNotInitialized: CUDA_ERROR_NOT_INITIALIZED or CUDA_ERROR_DEINITIALIZED.
	ErrNotInitialized = errors.New("CUDA not initialized")
	// ErrNotReady: CUDA_ERROR_NOT_READY (work still running).
	ErrNotReady = errors.New("not ready")
	// ErrHung: work that had not finished when its bounded wait ended (Event.Wait,
	// Stream.Wait): a kernel that does not end. The context cannot be used any more: a
	// call that waits for the device (a free, an unload, a synchronize, closing the
	// context) would wait for ever.
	ErrHung = errors.New("did not finish")
	// ErrLaunchFailed: a kernel failed on the device (an illegal address, instruction,
	// misalignment, a trap, a timeout, ...). These errors are sticky: the context cannot be
	// used any more.
	ErrLaunchFailed = errors.New("kernel launch failed")
	// ErrLaunchOutOfResources: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many registers or
	// threads, or parameters of the wrong size).
	ErrLaunchOutOfResources = errors.New("launch out of resources")
	// ErrDeviceUnavailable: CUDA_ERROR_DEVICE_UNAVAILABLE (exclusive or prohibited compute mode).
	ErrDeviceUnavailable = errors.New("device unavailable")
	// ErrContextClosed: a call on a Context (or on one of its objects) after Close.
	ErrContextClosed = errors.New("CUDA context closed")
)

// sentinel returns the sentinel error matching code r, or nil.
func (r Result) sentinel() error {
	switch r {
	case ErrorNotSupported:
		return ErrNotSupported
	case ErrorNoDevice:
		return ErrNoDevice
	case ErrorInvalidDevice:
		return ErrInvalidDevice
	case ErrorInvalidPTX, ErrorUnsupportedPTXVersion:
		return ErrInvalidPTX
	case ErrorOutOfMemory:
		return ErrOutOfMemory
	case ErrorNotFound:
		return ErrNotFound
	case ErrorInvalidValue:
		return ErrInvalidValue
	case ErrorInvalidHandle:
		return ErrInvalidHandle
	case ErrorInvalidContext, ErrorContextIsDestroyed:
		return ErrInvalidContext
	case ErrorNotInitialized, ErrorDeinitialized:
		return ErrNotInitialized
	case ErrorNotReady:
		return ErrNotReady
	case ErrorStubLibrary:
		return ErrLibraryNotFound
	case ErrorDeviceUnavailable:
		return ErrDeviceUnavailable
	case ErrorLaunchOutOfResources:
		return ErrLaunchOutOfResources
	case ErrorIllegalAddress, ErrorLaunchTimeout, ErrorAssert, ErrorHardwareStackError,
		ErrorIllegalInstruction, ErrorMisalignedAddress, ErrorInvalidAddressSpace,
		ErrorInvalidPC, ErrorLaunchFailed, ErrorTensorMemoryLeak, ErrorContained:
		return ErrLaunchFailed
	}
	return nil
}

// Error is a failed CUDA driver call: the status code, the C function that returned it,
// and, for a module load, the JIT's error log (or a note from this binding when it refused
// a call before reaching the driver).
type Error struct {
	Code Result
	Func string // e.g. "cuModuleLoadDataEx"
	Log  string // JIT error log, possibly several lines; empty for most calls
}

// errorString is cuGetErrorString of the most recently opened library (the driver's texts
// are static), or nil.
var errorString atomic.Pointer[func(Result) string]

// Error implements error, on one line:
// "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed): <log>",
// the log's lines joined with "; ".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Func != "" {
		b.WriteString(e.Func)
		b.WriteString(": ")
	}
	b.WriteString(e.Code.String())
	if f := errorString.Load(); f != nil {
		if d := (*f)(e.Code); d != "" {
			b.WriteString(" (" + d + ")")
		}
	}
	if log := oneLineLog(e.Log); log != "" {
		b.WriteString(": ")
		b.WriteString(log)
	}
	return b.String()
}

// Is reports whether target is the sentinel error of e's code.
func (e *Error) Is(target error) bool {
	s := e.Code.sentinel()
	return s != nil && s == target
}

// oneLineLog joins the non-empty lines of a JIT log with "; ".
func oneLineLog(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// check turns a status code into nil or an *Error naming fn.
func check(r Result, fn string) error {
	if r == Success {
		return nil
	}
	return &Error{Code: r, Func: fn}
}

// refuse is the error of a call the binding refused before reaching the driver.
func refuse(code Result, fn, why string) error {
	return &Error{Code: code, Func: fn, Log: why}
}

// SymbolError is a call to a function the loaded libcuda does not export (a driver older
// than the call). It matches ErrNotSupported.
type SymbolError struct {
	Symbol string // e.g. "cuDeviceGetUuid_v2"
}

func (e *SymbolError) Error() string {
	return e.Symbol + ": not supported by this driver (symbol missing from libcuda)"
}

// Unwrap returns ErrNotSupported.
func (e *SymbolError) Unwrap() error { return ErrNotSupported }

// missing is the error of a call to a symbol the library lacks.
func missing(sym string) error { return &SymbolError{Symbol: sym} }

// openError is Open's failure: one line, matching ErrLibraryNotFound.
type openError struct{ msg string }

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return ErrLibraryNotFound }
