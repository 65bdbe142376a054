package correct_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
)

// h200Stamps are sample times on a 20 ms grid stamped as the H200's driver stamps them
// (results/nvidia-h200/2026-11-21-sensor-run1): 75 % on the grid (±0.3 ms), 20 % late by 2
// to 11 ms, 5 % early by 3 to 5 ms; with a slow drift of the phase.
func h200Stamps(n int, seed uint64) (grid, stamps []time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 1))
	const T = 20 * time.Millisecond
	t0 := 7*time.Millisecond + 300*time.Millisecond
	for k := range n {
		g := t0 + time.Duration(k)*T + time.Duration(float64(k)*0.5e3) // 0.5 µs per sample of drift
		s := g + time.Duration((rng.Float64()-0.5)*0.6e6)
		switch u := rng.Float64(); {
		case u < 0.20:
			s = g + 2*time.Millisecond + time.Duration(rng.Float64()*9e6)
		case u < 0.25:
			s = g - 3*time.Millisecond - time.Duration(rng.Float64()*2e6)
		}
		grid, stamps = append(grid, g), append(stamps, s)
	}
	return grid, stamps
}

func TestLatticeSnapsH200Stamps(t *testing.T) {
	grid, stamps := h200Stamps(2500, 1)
	l, ok := correct.FitLattice(stamps, 20190*time.Microsecond) // the median interval's guess
	if !ok {
		t.Fatalf("no grid: R %.2f", l.R)
	}
	t.Logf("T %v, R %.2f, on grid %.2f, early %v", l.Period, l.R, l.OnGrid, l.Early)
	if d := l.Period - 20*time.Millisecond; d < -time.Microsecond || d > 2*time.Microsecond {
		t.Errorf("period %v, want 20 ms (+0.5 µs drift)", l.Period)
	}
	bad := 0
	for i, s := range stamps {
		if d := l.Snap(s) - grid[i]; d < -time.Millisecond || d > time.Millisecond {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d stamps snapped to the wrong instant", bad, len(stamps))
	}
	if n := l.Next(grid[100] + time.Millisecond); n-grid[101] < -time.Millisecond || n-grid[101] > time.Millisecond {
		t.Errorf("Next: %v, want %v", n, grid[101])
	}
}

func TestLatticeRefusesRandomStamps(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	var ts []time.Duration
	t0 := time.Duration(0)
	for range 500 {
		t0 += time.Duration(5e6 + rng.Float64()*30e6)
		ts = append(ts, t0)
	}
	if l, ok := correct.FitLattice(ts, 20*time.Millisecond); ok {
		t.Errorf("a grid in random stamps: %+v", l)
	}
	if _, ok := correct.FitLattice(ts[:10], 20*time.Millisecond); ok {
		t.Error("a grid from 10 stamps")
	}
}
