package dl

import (
	"errors"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	// Nothing loads: the first path's failure, on one line.
	err := Open([]string{"/nonexistent/libnvidia-ml.so.1", "/nonexistent/libnvidia-ml.so"}, func(uintptr, string) error { return nil })
	var le *LoadError
	if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), NoDriver+"cannot load /nonexistent/libnvidia-ml.so.1: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
	// A library that loads but does not bind is passed over for the next one.
	var tried []string
	refuse := errors.New("not the library we want")
	err = Open([]string{"libc.so.6", "libm.so.6"}, func(h uintptr, p string) error {
		tried = append(tried, p)
		if p == "libc.so.6" {
			return refuse
		}
		return nil
	})
	if len(tried) == 0 {
		t.Skip("libc.so.6 does not load here")
	}
	if err != nil || len(tried) != 2 || tried[1] != "libm.so.6" {
		t.Fatalf("err %v after %v", err, tried)
	}
	if got := OneLine(" a\n\tb  c \n"); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}

// TestOpenAlwaysGivesAReason: dlerror's message is per OS thread, and purego reads it in a
// second call; a goroutine moved to another thread in between got none, and the
// missing-driver message read "cannot load libnvidia-ml.so.1: ." (issue 20). Many
// goroutines at once move threads often enough to show it.
func TestOpenAlwaysGivesAReason(t *testing.T) {
	errs := make(chan error, 400)
	for range cap(errs) {
		go func() {
			errs <- Open([]string{"/nonexistent/libnvidia-ml.so.1"}, func(uintptr, string) error { return nil })
		}()
	}
	for range cap(errs) {
		err := <-errs
		if err == nil || strings.HasSuffix(err.Error(), ": ") || !strings.Contains(err.Error(), "No such file") {
			t.Fatalf("err = %v, want the reason dlopen failed", err)
		}
	}
	if err := Open([]string{""}, func(uintptr, string) error { return nil }); err == nil {
		t.Error(`Open("") loaded something (dlopen of "" is the program itself)`)
	}
}
