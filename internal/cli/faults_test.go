package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/micro"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// The fault-injection suite of issue 20: a full disk, a GPU lost part-way through a run, a
// kernel launch that fails. (A killed command and a signal at every stage of measure and
// characterize are in signals_test.go.) In each, nothing measured is lost: what could be
// written is, whole, and says what is missing.

var errDiskFull = errors.New("no space left on device")

// diskFull makes every file whose base name is in names fail after 100 bytes.
func diskFull(t *testing.T, names ...string) {
	t.Helper()
	restore := atomicfile.InjectFault(func(path string) (int64, error) {
		for _, n := range names {
			if filepath.Base(path) == n {
				return 100, errDiskFull
			}
		}
		return 0, nil
	})
	t.Cleanup(restore)
}

// TestFullDisk: a disk that fills while a verb writes its files. The file it cut is not
// left behind looking whole; the others are written; summary.json or results.json, written
// last, says the output is incomplete and names the file (it said incomplete: false, with
// report.html cut mid-SVG); stderr names it; the exit code is 1.
func TestFullDisk(t *testing.T) {
	// Not parallel: atomicfile.InjectFault is process-wide, and beside the parallel tests
	// it cut their report.html and trace.csv too (GPUWATT_SLOW_TESTS=1: 28 "no space left
	// on device" failures in 10 other tests).
	testkit.Slow(t) // 11 s
	t.Run("measure trace.csv", func(t *testing.T) {
		diskFull(t, "trace.csv")
		out := filepath.Join(t.TempDir(), "run")
		a, _, stderr, ctx := testApp(t)
		code := a.Main(ctx, []string{"measure", "--device", "sim", "--baseline", "200ms", "--tail", "200ms", "--out", out, "--", "fake", "1s"})
		if code != ExitFailure || !strings.Contains(stderr.String(), filepath.Join(out, "trace.csv")+": no space left on device") {
			t.Errorf("exit %d, stderr %q; want 1 and trace.csv named", code, stderr)
		}
		if !strings.Contains(stderr.String(), "INCOMPLETE: trace.csv and trace.json not written") {
			t.Errorf("the summary on stderr does not say what is missing:\n%s", stderr)
		}
		var sum measure.Summary
		readJSON(t, filepath.Join(out, "summary.json"), &sum)
		if !sum.Incomplete || !strings.Contains(sum.Reason, "trace.csv and trace.json not written") || !strings.Contains(sum.Reason, "no space left") {
			t.Errorf("summary.json: incomplete %v, reason %q; want trace.csv named", sum.Incomplete, sum.Reason)
		}
		assertFiles(t, out, []string{"summary.json", "report.html"}, []string{"trace.csv", "trace.json"})
	})
	t.Run("characterize report.html", func(t *testing.T) {
		diskFull(t, "report.html")
		out := filepath.Join(t.TempDir(), "ch")
		a, _, stderr, ctx := testApp(t)
		code := a.Main(ctx, []string{"characterize", "--device", "sim", "--quick", "--quiet", "--stages", "sensor", "--out", out})
		if code != ExitFailure || !strings.Contains(stderr.String(), "report.html: no space left on device") {
			t.Errorf("exit %d, stderr %q; want 1 and report.html named", code, stderr)
		}
		var res characterize.Result
		readJSON(t, filepath.Join(out, "results.json"), &res)
		if !res.Incomplete || !strings.Contains(res.Reason, "report.html not written") {
			t.Errorf("results.json: incomplete %v, reason %q; want report.html named", res.Incomplete, res.Reason)
		}
		if s := res.Stage("sensor"); s == nil || s.Status != characterize.StatusDone {
			t.Errorf("the measured stage was lost: %+v", s)
		}
		assertFiles(t, out, []string{"results.json", "sensor.json"}, []string{"report.html"})
	})
	t.Run("sensor report.html", func(t *testing.T) {
		diskFull(t, "report.html")
		out := filepath.Join(t.TempDir(), "s")
		a, _, stderr, ctx := testApp(t)
		code := a.Main(ctx, []string{"sensor", "--device", "sim", "--quick", "--quiet", "--out", out})
		if code != ExitFailure || !strings.Contains(stderr.String(), "report.html: no space left on device") {
			t.Errorf("exit %d, stderr %q; want 1 and report.html named", code, stderr)
		}
		var res struct {
			Incomplete bool   `json:"incomplete"`
			Reason     string `json:"incomplete_reason"`
		}
		readJSON(t, filepath.Join(out, "results.json"), &res)
		if !res.Incomplete || !strings.Contains(res.Reason, "report.html not written") {
			t.Errorf("results.json: incomplete %v, reason %q; want report.html named (it had no incomplete field)", res.Incomplete, res.Reason)
		}
		assertFiles(t, out, []string{"results.json", "sensor.json", "trace.csv"}, []string{"report.html"})
	})
	t.Run("report", func(t *testing.T) {
		diskFull(t, "page.html")
		dir := filepath.Join(t.TempDir(), "ch")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		res := `{"format":"` + characterize.Format + `","gpu":{"name":"sim"}}`
		if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(res), 0o644); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(filepath.Dir(dir), "page.html")
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, []string{"report", "--out", page, dir}); code != ExitFailure || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("exit %d, stderr %q; want 1 (a failure, not bad input: it gave 2)", code, stderr)
		}
		assertFiles(t, filepath.Dir(dir), nil, []string{"page.html"})
	})
	// The other verbs that write --out: the page fails, the status file says so.
	for _, v := range []struct {
		name, status string
		args         []string
	}{
		{"profile", "profile.json", []string{"profile", "--device", "sim:h100", "--channel", "power.instant", "--kernel", "5ms", "--runs", "200", "--quiet"}},
		{"archline", "results.json", []string{"archline", "--device", "sim:h200", "--quick", "--quiet"}},
		{"loadlevel", "results.json", append([]string{"loadlevel", "--device", "sim:h100", "--size", "1024", "--quiet"}, loadlevelArgs...)},
	} {
		t.Run(v.name+" report.html", func(t *testing.T) {
			diskFull(t, "report.html")
			out := filepath.Join(t.TempDir(), v.name)
			a, _, stderr, ctx := testApp(t)
			code := a.Main(ctx, append(v.args, "--out", out))
			if code != ExitFailure || !strings.Contains(stderr.String(), "report.html: no space left on device") {
				t.Errorf("exit %d, stderr %q; want 1 and report.html named", code, stderr)
			}
			var res struct {
				Incomplete bool   `json:"incomplete"`
				Reason     string `json:"incomplete_reason"`
			}
			readJSON(t, filepath.Join(out, v.status), &res)
			if !res.Incomplete || !strings.Contains(res.Reason, "report.html not written") {
				t.Errorf("%s: incomplete %v, reason %q; want report.html named", v.status, res.Incomplete, res.Reason)
			}
			assertFiles(t, out, []string{v.status}, []string{"report.html"})
		})
	}
	t.Run("micro everything", func(t *testing.T) {
		diskFull(t, "trace.csv", "trace.json", "results.json", "results.csv", "report.html")
		out := filepath.Join(t.TempDir(), "micro")
		a, stdout, stderr, ctx := testApp(t)
		code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "int32.add", "--quiet", "--out", out})
		if code != ExitFailure {
			t.Errorf("exit %d, want 1: %s", code, stderr)
		}
		for _, f := range []string{"trace.csv", "results.csv", "report.html", "results.json"} {
			if !strings.Contains(stderr.String(), filepath.Join(out, f)) {
				t.Errorf("stderr does not name %s: %s", f, stderr)
			}
		}
		if !strings.Contains(stdout.String(), "int32.add") {
			t.Errorf("the results did not reach stdout either:\n%s", stdout)
		}
		assertFiles(t, out, nil, []string{"trace.csv", "trace.json", "results.json", "results.csv", "report.html"})
	})
}

