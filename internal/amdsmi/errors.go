package amdsmi

import (
	"errors"
	"strconv"
	"sync/atomic"
)

// Status is an amdsmi_status_t code.
type Status uint32

// The amdsmi_status_t codes of amdsmi.h (ROCm 6.x and 7.x give them the same numbers).
const (
	StatusSuccess           Status = 0
	StatusInval             Status = 1
	StatusNotSupported      Status = 2
	StatusNotYetImplemented Status = 3
	StatusFailLoadModule    Status = 4
	StatusFailLoadSymbol    Status = 5
	StatusDRMError          Status = 6
	StatusAPIFailed         Status = 7
	StatusTimeout           Status = 8
	StatusRetry             Status = 9
	StatusNoPerm            Status = 10
	StatusInterrupt         Status = 11
	StatusIO                Status = 12
	StatusAddressFault      Status = 13
	StatusFileError         Status = 14
	StatusOutOfResources    Status = 15
	StatusInternalException Status = 16
	StatusInputOutOfBounds  Status = 17
	StatusInitError         Status = 18
	StatusRefcountOverflow  Status = 19
	StatusBusy              Status = 30
	StatusNotFound          Status = 31
	StatusNotInit           Status = 32
	StatusNoSlot            Status = 33
	StatusDriverNotLoaded   Status = 34
	StatusNoData            Status = 40
	StatusInsufficientSize  Status = 41
	StatusUnexpectedSize    Status = 42
	StatusUnexpectedData    Status = 43
	StatusMapError          Status = 0xFFFFFFFE
	StatusUnknownError      Status = 0xFFFFFFFF
)

var statusNames = map[Status]string{
	StatusSuccess:           "AMDSMI_STATUS_SUCCESS",
	StatusInval:             "AMDSMI_STATUS_INVAL",
	StatusNotSupported:      "AMDSMI_STATUS_NOT_SUPPORTED",
	StatusNotYetImplemented: "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
	StatusFailLoadModule:    "AMDSMI_STATUS_FAIL_LOAD_MODULE",
	StatusFailLoadSymbol:    "AMDSMI_STATUS_FAIL_LOAD_SYMBOL",
	StatusDRMError:          "AMDSMI_STATUS_DRM_ERROR",
	StatusAPIFailed:         "AMDSMI_STATUS_API_FAILED",
	StatusTimeout:           "AMDSMI_STATUS_TIMEOUT",
	StatusRetry:             "AMDSMI_STATUS_RETRY",
	StatusNoPerm:            "AMDSMI_STATUS_NO_PERM",
	StatusInterrupt:         "AMDSMI_STATUS_INTERRUPT",
	StatusIO:                "AMDSMI_STATUS_IO",
	StatusAddressFault:      "AMDSMI_STATUS_ADDRESS_FAULT",
	StatusFileError:         "AMDSMI_STATUS_FILE_ERROR",
	StatusOutOfResources:    "AMDSMI_STATUS_OUT_OF_RESOURCES",
	StatusInternalException: "AMDSMI_STATUS_INTERNAL_EXCEPTION",
	StatusInputOutOfBounds:  "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	StatusInitError:         "AMDSMI_STATUS_INIT_ERROR",
	StatusRefcountOverflow:  "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
	StatusBusy:              "AMDSMI_STATUS_BUSY",
	StatusNotFound:          "AMDSMI_STATUS_NOT_FOUND",
	StatusNotInit:           "AMDSMI_STATUS_NOT_INIT",
	StatusNoSlot:            "AMDSMI_STATUS_NO_SLOT",
	StatusDriverNotLoaded:   "AMDSMI_STATUS_DRIVER_NOT_LOADED",
	StatusNoData:            "AMDSMI_STATUS_NO_DATA",
	StatusInsufficientSize:  "AMDSMI_STATUS_INSUFFICIENT_SIZE",
	StatusUnexpectedSize:    "AMDSMI_STATUS_UNEXPECTED_SIZE",
	StatusUnexpectedData:    "AMDSMI_STATUS_UNEXPECTED_DATA",
	StatusMapError:          "AMDSMI_STATUS_MAP_ERROR",
	StatusUnknownError:      "AMDSMI_STATUS_UNKNOWN_ERROR",
}

// String returns the amdsmi.h name of s, e.g. "AMDSMI_STATUS_NOT_SUPPORTED".
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "AMDSMI_STATUS(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Sentinel errors: every *Error matches the sentinel of its code with errors.Is.
var (
	// ErrLibraryNotFound: libamd_smi could not be loaded (no ROCm on this machine).
	ErrLibraryNotFound = errors.New("AMD SMI library not found")
	// ErrNotSupported: the board or this library does not offer the call
	// (AMDSMI_STATUS_NOT_SUPPORTED, NOT_YET_IMPLEMENTED), a symbol missing from the loaded
	// library, or a field the library marks unsupported (0xFFFF or UINT32_MAX).
	ErrNotSupported = errors.New("not supported")
	// ErrUnsupportedVersion: the loaded library's version is not one whose struct layouts
	// this binding knows; nothing is read from it rather than misread.
	ErrUnsupportedVersion = errors.New("unsupported AMD SMI library version")
	ErrNoPermission       = errors.New("insufficient permissions")
	ErrNotFound           = errors.New("not found")
	ErrNotInit            = errors.New("AMD SMI not initialized")
	ErrNoData             = errors.New("no data")
	ErrDriverNotLoaded    = errors.New("amdgpu driver not loaded")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrTimeout            = errors.New("timeout")
)

func (s Status) sentinel() error {
	switch s {
	case StatusNotSupported, StatusNotYetImplemented, StatusFailLoadSymbol:
		return ErrNotSupported
	case StatusNoPerm:
		return ErrNoPermission
	case StatusNotFound:
		return ErrNotFound
	case StatusNotInit:
		return ErrNotInit
	case StatusNoData:
		return ErrNoData
	case StatusDriverNotLoaded, StatusFailLoadModule:
		return ErrDriverNotLoaded
	case StatusInval, StatusInputOutOfBounds:
		return ErrInvalidArgument
	case StatusTimeout:
		return ErrTimeout
	}
	return nil
}

// Error is a failed AMD SMI call: the status code and the C function that returned it.
type Error struct {
	Code Status
	Func string // e.g. "amdsmi_get_power_info"
	// Missing is true when Func is absent from the loaded library.
	Missing bool
}

// describe is amdsmi_status_code_to_string of the most recently opened library, or nil.
var describe atomic.Pointer[func(Status) string]

// Error implements error: "amdsmi_get_energy_count: AMDSMI_STATUS_NOT_SUPPORTED (...)".
func (e *Error) Error() string {
	s := e.Code.String()
	if e.Func != "" {
		s = e.Func + ": " + s
	}
	if e.Missing {
		return s + " (symbol missing from the loaded libamd_smi: not supported by this ROCm)"
	}
	if f := describe.Load(); f != nil {
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

func check(r Status, fn string) error {
	if r == StatusSuccess {
		return nil
	}
	return &Error{Code: r, Func: fn}
}

func missing(fn string) error {
	return &Error{Code: StatusNotSupported, Func: fn, Missing: true}
}

// openError is Open's failure: one line, matching ErrLibraryNotFound.
type openError struct{ msg string }

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return ErrLibraryNotFound }

// versionError is a library whose version the binding refuses.
type versionError struct{ msg string }

func (e *versionError) Error() string { return e.msg }
func (e *versionError) Unwrap() error { return ErrUnsupportedVersion }
