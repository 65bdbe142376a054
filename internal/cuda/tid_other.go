//go:build !linux

package cuda

// gettid cannot tell threads apart here (no CUDA driver runs on these systems anyway): it
// never matches a context thread, so a Context method called inside Do would wait for
// itself. Do not nest calls on such systems.
func gettid() int64 { return -2 }