// assertFiles checks that dir holds each of present (not empty) and none of absent, and no
// temporary file.
func assertFiles(t *testing.T, dir string, present, absent []string) {
	t.Helper()
	for _, f := range present {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: not written (%v)", f, err)
		}
	}
	for _, f := range absent {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is there, though its write failed", f)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// faultySystem wraps a sim system: from virtual time lostAt its sensors fail as NVML's do
// when the GPU falls off the bus, and so do its kernels; a kernel named in failLaunch fails
// to launch at any time, as a CUDA launch error does.
type faultySystem struct {
	gpu.System
	clk        clock.Clock
	lostAt     time.Duration // 0: never
	failLaunch string
	only       string // where set, only this channel's reads fail from lostAt
}

var errGPULost = errors.New("GPU is lost")

func (f *faultySystem) Devices() []gpu.Device {
	var out []gpu.Device
	for _, d := range f.System.Devices() {
		out = append(out, &faultyDevice{Device: d, f: f})
	}
	return out
}

func (f *faultySystem) lost() bool { return f.lostAt > 0 && f.clk.Now() >= f.lostAt }

// faultyDevice keeps the sim device's other faces (its truth, its command observer) by
// embedding it as the interface value it is, and asserting them where asked.
type faultyDevice struct {
	gpu.Device
	f *faultySystem
}

func (d *faultyDevice) Sensors() []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range d.Device.Sensors() {
		out = append(out, &faultySensor{Sensor: s, f: d.f})
	}
	return out
}

