package measure

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// sleeper "runs" a command by sleeping on the clock.
type sleeper struct {
	clk clock.Clock
	d   time.Duration
}

func (s sleeper) Run(ctx context.Context, argv []string) (int, error) {
	return 0, s.clk.Sleep(ctx, s.d)
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	ok := Options{Command: []string{"true"}, Runner: sleeper{}, Baseline: time.Second}
	cases := []struct {
		name string
		edit func(*Options)
		want string // "" means valid
	}{
		{"valid", func(*Options) {}, ""},
		{"no command", func(o *Options) { o.Command = nil }, "no command"},
		{"negative baseline", func(o *Options) { o.Baseline = -time.Second }, "--baseline -1s"},
		{"negative tail", func(o *Options) { o.Tail = -time.Millisecond }, "--tail -1ms"},
		{"negative gpu", func(o *Options) { o.GPUs = []int{-1} }, "--gpu -1"},
		{"gpu twice", func(o *Options) { o.GPUs = []int{0, 0} }, "GPU 0 is named twice"},
		{"bad pattern", func(o *Options) { o.Channels = []string{"power.["} }, `--channels "power.["`},
		{"no runner", func(o *Options) { o.Runner = nil }, "no runner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			err := o.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestOptionsRunOnSim(t *testing.T) {
	t.Parallel()
	clk := clock.NewVirtual(time.Time{})
	cfg, err := sim.Preset("h100")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := sim.Open(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	env := device.Env{System: sys, Clock: clk}
	o := Options{Command: []string{"work"}, Runner: sleeper{clk, 2 * time.Second}, Baseline: time.Second, Tail: time.Second,
		Channels: []string{"power.*", "energy.total"}}
	res, err := o.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.End - res.Start; got != 2*time.Second {
		t.Errorf("command ran %s on the trace, want 2s", got)
	}
	if !res.Trace.Meta.Simulated || res.Trace.Meta.Device != sys.Name() {
		t.Errorf("trace meta device %q simulated %v", res.Trace.Meta.Device, res.Trace.Meta.Simulated)
	}
	for _, ch := range res.Trace.Meta.Channels {
		if !MatchChannel(ch.Name, o.Channels) {
			t.Errorf("channel %s recorded, not asked for", ch.Name)
		}
	}
	// Bad options are status.ErrInput, before anything is recorded.
	o.GPUs = []int{0, 0}
	if _, err := o.Run(context.Background(), env); !errors.Is(err, status.ErrInput) {
		t.Errorf("GPU named twice: error %v, want status.ErrInput", err)
	}
	o.GPUs = []int{5}
	if _, err := o.Run(context.Background(), env); !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), "--gpu 5") {
		t.Errorf("no such GPU: error %v, want status.ErrInput naming --gpu 5", err)
	}
}
