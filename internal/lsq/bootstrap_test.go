package lsq

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestResampleSeeded(t *testing.T) {
	a, b := Resample(10, 5, 7), Resample(10, 5, 7)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("seed 7 gave two different resamples: %v, %v", a[i], b[i])
		}
		for _, j := range a[i] {
			if j < 0 || j >= 10 {
				t.Fatalf("index %d out of range", j)
			}
		}
	}
	if c := Resample(10, 5, 8); slices.Equal(a[0], c[0]) && slices.Equal(a[1], c[1]) {
		t.Error("seeds 7 and 8 gave the same resamples")
	}
}

// With normal errors the bootstrap's 95 % interval of the slope is close to ±1.96 SE and
// holds the truth; the same seed gives the same interval.
func TestBootstrapSlope(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var A [][]float64
	var b []float64
	for i := range 200 {
		x := float64(i) / 20
		A = append(A, []float64{1, x})
		b = append(b, 1+0.5*x+0.3*rng.NormFloat64())
	}
	r, err := Solve(A, b)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := Bootstrap(A, b, nil, 400, 11, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if !(iv[1].Lo < 0.5 && 0.5 < iv[1].Hi) {
		t.Errorf("slope interval %v misses the truth 0.5", iv[1])
	}
	half := (iv[1].Hi - iv[1].Lo) / 2
	if want := 1.96 * r.SE[1]; math.Abs(half-want) > 0.2*want {
		t.Errorf("bootstrap half-width %g, 1.96 SE %g", half, want)
	}
	again, _ := Bootstrap(A, b, nil, 400, 11, 0.95)
	if again[1] != iv[1] {
		t.Errorf("same seed, different interval: %v, %v", again[1], iv[1])
	}
	if _, err := Bootstrap(A, b, nil, 5, 1, 0.95); err == nil {
		t.Error("5 resamples accepted")
	}
	if _, err := Bootstrap(A, b, nil, 100, 1, 1.5); err == nil {
		t.Error("level 1.5 accepted")
	}
}

// TestWildBootstrapCoverage: on a fixed design (two regressors and an intercept at 24
// points, noise growing with the response: heteroscedastic), the wild bootstrap's 95 %
// percentile intervals hold the true coefficients in 88-99 % of 200 simulated datasets
// (measured 91.0, 93.5 and 89.5 %: a little short of 95 % at 24 rows, as percentile
// intervals are), and with noise-free data its intervals come from the rows' own SD alone.
func TestWildBootstrapCoverage(t *testing.T) {
	var A [][]float64
	for i := range 24 {
		x1 := float64(i%6) + 1
		x2 := math.Pow(2, float64(i/6))
		A = append(A, []float64{1, x1, x2})
	}
	truth := []float64{5, 2, 0.5}
	rng := rand.New(rand.NewPCG(3, 4))
	hits := make([]int, 3)
	const sets = 200
	for s := range sets {
		b := make([]float64, len(A))
		for i, row := range A {
			mean := truth[0] + truth[1]*row[1] + truth[2]*row[2]
			b[i] = mean + 0.02*mean*rng.NormFloat64()
		}
		draws, err := WildBootstrap(A, b, 200, uint64(s), Wild{})
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range draws {
			slices.Sort(d)
			if lo, hi := quantile(d, 0.025), quantile(d, 0.975); lo <= truth[j] && truth[j] <= hi {
				hits[j]++
			}
		}
	}
	for j, h := range hits {
		if c := float64(h) / sets; c < 0.88 || c > 0.99 {
			t.Errorf("coefficient %d: the intervals hold the truth in %.1f %% of the datasets", j, 100*c)
		}
		t.Logf("coefficient %d: coverage %.1f %%", j, 100*float64(h)/sets)
	}
	// Exact data: the residuals are 0, the rows' SD (1 % of b) sets the intervals.
	b := make([]float64, len(A))
	sd := make([]float64, len(A))
	for i, row := range A {
		b[i] = truth[0] + truth[1]*row[1] + truth[2]*row[2]
		sd[i] = 0.01 * b[i]
	}
	zero, _ := WildBootstrap(A, b, 200, 1, Wild{})
	some, _ := WildBootstrap(A, b, 200, 1, Wild{SD: sd})
	for j := range truth {
		slices.Sort(zero[j])
		slices.Sort(some[j])
		w0 := quantile(zero[j], 0.975) - quantile(zero[j], 0.025)
		w1 := quantile(some[j], 0.975) - quantile(some[j], 0.025)
		if w0 > 1e-9 || w1 <= 0 {
			t.Errorf("coefficient %d: width %g without SD, %g with", j, w0, w1)
		}
	}
}
