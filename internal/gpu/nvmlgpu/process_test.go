package nvmlgpu_test

import (
	"os"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/nvmlgpu"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/nvml/nvmltest"
)

// TestProcesses: each call gives the processes seen since the previous one, their SM
// utilisation averaged over their samples, named from /proc (this test's own pid).
func TestProcesses(t *testing.T) {
	path := nvmltest.Build(t)
	lib, err := nvml.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fake := nvmltest.Control(t, path)
	sys, err := nvmlgpu.OpenLib(lib, clock.NewVirtual(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	pl := sys.Devices()[0].(gpu.ProcessLister)
	me := os.Getpid()
	t0 := uint64(nvmltest.EpochUS)
	fake.AddProcessSample(uint32(me), t0+1000, 40)
	fake.AddProcessSample(uint32(me), t0+2000, 60)
	fake.AddProcessSample(999999, t0+2000, 20)
	got, err := pl.Processes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].PID != me || got[0].SMUtil != 50 || got[0].Comm == "" || got[1].PID != 999999 || got[1].SMUtil != 20 {
		t.Errorf("first call: %+v; want pid %d at 50 %% named, and 999999 at 20 %%", got, me)
	}
	if got, err := pl.Processes(); err != nil || len(got) != 0 {
		t.Errorf("nothing new: %+v, %v", got, err)
	}
	fake.AddProcessSample(999999, t0+3000, 80)
	if got, err := pl.Processes(); err != nil || len(got) != 1 || got[0].SMUtil != 80 {
		t.Errorf("one new sample: %+v, %v", got, err)
	}
}
