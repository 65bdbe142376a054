package dl

import (
	"errors"
	"strings"
	"testing"
)

// OpenOptional: a library that does not load, and one that loads but lacks a function, both
// wrap NotFound and say so on one line; one that has what is needed binds it, and a wanted
// function it lacks is left nil.
func TestOpenOptional(t *testing.T) {
	notFound := errors.New("libfoo not found")
	lib := Optional{What: "Foo", Stem: "libfoo", NotFound: notFound}
	_, err := OpenOptional(lib, []string{"/nonexistent/libfoo.so.1"}, nil, nil)
	if !errors.Is(err, notFound) || !strings.HasPrefix(err.Error(), "Foo not available: cannot load libfoo (tried /nonexistent/libfoo.so.1): ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing file: %v", err)
	}
	var strlen func(s string) int
	_, err = OpenOptional(lib, []string{"libc.so.6"}, map[string]any{"strlen": &strlen, "foo_no_such_function": new(func())}, nil)
	if !errors.Is(err, notFound) || err.Error() != "Foo not available: libc.so.6 is not libfoo (it has no foo_no_such_function)" {
		t.Errorf("a function missing: %v", err)
	}
	var missing func()
	path, err := OpenOptional(lib, []string{"libc.so.6"}, map[string]any{"strlen": &strlen}, map[string]any{"foo_no_such_function": &missing})
	if err != nil || path != "libc.so.6" {
		t.Fatalf("libc: %q, %v", path, err)
	}
	if strlen == nil || strlen("gpuwatt") != 7 || missing != nil {
		t.Errorf("bound strlen %v (want 7), missing %v (want nil)", strlen != nil, missing != nil)
	}
}
