// Package fakelib builds the fake C libraries of the binding tests (cudatest, nvmltest,
// cuffttest) and binds their control functions: one builder, so that the three say the
// same thing where there is no C compiler.
package fakelib

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
)

// Lib is one fake library: its C source and how it is built.
type Lib struct {
	What   string   // "libcuda": in messages
	File   string   // the library's file name, "libcuda.so.1"
	Source []byte   // the C source
	CFlags []string // gcc's flags before -o ("-pthread", "-O1"); -shared -fPIC -Wall are always given
	LDLibs []string // after the source ("-lm")
}

// Build compiles l into a fresh temporary directory and returns the library's path. Each
// call gives a new library with its own state. defines are passed to gcc as -D flags. It
// skips t, saying why, when gcc is not on PATH (and fails it when GPUWATT_REQUIRE_CC is
// set, as .ci/run does).
//
// gcc runs once per library and defines in a test process (0.4-0.6 s of CPU each; the
// suite built the five fakes 67 times): later calls copy the built bytes to a new file. A
// copy is a new inode, so the dynamic loader maps it afresh, with its own state, as a
// library built anew would be (a hard link would not be: dlopen would share the first).
func (l Lib) Build(t testing.TB, defines ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		why := "no C compiler: gcc is not on PATH, so the fake " + l.What + " these tests load cannot be built (apt-get install gcc; .ci/run does)"
		if os.Getenv("GPUWATT_REQUIRE_CC") != "" {
			t.Fatal(why + "; GPUWATT_REQUIRE_CC is set, so this is a failure")
		}
		t.Skip(why)
	}
	b := l.built(t, gcc, defines)
	lib := filepath.Join(t.TempDir(), l.File)
	if err := os.WriteFile(lib, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return lib
}

// builds holds each library's bytes once built, by What, File and defines.
var builds struct {
	sync.Mutex
	lib map[string][]byte
}

// built returns the bytes of l built with defines, compiling them on the first call.
func (l Lib) built(t testing.TB, gcc string, defines []string) []byte {
	t.Helper()
	key := l.What + "\x00" + l.File + "\x00" + strings.Join(defines, "\x00")
	builds.Lock()
	defer builds.Unlock()
	if b, ok := builds.lib[key]; ok {
		return b
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, l.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, l.File)
	args := append([]string{"-shared", "-fPIC", "-Wall"}, l.CFlags...)
	args = append(args, "-o", lib)
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	args = append(append(args, src), l.LDLibs...)
	cmd := exec.Command(gcc, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake %s: %v\n%s", l.What, err, out)
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if builds.lib == nil {
		builds.lib = map[string][]byte{}
	}
	builds.lib[key] = b
	return b
}

// Bind opens the fake at path (the library the binding under test loads) and registers
// each of its functions named in fns onto the Go function pointer given for it.
func (l Lib) Bind(t testing.TB, path string, fns map[string]any) {
	t.Helper()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatalf("opening the fake %s: %v", l.What, err)
	}
	for name, fp := range fns {
		p, err := purego.Dlsym(h, name)
		if err != nil {
			t.Fatalf("fake %s: %v", l.What, err)
		}
		purego.RegisterFunc(fp, p)
	}
}
