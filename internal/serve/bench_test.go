package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
)

// eightGPUs is an 8-GPU sim h200 host with a load and two processes per GPU, so that
// every figure (corrected power, the split) is worked out.
func eightGPUs(b *testing.B) sim.Config {
	cfg, err := sim.Preset("h200")
	if err != nil {
		b.Fatal(err)
	}
	cfg.GPUs = 8
	for g := 0; g < 8; g++ {
		cfg.Processes = append(cfg.Processes,
			sim.Process{GPU: g, PID: 1000 + g, Comm: "train", T: time.Second, Duration: 100 * time.Hour, SMUtil: 70, Power: 300},
			sim.Process{GPU: g, PID: 2000 + g, Comm: "infer", T: 2 * time.Second, Duration: 100 * time.Hour, SMUtil: 20, Power: 80})
	}
	return cfg
}

// BenchmarkServe8GPUs measures serve on an 8-GPU sim host:
//
//   - cpu/poll=P: serve on a real clock at its default (lean: the buffer and the gauges
//     every second, the counter every 100 ms on the sim), and every channel at 100 ms (the
//     default before issue 35), 250 and 500 ms, for 10 s of wall time: the
//     process's CPU time over wall time, as % of one core ("%core"), and per poll of one
//     GPU ("us/gpu-poll": every channel of the GPU read once). The sim's reads are computed
//     (its sensor models), so this is an upper bound of what NVML's ~1 µs calls cost, less
//     the driver's own time (the energy counter's ~3 ms call, polled every ~1.9 s);
//     "%core-own" leaves out the time spent inside the sim's reads: serve's own machinery
//     (scheduling the polls, filing readings, the corrections, the split).
//   - scrape: one GET /metrics of the 8 GPUs ("ms/scrape").
//   - soak: an hour of virtual time (polls every 100 ms, an update a second); the live
//     heap after GC at 10 and at 60 minutes ("heap10m-MB", "heap60m-MB") and the largest
//     ring ("ring-readings").
//
// Run: go test ./internal/serve/ -run '^$' -bench BenchmarkServe8GPUs -benchtime 1x
func BenchmarkServe8GPUs(b *testing.B) {
	for _, poll := range []time.Duration{0, DefaultPoll, 250 * time.Millisecond, 500 * time.Millisecond} {
		name, popt := "lean", (*sensor.Options)(nil) // 0: serve's default, --poll lean
		if poll > 0 {
			name, popt = poll.String(), &sensor.Options{Mode: sensor.Fixed, Interval: poll}
		}
		b.Run("cpu/poll="+name, func(b *testing.B) {
			cfg := eightGPUs(b)
			for b.Loop() {
				clk := clock.NewReal()
				simSys, err := sim.Open(clk, cfg)
				if err != nil {
					b.Fatal(err)
				}
				var inRead atomic.Int64
				sys := timedSystem(simSys, &inRead)
				ctx, cancel := context.WithCancel(context.Background())
				s, err := New(ctx, sys, clk, Options{Listen: "127.0.0.1:0", Poll: popt})
				if err != nil {
					b.Fatal(err)
				}
				ln, err := Listen(Options{Listen: "127.0.0.1:0"})
				if err != nil {
					b.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx, ln, nil) }()
				// Past the start: the first grid fit of each GPU's buffer (then once a minute).
				time.Sleep(3 * time.Second)
				c0, w0 := sensor.ProcessCPU(), time.Now()
				p0, r0 := polls(s), inRead.Load()
				time.Sleep(10 * time.Second)
				c1, w1 := sensor.ProcessCPU(), time.Now()
				p1, r1 := polls(s), inRead.Load()
				cancel()
				<-done
				sys.Close()
				share := (c1 - c0).Seconds() / w1.Sub(w0).Seconds()
				b.ReportMetric(100*share, "%core")
				// Less the time spent inside the sim's reads (its sensor models, computed on
				// each call; NVML's calls cost ~1 µs, the energy counter's ~3 ms):
				// serve's own machinery.
				own := ((c1 - c0).Seconds() - time.Duration(r1-r0).Seconds()) / w1.Sub(w0).Seconds()
				b.ReportMetric(100*own, "%core-own")
				// One poll of a GPU: its every channel once (17 on the sim's h200).
				gpuPolls := float64(p1-p0) / 17
				b.ReportMetric((c1-c0).Seconds()/gpuPolls*1e6, "us/gpu-poll")
			}
		})
	}
	b.Run("scrape", func(b *testing.B) {
		s, v, _ := virtualServer(b, eightGPUs(b), Options{})
		runTo(s, v, 5*time.Second)
		h := s.Handler()
		var total time.Duration
		n := 0
		for b.Loop() {
			rec := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			total += time.Since(t0)
			n++
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
		b.ReportMetric(total.Seconds()/float64(n)*1e3, "ms/scrape")
	})
	b.Run("soak", func(b *testing.B) {
		for b.Loop() {
			s, v, _ := virtualServer(b, eightGPUs(b), Options{})
			heap := func() float64 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return float64(m.HeapAlloc) / (1 << 20)
			}
			runTo(s, v, 10*time.Minute)
			h10 := heap()
			runTo(s, v, time.Hour)
			h60 := heap()
			ring := 0
			for _, g := range s.gpus {
				ring = max(ring, len(g.ring))
			}
			b.ReportMetric(h10, "heap10m-MB")
			b.ReportMetric(h60, "heap60m-MB")
			b.ReportMetric(float64(ring), "ring-readings")
		}
	})
}

// polls is the sampler's driver calls so far, every GPU together.
func polls(s *Server) int64 {
	var n int64
	for _, ch := range s.sampler.Stats() {
		if ch.Stats != nil {
			n += int64(ch.Stats.Polls)
		}
	}
	return n
}

// timedSystem wraps sys so that the time spent inside every sensor read adds to *in.
func timedSystem(sys gpu.System, in *atomic.Int64) gpu.System {
	var devs []gpu.Device
	for _, d := range sys.Devices() {
		devs = append(devs, &timedDevice{d, in})
	}
	return wrapSys{sys, devs}
}

type timedDevice struct {
	gpu.Device
	in *atomic.Int64
}

func (d *timedDevice) Sensors() []sensor.Sensor {
	var out []sensor.Sensor
	for _, s := range d.Device.Sensors() {
		out = append(out, timedSensor{s, d.in})
	}
	return out
}

func (d *timedDevice) Processes() ([]gpu.ProcessUse, error) {
	return d.Device.(gpu.ProcessLister).Processes()
}

type timedSensor struct {
	sensor.Sensor
	in *atomic.Int64
}

func (s timedSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	t0 := time.Now()
	out, err := s.Sensor.Read(dst)
	s.in.Add(int64(time.Since(t0)))
	return out, err
}

func (s timedSensor) PeriodHint() time.Duration {
	if h, ok := s.Sensor.(sensor.PeriodHinter); ok {
		return h.PeriodHint()
	}
	return 0
}
