package nvmlsensor_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/nvml/nvmltest"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/nvmlsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

type fixture struct {
	fake *nvmltest.Fake
	lib  *nvml.Lib
	clk  *clock.Virtual
}

func setup(t *testing.T) fixture {
	t.Helper()
	path := nvmltest.Build(t)
	lib, err := nvml.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Shutdown() })
	clk := clock.NewVirtual(time.Time{})
	if got := clk.Epoch().UnixMicro(); got != nvmltest.EpochUS {
		t.Fatalf("virtual epoch %d µs, fake epoch %d µs", got, nvmltest.EpochUS)
	}
	return fixture{nvmltest.Control(t, path), lib, clk}
}

func (f fixture) sensors(t *testing.T, i int) map[string]sensor.Sensor {
	t.Helper()
	dev, err := f.lib.DeviceByIndex(i)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]sensor.Sensor{}
	for _, s := range nvmlsensor.Sensors(dev, i, f.clk) {
		m[s.Channel().Name] = s
	}
	return m
}

func TestChannels(t *testing.T) {
	f := setup(t)
	dev, _ := f.lib.DeviceByIndex(1)
	ss := nvmlsensor.Sensors(dev, 3, f.clk)
	want := []struct {
		name string
		q    trace.Quantity
		hint time.Duration
	}{
		{"power.usage", trace.QPower, 100 * time.Millisecond},
		{"power.instant", trace.QPower, 100 * time.Millisecond},
		{"power.average", trace.QPower, 100 * time.Millisecond},
		{"power.module.instant", trace.QPower, 100 * time.Millisecond},
		{"power.module.average", trace.QPower, 100 * time.Millisecond},
		{"power.memory.instant", trace.QPower, 100 * time.Millisecond},
		{"power.memory.average", trace.QPower, 100 * time.Millisecond},
		{"power.samples", trace.QPower, 20 * time.Millisecond},
		{"energy.total", trace.QEnergy, 100 * time.Millisecond},
		{"clock.sm", trace.QFrequency, time.Second},
		{"clock.mem", trace.QFrequency, time.Second},
		{"temp.gpu", trace.QTemperature, time.Second},
		{"throttle.reasons", trace.QReasons, time.Second},
		{"pstate", trace.QState, time.Second},
		{"util.gpu", trace.QUtilization, time.Second},
		{"util.mem", trace.QUtilization, time.Second},
		{"power.limit", trace.QPower, time.Second},
	}
	if len(ss) != len(want) {
		t.Fatalf("%d sensors, want %d", len(ss), len(want))
	}
	for i, s := range ss {
		c, w := s.Channel(), want[i]
		if c.Name != w.name || c.Quantity != w.q || c.Unit != w.q.Unit() || c.GPU != 3 {
			t.Errorf("sensor %d: %+v, want %s %s gpu 3", i, c, w.name, w.q)
		}
		if c.Description == "" || c.Source == "" {
			t.Errorf("%s: empty description or source", c.Name)
		}
		if c.Cumulative != (c.Name == "energy.total") || c.Buffered != (c.Name == "power.samples") {
			t.Errorf("%s: Cumulative %v Buffered %v", c.Name, c.Cumulative, c.Buffered)
		}
		h, ok := s.(sensor.PeriodHinter)
		if !ok || h.PeriodHint() != w.hint {
			t.Errorf("%s: period hint %v, want %v", c.Name, h, w.hint)
		}
	}
}

func readOne(t *testing.T, s sensor.Sensor) (sensor.Reading, error) {
	t.Helper()
	rs, err := s.Read(nil)
	if err != nil {
		if len(rs) != 0 {
			t.Errorf("%s: readings with an error: %v", s.Channel().Name, rs)
		}
		return sensor.Reading{}, err
	}
	if len(rs) != 1 {
		t.Fatalf("%s: %d readings, want 1", s.Channel().Name, len(rs))
	}
	return rs[0], nil
}

