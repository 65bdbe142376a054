//go:build linux

package nvml_test

// TestRealGPU characterises the binding on a real GPU. It runs only with
// GPUWATT_REAL_GPU=1; it reads and never sets anything. With GPUWATT_LOAD_CMD set (a
// command that keeps the GPU busy and prints "start_us N" and "end_us N"), it starts that
// command during the fast poll so that the channels' step response shows. The report goes
// to the test log and, when $OUT is set, to $OUT/real_nvml.txt.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/nvml"
)

type report struct {
	t *testing.T
	b strings.Builder
}

func (r *report) f(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.b.WriteString(s + "\n")
	r.t.Log(s)
}

func (r *report) save() {
	if out := os.Getenv("OUT"); out != "" {
		_ = os.WriteFile(filepath.Join(out, "real_nvml.txt"), []byte(r.b.String()), 0o644)
	}
}

func quantiles(xs []float64) (med, p10, p90, lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	return q(0.5), q(0.1), q(0.9), s[0], s[len(s)-1]
}

func qs(xs []float64) string {
	med, p10, p90, lo, hi := quantiles(xs)
	return fmt.Sprintf("n=%d med=%.1f p10=%.1f p90=%.1f min=%.1f max=%.1f", len(xs), med, p10, p90, lo, hi)
}

// latency times n calls of f and returns their durations in µs and the first error.
func latency(n int, f func() error) ([]float64, error) {
	var first error
	d := make([]float64, 0, n)
	for range n {
		t0 := time.Now()
		err := f()
		d = append(d, float64(time.Since(t0).Nanoseconds())/1e3)
		if err != nil && first == nil {
			first = err
		}
	}
	return d, first
}

