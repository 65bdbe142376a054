package gpufft

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cublas"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
)

// CuBLAS is the GEMM workload's variant: cuBLAS's Sgemm, loaded at run time.
const CuBLAS = "cublas"

// Math modes of the GEMM workload.
const (
	MathTF32 = "tf32" // TF32 tensor cores, FP32 accumulation (cuBLAS TF32 tensor-op math)
	MathFP32 = "fp32" // plain FP32 FMAs
)

// GemmTolerance is the GEMM's verification tolerance (max error over max magnitude of the
// checked row) where the run's is tighter: TF32 rounds each input to a 10-bit mantissa
// (relative 2^-11 = 4.9e-4), so a chain of layers drifts by ~1e-3 from the float64
// reference; a wrong element of size 1 % of the row's peak is still caught.
const GemmTolerance = 1e-2

// gemmWeights is the number of distinct weight matrices the layers cycle through.
const gemmWeights = 4

// CuBLAS loads libcublas (once) and returns it, or why it cannot be had.
func (r *Runtime) CuBLAS() (*cublas.Lib, error) {
	r.bone.Do(func() { r.blas, r.berr = cublas.Open(r.opt.CUBLASPaths...) })
	return r.blas, r.berr
}

// Gemm is the GEMM transaction, a batch of tokens through a stack of dense layers as an
// inference server runs them: the input X (rows tokens × k features, row-major float32)
// is gathered on the CPU from the user's table of embeddings (random ids) into the
// user's pinned buffer, copied in, multiplied through layers weight matrices of k × k
// (Y ← Y·W, the weights resident on the GPU, shared by all users, cycling through
// gemmWeights matrices), and the last Y copied out; then the user's stream is synchronised.
// Verification recomputes one random row in float64 on the CPU.
type Gemm struct {
	r               *Runtime
	k, rows, layers int
	math            string
	blas            *cublas.Lib
	w               [][]float32 // host copies of the weights (k×k row-major)
	dw              []cuda.DevicePtr
	wmu             sync.Mutex
	closed          bool
	// Corrupt, when set, plants a wrong result (tests of the verification).
	Corrupt func(user int, seq int64) bool
}

var (
	_ loadlevel.Transaction   = (*Gemm)(nil)
	_ loadlevel.ContextOpener = (*Gemm)(nil)
	_ loadlevel.ContextCloser = (*Gemm)(nil)
)

// gemmTable is the number of embedding rows of a user's table.
const gemmTable = 64

// NewGemm returns the GEMM transaction: rows tokens of k features through layers dense
// layers, in math mode MathTF32 or MathFP32. The weights (uniform in ±sqrt(3/k), so the
// activations keep their scale) are generated and uploaded once.
func (r *Runtime) NewGemm(k, rows, layers int, mode string) (*Gemm, error) {
	if k < 16 || k > 1<<15 || rows < 1 || rows > 1<<16 || layers < 1 || layers > 1024 || int64(k)*int64(rows) > 1<<28 {
		return nil, fmt.Errorf("gemm: width %d, batch %d, layers %d: want a width from 16 to 32768, a batch from 1 to 65536 (width × batch up to 2^28) and 1 to 1024 layers", k, rows, layers)
	}
	if mode != MathTF32 && mode != MathFP32 {
		return nil, fmt.Errorf("gemm: math %q: want %s or %s", mode, MathTF32, MathFP32)
	}
	lib, err := r.CuBLAS()
	if err != nil {
		return nil, err
	}
	g := &Gemm{r: r, k: k, rows: rows, layers: layers, math: mode, blas: lib}
	nw := min(gemmWeights, layers)
	g.w = make([][]float32, nw)
	var wg sync.WaitGroup
	a := math.Sqrt(3 / float64(k))
	for i := range g.w {
		g.w[i] = make([]float32, k*k)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k)*131+uint64(i), 7))
			for j := range g.w[i] {
				g.w[i][j] = float32(a * (2*rng.Float64() - 1))
			}
		}(i)
	}
	wg.Wait()
	for _, w := range g.w {
		p, err := r.ctx.Alloc(int64(4 * len(w)))
		if err != nil {
			g.Close()
			return nil, err
		}
		g.dw = append(g.dw, p)
		if err := r.ctx.CopyHtoD(p, cuda.AsBytes(w)); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// Close frees the weights on the GPU.
func (g *Gemm) Close() error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.r.Hung() != nil {
		return nil // see Runtime.Close
	}
	var errs []error
	for _, p := range g.dw {
		errs = append(errs, g.r.ctx.Free(p))
	}
	g.dw = nil
	return errors.Join(errs...)
}

// Name implements loadlevel.Transaction: "gemm-4096x256x8/tf32" (width, batch, layers).
func (g *Gemm) Name() string {
	return fmt.Sprintf("gemm-%dx%dx%d/%s", g.k, g.rows, g.layers, g.math)
}

// Flops is the work of one transaction: 2·rows·k²·layers.
func (g *Gemm) Flops() float64 {
	return 2 * float64(g.rows) * float64(g.k) * float64(g.k) * float64(g.layers)
}

type gemmUser struct {
	userIO
	w       *cuda.Worker
	h       *cublas.Handle
	in, out []float32
	table   []float32 // gemmTable × k embeddings
	closed  bool
}

// NewContext implements loadlevel.Transaction; Run uses OpenContext instead.
func (g *Gemm) NewContext() any {
	c, err := g.OpenContext()
	if err != nil {
		return &gemmUser{closed: true}
	}
	return c
}

