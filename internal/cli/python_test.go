package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// requirePython makes a missing python3, venv or setuptools fail TestPythonPackage
// instead of skipping it (.ci/run sets it where it could install them).
const requirePython = "GPUWATT_REQUIRE_PYTHON"

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(requirePython) != "" {
		t.Fatalf(format+" (and "+requirePython+" is set)", args...)
	}
	t.Skipf(format, args...)
}

// TestPythonPackage installs python/ with pip into a fresh virtualenv (offline: the
// system's setuptools, --no-build-isolation) and runs python/tests/test_monitor.py in it
// against gpuwatt on the sim device: windows with their intervals, close()'s figures equal
// to `gpuwatt energy --region` on the saved recording, the recorder gone with its parent,
// simulated figures refused where a GPU was asked for, markers as before. gpuwatt is this
// test binary (TestMain runs Main for it), behind a one-line wrapper named GPUWATT_BIN.
func TestPythonPackage(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // a virtualenv and a pip install: CI runs it
	if testing.Short() {
		t.Skip("-short: the Python package's test takes ~20 s")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the Python package's recorder watch is tested on Linux")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		skipOrFail(t, "python3 is not on PATH: the Python package is not tested here")
	}
	root, err := filepath.Abs(filepath.Join("..", "..")) // go test runs in the package's directory
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(timeout time.Duration, env []string, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	// An offline build needs setuptools and its bdist_wheel (setuptools 70.1 and newer, else
	// the wheel package). A python3 on PATH without them (a pyenv build) gives way to
	// Debian's /usr/bin/python3.
	const probe = "import setuptools\ntry:\n import wheel\nexcept ImportError:\n from setuptools.command import bdist_wheel"
	venv := filepath.Join(dir, "venv")
	vpy := filepath.Join(venv, "bin", "python")
	var why []string
	ready := false
	for _, cand := range pythons(py) {
		// The interpreter's own setuptools and wheel, through --system-site-packages: a
		// venv's bundled setuptools (3.11) builds no wheel alone, 3.12's venv has none.
		if out, err := run(time.Minute, nil, cand, "-c", probe); err != nil {
			why = append(why, fmt.Sprintf("%s: no setuptools with bdist_wheel (Debian: apt-get install python3-setuptools python3-wheel): %s", cand, lastLine(out)))
			continue
		}
		os.RemoveAll(venv)
		if out, err := run(2*time.Minute, nil, cand, "-m", "venv", "--system-site-packages", venv); err != nil {
			why = append(why, fmt.Sprintf("%s -m venv: %v (Debian: apt-get install python3-venv) %s", cand, err, lastLine(out)))
			continue
		}
		if out, err := run(time.Minute, nil, vpy, "-c", probe); err != nil {
			why = append(why, fmt.Sprintf("%s's venv: no setuptools with bdist_wheel: %s", cand, lastLine(out)))
			continue
		}
		ready = true
		break
	}
	if !ready {
		skipOrFail(t, "no virtualenv to install the package offline into:\n%s", strings.Join(why, "\n"))
	}
	// pip builds in the source tree (build/, *.egg-info): a copy, so the checkout is not written.
	src := filepath.Join(dir, "src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(root, "python"))); err != nil {
		t.Fatal(err)
	}
	if out, err := run(3*time.Minute, []string{"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"}, vpy, "-m", "pip", "install", "--no-build-isolation", "--no-deps", src); err != nil {
		t.Fatalf("pip install --no-build-isolation %s: %v\n%s", src, err, out)
	}
	wrapper := filepath.Join(dir, "gpuwatt")
	script := "#!/bin/sh\n" + recorderEnv + "=1 exec " + shellQuote(os.Args[0]) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not from the source tree: the installed package.
	test := filepath.Join(dir, "test_monitor.py")
	b, err := os.ReadFile(filepath.Join(root, "python", "tests", "test_monitor.py"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(test, b, 0o644)
	out, err := run(5*time.Minute, []string{"GPUWATT_BIN=" + wrapper, "GPUWATT_EXAMPLES=" + filepath.Join(root, "python", "examples"), "PYTHONDONTWRITEBYTECODE=1"}, vpy, "-I", test)
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python/tests/test_monitor.py in the virtualenv: %v", err)
	}
	if where, err := run(time.Minute, nil, vpy, "-I", "-c", "import gpuwatt; print(gpuwatt.__file__)"); err != nil || !bytes.Contains([]byte(where), []byte(venv)) {
		t.Errorf("gpuwatt was not imported from the virtualenv: %s %v", where, err)
	}
}

// pythons are the interpreters to try: python3 on PATH, then Debian's.
func pythons(onPath string) []string {
	out := []string{onPath}
	if deb := "/usr/bin/python3"; onPath != deb {
		if _, err := os.Stat(deb); err == nil {
			out = append(out, deb)
		}
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}
