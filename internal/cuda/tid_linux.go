package cuda

import "syscall"

// gettid returns the calling OS thread's id.
func gettid() int64 { return int64(syscall.Gettid()) }
