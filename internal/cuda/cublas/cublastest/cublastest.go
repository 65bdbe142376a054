// Package cublastest builds a fake libcublas (testdata/fakecublas.c) for tests of the
// cublas binding and of the loadlevel GEMM workload. With the fake libcuda of cudatest
// (device memory is host memory) its cublasSgemm_v2 really multiplies. It needs gcc;
// without it Build skips the test.
package cublastest

import (
	_ "embed"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/fakelib"
)

//go:embed testdata/fakecublas.c
var source []byte

// Version is what the fake's cublasGetVersion_v2 returns.
const Version = 120804

// Build compiles the fake into a fresh temporary directory and returns the library's path
// (named libcublas.so.12). It skips t, saying why, when gcc is not on PATH (and fails it
// when GPUWATT_REQUIRE_CC is set, as .ci/run does).
func Build(t testing.TB) string {
	t.Helper()
	return lib.Build(t)
}

var lib = fakelib.Lib{What: "libcublas", File: "libcublas.so.12", Source: source, CFlags: []string{"-pthread", "-O2"}}

// Live returns the handles the fake at path holds.
func Live(t testing.TB, path string) int {
	t.Helper()
	var live func() int32
	lib.Bind(t, path, map[string]any{"fakeCublasLive": &live})
	return int(live())
}

// Gemms returns the Sgemm calls the fake at path has taken.
func Gemms(t testing.TB, path string) int64 {
	t.Helper()
	var g func() int64
	lib.Bind(t, path, map[string]any{"fakeCublasGemms": &g})
	return g()
}
