// Package nvml is a small binding to the NVIDIA Management Library (libnvidia-ml) through
// purego: no cgo, so gpuwatt builds anywhere and loads the library at run time, never at
// start-up.
//
// A Lib is a struct of function fields filled by Open. nvmlInit_v2 and nvmlShutdown are
// required; every other symbol is looked up with Dlsym and left nil when the driver lacks
// it, in which case the call returns an error matching ErrNotSupported that names the
// symbol. Every NVML status becomes an *Error that matches the sentinel of its code with
// errors.Is. Nothing panics.
//
// Calls are safe from any goroutine (NVML itself is thread-safe) and, apart from strings
// and errors, do not allocate in the steady state: the out-parameters handed to C live in
// pooled scratch buffers.
//
// What must stay: this is the whole binding contract, and every binding (cuda, cufft,
// amdsmi) follows it: loaded lazily and never in init(), versioned names (nvmlInit_v2),
// optional symbols looked up with Dlsym and left nil, C status codes turned into Go errors
// at this layer with sentinels that work with errors.Is (errors.go), no panics. Only the
// bindings import purego.
package nvml
