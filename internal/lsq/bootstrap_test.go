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