func (d *faultyDevice) Props() gpu.Props { return d.Device.(gpu.Executor).Props() }

func (d *faultyDevice) Prepare(desc kernels.Descriptor) (gpu.Kernel, error) {
	k, err := d.Device.(gpu.Executor).Prepare(desc)
	if err != nil {
		return nil, err
	}
	return &faultyKernel{Kernel: k, f: d.f, name: desc.Name}, nil
}

func (d *faultyDevice) CommandStarted(t time.Duration) {
	if o, ok := d.Device.(gpu.CommandObserver); ok {
		o.CommandStarted(t)
	}
}

func (d *faultyDevice) CommandEnded(t time.Duration) {
	if o, ok := d.Device.(gpu.CommandObserver); ok {
		o.CommandEnded(t)
	}
}

type faultySensor struct {
	sensor.Sensor
	f *faultySystem
}

func (s *faultySensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	if s.f.lost() && (s.f.only == "" || s.f.only == s.Channel().Name) {
		return dst, errGPULost
	}
	return s.Sensor.Read(dst)
}

func (s *faultySensor) PeriodHint() time.Duration {
	if h, ok := s.Sensor.(sensor.PeriodHinter); ok {
		return h.PeriodHint()
	}
	return 0
}

type faultyKernel struct {
	gpu.Kernel
	f    *faultySystem
	name string
}

