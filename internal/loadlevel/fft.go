package loadlevel

import (
	"fmt"
	"math"
	"math/bits"
	"math/cmplx"
	"time"
)

// FFT sizes the workload accepts.
const (
	MinFFTSize = 64
	MaxFFTSize = 1 << 22
)

// CheckFFTSize reports whether n is a power of two in [64, 2^22].
func CheckFFTSize(n int) error {
	if n < MinFFTSize || n > MaxFFTSize || n&(n-1) != 0 {
		return fmt.Errorf("FFT size %d: want a power of two from %d to %d", n, MinFFTSize, MaxFFTSize)
	}
	return nil
}

// Plan holds the twiddle factors and bit-reversal table of an iterative radix-2 FFT in
// single precision (complex64), the precision of the GPU variants.
type Plan struct {
	n   int
	tw  []complex64 // tw[k] = exp(-2πik/n), k < n/2
	rev []int32
}

// NewPlan builds a plan for n points (a power of two).
func NewPlan(n int) *Plan {
	p := &Plan{n: n, tw: make([]complex64, n/2), rev: make([]int32, n)}
	for k := range p.tw {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		p.tw[k] = complex(float32(c), float32(s))
	}
	lg := bits.TrailingZeros(uint(n))
	for i := range p.rev {
		p.rev[i] = int32(bits.Reverse32(uint32(i)) >> (32 - lg))
	}
	return p
}

// Transform writes the forward DFT of in to out (both of length n): bit-reversal
// permutation, then log2(n) butterfly stages.
func (p *Plan) Transform(out, in []complex64) {
	n := p.n
	for i, r := range p.rev {
		out[r] = in[i]
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for k := 0; k < half; k++ {
				w := p.tw[k*step]
				a, b := out[start+k], out[start+k+half]*w
				out[start+k], out[start+k+half] = a+b, a-b
			}
		}
	}
}

// ReferenceFFT is the float64 reference used for verification: a recursive decimation-in-
// frequency FFT written independently of Plan (no shared tables), with twiddles computed
// in float64. It is gpuwatt's own code; gonum is not used, to keep the module free of new
// dependencies.
func ReferenceFFT(in []complex128) []complex128 {
	n := len(in)
	out := append([]complex128(nil), in...)
	refDIF(out)
	// DIF leaves the result in bit-reversed order.
	lg := bits.TrailingZeros(uint(n))
	res := make([]complex128, n)
	for i := range out {
		res[bits.Reverse64(uint64(i))>>(64-lg)] = out[i]
	}
	return res
}

func refDIF(x []complex128) {
	n := len(x)
	if n < 2 {
		return
	}
	h := n / 2
	for k := 0; k < h; k++ {
		a, b := x[k], x[k+h]
		x[k] = a + b
		x[k+h] = (a - b) * cmplx.Rect(1, -2*math.Pi*float64(k)/float64(n))
	}
	refDIF(x[:h])
	refDIF(x[h:])
}

// DFT is the O(n²) direct transform in float64, the ground truth the tests hold both FFTs to.
func DFT(in []complex128) []complex128 {
	n := len(in)
	out := make([]complex128, n)
	for k := range out {
		var s complex128
		for j, v := range in {
			s += v * cmplx.Rect(1, -2*math.Pi*float64((j*k)%n)/float64(n))
		}
		out[k] = s
	}
	return out
}

// RelError is max|got-want| / max|want|: the error measure of verification.
func RelError(got []complex64, want []complex128) float64 {
	var num, den float64
	for i, w := range want {
		num = math.Max(num, cmplx.Abs(complex128(got[i])-w))
		den = math.Max(den, cmplx.Abs(w))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// FFT is the CPU variant of the FFT workload: each transaction transforms n random complex
// points in single precision on the goroutine of the user that runs it.
type FFT struct {
	N int
	// NsPerButterflyOp models the run time on a virtual clock: n·log2(n)·NsPerOp
	// nanoseconds per transaction (0 means 100 ns).
	NsPerOp float64
	// Corrupt, when not nil, is asked after each transaction whether to plant a wrong
	// result (tests of the verification).
	Corrupt func(user int, seq int64) bool
	plan    *Plan
}

// fftUser is an FFT user's execution context: its buffers, reused by every transaction.
type fftUser struct {
	in, out []complex64
}

// fftInput is one transaction's input; fftOutput its result.
type fftInput struct{ data []complex64 }

// NewFFT returns the FFT workload for n points.
func NewFFT(n int) (*FFT, error) {
	if err := CheckFFTSize(n); err != nil {
		return nil, err
	}
	return &FFT{N: n, plan: NewPlan(n)}, nil
}

// Name implements Transaction.
func (f *FFT) Name() string { return fmt.Sprintf("fft-%d", f.N) }

// NewContext implements Transaction.
func (f *FFT) NewContext() any {
	return &fftUser{in: make([]complex64, f.N), out: make([]complex64, f.N)}
}

// Generate implements Transaction: uniform random points in [-1,1)², outside timed work.
func (f *FFT) Generate(u *User) any {
	c := u.Context.(*fftUser)
	for i := range c.in {
		c.in[i] = complex(float32(2*u.Rand.Float64()-1), float32(2*u.Rand.Float64()-1))
	}
	return fftInput{c.in}
}

// Process implements Transaction. The result lives in the user's buffer until the user's
// next transaction; Snapshot copies it for verification.
func (f *FFT) Process(u *User, in any) (any, error) {
	c := u.Context.(*fftUser)
	f.plan.Transform(c.out, in.(fftInput).data)
	if f.Corrupt != nil && f.Corrupt(u.ID, u.Seq) {
		c.out[len(c.out)/3] += 1
	}
	return c.out, nil
}

// Snapshot implements Transaction.
func (f *FFT) Snapshot(in, out any) (any, any) {
	return append([]complex64(nil), in.(fftInput).data...), append([]complex64(nil), out.([]complex64)...)
}

// Verify implements Transaction: the result against the float64 reference.
func (f *FFT) Verify(in, out any, tol float64) error {
	x := in.([]complex64)
	y := out.([]complex64)
	ref := make([]complex128, len(x))
	for i, v := range x {
		ref[i] = complex128(v)
	}
	e := RelError(y, ReferenceFFT(ref))
	if !(e <= tol) {
		return fmt.Errorf("relative error %.3g exceeds tolerance %.3g", e, tol)
	}
	return nil
}

// ModelTime implements Modeller.
func (f *FFT) ModelTime(any) time.Duration {
	ns := f.NsPerOp
	if ns <= 0 {
		ns = 100
	}
	lg := bits.TrailingZeros(uint(f.N))
	return time.Duration(ns * float64(f.N*lg))
}

// DefaultTolerance is the verification tolerance for single-precision FFTs: max error
// over max magnitude. float32 radix-2 errors grow like ε·log2(n) (ε = 6e-8); 1e-4 leaves
// a wide margin yet catches any wrong element of size > 1e-4 of the spectrum's peak.
const DefaultTolerance = 1e-4
