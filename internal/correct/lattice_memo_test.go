package correct

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestFitLatticeKept: a fit kept serves, bit for bit, what fitting again gives, for stamps
// asked for again; stamps that differ in one reading, or another guess, are fitted anew; a
// caller changing its stamps afterwards does not change what is kept.
func TestFitLatticeKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 7))
	stamps := func(n int, T time.Duration) []time.Duration {
		ts := make([]time.Duration, n)
		for i := range ts {
			ts[i] = time.Duration(i)*T + time.Duration(rng.IntN(int(T/10)))
			if rng.IntN(4) == 0 {
				ts[i] += T / 3 // stamped late, off the grid
			}
		}
		return ts
	}
	for trial := range 20 {
		T := 20*time.Millisecond + time.Duration(trial)*37*time.Microsecond
		ts := stamps(200+50*trial, T)
		want, wok := fitLattice(ts, T)
		for range 2 {
			if got, ok := FitLattice(ts, T); ok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d: kept %+v (%v), fitted %+v (%v)", trial, got, ok, want, wok)
			}
		}
		other := append([]time.Duration(nil), ts...)
		other[len(other)/2] += T / 2
		w2, ok2 := fitLattice(other, T)
		if got, ok := FitLattice(other, T); ok != ok2 || !reflect.DeepEqual(got, w2) {
			t.Fatalf("trial %d, one stamp moved: %+v (%v), fitted %+v (%v)", trial, got, ok, w2, ok2)
		}
		w3, ok3 := fitLattice(ts, T*101/100)
		if got, ok := FitLattice(ts, T*101/100); ok != ok3 || !reflect.DeepEqual(got, w3) {
			t.Fatalf("trial %d, another guess: %+v (%v), fitted %+v (%v)", trial, got, ok, w3, ok3)
		}
		ts[0] -= T // the caller's slice changes: the fit kept for the old stamps must not serve
		w4, ok4 := fitLattice(ts, T)
		if got, ok := FitLattice(ts, T); ok != ok4 || !reflect.DeepEqual(got, w4) {
			t.Fatalf("trial %d, caller's stamps changed: %+v (%v), fitted %+v (%v)", trial, got, ok, w4, ok4)
		}
	}
}

// TestLatticeMemoBounded: the memo keeps at most latticeMemoLen fits and latticeMemoStamps
// stamps in all, dropping the oldest, and keeps no fit of more stamps than that (it lives
// as long as the process).
func TestLatticeMemoBounded(t *testing.T) {
	var m latticeMemo
	held := func() (n int) {
		for _, f := range m.fits {
			n += len(f.ts)
		}
		return n
	}
	for i := range 40 {
		ts := make([]time.Duration, 1000+i)
		ts[0] = time.Duration(i)
		m.keep(ts, time.Millisecond, Lattice{}, true)
	}
	if len(m.fits) != latticeMemoLen || len(m.fits[len(m.fits)-1].ts) != 1039 {
		t.Fatalf("%d fits kept, the newest of %d stamps; want %d, the newest 1039", len(m.fits), len(m.fits[len(m.fits)-1].ts), latticeMemoLen)
	}
	big := make([]time.Duration, latticeMemoStamps*2/5)
	for range 3 {
		m.keep(big, time.Millisecond, Lattice{}, true)
		if held() > latticeMemoStamps {
			t.Fatalf("%d stamps held, more than %d", held(), latticeMemoStamps)
		}
	}
	n := len(m.fits)
	m.keep(make([]time.Duration, latticeMemoStamps+1), time.Millisecond, Lattice{}, true)
	if len(m.fits) != n || held() > latticeMemoStamps {
		t.Errorf("a fit of more stamps than the bound was kept (%d fits, %d stamps)", len(m.fits), held())
	}
}
