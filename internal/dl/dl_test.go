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
