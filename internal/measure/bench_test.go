package measure

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
)

// BenchmarkSamplerCPU is measure's recording cost on a sim H200 (one GPU, and two) on a real
// clock for 10 s of wall time after 2 s of learning: the process's CPU over wall time, as %
// of one core, side by side for
//
//   - default: the lean channel set (--channels default) polled as --poll lean, lanes on
//     goroutines;
//   - all+gpucpu: every channel with each lane on an OS thread of its own (measure's
//     defaults before issue 35).
//
// The sim computes its sensor models on each read, so this is measure's machinery and the
// sim, not NVML's calls. Run:
//
//	go test ./internal/measure/ -run '^$' -bench BenchmarkSamplerCPU -benchtime 1x -count 3
func BenchmarkSamplerCPU(b *testing.B) {
	for _, gpus := range []int{1, 2} {
		for _, v := range []struct {
			name     string
			channels []string
			thread   bool
		}{{"default", []string{DefaultChannels}, false}, {"all+gpucpu", nil, true}} {
			b.Run(v.name+"/gpus="+string(rune('0'+gpus)), func(b *testing.B) {
				cfg, err := sim.Preset("h200")
				if err != nil {
					b.Fatal(err)
				}
				cfg.GPUs = gpus
				for b.Loop() {
					clk := clock.NewReal()
					sys, err := sim.Open(clk, cfg)
					if err != nil {
						b.Fatal(err)
					}
					var all []sensor.Sensor
					for _, d := range sys.Devices() {
						all = append(all, d.Sensors()...)
					}
					// default: measure's own poll (--poll lean); all+gpucpu: adaptive, as before.
					smp := sensor.New(clk, SelectSensors(all, v.channels), sensor.Options{ThreadCPU: v.thread, SlowShare: sensor.DefaultSlowShare, Lean: !v.thread})
					if err := smp.Start(context.Background()); err != nil {
						b.Fatal(err)
					}
					time.Sleep(2 * time.Second)
					c0, w0 := sensor.ProcessCPU(), time.Now()
					time.Sleep(10 * time.Second)
					c1, w1 := sensor.ProcessCPU(), time.Now()
					smp.Stop()
					sys.Close()
					b.ReportMetric(100*(c1-c0).Seconds()/w1.Sub(w0).Seconds(), "%core")
				}
			})
		}
	}
}
