// Package dl loads the NVIDIA driver's shared libraries without cgo (purego), for the
// nvml and cuda bindings: the first of several names that loads and binds wins, and a
// failure reads as one line that says no driver was found.
package dl

import (
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// NoDriver starts the message of a library that could not be loaded.
const NoDriver = "no NVIDIA driver found: "

// LoadError is a library that could not be loaded at all (as opposed to one that loaded
// but lacks what the binding needs).
type LoadError struct{ Msg string }

func (e *LoadError) Error() string { return e.Msg }

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
		return &LoadError{Msg: NoDriver + "cannot load a library with an empty name"}
	}
	h, err := dlopen(path)
	if err != nil {
		why := OneLine(err.Error())
		why = strings.TrimPrefix(why, path+": ") // dlerror repeats the path
		if why == "" {
			why = "dlopen failed and gave no reason"
		}
		return &LoadError{Msg: NoDriver + "cannot load " + path + ": " + why}
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