func TestValuesDevice0(t *testing.T) {
	f := setup(t)
	now := uint64(nvmltest.EpochUS + 1_234_567)
	f.fake.SetTimeUS(now)
	ss := f.sensors(t, 0)
	tests := []struct {
		name     string
		value    float64
		driverUS int64 // none: NVML's field timestamps are call times
		err      error
	}{
		{"power.usage", nvmltest.Dev0PowerMW / 1e3, 0, nil},
		{"power.instant", nvmltest.Dev0InstantMW / 1e3, 0, nil},
		{"power.average", nvmltest.Dev0AverageMW / 1e3, 0, nil},
		{"power.module.instant", nvmltest.Dev0ModuleInstantMW / 1e3, 0, nil},
		{"power.module.average", nvmltest.Dev0ModuleAverageMW / 1e3, 0, nil},
		{"power.memory.instant", 0, 0, nvml.ErrNotSupported}, // per-field error
		{"power.memory.average", nvmltest.Dev0MemoryAverageMW / 1e3, 0, nil},
		{"energy.total", nvmltest.Dev0EnergyMJ / 1e3, 0, nil},
		{"clock.sm", nvmltest.Dev0SMMHz * 1e6, 0, nil},
		{"clock.mem", nvmltest.Dev0MemMHz * 1e6, 0, nil},
		{"temp.gpu", nvmltest.Dev0TempC, 0, nil},
		{"throttle.reasons", nvmltest.Dev0EventReasons, 0, nil},
		{"pstate", 0, 0, nvml.ErrNotSupported}, // symbol absent
		{"util.gpu", nvmltest.Dev0UtilGPU, 0, nil},
		{"util.mem", nvmltest.Dev0UtilMem, 0, nil},
		{"power.limit", nvmltest.Dev0LimitMW / 1e3, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := readOne(t, ss[tt.name])
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.Value-tt.value) > 1e-9*math.Abs(tt.value) || r.DriverUS != tt.driverUS || r.Timed {
				t.Errorf("reading %+v, want value %v DriverUS %d untimed", r, tt.value, tt.driverUS)
			}
		})
	}
	// Read appends.
	dst := []sensor.Reading{{Value: -1}}
	dst, err := ss["power.usage"].Read(dst)
	if err != nil || len(dst) != 2 || dst[0].Value != -1 {
		t.Errorf("Read did not append: %v, %v", dst, err)
	}
}

func TestValuesDevice1(t *testing.T) {
	f := setup(t)
	ss := f.sensors(t, 1)
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"power.instant", nvml.ErrNotSupported},
		{"power.average", nvml.ErrNotSupported},
		{"power.module.instant", nvml.ErrNotSupported},
		{"power.memory.average", nvml.ErrNotSupported},
		{"power.samples", nvml.ErrNotSupported},
		{"energy.total", nvml.ErrNotSupported},
		{"temp.gpu", nvml.ErrGPULost},
		{"util.gpu", nvml.ErrNoPermission},
		{"util.mem", nvml.ErrNoPermission},
	} {
		if _, err := ss[tt.name].Read(nil); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	if r, err := readOne(t, ss["power.usage"]); err != nil || r.Value != nvmltest.Dev1PowerMW/1e3 {
		t.Errorf("power.usage = %v, %v", r, err)
	}
	if r, err := readOne(t, ss["power.limit"]); err != nil || r.Value != nvmltest.Dev1LimitMW/1e3 {
		t.Errorf("power.limit = %v, %v", r, err)
	}
}

// ms is a time on the fake's (and the virtual clock's) axis in µs since 1970.
func ms(m int) uint64 { return nvmltest.EpochUS + uint64(m)*1000 }

func TestSamplesCursor(t *testing.T) {
	f := setup(t)
	s := f.sensors(t, 0)["power.samples"]
	// Ring history: 0, 20, ..., 2000 ms; the recording's first read is at 2000 ms.
	for m := 0; m <= 2000; m += 20 {
		f.fake.AddSample(ms(m), uint32(100_000+m))
	}
	f.clk.AdvanceTo(2000 * time.Millisecond)
	seen := map[int64]bool{}
	check := func(rs []sensor.Reading, wantMS ...int) {
		t.Helper()
		if len(rs) != len(wantMS) {
			t.Fatalf("%d readings %v, want times %v ms", len(rs), rs, wantMS)
		}
		for i, r := range rs {
			wantT := time.Duration(wantMS[i]) * time.Millisecond
			if !r.Timed || r.T != wantT || r.DriverUS != int64(ms(wantMS[i])) || r.Value != float64(100_000+wantMS[i])/1e3 {
				t.Errorf("reading %d = %+v, want T %v value %v", i, r, wantT, float64(100_000+wantMS[i])/1e3)
			}
			if seen[r.DriverUS] {
				t.Errorf("sample at %v returned twice", r.T)
			}
			seen[r.DriverUS] = true
		}
	}
	rs, err := s.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	// First read: only samples at most 40 ms older than the read.
	check(rs, 1960, 1980, 2000)

	rs, _ = s.Read(nil)
	check(rs) // nothing new

	f.fake.AddSample(ms(2020), 100_000+2020)
	f.fake.AddSample(ms(2040), 100_000+2040)
	rs, _ = s.Read(rs[:0])
	check(rs, 2020, 2040)

	for m := 2060; m <= 5000; m += 20 { // more than the ring holds between two reads
		f.fake.AddSample(ms(m), uint32(100_000+m))
	}
	rs, _ = s.Read(nil)
	if len(rs) != nvmltest.RingSize {
		t.Fatalf("after an overflow: %d readings, want %d", len(rs), nvmltest.RingSize)
	}
	if first := rs[0].T; first != (5000-20*(nvmltest.RingSize-1))*time.Millisecond {
		t.Errorf("oldest surviving sample at %v", first)
	}
	for _, r := range rs {
		if seen[r.DriverUS] {
			t.Errorf("sample at %v returned twice", r.T)
		}
	}
}

