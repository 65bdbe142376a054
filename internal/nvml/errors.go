package nvml

import (
	"errors"
	"strconv"
	"sync/atomic"
)

// Return is an nvmlReturn_t status code.
type Return uint32

// The nvmlReturn_t codes of nvml.h.
const (
	Success                      Return = 0
	ErrorUninitialized           Return = 1
	ErrorInvalidArgument         Return = 2
	ErrorNotSupported            Return = 3
	ErrorNoPermission            Return = 4
	ErrorAlreadyInitialized      Return = 5
	ErrorNotFound                Return = 6
	ErrorInsufficientSize        Return = 7
	ErrorInsufficientPower       Return = 8
	ErrorDriverNotLoaded         Return = 9
	ErrorTimeout                 Return = 10
	ErrorIRQIssue                Return = 11
	ErrorLibraryNotFound         Return = 12
	ErrorFunctionNotFound        Return = 13
	ErrorCorruptedInforom        Return = 14
	ErrorGPUIsLost               Return = 15
	ErrorResetRequired           Return = 16
	ErrorOperatingSystem         Return = 17
	ErrorLibRMVersionMismatch    Return = 18
	ErrorInUse                   Return = 19
	ErrorMemory                  Return = 20
	ErrorNoData                  Return = 21
	ErrorVGPUECCNotSupported     Return = 22
	ErrorInsufficientResources   Return = 23
	ErrorFreqNotSupported        Return = 24
	ErrorArgumentVersionMismatch Return = 25
	ErrorDeprecated              Return = 26
	ErrorNotReady                Return = 27
	ErrorGPUNotFound             Return = 28
	ErrorInvalidState            Return = 29
	ErrorResetTypeNotSupported   Return = 30
	ErrorUnknown                 Return = 999
)

var returnNames = [...]string{
	Success:                      "NVML_SUCCESS",
	ErrorUninitialized:           "NVML_ERROR_UNINITIALIZED",
	ErrorInvalidArgument:         "NVML_ERROR_INVALID_ARGUMENT",
	ErrorNotSupported:            "NVML_ERROR_NOT_SUPPORTED",
	ErrorNoPermission:            "NVML_ERROR_NO_PERMISSION",
	ErrorAlreadyInitialized:      "NVML_ERROR_ALREADY_INITIALIZED",
	ErrorNotFound:                "NVML_ERROR_NOT_FOUND",
	ErrorInsufficientSize:        "NVML_ERROR_INSUFFICIENT_SIZE",
	ErrorInsufficientPower:       "NVML_ERROR_INSUFFICIENT_POWER",
	ErrorDriverNotLoaded:         "NVML_ERROR_DRIVER_NOT_LOADED",
	ErrorTimeout:                 "NVML_ERROR_TIMEOUT",
	ErrorIRQIssue:                "NVML_ERROR_IRQ_ISSUE",
	ErrorLibraryNotFound:         "NVML_ERROR_LIBRARY_NOT_FOUND",
	ErrorFunctionNotFound:        "NVML_ERROR_FUNCTION_NOT_FOUND",
	ErrorCorruptedInforom:        "NVML_ERROR_CORRUPTED_INFOROM",
	ErrorGPUIsLost:               "NVML_ERROR_GPU_IS_LOST",
	ErrorResetRequired:           "NVML_ERROR_RESET_REQUIRED",
	ErrorOperatingSystem:         "NVML_ERROR_OPERATING_SYSTEM",
	ErrorLibRMVersionMismatch:    "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
	ErrorInUse:                   "NVML_ERROR_IN_USE",
	ErrorMemory:                  "NVML_ERROR_MEMORY",
	ErrorNoData:                  "NVML_ERROR_NO_DATA",
	ErrorVGPUECCNotSupported:     "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
	ErrorInsufficientResources:   "NVML_ERROR_INSUFFICIENT_RESOURCES",
	ErrorFreqNotSupported:        "NVML_ERROR_FREQ_NOT_SUPPORTED",
	ErrorArgumentVersionMismatch: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
	ErrorDeprecated:              "NVML_ERROR_DEPRECATED",
	ErrorNotReady:                "NVML_ERROR_NOT_READY",
	ErrorGPUNotFound:             "NVML_ERROR_GPU_NOT_FOUND",
	ErrorInvalidState:            "NVML_ERROR_INVALID_STATE",
	ErrorResetTypeNotSupported:   "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
}

