package energy_test

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// bigTrace is a gpuwatt CSV of n power.usage readings 100 ms apart, its update period (a
// 100 W floor with 300 W bursts), as `gpuwatt energy --trace` reads it.
func bigTrace(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 48)
	b.WriteString(trace.CSVHeader + "\n")
	for i := 0; i < n; i++ {
		w := 100.0
		if i/50%4 == 1 {
			w = 300
		}
		w += float64(i%7) * 0.125
		fmt.Fprintf(&b, "%d.%06d,0,power.usage,%g,%g,W,\n", i/10, i%10*100000, w, w)
	}
	return b.Bytes()
}

// BenchmarkEnergyPipeline is `gpuwatt energy` on a large trace, in four stages: read
// (trace.Read of the CSV into Samples, as the other verbs read a trace), compact
// (trace.ReadCompact: the columns `energy` reads into), none (the compact read, pick the
// channel, and the estimator with the readings integrated as they are) and auto (the same
// with the channel's guessed model, a 1 s boxcar, inverted, as `energy` does by default). It reports the memory live at the end
// per sample (the trace and the estimate held), the peak heap per sample (sampled every
// 5 ms while it runs), and samples per CPU second; run it with -cpu 1:
//
//	go test ./internal/energy -run XXX -bench EnergyPipeline -benchtime 2x -cpu 1
func BenchmarkEnergyPipeline(b *testing.B) {
	const n = 1 << 18
	in := bigTrace(n)
	for _, stage := range []string{"read", "compact", "none", "auto"} {
		b.Run(stage, func(b *testing.B) {
			var peak uint64
			var live float64
			b.SetBytes(int64(len(in)))
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				runtime.GC()
				var m0 runtime.MemStats
				runtime.ReadMemStats(&m0)
				stop := make(chan struct{})
				done := make(chan uint64)
				go func() {
					var hi uint64
					var m runtime.MemStats
					t := time.NewTicker(5 * time.Millisecond)
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
				read := trace.ReadCompact
				if stage == "read" {
					read = trace.Read
				}
				tr, err := read(bytes.NewReader(in), "big.csv")
				if err != nil {
					b.Fatal(err)
				}
				var est energy.Estimate
				if stage != "read" && stage != "compact" {
					name, err := correct.PickChannel(tr, 0)
					if err != nil {
						b.Fatal(err)
					}
					sp, err := correct.ParseSpec(stage)
					if err != nil {
						b.Fatal(err)
					}
					s := correct.Channel(tr, 0, name)
					est = energy.Region(tr, 0, s[len(s)/10].T, s[len(s)*9/10].T, energy.Options{Channel: name, Sensor: &sp, Invert: true})
					if est.EnergyJ <= 0 {
						b.Fatalf("energy %v: %v %+v", est.EnergyJ, est.Method, est.Warnings)
					}
				}
				runtime.GC()
				var m1 runtime.MemStats
				runtime.ReadMemStats(&m1)
				close(stop)
				peak = max(peak, <-done)
				live = float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
				runtime.KeepAlive(tr)
				runtime.KeepAlive(est)
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(live/n, "live-B/sample")
			b.ReportMetric(float64(peak)/n, "peak-B/sample")
			// Per CPU second (the process's user and system time, GC included): a figure
			// per core that a shared, loaded host does not move as it moves wall time.
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "samples/cpu-s")
		})
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
