package archline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (archline.Options{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		o    archline.Options
		flag string
	}{
		{archline.Options{GPU: -1}, "--gpu"},
		{archline.Options{ClockTolerance: 1}, "--clock-tolerance"},
		{archline.Options{Precisions: []kernels.Precision{"fp16"}}, "--precision"},
		{archline.Options{Occupancies: []float64{1.5}}, "occupancy"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.flag)
		}
	}
	// Run refuses a GPU the system lacks as bad input, before measuring anything.
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	if _, _, err := (archline.Options{GPU: 2}).Run(context.Background(), device.Env{System: sys, Clock: clk}); !errors.Is(err, status.ErrInput) {
		t.Errorf("--gpu 2: %v, want status.ErrInput", err)
	}
}
