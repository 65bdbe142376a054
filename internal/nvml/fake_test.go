package nvml_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/nvml/nvmltest"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// openFake builds the fake library, opens and initialises it.
func openFake(t *testing.T, defines ...string) (*nvml.Lib, *nvmltest.Fake) {
	t.Helper()
	path := nvmltest.Build(t, defines...)
	l, err := nvml.Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	if err := l.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = l.Shutdown() })
	return l, nvmltest.Control(t, path)
}

func device(t *testing.T, l *nvml.Lib, i int) nvml.Device {
	t.Helper()
	d, err := l.DeviceByIndex(i)
	if err != nil {
		t.Fatalf("DeviceByIndex(%d): %v", i, err)
	}
	if !d.Valid() {
		t.Fatalf("DeviceByIndex(%d) gave an invalid device", i)
	}
	return d
}

func TestFakeLifecycle(t *testing.T) {
	path := nvmltest.Build(t)
	l, err := nvml.Open("/nonexistent/libnvidia-ml.so.1", path)
	if err != nil {
		t.Fatalf("Open with a fallback path: %v", err)
	}
	fake := nvmltest.Control(t, path)
	if _, err := l.DeviceCount(); !errors.Is(err, nvml.ErrUninitialized) {
		t.Errorf("DeviceCount before Init = %v, want ErrUninitialized", err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil { // calls nest
		t.Fatal(err)
	}
	if got := fake.InitCount(); got != 2 {
		t.Errorf("InitCount = %d, want 2", got)
	}
	for _, tt := range []struct {
		name string
		f    func() (string, error)
		want string
	}{
		{"DriverVersion", l.DriverVersion, nvmltest.DriverVersion},
		{"NVMLVersion", l.NVMLVersion, nvmltest.NVMLVersion},
	} {
		if got, err := tt.f(); err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if n, err := l.DeviceCount(); err != nil || n != nvmltest.DeviceCount {
		t.Errorf("DeviceCount = %d, %v", n, err)
	}
	for _, i := range []int{2, -1} {
		if _, err := l.DeviceByIndex(i); !errors.Is(err, nvml.ErrInvalidArgument) {
			t.Errorf("DeviceByIndex(%d) = %v, want ErrInvalidArgument", i, err)
		}
	}
	if err := l.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := l.Shutdown(); err != nil {
		t.Fatal(err)
	}
	err = l.Shutdown()
	if !errors.Is(err, nvml.ErrUninitialized) {
		t.Errorf("third Shutdown = %v, want ErrUninitialized", err)
	}
	// The message uses nvmlErrorString.
	if want := "nvmlShutdown: NVML_ERROR_UNINITIALIZED (Uninitialized)"; err == nil || err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
}

func TestFakeDevice0(t *testing.T) {
	l, _ := openFake(t)
	d := device(t, l, 0)

	strs := []struct {
		name string
		f    func() (string, error)
		want string
	}{
		{"Name", d.Name, nvmltest.Dev0Name},
		{"UUID", d.UUID, nvmltest.Dev0UUID},
		{"PCIBusID", d.PCIBusID, nvmltest.Dev0BusID},
	}
	for _, tt := range strs {
		if got, err := tt.f(); err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	powers := []struct {
		name string
		f    func() (units.Power, error)
		want units.Power
	}{
		{"PowerUsage", d.PowerUsage, nvmltest.Dev0PowerMW * units.Milliwatt},
		{"EnforcedPowerLimit", d.EnforcedPowerLimit, nvmltest.Dev0LimitMW * units.Milliwatt},
		{"DefaultPowerLimit", d.DefaultPowerLimit, nvmltest.Dev0DefaultLimitMW * units.Milliwatt},
	}
	for _, tt := range powers {
		if got, err := tt.f(); err != nil || math.Abs(float64(got-tt.want)) > 1e-9 {
			t.Errorf("%s = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if e, err := d.TotalEnergy(); err != nil || math.Abs(e.Joules()-nvmltest.Dev0EnergyMJ/1e3) > 1e-6 {
		t.Errorf("TotalEnergy = %v, %v", e, err)
	}
	for _, tt := range []struct {
		c    nvml.ClockType
		want units.Frequency
	}{
		{nvml.ClockSM, nvmltest.Dev0SMMHz * units.Megahertz},
		{nvml.ClockGraphics, nvmltest.Dev0SMMHz * units.Megahertz},
		{nvml.ClockMem, nvmltest.Dev0MemMHz * units.Megahertz},
	} {
		if got, err := d.Clock(tt.c); err != nil || got != tt.want {
			t.Errorf("Clock(%d) = %v, %v; want %v", tt.c, got, err, tt.want)
		}
	}
	if _, err := d.Clock(nvml.ClockVideo); !errors.Is(err, nvml.ErrNotSupported) {
		t.Errorf("Clock(video) = %v, want ErrNotSupported", err)
	}
	if c, err := d.Temperature(); err != nil || c != nvmltest.Dev0TempC {
		t.Errorf("Temperature = %v, %v", c, err)
	}
	if g, m, err := d.Utilization(); err != nil || g != nvmltest.Dev0UtilGPU || m != nvmltest.Dev0UtilMem {
		t.Errorf("Utilization = %d, %d, %v", g, m, err)
	}
	if r, err := d.ClockEventReasons(); err != nil || r != nvmltest.Dev0EventReasons {
		t.Errorf("ClockEventReasons = %v, %v; want %#x", r, err, nvmltest.Dev0EventReasons)
	} else if r.String() != "gpu_idle|sw_power_cap" {
		t.Errorf("ClockEventReasons names = %q", r)
	}
	// nvmlDeviceGetPerformanceState is absent from the fake.
	_, err := d.PerformanceState()
	if !errors.Is(err, nvml.ErrNotSupported) || !strings.Contains(err.Error(), "nvmlDeviceGetPerformanceState") {
		t.Errorf("PerformanceState = %v, want ErrNotSupported naming the symbol", err)
	}
	var nerr *nvml.Error
	if !errors.As(err, &nerr) || nerr.Code != nvml.ErrorFunctionNotFound {
		t.Errorf("PerformanceState error = %#v", err)
	}
}

func TestFakeOldDriverThrottleReasons(t *testing.T) {
	l, _ := openFake(t, nvmltest.OldDriver)
	d := device(t, l, 0)
	if r, err := d.ClockEventReasons(); err != nil || r != nvmltest.Dev0ThrottleMask {
		t.Errorf("ClockEventReasons on an old driver = %v, %v; want %#x from the throttle-reasons call",
			r, err, nvmltest.Dev0ThrottleMask)
	}
}

func TestFakeDevice1Errors(t *testing.T) {
	l, _ := openFake(t)
	d := device(t, l, 1)
	if got, err := d.Name(); err != nil || got != nvmltest.Dev1Name {
		t.Errorf("Name = %q, %v", got, err)
	}
	if got, err := d.PCIBusID(); err != nil || got != nvmltest.Dev1BusID {
		t.Errorf("PCIBusID = %q, %v", got, err)
	}
	if p, err := d.PowerUsage(); err != nil || p != nvmltest.Dev1PowerMW*units.Milliwatt {
		t.Errorf("PowerUsage = %v, %v", p, err)
	}
	if p, err := d.DefaultPowerLimit(); err != nil || p != nvmltest.Dev1DefaultLimitMW*units.Milliwatt {
		t.Errorf("DefaultPowerLimit = %v, %v", p, err)
	}
	tests := []struct {
		name string
		err  error
		want error
		msg  string
	}{
		{"TotalEnergy", second(d.TotalEnergy()), nvml.ErrNotSupported,
			"nvmlDeviceGetTotalEnergyConsumption: NVML_ERROR_NOT_SUPPORTED (Not Supported)"},
		{"Temperature", second(d.Temperature()), nvml.ErrGPULost,
			"nvmlDeviceGetTemperature: NVML_ERROR_GPU_IS_LOST (GPU is lost)"},
		{"Utilization", third(d.Utilization()), nvml.ErrNoPermission,
			"nvmlDeviceGetUtilizationRates: NVML_ERROR_NO_PERMISSION (Insufficient Permissions)"},
		{"Samples", second(d.Samples(nvml.TotalPowerSamples, 0)), nvml.ErrNotSupported,
			"nvmlDeviceGetSamples: NVML_ERROR_NOT_SUPPORTED (Not Supported)"},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.err, tt.want)
		} else if tt.err.Error() != tt.msg {
			t.Errorf("%s message = %q, want %q", tt.name, tt.err, tt.msg)
		}
	}
	fvs, err := d.FieldValues(powerRequests)
	if err != nil {
		t.Fatal(err)
	}
	for _, fv := range fvs {
		if !errors.Is(fv.Err, nvml.ErrNotSupported) {
			t.Errorf("field %d scope %v: %v, want ErrNotSupported", fv.Field, fv.Scope, fv.Err)
		}
	}
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

var powerRequests = []nvml.FieldRequest{
	{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeGPU},
	{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeGPU},
	{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeModule},
	{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeModule},
	{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeMemory},
	{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeMemory},
}

func TestFakeFieldValues(t *testing.T) {
	l, fake := openFake(t)
	d := device(t, l, 0)
	now := uint64(nvmltest.EpochUS + 250_123)
	fake.SetTimeUS(now)
	ts := int64(now) // like the real driver's: the time of the call

	reqs := append(append([]nvml.FieldRequest(nil), powerRequests...),
		nvml.FieldRequest{Field: 1000}, nvml.FieldRequest{Field: 1001},
		nvml.FieldRequest{Field: 1002}, nvml.FieldRequest{Field: 7})
	fvs, err := d.FieldValues(reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ   nvml.ValueType
		value float64
		ts    int64
		err   error
	}{
		{nvml.ValueUnsignedInt, nvmltest.Dev0InstantMW, ts, nil},
		{nvml.ValueUnsignedInt, nvmltest.Dev0AverageMW, ts, nil},
		{nvml.ValueUnsignedLongLong, nvmltest.Dev0ModuleInstantMW, ts, nil},
		{nvml.ValueSignedLongLong, nvmltest.Dev0ModuleAverageMW, ts, nil},
		{0, 0, ts, nvml.ErrNotSupported},
		{nvml.ValueDouble, nvmltest.Dev0MemoryAverageMW, ts, nil},
		{nvml.ValueSignedInt, -5, ts, nil},
		{nvml.ValueUnsignedShort, 7, ts, nil},
		{nvml.ValueUnsignedLong, 1 << 40, ts, nil},
		{0, 0, ts, nvml.ErrInvalidArgument},
	}
	if len(fvs) != len(want) {
		t.Fatalf("got %d values, want %d", len(fvs), len(want))
	}
	for i, fv := range fvs {
		w := want[i]
		name := fmt.Sprintf("field %d scope %v", reqs[i].Field, reqs[i].Scope)
		if fv.Field != reqs[i].Field || fv.Scope != reqs[i].Scope {
			t.Errorf("%s: answered for field %d scope %v", name, fv.Field, fv.Scope)
		}
		if fv.TimestampUS != w.ts || fv.LatencyUS != 3 {
			t.Errorf("%s: timestamp %d latency %d, want %d and 3", name, fv.TimestampUS, fv.LatencyUS, w.ts)
		}
		if w.err != nil {
			if !errors.Is(fv.Err, w.err) {
				t.Errorf("%s: Err = %v, want %v", name, fv.Err, w.err)
			}
			continue
		}
		if fv.Err != nil || fv.Type != w.typ || fv.Value != w.value {
			t.Errorf("%s: %v %v err %v, want %v %v", name, fv.Type, fv.Value, fv.Err, w.typ, w.value)
		}
	}
	if fvs[8].Raw != 1<<40 {
		t.Errorf("Raw of the ulong field = %d", fvs[8].Raw)
	}

	// More requests than the pooled C buffer holds.
	many := make([]nvml.FieldRequest, 40)
	for i := range many {
		many[i] = powerRequests[i%len(powerRequests)]
	}
	fvs, err = d.FieldValues(many)
	if err != nil || len(fvs) != len(many) {
		t.Fatalf("40 fields: %d values, %v", len(fvs), err)
	}
	for i, fv := range fvs {
		if fv.Field != many[i].Field || fv.Scope != many[i].Scope {
			t.Errorf("entry %d answers field %d scope %v", i, fv.Field, fv.Scope)
		}
	}
	if fvs, err := d.FieldValues(nil); err != nil || len(fvs) != 0 {
		t.Errorf("FieldValues(nil) = %v, %v", fvs, err)
	}
}

func TestFakeSamples(t *testing.T) {
	l, fake := openFake(t)
	d := device(t, l, 0)

	s, err := d.Samples(nvml.TotalPowerSamples, 0)
	if err != nil || len(s) != 0 {
		t.Fatalf("empty buffer: %v, %v; want no samples and no error", s, err)
	}
	if _, err := d.Samples(nvml.GPUUtilizationSamples, 0); !errors.Is(err, nvml.ErrNotSupported) {
		t.Errorf("utilization samples = %v, want ErrNotSupported", err)
	}

	const t0 = nvmltest.EpochUS
	for i := range 5 {
		fake.AddSample(t0+uint64(i)*20_000, 100_000+uint32(i)*1000)
	}
	s, err = d.Samples(nvml.TotalPowerSamples, 0)
	if err != nil || len(s) != 5 {
		t.Fatalf("Samples(0) = %v, %v; want 5", s, err)
	}
	for i, x := range s {
		if x.TimestampUS != t0+uint64(i)*20_000 || x.Value != 100_000+float64(i)*1000 {
			t.Errorf("sample %d = %+v", i, x)
		}
	}
	// Only samples newer than lastSeen come back.
	s, err = d.Samples(nvml.TotalPowerSamples, t0+40_000)
	if err != nil || len(s) != 2 || s[0].TimestampUS != t0+60_000 {
		t.Errorf("Samples(after the 3rd) = %v, %v", s, err)
	}
	s, err = d.Samples(nvml.TotalPowerSamples, t0+80_000)
	if err != nil || len(s) != 0 {
		t.Errorf("Samples(after the last) = %v, %v; want none (NVML_ERROR_NOT_FOUND)", s, err)
	}
	// The ring keeps the newest 120.
	fake.ClearSamples()
	for i := range 130 {
		fake.AddSample(t0+uint64(i)*20_000, uint32(i))
	}
	s, err = d.Samples(nvml.TotalPowerSamples, 0)
	if err != nil || len(s) != nvmltest.RingSize || s[0].Value != 10 || s[len(s)-1].Value != 129 {
		t.Errorf("full ring: %d samples, first %v, %v", len(s), s[0], err)
	}
	// AppendSamples keeps what dst holds.
	dst := []nvml.Sample{{TimestampUS: 1, Value: 2}}
	dst, err = d.AppendSamples(dst, nvml.TotalPowerSamples, t0+128*20_000)
	if err != nil || len(dst) != 2 || dst[0].Value != 2 || dst[1].Value != 129 {
		t.Errorf("AppendSamples = %v, %v", dst, err)
	}
}

// A ring larger than the pooled buffer: the count query sizes the buffer.
func TestFakeSamplesBigRing(t *testing.T) {
	l, fake := openFake(t, nvmltest.BigRing)
	d := device(t, l, 0)
	for i := range 300 {
		fake.AddSample(nvmltest.EpochUS+uint64(i)*20_000, uint32(i))
	}
	for range 2 { // the second time the pooled buffer is already large enough
		s, err := d.Samples(nvml.TotalPowerSamples, 0)
		if err != nil || len(s) != 300 || s[0].Value != 0 || s[299].Value != 299 {
			t.Fatalf("300 samples: got %d, %v", len(s), err)
		}
	}
}

// The hot calls do not allocate once their buffers exist.
func TestFakeNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	l, fake := openFake(t)
	d := device(t, l, 0)
	for i := range 100 {
		fake.AddSample(nvmltest.EpochUS+uint64(i)*20_000, 1)
	}
	fvs := make([]nvml.FieldValue, 0, 2)
	reqs := powerRequests[:2]
	smp := make([]nvml.Sample, 0, 128)
	for name, f := range map[string]func(){
		"PowerUsage":        func() { _, _ = d.PowerUsage() },
		"AppendFieldValues": func() { fvs, _ = d.AppendFieldValues(fvs[:0], reqs) },
		"AppendSamples":     func() { smp, _ = d.AppendSamples(smp[:0], nvml.TotalPowerSamples, 0) },
		"TotalEnergy":       func() { _, _ = d.TotalEnergy() },
		"Clock":             func() { _, _ = d.Clock(nvml.ClockSM) },
		"Utilization":       func() { _, _, _ = d.Utilization() },
		"ClockEventReasons": func() { _, _ = d.ClockEventReasons() },
	} {
		f()
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, a)
		}
	}
}

// Calls from many goroutines at once.
func TestFakeConcurrent(t *testing.T) {
	l, _ := openFake(t)
	d := device(t, l, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Go(func() {
			var fvs []nvml.FieldValue
			for range 2000 {
				p, err := d.PowerUsage()
				if err != nil || p != nvmltest.Dev0PowerMW*units.Milliwatt {
					errs <- fmt.Errorf("goroutine %d: PowerUsage = %v, %v", g, p, err)
					return
				}
				fvs, err = d.AppendFieldValues(fvs[:0], powerRequests)
				if err != nil || fvs[0].Value != nvmltest.Dev0InstantMW || fvs[5].Value != nvmltest.Dev0MemoryAverageMW {
					errs <- fmt.Errorf("goroutine %d: FieldValues = %v, %v", g, fvs, err)
					return
				}
				if n, err := d.Name(); err != nil || n != nvmltest.Dev0Name {
					errs <- fmt.Errorf("goroutine %d: Name = %q, %v", g, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkFakePowerUsage(b *testing.B) {
	path := nvmltest.Build(b)
	l, err := nvml.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Init(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Shutdown() }()
	d, err := l.DeviceByIndex(0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.PowerUsage(); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleOpen() {
	lib, err := nvml.Open()
	if err != nil {
		fmt.Println(err) // no NVIDIA driver found: cannot load libnvidia-ml.so.1: ...
		return
	}
	if err := lib.Init(); err != nil {
		fmt.Println(err)
		return
	}
	defer lib.Shutdown()
	dev, err := lib.DeviceByIndex(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fvs, err := dev.FieldValues([]nvml.FieldRequest{{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeGPU}})
	if err == nil && fvs[0].Err == nil {
		fmt.Printf("instant power: %v\n", units.Power(fvs[0].Value)*units.Milliwatt)
	}
}