func (k *faultyKernel) Run(n int) (time.Duration, time.Duration, error) {
	if k.name == k.f.failLaunch {
		return 0, 0, errors.New("cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
	}
	if k.f.lost() {
		return 0, 0, errors.New("cuLaunchKernel: CUDA_ERROR_DEVICE_UNAVAILABLE: " + errGPULost.Error())
	}
	return k.Kernel.Run(n)
}

// TestGPULostDuringMeasure: the GPU's NVML calls start failing while the command runs.
// The recording keeps every sample read before, says how many reads failed and why, and
// the run still writes all its files.
func TestGPULostDuringMeasure(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	clk := a.NewClock()
	a.WrapSystem = func(s gpu.System) gpu.System {
		return &faultySystem{System: s, clk: clk, lostAt: 1500 * time.Millisecond}
	}
	out := filepath.Join(t.TempDir(), "run")
	code := a.Main(ctx, []string{"measure", "--device", "sim", "--baseline", "1s", "--tail", "1s", "--out", out, "--", "fake", "2s"})
	if code != ExitOK {
		t.Errorf("exit %d: %s", code, stderr)
	}
	tr, err := trace.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, s := range tr.Samples {
		if s.T < 1500*time.Millisecond {
			before++
		} else if s.T > 1510*time.Millisecond {
			t.Fatalf("a sample at %v, after the GPU was lost at 1.5 s", s.T)
		}
	}
	if before < 20 {
		t.Errorf("%d samples kept from before the loss", before)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	found := false
	for _, g := range sum.GPUs {
		for _, w := range g.Warnings {
			if strings.Contains(w.Message, "failed reads (last: GPU is lost)") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("summary.json does not say that reads failed, and why: %+v", sum.GPUs)
	}
}

// TestLaunchFailsInMicro: one kernel fails to launch (a CUDA launch error); the suite goes
// on, the others are measured and written, the failed one is named (stderr, results.json)
// and the exit code is 1. Then the GPU is lost part-way through: what was measured before
// is kept.
func TestLaunchFailsInMicro(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	clk := a.NewClock()
	a.WrapSystem = func(s gpu.System) gpu.System { return &faultySystem{System: s, clk: clk, failLaunch: "int32.add"} }
	out := filepath.Join(t.TempDir(), "micro")
	code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "int32.add,fp32.fma", "--quiet", "--out", out})
	if code != ExitFailure || !strings.Contains(stderr.String(), "1 kernel(s) could not be measured: int32.add") {
		t.Errorf("exit %d, stderr %q; want 1 and int32.add named", code, stderr)
	}
	var rep micro.Result
	readJSON(t, filepath.Join(out, "results.json"), &rep)
	measured := map[string]bool{}
	for _, r := range rep.Rows {
		measured[r.Name] = r.EnergyPerLaunchJ > 0
	}
	if !measured["fp32.fma"] || measured["int32.add"] {
		t.Errorf("measured %v; want fp32.fma and not int32.add", measured)
	}
	if len(rep.Failed) != 1 || rep.Failed[0] != "int32.add" {
		t.Errorf("results.json failed = %v", rep.Failed)
	}
	assertFiles(t, out, []string{"trace.csv", "results.csv", "report.html"}, nil)
}

// hangingSensor's Read blocks, as a driver call that never returns, once the clock has
// passed at, until release is closed.
// hangingSensor's calls stop returning (until release) from at after its first call,
// which always returns: the hang falls inside the run however slow its start. (At a fixed
// time on the clock, 300 ms, it fell on the first call where a loaded machine took that
// long to start micro, whose sampler then refused to start: "its first read had not
// returned after 750ms".)
type hangingSensor struct {
	sensor.Sensor
	clk     clock.Clock
	at      time.Duration
	release chan struct{}

	mu    sync.Mutex
	first time.Duration // the first call's time (began)
	began bool
}

func (s *hangingSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	now := s.clk.Now()
	s.mu.Lock()
	hang := s.began && now-s.first >= s.at
	if !s.began {
		s.began, s.first = true, now
	}
	s.mu.Unlock()
	if hang {
		<-s.release
	}
	return s.Sensor.Read(dst)
}

type hangingSystem struct {
	gpu.System
	wrap func(sensor.Sensor) sensor.Sensor
}

func (h *hangingSystem) Devices() []gpu.Device {
	var out []gpu.Device
	for _, d := range h.System.Devices() {
		hd := &hangingDevice{Device: d, h: h}
		if ex, ok := d.(gpu.Executor); ok {
			out = append(out, &hangingExecDevice{hangingDevice: hd, Executor: ex})
			continue
		}
		out = append(out, hd)
	}
	return out
}

// hangingExecDevice is a hangingDevice that runs kernels (the sim's executor).
type hangingExecDevice struct {
	*hangingDevice
	gpu.Executor
}

type hangingDevice struct {
	gpu.Device
	h *hangingSystem
}

func (d *hangingDevice) Sensors() []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range d.Device.Sensors() {
		if w := d.h.wrap(s); w != nil { // nil: the sensor left out
			out = append(out, w)
		}
	}
	return out
}

