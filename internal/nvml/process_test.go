package nvml_test

import (
	"errors"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/nvml/nvmltest"
)

// TestProcessUtilization: per-process samples through nvmlDeviceGetProcessUtilization
// (size first, then the samples newer than lastSeen); none newer is empty, not an error; a
// board without it says so.
func TestProcessUtilization(t *testing.T) {
	l, fake := openFake(t)
	d0, d1 := device(t, l, 0), device(t, l, 1)
	if got, err := d0.ProcessUtilization(0); err != nil || len(got) != 0 {
		t.Fatalf("no samples: %v, %v; want none and no error", got, err)
	}
	t0 := uint64(nvmltest.EpochUS)
	fake.AddProcessSample(4242, t0+1000, 60)
	fake.AddProcessSample(777, t0+1500, 30)
	fake.AddProcessSample(4242, t0+2000, 70)
	got, err := d0.ProcessUtilization(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []nvml.ProcessUtilization{
		{PID: 4242, TimeStampUS: t0 + 1000, SMUtil: 60, MemUtil: 30},
		{PID: 777, TimeStampUS: t0 + 1500, SMUtil: 30, MemUtil: 15},
		{PID: 4242, TimeStampUS: t0 + 2000, SMUtil: 70, MemUtil: 35},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := d0.ProcessUtilization(t0 + 1500); err != nil || len(got) != 1 || got[0].PID != 4242 {
		t.Errorf("newer than the second: %+v, %v", got, err)
	}
	if _, err := d1.ProcessUtilization(0); !errors.Is(err, nvml.ErrNotSupported) {
		t.Errorf("device 1: %v, want ErrNotSupported", err)
	}
}

// TestProcessUtilizationOneCall: a read is one driver call where the samples fit the room
// it gives (it asked the size first before issue 35: two), and two where they do not (the
// size the driver says, then the samples).
func TestProcessUtilizationOneCall(t *testing.T) {
	l, fake := openFake(t)
	d0 := device(t, l, 0)
	t0 := uint64(nvmltest.EpochUS)
	for i := range 3 {
		fake.AddProcessSample(uint32(100+i), t0+uint64(i), 50)
	}
	c0 := fake.ProcessCalls()
	if got, err := d0.ProcessUtilization(0); err != nil || len(got) != 3 {
		t.Fatalf("3 samples: %d, %v", len(got), err)
	}
	if n := fake.ProcessCalls() - c0; n != 1 {
		t.Errorf("3 samples read in %d calls, want 1", n)
	}
	for i := 3; i < 100; i++ {
		fake.AddProcessSample(uint32(100+i), t0+uint64(i), 50)
	}
	c0 = fake.ProcessCalls()
	if got, err := d0.ProcessUtilization(0); err != nil || len(got) != 100 {
		t.Fatalf("100 samples: %d, %v", len(got), err)
	}
	if n := fake.ProcessCalls() - c0; n != 2 {
		t.Errorf("100 samples read in %d calls, want 2 (the size, then the samples)", n)
	}
}
