package nvmlsensor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/nvmlsensor"
)

// TestRealGPU reads every channel of GPU 0 once, then the sample buffer twice. It runs only
// with GPUWATT_REAL_GPU=1 and writes $OUT/real_nvmlsensor.txt when $OUT is set.
func TestRealGPU(t *testing.T) {
	if os.Getenv("GPUWATT_REAL_GPU") != "1" {
		t.Skip("set GPUWATT_REAL_GPU=1 to run on a real GPU")
	}
	var b strings.Builder
	logf := func(format string, a ...any) {
		t.Logf(format, a...)
		b.WriteString(strings.TrimRight(fmt.Sprintf(format, a...), "\n") + "\n")
	}
	defer func() {
		if out := os.Getenv("OUT"); out != "" {
			_ = os.WriteFile(filepath.Join(out, "real_nvmlsensor.txt"), []byte(b.String()), 0o644)
		}
	}()
	lib, err := nvml.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Init(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lib.Shutdown() }()
	dev, err := lib.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewReal()
	ss := nvmlsensor.Sensors(dev, 0, clk)
	var samples sensor.Sensor
	for _, s := range ss {
		c := s.Channel()
		if c.Name == nvmlsensor.PowerSamples {
			samples = s
			continue
		}
		rs, err := s.Read(nil)
		if err != nil {
			logf("%-22s error: %v", c.Name, err)
			continue
		}
		reps := 200
		if c.Name == nvmlsensor.EnergyTotal {
			reps = 20
		}
		var ds []time.Duration
		for range reps {
			t0 := time.Now()
			_, _ = s.Read(rs[:0])
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		logf("%-22s %14.3f %-6s DriverUS=%d  Read median %v", c.Name, rs[0].Value, c.Unit, rs[0].DriverUS, ds[len(ds)/2])
	}
	time.Sleep(100 * time.Millisecond)
	for i := range 4 {
		now := clk.Now()
		rs, err := samples.Read(nil)
		if err != nil {
			logf("power.samples read %d: %v", i, err)
			break
		}
		if len(rs) == 0 {
			logf("power.samples read %d at %v: none", i, now)
		} else {
			logf("power.samples read %d at %v: %d readings, T %v .. %v, first %.1f W",
				i, now.Round(time.Microsecond), len(rs), rs[0].T, rs[len(rs)-1].T, rs[0].Value)
			if rs[0].T < -nvmlsensor.FirstSamplesMargin-time.Millisecond || rs[len(rs)-1].T > now {
				t.Errorf("sample times %v..%v outside [-margin, %v]", rs[0].T, rs[len(rs)-1].T, now)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
}