// threadUserSys returns the calling thread's user and system CPU time.
func threadUserSys() (user, sys time.Duration) {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return -1, -1
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

type event struct {
	hostUS int64 // time.Now() in µs since 1970 when first seen
	v      float64
	ts     int64 // driver timestamp (0 if none)
}

func TestRealGPU(t *testing.T) {
	if os.Getenv("GPUWATT_REAL_GPU") != "1" {
		t.Skip("set GPUWATT_REAL_GPU=1 to run on a real GPU")
	}
	r := &report{t: t}
	defer r.save()
	r.f("date: %s", time.Now().UTC().Format(time.RFC3339))

	lib, err := nvml.Open()
	if err != nil {
		r.f("Open: %v", err)
		t.Fatal(err)
	}
	if err := lib.Init(); err != nil {
		r.f("Init: %v", err)
		t.Fatal(err)
	}
	defer func() { _ = lib.Shutdown() }()
	dv, err := lib.DriverVersion()
	r.f("driver: %q %v", dv, err)
	nv, err := lib.NVMLVersion()
	r.f("nvml: %q %v", nv, err)
	n, err := lib.DeviceCount()
	r.f("devices: %d %v", n, err)
	if n == 0 {
		t.Fatal("no GPU")
	}
	for i := range n {
		d, err := lib.DeviceByIndex(i)
		if err != nil {
			r.f("device %d: %v", i, err)
			continue
		}
		name, _ := d.Name()
		uuid, _ := d.UUID()
		bus, _ := d.PCIBusID()
		lim, e1 := d.EnforcedPowerLimit()
		def, e2 := d.DefaultPowerLimit()
		r.f("device %d: %s uuid=%s bus=%s limit=%v (%v) default=%v (%v)", i, name, uuid, bus, lim, e1, def, e2)
	}
	d, _ := lib.DeviceByIndex(0)

	// ---- support matrix ----
	r.f("\n## support (device 0)")
	show := func(name string, v any, err error) { r.f("%-28s %v  err=%v", name, v, err) }
	p, err := d.PowerUsage()
	show("PowerUsage", p, err)
	e, err := d.TotalEnergy()
	show("TotalEnergy", e, err)
	for _, c := range []nvml.ClockType{nvml.ClockGraphics, nvml.ClockSM, nvml.ClockMem, nvml.ClockVideo} {
		f, err := d.Clock(c)
		show(fmt.Sprintf("Clock(%d)", c), f, err)
	}
	tc, err := d.Temperature()
	show("Temperature", tc, err)
	ps, err := d.PerformanceState()
	show("PerformanceState", ps, err)
	cr, err := d.ClockEventReasons()
	show("ClockEventReasons", fmt.Sprintf("%#x %s", uint64(cr), cr), err)
	ug, um, err := d.Utilization()
	show("Utilization", fmt.Sprintf("gpu=%d mem=%d", ug, um), err)
	reqs := []nvml.FieldRequest{
		{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeGPU},
		{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeGPU},
		{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeModule},
		{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeModule},
		{Field: nvml.FieldPowerInstant, Scope: nvml.ScopeMemory},
		{Field: nvml.FieldPowerAverage, Scope: nvml.ScopeMemory},
	}
	fvs, err := d.FieldValues(reqs)
	show("FieldValues(6)", len(fvs), err)
	for _, fv := range fvs {
		r.f("  field %d scope %-6s type=%-9s value=%-10v ts=%d latency=%dus err=%v host-ts=%dus",
			fv.Field, fv.Scope, fv.Type, fv.Value, fv.TimestampUS, fv.LatencyUS, fv.Err, time.Now().UnixMicro()-fv.TimestampUS)
	}
	for _, st := range []nvml.SamplingType{nvml.TotalPowerSamples, nvml.GPUUtilizationSamples,
		nvml.MemoryUtilizationSamples, nvml.ProcessorClockSamples, nvml.MemoryClockSamples} {
		s, err := d.Samples(st, 0)
		show(fmt.Sprintf("Samples(%d)", st), len(s), err)
	}

	// ---- latency ----
	r.f("\n## call latency, µs (idle)")
	lat := func(name string, n int, f func() error) {
		d, err := latency(n, f)
		r.f("%-34s %s err=%v", name, qs(d), err)
	}
	lat("PowerUsage", 3000, func() error { _, err := d.PowerUsage(); return err })
	buf := make([]nvml.FieldValue, 0, 8)
	lat("FieldValues(instant gpu)", 3000, func() error {
		buf, err = d.AppendFieldValues(buf[:0], reqs[:1])
		return err
	})
	lat("FieldValues(instant+average gpu)", 3000, func() error {
		buf, err = d.AppendFieldValues(buf[:0], reqs[:2])
		return err
	})
	lat("FieldValues(6 power fields)", 3000, func() error {
		buf, err = d.AppendFieldValues(buf[:0], reqs)
		return err
	})
	lat("FieldValues(memory average)", 3000, func() error {
		buf, err = d.AppendFieldValues(buf[:0], reqs[5:6])
		return err
	})
	sbuf := make([]nvml.Sample, 0, 256)
	lat("Samples(all, lastSeen=0)", 300, func() error {
		sbuf, err = d.AppendSamples(sbuf[:0], nvml.TotalPowerSamples, 0)
		return err
	})
	lat("Samples(none new)", 300, func() error {
		sbuf, err = d.AppendSamples(sbuf[:0], nvml.TotalPowerSamples, uint64(time.Now().UnixMicro())+1e9)
		return err
	})
	lat("Clock(SM)", 1000, func() error { _, err := d.Clock(nvml.ClockSM); return err })
	lat("Temperature", 1000, func() error { _, err := d.Temperature(); return err })
	lat("Utilization", 1000, func() error { _, _, err := d.Utilization(); return err })
	lat("ClockEventReasons", 1000, func() error { _, err := d.ClockEventReasons(); return err })
	lat("PerformanceState", 1000, func() error { _, err := d.PerformanceState(); return err })
	lat("EnforcedPowerLimit", 1000, func() error { _, err := d.EnforcedPowerLimit(); return err })
	lat("TotalEnergy", 100, func() error { _, err := d.TotalEnergy(); return err })

	// ---- energy counter: CPU vs wall, update steps, does it block other calls ----
	r.f("\n## nvmlDeviceGetTotalEnergyConsumption")
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		u0, s0 := threadUserSys()
		w0 := time.Now()
		var evs []event
		var last float64 = -1
		calls := 0
		for time.Since(w0) < 2*time.Second {
			e, err := d.TotalEnergy()
			calls++
			if err != nil {
				r.f("TotalEnergy: %v", err)
				return
			}
			if e.Joules() != last {
				evs = append(evs, event{hostUS: time.Now().UnixMicro(), v: e.Joules()})
				last = e.Joules()
			}
		}
		wall := time.Since(w0)
		u1, s1 := threadUserSys()
		user, sys := u1-u0, s1-s0
		cpu := user + sys
		r.f("%d calls in %v: wall %.0f µs/call, thread CPU %.0f µs/call (user %.0f, system %.0f) = %.0f%% of wall",
			calls, wall.Round(time.Millisecond), float64(wall.Microseconds())/float64(calls),
			float64(cpu.Microseconds())/float64(calls), float64(user.Microseconds())/float64(calls),
			float64(sys.Microseconds())/float64(calls), 100*cpu.Seconds()/wall.Seconds())
		var iv, steps []float64
		for i := 1; i < len(evs); i++ {
			iv = append(iv, float64(evs[i].hostUS-evs[i-1].hostUS)/1e3)
			steps = append(steps, (evs[i].v-evs[i-1].v)*1e3)
		}
		r.f("value changes: %d; interval ms %s; step mJ %s", len(evs)-1, qs(iv), qs(steps))
	}()
	// PowerUsage latency while another goroutine calls TotalEnergy.
	{
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_, _ = d.TotalEnergy()
				}
			}
		})
		time.Sleep(10 * time.Millisecond)
		dd, _ := latency(20000, func() error { _, err := d.PowerUsage(); return err })
		ff, _ := latency(20000, func() error {
			buf, err = d.AppendFieldValues(buf[:0], reqs[:1])
			return err
		})
		close(stop)
		wg.Wait()
		r.f("PowerUsage while TotalEnergy runs in another goroutine, µs: %s", qs(dd))
		r.f("FieldValues(instant) while TotalEnergy runs, µs:           %s", qs(ff))
	}

	// ---- the sample buffer at rest ----
	r.f("\n## nvmlDeviceGetSamples(TOTAL_POWER) at rest")
	s, err := d.Samples(nvml.TotalPowerSamples, 0)
	now := time.Now().UnixMicro()
	if err != nil || len(s) == 0 {
		r.f("samples: %d %v", len(s), err)
	} else {
		var sp, vals []float64
		sorted := true
		for i := 1; i < len(s); i++ {
			sp = append(sp, float64(int64(s[i].TimestampUS)-int64(s[i-1].TimestampUS))/1e3)
			if s[i].TimestampUS < s[i-1].TimestampUS {
				sorted = false
			}
		}
		for _, x := range s {
			vals = append(vals, x.Value/1e3)
		}
		r.f("%d samples, oldest first: %v; spacing ms %s", len(s), sorted, qs(sp))
		r.f("span %.1f ms; newest is %.1f ms before the call returned; values W %s",
			float64(s[len(s)-1].TimestampUS-s[0].TimestampUS)/1e3, float64(now-int64(s[len(s)-1].TimestampUS))/1e3, qs(vals))
		for i := 0; i < min(3, len(s)); i++ {
			r.f("  sample[%d] ts=%d value=%v", i, s[i].TimestampUS, s[i].Value)
		}
	}

	// ---- fast poll, with a load step if we have a load command ----
	r.f("\n## fast poll: PowerUsage + 6 fields every iteration, samples every 10 ms")
	const pollFor = 4 * time.Second
	names := []string{"usage", "instant.gpu", "average.gpu", "instant.module", "average.module", "instant.memory", "average.memory"}
	evs := make([][]event, len(names))  // value changes (and the first reading) of each channel
	tsCount := make([]int, len(names))  // calls whose timestamp differed from the previous call's
	valCount := make([]int, len(names)) // calls whose value differed from the previous call's
	inCall := make([]int, len(names))   // calls whose timestamp lay within the call, ±1 µs
	lastEv := make([]event, len(names))
	const maxEvents = 100000
	type sampleSeen struct {
		ts, hostUS int64
		v          float64
		call       int
	}
	var samples []sampleSeen
	var newPerCall []float64
	var lastSeen uint64
	if s, err := d.Samples(nvml.TotalPowerSamples, 0); err == nil && len(s) > 0 {
		lastSeen = s[len(s)-1].TimestampUS
	}
	var loadStart, loadEnd int64
	var loadDone chan struct{}
	if cmdline := os.Getenv("GPUWATT_LOAD_CMD"); cmdline != "" {
		loadDone = make(chan struct{})
		go func() {
			defer close(loadDone)
			time.Sleep(500 * time.Millisecond)
			f := strings.Fields(cmdline)
			cmd := exec.Command(f[0], f[1:]...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				return
			}
			if err := cmd.Start(); err != nil {
				r.f("load: %v", err)
				return
			}
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				k, v, _ := strings.Cut(sc.Text(), " ")
				x, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "start_us":
					loadStart = x
				case "end_us":
					loadEnd = x
				}
			}
			_ = cmd.Wait()
		}()
	}
	iters, sampleCalls := 0, 0
	var sbuf2 []nvml.Sample
	t0 := time.Now()
	nextSamples := t0
	for time.Since(t0) < pollFor {
		iters++
		p, err := d.PowerUsage()
		host := time.Now().UnixMicro()
		record := func(i int, ev event) {
			first := iters == 1
			dts, dv := ev.ts != lastEv[i].ts, ev.v != lastEv[i].v
			if !first && dts {
				tsCount[i]++
			}
			if !first && dv {
				valCount[i]++
			}
			if (first || dv) && len(evs[i]) < maxEvents {
				evs[i] = append(evs[i], ev)
			}
			lastEv[i] = ev
		}
		before := time.Now().UnixMicro()
		if err == nil {
			record(0, event{host, p.Watts(), 0})
		}
		buf, err = d.AppendFieldValues(buf[:0], reqs)
		host = time.Now().UnixMicro()
		if err == nil {
			for i, fv := range buf {
				if fv.Err != nil {
					continue
				}
				record(i+1, event{host, fv.Value / 1e3, fv.TimestampUS})
				if fv.TimestampUS >= before-1 && fv.TimestampUS <= host+1 {
					inCall[i+1]++
				}
			}
		}
		if time.Now().After(nextSamples) {
			nextSamples = nextSamples.Add(10 * time.Millisecond)
			sampleCalls++
			sbuf2, err = d.AppendSamples(sbuf2[:0], nvml.TotalPowerSamples, lastSeen)
			host := time.Now().UnixMicro()
			if err == nil {
				newPerCall = append(newPerCall, float64(len(sbuf2)))
				for _, x := range sbuf2 {
					samples = append(samples, sampleSeen{int64(x.TimestampUS), host, x.Value / 1e3, sampleCalls})
					lastSeen = max(lastSeen, x.TimestampUS)
				}
			}
		}
	}
	elapsed := time.Since(t0)
	if loadDone != nil {
		<-loadDone
	}
	r.f("%d iterations in %v (%.2f µs each); %d samples calls", iters, elapsed.Round(time.Millisecond),
		float64(elapsed.Microseconds())/float64(iters), sampleCalls)
	if loadStart != 0 {
		r.f("load kernels ran from +%.1f ms to +%.1f ms (poll start = 0)",
			float64(loadStart-t0.UnixMicro())/1e3, float64(loadEnd-t0.UnixMicro())/1e3)
	}
	for i, name := range names {
		ev := evs[i]
		if len(ev) < 2 {
			r.f("%-15s %d distinct readings", name, len(ev))
			continue
		}
		var iv []float64
		for j := 1; j < len(ev); j++ {
			iv = append(iv, float64(ev[j].hostUS-ev[j-1].hostUS)/1e3)
		}
		r.f("%-15s value changes %d of %d calls; interval between changes ms %s", name, valCount[i], iters, qs(iv))
		if i > 0 {
			r.f("%-15s timestamp changed on %d of %d calls; timestamp within the call's own [start, end] on %d",
				"", tsCount[i], iters, inCall[i])
		}
	}
	if len(samples) > 1 {
		var sp, lag []float64
		dup := 0
		seen := map[int64]bool{}
		for j, x := range samples {
			if seen[x.ts] {
				dup++
			}
			seen[x.ts] = true
			lag = append(lag, float64(x.hostUS-x.ts)/1e3)
			if j > 0 {
				sp = append(sp, float64(x.ts-samples[j-1].ts)/1e3)
			}
		}
		r.f("samples: %d new in %d calls (new per call %s); duplicates %d", len(samples), sampleCalls, qs(newPerCall), dup)
		r.f("samples: spacing ms %s; lag when first seen ms %s", qs(sp), qs(lag))
	}
	// Time series around the load step: every change, in ms since the poll started.
	if loadStart != 0 {
		from, to := loadStart-300_000, loadEnd+1_300_000
		r.f("\n## step response (t ms since poll start when a new value was first seen: value W)")
		for i, name := range names {
			var sb strings.Builder
			for _, x := range evs[i] {
				if x.hostUS < from || x.hostUS > to {
					continue
				}
				fmt.Fprintf(&sb, " %.0f:%.1f", float64(x.hostUS-t0.UnixMicro())/1e3, x.v)
			}
			r.f("%s:%s", name, sb.String())
		}
		var sb strings.Builder
		for _, x := range samples {
			if x.ts < from || x.ts > to {
				continue
			}
			fmt.Fprintf(&sb, " %.0f:%.1f", float64(x.ts-t0.UnixMicro())/1e3, x.v)
		}
		r.f("samples (driver ts):%s", sb.String())
	}
}
