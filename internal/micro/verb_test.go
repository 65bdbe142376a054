package micro_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/loop"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    micro.Options
		flag string
	}{
		{micro.Options{GPU: -1}, "--gpu"},
		{micro.Options{Loop: loop.Options{Warmup: -time.Second}}, "--warmup"},
		{micro.Options{Only: []string{"no.such.kernel"}}, "--only"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.flag)
		}
	}
	if err := (micro.Options{Only: []string{"int32.*"}}).Validate(); err != nil {
		t.Errorf("int32.*: %v", err)
	}
}

// Run on the sim: the report says it is simulated; a GPU the system lacks is bad input.
func TestOptionsRun(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	env := device.Env{System: sys, Clock: clk}
	rep, _, err := micro.Options{Only: []string{"int32.add"}}.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Simulated || rep.Device != "sim:h100" || len(rep.Rows) != 1 {
		t.Errorf("simulated %v, device %q, %d rows", rep.Simulated, rep.Device, len(rep.Rows))
	}
	if _, _, err := (micro.Options{GPU: 1}).Run(context.Background(), env); !errors.Is(err, status.ErrInput) {
		t.Errorf("--gpu 1 on one GPU: %v, want status.ErrInput", err)
	}
}
