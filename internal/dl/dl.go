// Package dl loads the NVIDIA driver's shared libraries without cgo (purego), for the
// nvml and cuda bindings: the first of several names that loads and binds wins, and a
// failure reads as one line that says no driver was found.
package dl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// NoDriver starts the message of a library that could not be loaded.
const NoDriver = "no NVIDIA driver found: "

// Sym returns the address of name in the library loaded as handle, or 0 where the
// library lacks it (or handle is 0): the bindings look their optional symbols up with it.
func Sym(handle uintptr, name string) uintptr {
	if handle == 0 {
		return 0
	}
	p, err := purego.Dlsym(handle, name)
	if err != nil {
		return 0
	}
	return p
}

// Bind looks name up in handle and wraps its address with mk; the zero F (nil) where the
// library lacks it.
func Bind[F any](handle uintptr, name string, mk func(uintptr) F) F {
	if p := Sym(handle, name); p != 0 {
		return mk(p)
	}
	var zero F
	return zero
}

// LoadError is a library that could not be loaded at all (as opposed to one that loaded
// but lacks what the binding needs).
// Why is the loader's reason ("cannot load PATH: WHY"); the error reads NoDriver + Why,
// and a binding of another vendor's library puts its own words before Why.
type LoadError struct{ Why string }

func (e *LoadError) Error() string { return NoDriver + e.Why }

// Open dlopens each of paths in turn and calls bind with the handle; the first path that
// loads and binds wins. A path that loads but does not bind is closed again. When none
// works, the first path's error is returned: a *LoadError reading "no NVIDIA driver found:
// cannot load PATH: WHY" on one line, or bind's error.
func Open(paths []string, bind func(handle uintptr, path string) error) error {
	var first error
	for _, p := range paths {
		err := open(p, bind)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func open(path string, bind func(uintptr, string) error) error {
	if path == "" {
		// dlopen("") is the program itself: it would "load", and bind would fail oddly.
		return &LoadError{Why: "cannot load a library with an empty name"}
	}
	h, err := dlopen(path)
	if err != nil {
		why := OneLine(err.Error())
		why = strings.TrimPrefix(why, path+": ") // dlerror repeats the path
		if why == "" {
			why = "dlopen failed and gave no reason"
		}
		return &LoadError{Why: "cannot load " + path + ": " + why}
	}
	if err := bind(h, path); err != nil {
		_ = purego.Dlclose(h)
		return err
	}
	return nil
}

// dlopen loads path on a locked OS thread: dlerror's message belongs to the thread that
// called dlopen, and purego reads it in a second call, which a goroutine moved to another
// thread in between made on the wrong one (the reason came back empty).
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// OneLine collapses a message's white space, newlines included, to single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Optional names a library that gpuwatt uses when it is there (cuFFT, cuBLAS): What is what
// users call it, Stem its file's name without the version, NotFound the error that every
// failure to load or bind it wraps.
type Optional struct {
	What, Stem string
	NotFound   error
}

// OpenOptional loads the first of paths that loads and has every function of need (symbol →
// pointer to a func variable, as purego.RegisterFunc takes), and binds those of want that it
// has. It returns the path that loaded. A failure wraps lib.NotFound and reads, on one line,
// "WHAT not available: cannot load STEM (tried ...): WHY" or "WHAT not available: PATH is not
// STEM (it has no SYMBOL)".
func OpenOptional(lib Optional, paths []string, need, want map[string]any) (string, error) {
	var loaded string
	err := Open(paths, func(h uintptr, path string) error {
		sym := func(name string) uintptr { return Sym(h, name) }
		for name := range need {
			if sym(name) == 0 {
				return &notAvailable{msg: fmt.Sprintf("%s not available: %s is not %s (it has no %s)", lib.What, path, lib.Stem, name), err: lib.NotFound}
			}
		}
		for name, fp := range need {
			purego.RegisterFunc(fp, sym(name))
		}
		for name, fp := range want {
			if p := sym(name); p != 0 {
				purego.RegisterFunc(fp, p)
			}
		}
		loaded = path
		return nil
	})
	var le *LoadError
	if errors.As(err, &le) {
		why := le.Why
		if _, after, ok := strings.Cut(why, ": "); ok {
			why = after
		}
		return "", &notAvailable{msg: fmt.Sprintf("%s not available: cannot load %s (tried %s): %s", lib.What, lib.Stem, strings.Join(paths, ", "), why), err: lib.NotFound}
	}
	return loaded, err
}

type notAvailable struct {
	msg string
	err error
}

func (e *notAvailable) Error() string { return e.msg }
func (e *notAvailable) Unwrap() error { return e.err }
