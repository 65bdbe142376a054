// Package cuffttest builds a fake libcufft (testdata/fakecufft.c) for tests of the cufft
// binding and of the loadlevel cuFFT variant. With the fake libcuda of cudatest (device
// memory is host memory) its cufftExecC2C really transforms, by a direct DFT. It needs gcc;
// without it Build skips the test.
package cuffttest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
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
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		why := "no C compiler: gcc is not on PATH, so the fake libcufft these tests load cannot be built (apt-get install gcc; .ci/run does)"
		if os.Getenv("GPUWATT_REQUIRE_CC") != "" {
			t.Fatal(why + "; GPUWATT_REQUIRE_CC is set, so this is a failure")
		}
		t.Skip(why)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fakecufft.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libcufft.so.12")
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-pthread", "-O2", "-Wall", "-o", lib, src, "-lm")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake libcufft: %v\n%s", err, out)
	}
	return lib
}

// Live returns the plans the fake at path holds (the library cufft.Open(path) loaded).
func Live(t testing.TB, path string) int {
	t.Helper()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatalf("opening the fake libcufft: %v", err)
	}
	var live func() int32
	p, err := purego.Dlsym(h, "fakeCufftLive")
	if err != nil {
		t.Fatal(err)
	}
	purego.RegisterFunc(&live, p)
	return int(live())
}
