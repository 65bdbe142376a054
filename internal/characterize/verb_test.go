package characterize_test

import (
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/characterize"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (characterize.Options{Stages: []string{characterize.StageLoadlevel}}).Validate(); err != nil {
		t.Fatalf("loadlevel stage: %v", err)
	}
	for _, tc := range []struct {
		o    characterize.Options
		flag string
	}{
		{characterize.Options{GPU: -1}, "--gpu"},
		{characterize.Options{Stages: []string{"sensors"}}, "--stages"},
		{characterize.Options{LoadContexts: -2}, "--contexts"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.flag)
		}
	}
}
