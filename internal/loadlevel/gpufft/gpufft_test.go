package gpufft

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gpuwatt/internal/clock"
	"gpuwatt/internal/cuda/cudatest"
	"gpuwatt/internal/cuda/cufft"
	"gpuwatt/internal/cuda/cufft/cuffttest"
	"gpuwatt/internal/loadlevel"
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
	if testing.Short() {
		t.Skip("real clock")
	}
	r, _ := openFake(t)
	tx, err := r.NewTx(CuFFT, 64)
	if err != nil {
		t.Fatal(err)
	}
	tx.Corrupt = func(user int, seq int64) bool { return user == 2 && seq == 3 }
	res, err := loadlevel.Run(context.Background(), loadlevel.Config{Tx: tx, Users: 3, Levels: []float64{0.5},
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
	r, fake := openFake(t)
	tx, err := r.NewTx(Own, 512)
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
	if _, err := tx.Process(u, input{uc.in}); err != nil {
		t.Fatal(err)
	}
	l, ok := fake.LastLaunch()
	if !ok || l.Kernel() != "gw_fft_c2c_512" || l.Grid[0] != 1 || l.Block[0] != 256 || l.NParams != 3 ||
		l.Param[0] != uint64(uc.din) || l.Param[1] != uint64(uc.dout) || l.Param[2] != uint64(uc.dtw) {
		t.Errorf("launch %+v", l)
	}
	if _, err := r.NewTx("opencl", 64); err == nil {
		t.Error("unknown variant accepted")
	}
	if _, err := r.NewTx(Own, 100); err == nil {
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
	lc := cudatest.Build(t)
	r, err := Open(Options{CUDAPaths: []string{lc}, CUFFTPaths: []string{"/nonexistent/libcufft.so.12"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.NewTx(CuFFT, 64)
	if !errors.Is(err, cufft.ErrLibraryNotFound) || !strings.Contains(err.Error(), "libcufft") || strings.Contains(err.Error(), "\n") {
		t.Errorf("NewTx(cufft) without the library = %v", err)
	}
}
