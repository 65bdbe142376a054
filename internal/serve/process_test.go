package serve

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/snapshot"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TestProcessSplitAgainstTruth: the twin runs two processes; serve's split of the energy
// above the idle floor by SM-utilisation share gives each its true energy where both draw
// the same power per percent of SM use, and sums to the board's energy with the
// unattributed part. Where they do not (the second draws twice the power per percent),
// the split misses by what the shares say, no more: the limit docs/serve.md states.
func TestProcessSplitAgainstTruth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		powB    float64       // process B's power at 30 % SM use (A: 240 W at 60 %)
		counter time.Duration // the board counter's update period (0: the preset's 100 ms)
		exact   bool
	}{
		{"equal efficiency", 120, 0, true},
		{"B twice the power per SM share", 240, 0, false},
		// The counter in 2.5 s steps (an H200's is read about every 2 s): a step's energy is
		// split by the use over the seconds it covers (split by the last second's use, B's
		// first 0.5 s went to A and A's last to B: fails before).
		{"counter in 2.5 s steps", 120, 2500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := sim.Preset("h100")
			if err != nil {
				t.Fatal(err)
			}
			// Idle at rest = active idle: the board's context overhead is nobody's and
			// the test's truth has none (docs/serve.md: where it has, the split gives it
			// to the processes by their shares).
			cfg.ActiveIdle = cfg.Idle
			if tc.counter > 0 {
				sc := cfg.Sensors["energy.total"]
				sc.Model.Period = tc.counter
				cfg.Sensors["energy.total"] = sc
			}
			cfg.Processes = []sim.Process{
				{PID: 101, Comm: "train", T: 3 * time.Second, Duration: 12 * time.Second, SMUtil: 60, Power: 240},
				{PID: 202, Comm: "infer", T: 7 * time.Second, Duration: 12 * time.Second, SMUtil: 30, Power: units.Power(tc.powB)},
			}
			s, v, sys := virtualServer(t, cfg, Options{})
			dev := sys.Device(0)
			runTo(s, v, 25*time.Second)
			g := gpuOf(t, s.Snapshot(), 0)
			if len(g.Processes) != 2 {
				t.Fatalf("processes %+v, want 2", g.Processes)
			}
			sum := 0.0
			for _, p := range g.Processes {
				sum += p.EnergyJ
			}
			// The split starts at the first update (1 s): the board's energy since then.
			total := g.EnergyJ - s.firstSplitJ(t)
			if d := sum + g.UnattributedJ - total; math.Abs(d) > 1e-6*total {
				t.Errorf("processes %.1f J + unattributed %.1f J = %.1f J, the board's %.1f J", sum, g.UnattributedJ, sum+g.UnattributedJ, total)
			}
			m, _ := dev.Model("energy.total")
			trueA := m.GainOrOne() * float64(dev.TrueProcessEnergy(101, 0, 25*time.Second))
			trueB := m.GainOrOne() * float64(dev.TrueProcessEnergy(202, 0, 25*time.Second))
			// What the split gives by construction: while both run (7-15 s), shares 2:1
			// of their summed power; alone, each its own.
			both := (240 + tc.powB) * 8
			wantA := 240*4 + both*2/3
			wantB := tc.powB*4 + both/3
			for _, p := range g.Processes {
				tru, want := trueA, m.GainOrOne()*wantA
				if p.PID == 202 {
					tru, want = trueB, m.GainOrOne()*wantB
				}
				t.Logf("pid %d %s: %.1f J, truth %.1f J (%+.1f %%), the split's own expectation %.1f J", p.PID, p.Comm, p.EnergyJ, tru, 100*(p.EnergyJ/tru-1), want)
				if math.Abs(p.EnergyJ/want-1) > 0.03 {
					t.Errorf("pid %d: %.1f J, want the split's %.1f J within 3 %%", p.PID, p.EnergyJ, want)
				}
				if tc.exact && math.Abs(p.EnergyJ/tru-1) > 0.03 {
					t.Errorf("pid %d: %.1f J, truth %.1f J: more than 3 %% off", p.PID, p.EnergyJ, tru)
				}
			}
		})
	}
}

// firstSplitJ is the GPU 0 energy at which the split began.
func (s *Server) firstSplitJ(t *testing.T) float64 {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gpus[0].splitBaseJ
}

// blockingLister's Processes blocks until release is closed, as the driver's per-process
// call did for seconds on four H200s while GEMM processes created their contexts.
type blockingLister struct {
	inner   gpu.ProcessLister
	entered chan struct{}
	release chan struct{}
}

func (b *blockingLister) Processes() ([]gpu.ProcessUse, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.inner.Processes()
}

// TestScrapeNeverWaitsForTheDriver: while an update is held up in the driver's process
// call, a snapshot (what a scrape reads) answers at once with the last update's figures
// (it waited for the update's lock before: six scrapes in a row timed out at 2 s, results/
// nvidia-h200/2026-11-28-four-gpus), and the update, once the call returns, still splits
// the energy among the processes.
func TestScrapeNeverWaitsForTheDriver(t *testing.T) {
	cfg, err := sim.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Processes = []sim.Process{{PID: 101, Comm: "train", T: 2 * time.Second, Duration: 20 * time.Second, SMUtil: 60, Power: 240}}
	s, v, _ := virtualServer(t, cfg, Options{})
	runTo(s, v, 5*time.Second)
	g := s.gpus[0]
	bl := &blockingLister{inner: g.procs, entered: make(chan struct{}, 1), release: make(chan struct{})}
	g.procs = bl
	v.AdvanceTo(6 * time.Second)
	done := make(chan struct{})
	go func() { s.Update(); close(done) }()
	<-bl.entered
	snap := make(chan []snapshot.GPU, 1)
	go func() { snap <- s.Snapshot() }()
	select {
	case got := <-snap:
		if len(got) != 1 || !got[0].Up {
			t.Errorf("snapshot during the driver's call: %+v", got)
		}
	case <-time.After(2 * time.Second):
		t.Error("a snapshot waited for the driver's process call")
	}
	close(bl.release)
	<-done
	runTo(s, v, 15*time.Second)
	if ps := gpuOf(t, s.Snapshot(), 0).Processes; len(ps) != 1 || ps[0].EnergyJ <= 0 {
		t.Errorf("processes after the held-up update: %+v", ps)
	}
}