// OpenContext implements loadlevel.ContextOpener: the user's stream, two activation
// buffers on the GPU, pinned input and output, its embedding table, a worker and a cuBLAS
// handle bound to the stream in the math mode.
func (g *Gemm) OpenContext() (any, error) {
	c := g.r.ctx
	u := &gemmUser{}
	fail := func(e error) (any, error) {
		_ = g.CloseContext(u)
		return nil, e
	}
	var err error
	if err = u.open(c, 4*g.k*g.rows); err != nil {
		return fail(err)
	}
	u.in = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(u.hin.Bytes()))), g.k*g.rows)
	u.out = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(u.hout.Bytes()))), g.k*g.rows)
	rng := rand.New(rand.NewPCG(uint64(g.k), uint64(uintptr(u.dIn))))
	u.table = make([]float32, gemmTable*g.k)
	for i := range u.table {
		u.table[i] = float32(2*rng.Float64() - 1)
	}
	if u.w, err = c.NewWorker(); err != nil {
		return fail(err)
	}
	mode := cublas.TF32Math
	if g.math == MathFP32 {
		mode = cublas.DefaultMath
	}
	err = u.w.Run(func(*cuda.Thread) error {
		h, err := g.blas.Create()
		if err != nil {
			return err
		}
		u.h = h
		if err := h.SetStream(u.s.Handle()); err != nil {
			return err
		}
		return h.SetMathMode(mode)
	})
	if err != nil {
		return fail(err)
	}
	return u, nil
}

// CloseContext implements loadlevel.ContextCloser.
func (g *Gemm) CloseContext(ctx any) error {
	u, ok := ctx.(*gemmUser)
	if !ok || u == nil || u.closed {
		return nil
	}
	u.closed = true
	if g.r.Hung() != nil {
		return nil // see Runtime.Close
	}
	c := g.r.ctx
	var errs []error
	if u.h != nil && u.w != nil {
		errs = append(errs, u.w.Run(func(*cuda.Thread) error { return u.h.Destroy() }))
	}
	errs = append(errs, u.userIO.close(c)...)
	u.in, u.out = nil, nil
	return errors.Join(errs...)
}

// gemmInput is one transaction's input: the pinned buffer, and the row picked for
// verification.
type gemmInput struct {
	data []float32
	pick int
}

// Generate implements loadlevel.Transaction: each of the rows is a random row of the
// user's embedding table, copied into the pinned input buffer (a gather, as an inference
// server looks tokens up).
func (g *Gemm) Generate(u *loadlevel.User) any {
	c := u.Context.(*gemmUser)
	for i := range g.rows {
		id := u.Rand.IntN(gemmTable)
		copy(c.in[i*g.k:(i+1)*g.k], c.table[id*g.k:(id+1)*g.k])
	}
	return gemmInput{data: c.in, pick: u.Rand.IntN(g.rows)}
}

// Process implements loadlevel.Transaction: copy in, the layers, copy out, synchronise.
func (g *Gemm) Process(u *loadlevel.User, _ any) (any, error) {
	c := u.Context.(*gemmUser)
	if c.closed {
		return nil, errors.New("user context is closed (or could not be made)")
	}
	if err := g.r.Hung(); err != nil {
		return nil, err
	}
	err := c.w.Run(func(th *cuda.Thread) error {
		if err := th.CopyHtoDAsync(c.dIn, c.hin, 0, c.bytes, c.s); err != nil {
			return err
		}
		src, dst := c.dIn, c.dOut
		for l := range g.layers {
			// Row-major Y (rows×k) = X (rows×k) · W (k×k) is, column-major,
			// Yᵀ (k×rows) = Wᵀ (k×k) · Xᵀ (k×rows).
			w := g.dw[l%len(g.dw)]
			if err := c.h.Sgemm(cublas.OpN, cublas.OpN, g.k, g.rows, g.k, 1, uint64(w), g.k, uint64(src), g.k, 0, uint64(dst), g.k); err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
			src, dst = dst, src
		}
		if err := th.CopyDtoHAsync(c.hout, 0, c.bytes, src, c.s); err != nil {
			return err
		}
		return g.r.wait(th, c.s, g.Name())
	})
	if err != nil {
		return nil, err
	}
	if g.Corrupt != nil && g.Corrupt(u.ID, u.Seq) {
		c.out[len(c.out)/3] += 1
	}
	return c.out, nil
}

// Snapshot implements loadlevel.Transaction: the picked row of the input and the output.
func (g *Gemm) Snapshot(in, out any) (any, any) {
	x := in.(gemmInput)
	a, b := x.pick*g.k, (x.pick+1)*g.k
	return append([]float32(nil), x.data[a:b]...), append([]float32(nil), out.([]float32)[a:b]...)
}

// Verify implements loadlevel.Transaction: the row through the layers in float64, against
// max(tol, GemmTolerance) for TF32 and tol for FP32, as max error over max magnitude.
func (g *Gemm) Verify(in, out any, tol float64) error {
	x, y := in.([]float32), out.([]float32)
	v := make([]float64, g.k)
	for i, f := range x {
		v[i] = float64(f)
	}
	nv := make([]float64, g.k)
	for l := range g.layers {
		w := g.w[l%len(g.w)]
		clear(nv)
		for p, xp := range v {
			row := w[p*g.k : (p+1)*g.k]
			for j, wj := range row {
				nv[j] += xp * float64(wj)
			}
		}
		v, nv = nv, v
	}
	var num, den float64
	for j := range v {
		num = math.Max(num, math.Abs(float64(y[j])-v[j]))
		den = math.Max(den, math.Abs(v[j]))
	}
	e := num
	if den > 0 {
		e = num / den
	}
	if g.math == MathTF32 {
		tol = math.Max(tol, GemmTolerance)
	}
	if !(e <= tol) {
		return fmt.Errorf("relative error %.3g of row through %d layers exceeds tolerance %.3g", e, g.layers, tol)
	}
	return nil
}