// realSleepRunner runs measure's command "sleep D" as a sleep of D on the real clock.
type realSleepRunner struct{}

func (realSleepRunner) Run(ctx context.Context, argv []string) (int, error) {
	d, err := time.ParseDuration(argv[1])
	if err != nil {
		return 127, err
	}
	select {
	case <-time.After(d):
		return 0, nil
	case <-ctx.Done():
		return 130, nil
	}
}

// TestHungCallDuringMeasure: the energy counter's driver call stops returning while the
// command runs (on a real clock: a call that never returns cannot be had on a virtual
// one). measure still ends, within the wait for the hung call (HangTimeout) at the
// command's end and again at the recording's; every file is written; summary.json and
// trace.json are marked incomplete naming the call's channel; the exit code is 1 (the
// command's own where it failed). Before, measure waited for ever.
func TestHungCallDuringMeasure(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	clk := clock.NewReal()
	a.NewClock = func() clock.Clock { return clk }
	a.Runner = realSleepRunner{}
	a.HangTimeout = 150 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	a.WrapSystem = func(s gpu.System) gpu.System {
		return &hangingSystem{System: s, wrap: func(sn sensor.Sensor) sensor.Sensor {
			if sn.Channel().Name != trace.ChEnergyTotal {
				return sn
			}
			return &hangingSensor{Sensor: sn, clk: clk, at: 250 * time.Millisecond, release: release}
		}}
	}
	out := filepath.Join(t.TempDir(), "run")
	t0 := time.Now()
	code := a.Main(ctx, []string{"measure", "--device", "sim", "--baseline", "200ms", "--tail", "100ms", "--out", out, "--", "sleep", "200ms"})
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("measure took %v with a driver call hung", d)
	}
	if code != ExitFailure {
		t.Errorf("exit %d, want %d: %s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr.String(), "(energy.total) on GPU 0 hangs") {
		t.Errorf("stderr does not name the hung call: %s", stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if !sum.Incomplete || !strings.Contains(sum.Reason, "a driver call hangs: ") || !strings.Contains(sum.Reason, "energy.total") {
		t.Errorf("summary.json: incomplete %v, %q; want the hung call named", sum.Incomplete, sum.Reason)
	}
	tr, err := trace.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Meta.Incomplete || len(tr.Samples) == 0 {
		t.Errorf("trace: incomplete %v, %d samples; want what was read kept, marked incomplete", tr.Meta.Incomplete, len(tr.Samples))
	}
	for _, f := range []string{"trace.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestChannelWithoutReadingsUnavailable: one power channel's reads fail from before the
// command on, so no reading of it describes the command. measure leaves it out of the
// table and summary.json, saying so, instead of listing 0 J, a mean of 0 W and a negative
// energy above idle (what it did).
func TestChannelWithoutReadingsUnavailable(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	clk := a.NewClock()
	a.WrapSystem = func(s gpu.System) gpu.System {
		return &faultySystem{System: s, clk: clk, lostAt: 500 * time.Millisecond, only: "power.instant"}
	}
	out := filepath.Join(t.TempDir(), "run")
	code := a.Main(ctx, []string{"measure", "--device", "sim", "--channels", "all", "--baseline", "1s", "--out", out, "--", "fake", "2s"})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	said := false
	for _, c := range sum.GPUs[0].Channels {
		if c.Channel == "power.instant" {
			t.Errorf("power.instant listed with %v J, mean %v W, though no reading describes the command", c.EnergyJ, c.MeanPowerW)
		}
	}
	for _, w := range sum.GPUs[0].Warnings {
		said = said || strings.Contains(w.Message, "power.instant: no reading describes the run; left out")
	}
	if !said || !strings.Contains(stderr.String(), "power.instant: no reading describes the run") {
		t.Errorf("no warning that power.instant is left out: %+v\n%s", sum.GPUs[0].Warnings, stderr)
	}
}

// TestClockEventsUnavailable: a recording without the clock-event reasons (--channels
// power.usage) says the clock events are unavailable, in the text and in summary.json
// (throttle_unavailable), where it said "clock events: none", a figure it had not measured.
func TestClockEventsUnavailable(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "run")
	if code := a.Main(ctx, []string{"measure", "--device", "sim", "--channels", "power.usage", "--out", out, "--", "fake", "1s"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if g := sum.GPUs[0]; len(g.Throttle) != 0 || !strings.Contains(g.ThrottleUnavailable, "no reading of throttle.reasons") {
		t.Errorf("summary.json: throttle %v, throttle_unavailable %q; want it unavailable", g.Throttle, g.ThrottleUnavailable)
	}
	if !strings.Contains(stderr.String(), "clock events: unavailable (no reading of throttle.reasons over the run)") {
		t.Errorf("the text does not say the clock events are unavailable:\n%s", stderr)
	}
}

// TestMicroClockEventsUnavailable: micro's rows say the clock events are unavailable where
// the device gives no clock-event reasons, as measure's summary does (issue 20), instead of
// an empty list that reads as "none".
func TestMicroClockEventsUnavailable(t *testing.T) {
	t.Parallel()
	a, stdout, stderr, ctx := testApp(t)
	a.WrapSystem = func(s gpu.System) gpu.System {
		return &hangingSystem{System: s, wrap: func(sn sensor.Sensor) sensor.Sensor {
			if sn.Channel().Name == trace.ChThrottleReasons {
				return nil
			}
			return sn
		}}
	}
	if code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "baseline", "--min-updates", "5", "--warmup", "0s", "--json"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep micro.Result
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range rep.Rows {
		if len(r.Throttle) != 0 || !strings.Contains(r.ThrottleUnavailable, "no reading of throttle.reasons") {
			t.Errorf("%s: throttle %v, throttle_unavailable %q; want it unavailable", r.Name, r.Throttle, r.ThrottleUnavailable)
		}
	}
}

// TestHungCallDuringMicro: micro (and archline, through the same loop.Meter.RunSuite) ends
// when a driver call stops returning, with what it measured written and results.json
// marked incomplete naming the call; before, the bounded wait let it end but it said
// nothing of it (issue 20).
func TestHungCallDuringMicro(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	clk := clock.NewReal()
	a.NewClock = func() clock.Clock { return clk }
	a.HangTimeout = 150 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	a.WrapSystem = func(s gpu.System) gpu.System {
		return &hangingSystem{System: s, wrap: func(sn sensor.Sensor) sensor.Sensor {
			if sn.Channel().Name != trace.ChEnergyTotal {
				return sn
			}
			return &hangingSensor{Sensor: sn, clk: clk, at: 300 * time.Millisecond, release: release}
		}}
	}
	out := filepath.Join(t.TempDir(), "micro")
	t0 := time.Now()
	code := a.Main(ctx, []string{"micro", "--device", "sim", "--only", "baseline", "--min-updates", "3", "--warmup", "0s", "--quiet", "--out", out})
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("micro took %v with a driver call hung", d)
	}
	t.Logf("exit %d: %s", code, stderr)
	if code == 0 {
		t.Errorf("exit 0 with a driver call hung: %s", stderr)
	}
	if code == ExitUsage {
		t.Fatalf("usage: %s", stderr)
	}
	var st struct {
		Incomplete       bool   `json:"incomplete"`
		IncompleteReason string `json:"incomplete_reason"`
	}
	readJSON(t, filepath.Join(out, "results.json"), &st)
	if !st.Incomplete || !strings.Contains(st.IncompleteReason, "a driver call hangs: ") || !strings.Contains(st.IncompleteReason, "energy.total") {
		t.Errorf("results.json: incomplete %v, %q; want the hung call named", st.Incomplete, st.IncompleteReason)
	}
}
