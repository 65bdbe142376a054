package gpufft

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cublas/cublastest"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cufft"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cufft/cuffttest"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
)

// openFake opens a Runtime on the fake libcuda (and the fake libcufft, whose
// cufftExecC2C really transforms: the fake's device memory is host memory).
func openFake(t *testing.T) (*Runtime, *cudatest.Fake) {
	t.Helper()
	lc := cudatest.Build(t)
	lf := cuffttest.Build(t)
	fake := cudatest.Control(t, lc)
	r, err := Open(Options{CUDAPaths: []string{lc}, CUFFTPaths: []string{lf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if n := fake.Counts(); n.Outstanding() != 0 || n.WrongThread != 0 {
			t.Errorf("after Close: %+v", n)
		}
		if n := cuffttest.Live(t, lf); n != 0 {
			t.Errorf("%d cuFFT plans left", n)
		}
	})
	return r, fake
}

func quick() loadlevel.Intervals {
	return loadlevel.Intervals{Warmup: 20 * time.Millisecond, Calibrations: 2, Pre: 10 * time.Millisecond,
		Record: 150 * time.Millisecond, Post: 10 * time.Millisecond, Idle: 30 * time.Millisecond}
}

// The cuFFT variant end to end on the real clock: 3 users on their own goroutines and
// threads, every result verified against the float64 reference, no call off a thread
// with the context current, nothing left behind.
func TestCuFFTVariantRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real clock")
	}
	r, _ := openFake(t)
	tx, err := r.NewTx(CuFFT, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tx.Corrupt = func(user int, seq int64) bool { return user == 2 && seq == 3 }
	res, err := loadlevel.Measure(context.Background(), loadlevel.Config{Tx: tx, Users: 3, Levels: []float64{0.5},
		Intervals: quick(), Clock: clock.NewReal(), Seed: 1, VerifyFraction: 1, VerifyQueue: 1 << 16, LoadTolerance: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cufft on the fakes: calibrated %.0f tx/s, verified %d, failures %d", res.CalibratedRate, res.Verified, len(res.VerifyFailures))
	if res.CalibratedRate <= 0 || res.Verified < 10 || res.FailedTransactions != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(res.VerifyFailures) != 1 || !strings.Contains(res.VerifyFailures[0], "fft-64/cufft transaction 3 of user 2") {
		t.Errorf("verification failures %v: want exactly the planted one", res.VerifyFailures)
	}
}

// The own FFT on the fake: the fake's kernels do nothing, so only the plumbing is checked
// (the PTX itself is run by the interpreter in internal/kernels): the launch's shape and
// parameters, and transactions from several users at once.
func TestOwnVariantPlumbing(t *testing.T) {
	t.Parallel()
	r, fake := openFake(t)
	tx, err := r.NewTx(Own, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tx.OpenContext()
	if err != nil {
		t.Fatal(err)
	}
	u := &loadlevel.User{ID: 0, Context: c}
	defer tx.CloseContext(c)
	uc := c.(*user)
	for i := range uc.in {
		uc.in[i] = complex(float32(i), 0)
	}
	if _, err := tx.Process(u, input{data: uc.in}); err != nil {
		t.Fatal(err)
	}
	l, ok := fake.LastLaunch()
	if !ok || l.Kernel() != "gw_fft_c2c_512" || l.Grid[0] != 1 || l.Block[0] != 256 || l.NParams != 3 ||
		l.Param[0] != uint64(uc.dIn) || l.Param[1] != uint64(uc.dOut) || l.Param[2] != uint64(uc.dtw) {
		t.Errorf("launch %+v", l)
	}
	if _, err := r.NewTx("opencl", 64, 1); err == nil {
		t.Error("unknown variant accepted")
	}
	if _, err := r.NewTx(Own, 100, 1); err == nil {
		t.Error("size 100 accepted")
	}
	if err := tx.CloseContext(c); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Process(u, nil); err == nil {
		t.Error("Process on a closed context succeeded")
	}
}

func TestCuFFTMissing(t *testing.T) {
	t.Parallel()
	lc := cudatest.Build(t)
	r, err := Open(Options{CUDAPaths: []string{lc}, CUFFTPaths: []string{"/nonexistent/libcufft.so.12"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.NewTx(CuFFT, 64, 1)
	if !errors.Is(err, cufft.ErrLibraryNotFound) || !strings.Contains(err.Error(), "libcufft") || strings.Contains(err.Error(), "\n") {
		t.Errorf("NewTx(cufft) without the library = %v", err)
	}
}

// openFakeBLAS opens a Runtime on the fake libcuda and the fake libcublas (whose Sgemm
// really multiplies host memory).
func openFakeBLAS(t *testing.T) (*Runtime, string) {
	t.Helper()
	lc := cudatest.Build(t)
	lb := cublastest.Build(t)
	fake := cudatest.Control(t, lc)
	r, err := Open(Options{CUDAPaths: []string{lc}, CUBLASPaths: []string{lb}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if n := fake.Counts(); n.Outstanding() != 0 || n.WrongThread != 0 {
			t.Errorf("after Close: %+v", n)
		}
		if n := cublastest.Live(t, lb); n != 0 {
			t.Errorf("%d cuBLAS handles left", n)
		}
	})
	return r, lb
}

// The GEMM workload end to end on the fakes (real clock): 2 users, every result's picked
// row recomputed in float64 through the layers, the planted wrong result caught by name,
// one Sgemm per layer.
func TestGemmRuns(t *testing.T) {
	t.Parallel()
	r, lb := openFakeBLAS(t)
	g, err := r.NewGemm(32, 4, 3, MathFP32)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Corrupt = func(user int, seq int64) bool { return user == 1 && seq == 2 }
	res, err := loadlevel.Measure(context.Background(), loadlevel.Config{Tx: g, Users: 2, Levels: []float64{0.5},
		Intervals: quick(), Clock: clock.NewReal(), Seed: 1, VerifyFraction: 1, VerifyQueue: 1 << 16, LoadTolerance: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gemm on the fakes: calibrated %.0f tx/s, verified %d, failures %v", res.CalibratedRate, res.Verified, res.VerifyFailures)
	if res.Verified < 10 || res.FailedTransactions != 0 {
		t.Fatalf("result %+v", res)
	}
	// The planted error is +1 at one element; a row not holding it still verifies.
	for _, f := range res.VerifyFailures {
		if !strings.Contains(f, "gemm-32x4x3/fp32 transaction 2 of user 1") {
			t.Errorf("unexpected failure %s", f)
		}
	}
	if n := cublastest.Gemms(t, lb); n%3 != 0 || n < 30 {
		t.Errorf("%d Sgemm calls: want 3 per transaction", n)
	}
	if _, err := r.NewGemm(8, 4, 3, MathFP32); err == nil {
		t.Error("width 8 accepted")
	}
	if _, err := r.NewGemm(32, 4, 3, "fp8"); err == nil {
		t.Error("math fp8 accepted")
	}
}

// A batch of 2^13-point transforms with the own global-memory kernels: the plumbing (the
// bit reversal, then 13 stages with the stage number as parameter).
func TestOwnLargePlumbing(t *testing.T) {
	t.Parallel()
	r, fake := openFake(t)
	tx, err := r.NewTx(Own, 1<<13, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tx.OpenContext()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.CloseContext(c)
	u := &loadlevel.User{ID: 0, Context: c, Rand: rand.New(rand.NewPCG(1, 2))}
	in := tx.Generate(u)
	if _, err := tx.Process(u, in); err != nil {
		t.Fatal(err)
	}
	l, ok := fake.LastLaunch()
	if !ok || l.Kernel() != "gw_fft_stage_8192" || l.Grid[0] != 4*4096/256 || l.Block[0] != 256 || l.NParams != 3 || l.Param[2] != 12 {
		t.Errorf("last launch %+v", l)
	}
	if tx.Name() != "fft-8192x4/gpu" {
		t.Error(tx.Name())
	}
	sin, sout := tx.Snapshot(in, c.(*user).out)
	if len(sin.([]complex64)) != 1<<13 || len(sout.([]complex64)) != 1<<13 {
		t.Error("snapshot is not one transform")
	}
}
