// Package cuffttest builds a fake libcufft (testdata/fakecufft.c) for tests of the cufft
// binding and of the loadlevel cuFFT variant. With the fake libcuda of cudatest (device
// memory is host memory) its cufftExecC2C really transforms, by a direct DFT. It needs gcc;
// without it Build skips the test.
package cuffttest

import (
	_ "embed"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit/fakelib"
)

//go:embed testdata/fakecufft.c
var source []byte

// Version is what the fake's cufftGetVersion returns.
const Version = 11203

// Build compiles the fake into a fresh temporary directory and returns the library's path
// (named libcufft.so.12). It skips t, saying why, when gcc is not on PATH
// (and fails it when GPUWATT_REQUIRE_CC is set, as .ci/run does).
func Build(t testing.TB) string {
	t.Helper()
	return lib.Build(t)
}

var lib = fakelib.Lib{What: "libcufft", File: "libcufft.so.12", Source: source, CFlags: []string{"-pthread", "-O2"}, LDLibs: []string{"-lm"}}

// Live returns the plans the fake at path holds (the library cufft.Open(path) loaded).
func Live(t testing.TB, path string) int {
	t.Helper()
	var live func() int32
	lib.Bind(t, path, map[string]any{"fakeCufftLive": &live})
	return int(live())
}
