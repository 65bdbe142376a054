package correct

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// arrayHold is the hold as it was (four arrays over every reading: edges, values, the running
// integral at every edge, and each cell's split), the reference hold's figures are held to.
type arrayHold struct {
	edges, v, cum, split []float64
}

func newArrayHold(s trace.Readings, shift, period, w float64) *arrayHold {
	n := s.Len()
	h := &arrayHold{edges: make([]float64, n+1), v: s.V, cum: make([]float64, n+1), split: make([]float64, n)}
	c := func(i int) float64 { return s.T[i].Seconds() - shift }
	for i := range h.split {
		h.split[i] = math.NaN()
	}
	for i := 1; i < n; i++ {
		h.edges[i] = (c(i-1) + c(i)) / 2
	}
	half := holdHalf(period, c(0), c(n-1), n)
	h.edges[0], h.edges[n] = c(0)-half, c(n-1)+half
	thr := holdThreshold(s)
	for i := 1; i+1 < n; i++ {
		h.split[i] = holdSplit(h.v[i-1], h.v[i], h.v[i+1], c(i), h.edges[i], h.edges[i+1], w, thr)
	}
	for i := 0; i < n; i++ {
		h.cum[i+1] = h.cum[i] + h.cellEnergy(i, h.edges[i+1])
	}
	return h
}

func (h *arrayHold) cellEnergy(i int, x float64) float64 {
	if p := h.split[i]; !math.IsNaN(p) {
		return holdCell(h.v[i-1], h.v[i], h.v[i+1], p, h.edges[i], x)
	}
	return holdCell(0, h.v[i], 0, math.NaN(), h.edges[i], x)
}

func (h *arrayHold) span() (float64, float64) { return h.edges[0], h.edges[len(h.edges)-1] }

func (h *arrayHold) cumAt(x float64) float64 {
	n := len(h.v)
	if x <= h.edges[0] {
		return 0
	}
	if x >= h.edges[n] {
		return h.cum[n]
	}
	k := searchF(h.edges, x)
	k = min(max(k-1, 0), n-1)
	return h.cum[k] + h.cellEnergy(k, x)
}

func (h *arrayHold) energy(a, b float64) float64 { return h.cumAt(b) - h.cumAt(a) }

// TestHoldIsArrayHold: the hold, which keeps its running integral every holdStride cells
// and works the cells out as they are asked, gives the four arrays' energies bit for bit
// (regions inside, across and beyond the readings, on cells that split at a step and ones
// that hold, within a stride and across strides), its span and its bins, with and without
// a period.
func TestHoldIsArrayHold(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 7, 63, 64, 65, 129, 400, 3000} {
		s := make([]trace.Sample, n)
		tt := time.Duration(0)
		for i := range s {
			tt += time.Duration(15+r.IntN(10)) * time.Millisecond
			w := 100.0
			if i/20%2 == 1 {
				w = 400
			}
			if i%20 == 0 {
				w = 250 // a reading mid-step: its cell splits
			}
			s[i] = trace.Sample{T: tt, Value: w + r.Float64()}
		}
		for _, period := range []float64{0.02, 0} {
			h := newArrayHold(trace.ReadingsOf(s), 0.0125+0.002, period, 0.025)
			l := newHold(trace.ReadingsOf(s), 0.0125+0.002, period, 0.025)
			if a, b := h.span(); true {
				if c, d := l.span(); a != c || b != d {
					t.Fatalf("n %d: span %v %v, hold's %v %v", n, c, d, a, b)
				}
			}
			lo, hi := h.span()
			var bins []interval
			for q := 0; q < 300; q++ {
				a := lo - 0.05 + r.Float64()*(hi-lo+0.1)
				b := a + r.Float64()*(hi-lo)/3
				if q%50 == 0 {
					a, b = lo, hi
				}
				if got, want := l.energy(a, b), h.energy(a, b); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("n %d, period %v: energy(%v, %v) = %v, the arrays' %v", n, period, a, b, got, want)
				}
				bins = append(bins, interval{a, b})
			}
			gb := l.binEnergies(bins)
			for i := range gb {
				if wb := h.energy(bins[i].a, bins[i].b); gb[i] != wb {
					t.Fatalf("bin %d: %v, the arrays' %v", i, gb[i], wb)
				}
			}
		}
	}
}

// TestLinearRunningIntegral: the linear interpolant's integral, kept every holdStride
// readings and summed from there, is the running integral kept at every reading bit for
// bit, on its own times and shifted (which shares it).
func TestLinearRunningIntegral(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 63, 64, 65, 200, 1000} {
		s := trace.Readings{T: make([]time.Duration, n), V: make([]float64, n)}
		tt := time.Duration(0)
		for i := range s.T {
			tt += time.Duration(90+r.IntN(20)) * time.Millisecond
			s.T[i], s.V[i] = tt, 100+300*r.Float64()
		}
		l := newLinear(s, 0.013)
		cum := make([]float64, n) // as it was: at every reading
		for i := 1; i < n; i++ {
			cum[i] = cum[i-1] + (l.t[i]-l.t[i-1])*(l.v[i]+l.v[i-1])/2
		}
		for _, sh := range []float64{0.013, 0.5} {
			ls := l.shifted(sh)
			for i := range cum {
				if got := ls.cum(i); got != cum[i] {
					t.Fatalf("n %d, shift %v: cum(%d) = %v, want %v", n, sh, i, got, cum[i])
				}
			}
		}
	}
}

// TestChangesSigma: the noise of a channel's changes worked out as they are met is
// NoiseSigma of their copy, bit for bit.
func TestChangesSigma(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 100, 4097, 9000, 30000} {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(40))
			if i > 0 && r.IntN(3) == 0 {
				v[i] = v[i-1] // a stale repeat
			}
		}
		if got, want := changesSigma(v), NoiseSigma(changes(v)); got != want {
			t.Errorf("n %d: %v, want %v", n, got, want)
		}
	}
}

// TestSincosIsSinCos: the lattice's sums take math.Sincos for math.Sin and math.Cos, which
// must give their figures bit for bit (they share Go's argument reduction and polynomials)
// for the lattice to fit as it did.
func TestSincosIsSinCos(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for i := range 200000 {
		x := r.Float64() * 2 * math.Pi * 1e5
		if i%2 == 1 {
			x = 2 * math.Pi * r.Float64() * 5e4 / 0.02
		}
		s, c := math.Sincos(x)
		if math.Float64bits(s) != math.Float64bits(math.Sin(x)) || math.Float64bits(c) != math.Float64bits(math.Cos(x)) {
			t.Fatalf("Sincos(%v) = %v, %v; Sin, Cos %v, %v", x, s, c, math.Sin(x), math.Cos(x))
		}
	}
}