// When every buffered sample predates the first read by more than the margin, the first
// read returns the newest one alone and the cursor takes over.
func TestSamplesStaleFirstRead(t *testing.T) {
	f := setup(t)
	s := f.sensors(t, 0)["power.samples"]
	for m := 0; m <= 1000; m += 20 {
		f.fake.AddSample(ms(m), 5000)
	}
	f.clk.AdvanceTo(10 * time.Second)
	rs, err := s.Read(nil)
	if err != nil || len(rs) != 1 || rs[0].T != time.Second {
		t.Fatalf("stale first read = %v, %v; want the sample at 1 s alone", rs, err)
	}
	f.fake.AddSample(ms(1020), 5000)
	rs, _ = s.Read(nil)
	if len(rs) != 1 || rs[0].T != 1020*time.Millisecond {
		t.Errorf("next read = %v, want the sample at 1.02 s", rs)
	}
}

// An empty buffer at the first read: samples taken after it all come back.
func TestSamplesEmptyFirstRead(t *testing.T) {
	f := setup(t)
	s := f.sensors(t, 0)["power.samples"]
	f.clk.AdvanceTo(time.Second)
	if rs, err := s.Read(nil); err != nil || len(rs) != 0 {
		t.Fatalf("empty buffer: %v, %v", rs, err)
	}
	for m := 1000; m <= 1200; m += 20 {
		f.fake.AddSample(ms(m), 1)
	}
	f.clk.AdvanceTo(1500 * time.Millisecond)
	if rs, _ := s.Read(nil); len(rs) != 11 {
		t.Errorf("%d readings, want 11", len(rs))
	}
}

func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	f := setup(t)
	ss := f.sensors(t, 0)
	for m := 0; m <= 2000; m += 20 {
		f.fake.AddSample(ms(m), 1)
	}
	f.clk.AdvanceTo(2 * time.Second)
	dst := make([]sensor.Reading, 0, 256)
	for _, name := range []string{"power.usage", "power.instant", "power.memory.average", "power.samples",
		"energy.total", "clock.sm", "throttle.reasons", "util.gpu", "power.limit"} {
		s := ss[name]
		if _, err := s.Read(dst[:0]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a := testing.AllocsPerRun(200, func() { dst, _ = s.Read(dst[:0]) }); a != 0 {
			t.Errorf("%s: %v allocations per Read", name, a)
		}
	}
}

