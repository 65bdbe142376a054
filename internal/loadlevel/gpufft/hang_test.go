package gpufft

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/loadlevel"
)

// hangAt is a transaction whose at-th Process arms the fake libcuda's hang: its launch
// never finishes.
type hangAt struct {
	*Tx
	fake *cudatest.Fake
	at   int64
	n    atomic.Int64
}

func (h *hangAt) Process(u *loadlevel.User, in any) (any, error) {
	if h.n.Add(1) == h.at {
		h.fake.SetHang(true)
	}
	return h.Tx.Process(u, in)
}

// TestTransactionHangEndsTheRun: a transaction whose kernel never finishes (the fake
// libcuda's hang, on a real clock) is waited for within the bound (WaitTimeout) instead of
// for ever (cuStreamSynchronize); the run ends there with what it measured, incomplete,
// naming the transaction, and the error matches gpu.ErrKernelHung; later transactions fail
// at once and nothing waits for the GPU at the end (issue 20).
func TestTransactionHangEndsTheRun(t *testing.T) {
	t.Parallel()
	lc := cudatest.Build(t)
	fake := cudatest.Control(t, lc)
	r, err := Open(Options{CUDAPaths: []string{lc}, WaitTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.SetHang(false)
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	tx, err := r.NewTx(Own, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := &hangAt{Tx: tx, fake: fake, at: 40}
	t0 := time.Now()
	res, err := loadlevel.Measure(context.Background(), loadlevel.Config{Tx: h, Users: 2, Levels: []float64{0.5},
		Intervals: quick(), Clock: clock.NewReal(), Seed: 1, LoadTolerance: 1})
	d := time.Since(t0)
	t.Logf("after %v: %v", d, err)
	if !errors.Is(err, gpu.ErrKernelHung) {
		t.Errorf("Run = %v; want gpu.ErrKernelHung", err)
	}
	if d > 5*time.Second {
		t.Errorf("the run took %v with a transaction hung", d)
	}
	if res == nil || !res.Incomplete || !strings.Contains(res.Reason, "had not finished after 100ms") || !strings.Contains(res.Reason, "transaction") || res.Valid {
		t.Fatalf("result %+v", res)
	}
	if r.Hung() == nil {
		t.Error("the runtime does not say it hung")
	}
}
