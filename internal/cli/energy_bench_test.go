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

	"gpuwatt/internal/trace"
)

// BenchmarkEnergyVerb is `gpuwatt energy --trace big.csv` as a user runs it (the default
// sensor model, the whole trace, the text on stdout), on a gpuwatt CSV of 262 144
// power.usage readings 100 ms apart (energy's BenchmarkEnergyPipeline's trace, from a
// file). It reports the peak heap per reading (sampled every 2 ms, garbage not yet
// collected included: what the process needs), and readings per CPU second; run it with
// -cpu 1:
//
//	go test ./internal/cli -run XXX -bench EnergyVerb -benchtime 4x -cpu 1
func BenchmarkEnergyVerb(b *testing.B) {
	const n = 1 << 18
	var buf bytes.Buffer
	buf.WriteString(trace.CSVHeader + "\n")
	for i := 0; i < n; i++ {
		w := 100.0
		if i/50%4 == 1 {
			w = 300
		}
		w += float64(i%7) * 0.125
		fmt.Fprintf(&buf, "%d.%06d,0,power.usage,%g,%g,W,\n", i/10, i%10*100000, w, w)
	}
	path := filepath.Join(b.TempDir(), "big.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
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
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
