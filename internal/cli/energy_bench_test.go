package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// BenchmarkEnergyVerb is `gpuwatt energy --trace FILE` as a user runs it (the default
// sensor model, the whole trace, the text on stdout), on three gpuwatt CSVs of 2^18
// readings: usage, power.usage alone 100 ms apart (energy's BenchmarkEnergyPipeline's
// trace: its 1 s boxcar deconvolved), instant, power.instant alone 100 ms apart (its 25 ms
// window held over its period), and ring, a trace as measure records it: the 20 ms driver
// ring with driver stamps, with power.usage, power.instant, the energy counter and the SM
// clock every 100 ms (the figure then comes from the ring calibrated to the counter, the
// ring's inversion beside it). It
// reports the peak heap per reading (sampled every 2 ms, garbage not yet collected
// included: what the process needs), and readings per CPU second; run it with -cpu 1:
//
//	go test ./internal/cli -run XXX -bench EnergyVerb -benchtime 4x -cpu 1
func BenchmarkEnergyVerb(b *testing.B) {
	const n = 1 << 18
	for _, kind := range []string{"usage", "instant", "ring"} {
		b.Run(kind, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "big.csv")
			if err := os.WriteFile(path, benchTrace(kind, n), 0o644); err != nil {
				b.Fatal(err)
			}
			var peak uint64
			cpu0 := cpuTime()
			for range b.N {
				runtime.GC()
				var m0 runtime.MemStats
				runtime.ReadMemStats(&m0)
				stop, done := make(chan struct{}), make(chan uint64)
				go func() {
					var hi uint64
					var m runtime.MemStats
					t := time.NewTicker(2 * time.Millisecond)
					defer t.Stop()
					for {
						runtime.ReadMemStats(&m)
						hi = max(hi, m.HeapAlloc-min(m.HeapAlloc, m0.HeapAlloc))
						select {
						case <-stop:
							done <- hi
							return
						case <-t.C:
						}
					}
				}()
				var out, errb bytes.Buffer
				a := &App{Stdout: &out, Stderr: &errb}
				if code := a.Main(context.Background(), []string{"energy", "--trace", path}); code != 0 {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
				close(stop)
				peak = max(peak, <-done)
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(peak)/n, "peak-B/sample")
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "samples/cpu-s")
		})
	}
}

// benchTrace is BenchmarkEnergyVerb's trace of about n readings (kind usage, instant or ring).
func benchTrace(kind string, n int) []byte {
	var buf bytes.Buffer
	buf.WriteString(trace.CSVHeader + "\n")
	if kind == "usage" || kind == "instant" {
		ch := "power." + kind
		for i := 0; i < n; i++ {
			w := 100.0
			if i/50%4 == 1 {
				w = 300
			}
			w += float64(i%7) * 0.125
			fmt.Fprintf(&buf, "%d.%06d,0,%s,%g,%g,W,\n", i/10, i%10*100000, ch, w, w)
		}
		return buf.Bytes()
	}
	const epochUS = 1767225600000000
	e := 0.0
	for i, k := 0, 0; k < n; i++ {
		us := int64(i) * 20000 // the ring's 20 ms
		busy := us/5000000%4 == 1
		p := 100.0
		if busy {
			p = 300
		}
		p += float64(i%13) * 0.05
		e += p * 0.02
		fmt.Fprintf(&buf, "%d.%06d,0,power.samples,%.3f,%.3f,W,%d\n", us/1e6, us%1e6, p, p, epochUS+us)
		k++
		if i%5 == 0 {
			clk := 345e6
			if busy {
				clk = 1980e6
			}
			fmt.Fprintf(&buf, "%d.%06d,0,power.usage,%.3f,%.3f,W,\n", (us+1000)/1e6, (us+1000)%1e6, p, p)
			fmt.Fprintf(&buf, "%d.%06d,0,power.instant,%.3f,%.3f,W,\n", (us+2000)/1e6, (us+2000)%1e6, p, p)
			fmt.Fprintf(&buf, "%d.%06d,0,energy.total,,%.3f,J,\n", (us+3000)/1e6, (us+3000)%1e6, e)
			fmt.Fprintf(&buf, "%d.%06d,0,clock.sm,,%.0f,Hz,\n", (us+4000)/1e6, (us+4000)%1e6, clk)
			k += 4
		}
	}
	return buf.Bytes()
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
