package marks

import (
	"syscall"
	"unsafe"
)

// monotonic reads the host's CLOCK_MONOTONIC in seconds: the clock the helpers stamp
// markers with (Python's time.monotonic, C's clock_gettime(CLOCK_MONOTONIC)) and the one
// Go's monotonic readings (and so a recording's t_s axis) come from on Linux.
func monotonic() (float64, bool) {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9, true
}
