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

// SlowOn reports whether the slow tests run (SlowEnv is set).
func SlowOn() bool { return os.Getenv(SlowEnv) != "" }

// Presets returns all of presets where the slow tests run, else only those also in quick:
// the README's test command checks a method on a few representative boards, CI on every
// preset.
func Presets(t testing.TB, presets []string, quick ...string) []string {
	t.Helper()
	if SlowOn() {
		return presets
	}
	var out []string
	for _, p := range presets {
		for _, q := range quick {
			if p == q {
				out = append(out, p)
			}
		}
	}
	t.Logf("%d of %d presets (%v); the others run with %s=1 (.ci/run sets it)", len(out), len(presets), out, SlowEnv)
	return out
}
