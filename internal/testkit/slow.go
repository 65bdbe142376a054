// Package testkit holds what tests share across packages.
package testkit

import (
	"os"
	"testing"
)

// SlowEnv is the variable that runs the slow tests; .ci/run sets it.
const SlowEnv = "GPUWATT_SLOW_TESTS"

// Slow skips a test that takes many seconds (a calibration over dozens of randomised
// twins, a sweep over every preset, a C library built several times) unless SlowEnv is set,
// so that the README's test command stays short on a laptop; CI runs them all.
func Slow(t testing.TB) {
	t.Helper()
	if os.Getenv(SlowEnv) == "" {
		t.Skip("slow: runs with " + SlowEnv + "=1 (.ci/run sets it)")
	}
}
