package sensorchar_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensorchar"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

func TestOptionsValidateAndRunInput(t *testing.T) {
	t.Parallel()
	if err := (sensorchar.Options{GPU: -1}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "--gpu") {
		t.Errorf("--gpu -1: %v, want an error naming --gpu", err)
	}
	clk := clock.NewVirtual(time.Time{})
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (sensorchar.Options{GPU: 1}).Run(context.Background(), device.Env{System: sys, Clock: clk}); !errors.Is(err, status.ErrInput) {
		t.Errorf("--gpu 1 on one GPU: %v, want status.ErrInput", err)
	}
}