func TestConcurrentReads(t *testing.T) {
	f := setup(t)
	ss := f.sensors(t, 0)
	var wg sync.WaitGroup
	for range 4 {
		for _, name := range []string{"power.instant", "power.usage", "power.samples", "util.mem"} {
			s := ss[name]
			wg.Go(func() {
				var dst []sensor.Reading
				for range 1000 {
					var err error
					if dst, err = s.Read(dst[:0]); err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

func BenchmarkRead(b *testing.B) {
	path := nvmltest.Build(b)
	lib, err := nvml.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := lib.Init(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lib.Shutdown() }()
	dev, _ := lib.DeviceByIndex(0)
	for _, s := range nvmlsensor.Sensors(dev, 0, clock.NewVirtual(time.Time{}))[:3] {
		b.Run(s.Channel().Name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]sensor.Reading, 0, 4)
			for b.Loop() {
				dst, _ = s.Read(dst[:0])
			}
		})
	}
}

// TestGPULostMidRun (issue 20's fault suite): the fake driver's calls start failing with
// GPU_IS_LOST part-way through a recording. The Sampler keeps what it read before, goes
// on to the end (no hang, no panic), and every channel's stats say how many reads failed
// and why.
func TestGPULostMidRun(t *testing.T) {
	f := setup(t)
	var ss []sensor.Sensor
	for _, s := range f.sensors(t, 0) {
		ss = append(ss, s)
	}
	smp := sensor.New(f.clk, ss, sensor.Options{})
	if err := smp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	f.fake.SetLost(true)
	f.clk.Advance(time.Second)
	chans, samples := smp.Stop()
	if len(samples) == 0 {
		t.Fatal("no samples kept from before the GPU was lost")
	}
	for _, s := range samples {
		if s.T > time.Second+time.Millisecond && s.DriverUS == 0 {
			t.Errorf("%s: a sample at %v, after the GPU was lost at 1 s", s.Channel, s.T)
		}
	}
	for _, ch := range chans {
		if ch.Stats.Errors == 0 || !strings.Contains(ch.Stats.LastError, "GPU is lost") {
			t.Errorf("%s: %d failed reads, last error %q; want the loss counted and named", ch.Name, ch.Stats.Errors, ch.Stats.LastError)
		}
	}
}

// TestHungCallDoesNotBlockStop (issue 20's fault suite): the fake driver's energy counter
// call stops returning part-way through a recording on a real clock. Poke and Stop return
// within their bound (HangTimeout), the readings before the hang are kept, and Hung names
// the call, its channel and the channels polled behind it. Before, Stop waited for ever.
func TestHungCallDoesNotBlockStop(t *testing.T) {
	f := setup(t)
	dev, err := f.lib.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewReal()
	smp := sensor.New(clk, nvmlsensor.Sensors(dev, 0, clk), sensor.Options{HangTimeout: 200 * time.Millisecond})
	if err := smp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.fake.SetHang("") }) // let the abandoned call go at the end
	time.Sleep(50 * time.Millisecond)
	f.fake.SetHang("nvmlDeviceGetTotalEnergyConsumption")
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	smp.Poke()
	smp.Poke() // the stuck lane is not waited for again
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Poke took %v with a call hung; want about the 200ms bound", d)
	}
	t0 = time.Now()
	chans, samples := smp.Stop()
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Stop took %v with a call hung; want about the 200ms bound", d)
	}
	if len(samples) == 0 {
		t.Error("no samples kept from before the hang")
	}
	hung := strings.Join(smp.Hung(), "\n")
	if !strings.Contains(hung, "nvmlDeviceGetTotalEnergyConsumption (energy.total) on GPU 0 hangs") {
		t.Errorf("Hung() = %q; want the call and its channel named", hung)
	}
	for _, ch := range chans {
		if ch.Name == "energy.total" && !strings.Contains(ch.Stats.LastError, "hangs") {
			t.Errorf("energy.total's stats: last error %q; want the hang", ch.Stats.LastError)
		}
	}
}

// TestHungFirstReadFailsStart: a driver call that hangs from the first read on fails the
// Sampler's Start within its bound, naming the call, instead of holding the run for ever
// before anything is recorded.
func TestHungFirstReadFailsStart(t *testing.T) {
	f := setup(t)
	dev, err := f.lib.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewReal()
	smp := sensor.New(clk, nvmlsensor.Sensors(dev, 0, clk), sensor.Options{HangTimeout: 50 * time.Millisecond})
	f.fake.SetHang("nvmlDeviceGetTotalEnergyConsumption")
	t.Cleanup(func() { f.fake.SetHang("") })
	t0 := time.Now()
	err = smp.Start(context.Background())
	// a first call is given FirstReadHangs × HangTimeout: 250 ms
	if d := time.Since(t0); d > 2*time.Second || d < 250*time.Millisecond {
		t.Errorf("Start took %v with a call hung; want about 250ms", d)
	}
	if err == nil || !strings.Contains(err.Error(), "nvmlDeviceGetTotalEnergyConsumption (energy.total on GPU 0) hangs") {
		t.Errorf("Start: %v; want the hung call named", err)
	}
	if chans, samples := smp.Stop(); len(chans) != 0 || len(samples) != 0 {
		t.Errorf("Stop after a failed Start: %d channels, %d samples", len(chans), len(samples))
	}
}
