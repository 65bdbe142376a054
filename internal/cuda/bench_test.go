package cuda_test

import (
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/cuda"
	"github.com/gpuwatt/gpuwatt/internal/cuda/cudatest"
)

// benchContext opens device 0 of a fresh fake and returns a context and a function of it.
func benchContext(b *testing.B, kernel string) (*cuda.Context, *cuda.Function) {
	b.Helper()
	path := cudatest.Build(b)
	l, err := cuda.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	d, err := l.Device(0)
	if err != nil {
		b.Fatal(err)
	}
	c, err := cuda.NewContext(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	m, err := c.LoadPTX(testPTX)
	if err != nil {
		b.Fatal(err)
	}
	f, err := m.Function(kernel)
	if err != nil {
		b.Fatal(err)
	}
	return c, f
}

// BenchmarkFakeLaunchHandOver measures the binding's cost of one launch submitted from
// another goroutine (one hand-over to the context thread per launch).
func BenchmarkFakeLaunchHandOver(b *testing.B) {
	_, f := benchContext(b, "noargs")
	cfg := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}
	for b.Loop() {
		if err := f.Launch(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFakeLaunchInDo measures one launch of a kernel with seven arguments inside Do
// (no hand-over): the binding's own cost per launch in a batch.
func BenchmarkFakeLaunchInDo(b *testing.B) {
	c, f := benchContext(b, "kinds")
	cfg := cuda.LaunchConfig{Grid: cuda.D1(1), Block: cuda.D1(1)}
	args := []cuda.Arg{cuda.Ptr(1), cuda.U32(2), cuda.I32(3), cuda.U64(4), cuda.I64(5), cuda.F32(6), cuda.F64(7)}
	const batch = 1000
	n := 0
	for b.Loop() {
		err := c.Do(func() error {
			for range batch {
				if err := f.Launch(cfg, args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/launch")
}
