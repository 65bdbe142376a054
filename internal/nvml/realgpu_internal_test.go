//go:build linux

package nvml

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRealGPUSamplesRaw times the two ways of calling nvmlDeviceGetSamples on a real GPU:
// count first (NULL buffer) then fetch, or fetch straight into a large buffer. It runs only
// with GPUWATT_REAL_GPU=1 and writes $OUT/real_nvml_raw.txt when $OUT is set.
func TestRealGPUSamplesRaw(t *testing.T) {
	if os.Getenv("GPUWATT_REAL_GPU") != "1" {
		t.Skip("set GPUWATT_REAL_GPU=1 to run on a real GPU")
	}
	var b strings.Builder
	logf := func(format string, a ...any) {
		t.Logf(format, a...)
		fmt.Fprintf(&b, format+"\n", a...)
	}
	defer func() {
		if out := os.Getenv("OUT"); out != "" {
			_ = os.WriteFile(filepath.Join(out, "real_nvml_raw.txt"), []byte(b.String()), 0o644)
		}
	}()
	l, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Shutdown() }()
	d, err := l.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	s := new(scratch)
	s.samples = make([]sample, 512)
	f := l.deviceGetSamples
	call := func(last uint64, n int) (Return, int) {
		s.u32, s.u32b = uint32(n), 0
		var buf *sample
		if n > 0 {
			buf = &s.samples[0]
		}
		r := f(&s.args, d.h, uint32(TotalPowerSamples), last, &s.u32b, &s.u32, buf)
		return r, int(s.u32)
	}
	r, n := call(0, 0)
	logf("count query, lastSeen=0: %v count=%d valueType=%d", r, n, s.u32b)
	r, n = call(0, 512)
	newest := uint64(time.Now().UnixMicro())
	if r == Success && n > 0 {
		newest = s.samples[n-1].timeStamp
	}
	logf("fetch n=512, lastSeen=0: %v got=%d newest=%d", r, n, newest)
	r, n = call(newest, 0)
	logf("count query, lastSeen=newest: %v count=%d", r, n)
	r, n = call(newest-30_000, 0)
	logf("count query, lastSeen=newest-30ms: %v count=%d", r, n)
	r, n = call(0, 64)
	logf("fetch n=64 (fewer than held), lastSeen=0: %v got=%d", r, n)

	time1 := func(name string, reps int, fn func()) {
		u0, s0 := rusageThread()
		var ds []float64
		w0 := time.Now()
		for range reps {
			t0 := time.Now()
			fn()
			ds = append(ds, float64(time.Since(t0).Nanoseconds())/1e3)
		}
		wall := time.Since(w0)
		u1, s1 := rusageThread()
		slices.Sort(ds)
		logf("%-40s median %.1f µs (p10 %.1f, p90 %.1f); thread CPU %.0f%% of wall (user %.1f, sys %.1f µs/call)",
			name, ds[len(ds)/2], ds[len(ds)/10], ds[len(ds)*9/10], 100*float64(u1-u0+s1-s0)/float64(wall),
			float64((u1-u0).Microseconds())/float64(reps), float64((s1-s0).Microseconds())/float64(reps))
	}
	time1("count query (NULL buffer), lastSeen=0", 200, func() { call(0, 0) })
	time1("count query, nothing new", 200, func() { call(^uint64(0)>>1, 0) })
	time1("fetch 512-entry buffer, lastSeen=0", 200, func() { call(0, 512) })
	time1("fetch 128-entry buffer, lastSeen=0", 200, func() { call(0, 128) })
	time1("fetch 128-entry buffer, nothing new", 200, func() { call(^uint64(0)>>1, 128) })
	var out []Sample
	time1("AppendSamples (one call), lastSeen=0", 200, func() { out, _ = d.AppendSamples(out[:0], TotalPowerSamples, 0) })
	time1("AppendSamples, nothing new", 200, func() {
		out, _ = d.AppendSamples(out[:0], TotalPowerSamples, ^uint64(0)>>1)
	})
	// Does the cost depend on how many samples come back?
	for _, back := range []uint64{20_000, 100_000, 1_000_000} {
		time1(fmt.Sprintf("fetch 128, lastSeen=now-%dms", back/1000), 100, func() {
			call(uint64(time.Now().UnixMicro())-back, 128)
		})
	}
	// Utilization sample buffer, for comparison.
	time1("fetch 128, GPU utilization samples", 100, func() {
		s.u32 = 128
		f(&s.args, d.h, uint32(GPUUtilizationSamples), 0, &s.u32b, &s.u32, &s.samples[0])
	})
}

func rusageThread() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