// String returns the nvml.h name of r, e.g. "NVML_ERROR_NOT_SUPPORTED".
func (r Return) String() string {
	if r == ErrorUnknown {
		return "NVML_ERROR_UNKNOWN"
	}
	if int(r) < len(returnNames) {
		return returnNames[r]
	}
	return "NVML_ERROR(" + strconv.FormatUint(uint64(r), 10) + ")"
}

// Sentinel errors. Every *Error matches the sentinel of its code with errors.Is, so callers
// write errors.Is(err, nvml.ErrNotSupported) without looking at codes.
var (
	// ErrLibraryNotFound: libnvidia-ml could not be loaded (no NVIDIA driver on this
	// machine), or NVML reported NVML_ERROR_LIBRARY_NOT_FOUND.
	ErrLibraryNotFound = errors.New("NVIDIA management library not found")
	// ErrNotSupported: the device or this driver does not offer the call; also returned for
	// symbols missing from the loaded library (NVML_ERROR_FUNCTION_NOT_FOUND).
	ErrNotSupported     = errors.New("not supported")
	ErrNoPermission     = errors.New("insufficient permissions")
	ErrNotFound         = errors.New("not found")
	ErrUninitialized    = errors.New("NVML not initialized")
	ErrNoData           = errors.New("no data")
	ErrGPULost          = errors.New("GPU is lost")
	ErrInsufficientSize = errors.New("buffer too small")
	ErrDriverNotLoaded  = errors.New("NVIDIA driver not loaded")
	ErrInvalidArgument  = errors.New("invalid argument")
	ErrTimeout          = errors.New("timeout")
)

// sentinel returns the sentinel error matching code r, or nil.
func (r Return) sentinel() error {
	switch r {
	case ErrorNotSupported, ErrorFunctionNotFound:
		return ErrNotSupported
	case ErrorNoPermission:
		return ErrNoPermission
	case ErrorNotFound:
		return ErrNotFound
	case ErrorUninitialized:
		return ErrUninitialized
	case ErrorNoData:
		return ErrNoData
	case ErrorGPUIsLost:
		return ErrGPULost
	case ErrorInsufficientSize:
		return ErrInsufficientSize
	case ErrorDriverNotLoaded:
		return ErrDriverNotLoaded
	case ErrorLibraryNotFound:
		return ErrLibraryNotFound
	case ErrorInvalidArgument:
		return ErrInvalidArgument
	case ErrorTimeout:
		return ErrTimeout
	}
	return nil
}

// Error is a failed NVML call: the status code and the C function that returned it.
type Error struct {
	Code Return
	Func string // e.g. "nvmlDeviceGetPowerUsage"
}

// errorString is nvmlErrorString of the most recently opened library (NVML's texts are
// static and the same in every library), or nil.
var errorString atomic.Pointer[func(Return) string]

// Error implements error: "nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED (Not Supported)".
func (e *Error) Error() string {
	s := e.Code.String()
	if e.Func != "" {
		s = e.Func + ": " + s
	}
	if e.Code == ErrorFunctionNotFound {
		return s + " (symbol missing from the loaded libnvidia-ml: not supported by this driver)"
	}
	if f := errorString.Load(); f != nil {
		if d := (*f)(e.Code); d != "" {
			s += " (" + d + ")"
		}
	}
	return s
}

// Is reports whether target is the sentinel error of e's code.
func (e *Error) Is(target error) bool {
	s := e.Code.sentinel()
	return s != nil && s == target
}

// check turns a status code into nil or an *Error naming fn.
func check(r Return, fn string) error {
	if r == Success {
		return nil
	}
	return &Error{Code: r, Func: fn}
}

// missing is the error of a call to a symbol the library lacks.
func missing(fn string) error {
	return &Error{Code: ErrorFunctionNotFound, Func: fn}
}

// openError is Open's failure: one line, matching ErrLibraryNotFound.
type openError struct{ msg string }

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return ErrLibraryNotFound }
