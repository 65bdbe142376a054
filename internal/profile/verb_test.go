package profile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/profile"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	ok := profile.DefaultOptions()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		edit func(*profile.Options)
		flag string
	}{
		{func(o *profile.Options) { o.Runs = -1 }, "--runs"},
		{func(o *profile.Options) { o.Period = -time.Millisecond }, "--period"},
		{func(o *profile.Options) { o.Poll = -time.Millisecond }, "--poll"},
		{func(o *profile.Options) { o.Poll = time.Nanosecond }, "--poll 1ns: shorter than"}, // issue 20: 1 ns steps for ever
		{func(o *profile.Options) { o.Kernel = "" }, "--kernel"},
		{func(o *profile.Options) { o.Kernel = "20s" }, "--kernel"},
	} {
		o := profile.DefaultOptions()
		tc.edit(&o)
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, tc.flag)
		}
	}
}

// On the sim, with no sensor profile given, the twin's own model of the channel wins over
// a guess; a bad channel or GPU is bad input.
func TestRunModelChoice(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sm := simtest.OpenConfig(t, cfg)
	clk, sys := sm.Clock, sm.Sys
	env := device.Env{System: sys, Clock: clk}
	o := profile.DefaultOptions()
	o.Kernel, o.Runs = "fp32.fma", 200
	res, err := o.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Simulated || !strings.Contains(res.ChannelWhy, "the sim's own model of power.samples") {
		t.Errorf("simulated %v, channel %q: want the sim's own model", res.Simulated, res.ChannelWhy)
	}
	for _, bad := range []func(*profile.Options){
		func(o *profile.Options) { o.Channel = "power.nope" },
		func(o *profile.Options) { o.GPU = 3 },
		func(o *profile.Options) { o.Kernel = "no.such.kernel" },
	} {
		o := profile.DefaultOptions()
		bad(&o)
		if _, err := o.Run(context.Background(), env); !errors.Is(err, status.ErrInput) {
			t.Errorf("%+v: %v, want status.ErrInput", o, err)
		}
	}
}

// ChannelRank (the profile's channels, each with why) keeps trace.PowerPreference's order:
// one order of preference, with reasons here only.
func TestChannelRankFollowsPowerPreference(t *testing.T) {
	t.Parallel()
	last := -1
	for _, r := range profile.ChannelRank {
		i := slices.Index(trace.PowerPreference, r.Name)
		if i < 0 || i <= last {
			t.Fatalf("%s at %d of trace.PowerPreference %v: ChannelRank must follow that order", r.Name, i, trace.PowerPreference)
		}
		last = i
	}
}
