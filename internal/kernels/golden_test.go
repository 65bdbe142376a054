package kernels

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// goldenOpts is a launch small enough to read: 2 blocks of 64 threads, a 16-instruction
// body in 4 chains.
var goldenOpts = Opts{Blocks: 2, Threads: 64, Iters: 3, Unroll: 16, Chains: 4, Bytes: 64 << 10}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		gen  func() (Descriptor, error)
	}{
		{"fp32.fma.ptx", func() (Descriptor, error) { return Arith(FP32FMA, goldenOpts) }},
		{"fp32.fma@random.ptx", func() (Descriptor, error) {
			o := goldenOpts
			o.Operands = OperandsRandom
			return Arith(FP32FMA, o)
		}},
		{"coalesce.1_16.ptx", func() (Descriptor, error) { return Coalescing(2, goldenOpts) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, err := tc.gen()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, []byte(d.PTX), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if d.PTX != string(want) {
				t.Errorf("%s differs from the generated PTX (run go test -update if the change is meant):\n%s", path, d.PTX)
			}
		})
	}
}
