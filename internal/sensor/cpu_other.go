//go:build !linux

package sensor

import "time"

func processCPU() time.Duration { return 0 }

func threadCPU() (time.Duration, bool) { return 0, false }
