package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The global-memory FFT (FFTBitrev, then log2(n) FFTStage launches) run by the PTX
// interpreter over every CTA of a batch of two 2^13-point arrays, against a float64 FFT.
func TestFFTLargeRuns(t *testing.T) {
	const n, batch = 1 << 13, 2
	rev, err := FFTBitrev(n, batch, Device{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := FFTStage(n, batch, Device{})
	if err != nil {
		t.Fatal(err)
	}
	decode := func(d Descriptor) ([]ctaInstr, int) {
		m, err := parsePTX(d.PTX)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		prog, nregs, err := decodeCTA(m, "gw_smem")
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		return prog, nregs
	}
	const inBase, dataBase, twBase = 0x1000_0000, 0x2000_0000, 0x3000_0000
	global := map[uint64][]byte{inBase: make([]byte, 8*n*batch), dataBase: make([]byte, 8*n*batch), twBase: make([]byte, 4*n)}
	r := rand.New(rand.NewPCG(3, 4))
	x := make([][]complex128, batch)
	for b := range batch {
		x[b] = make([]complex128, n)
		for i := range n {
			re, im := float32(2*r.Float64()-1), float32(2*r.Float64()-1)
			x[b][i] = complex(float64(re), float64(im))
			o := global[inBase][8*(b*n+i):]
			binary.LittleEndian.PutUint32(o, math.Float32bits(re))
			binary.LittleEndian.PutUint32(o[4:], math.Float32bits(im))
		}
	}
	for i, v := range FFTTwiddles(n) {
		binary.LittleEndian.PutUint32(global[twBase][4*i:], math.Float32bits(v))
	}
	launch := func(d Descriptor, params map[string]uint64) {
		prog, nregs := decode(d)
		for cta := range d.Blocks {
			c := &ctaMachine{prog: prog, nregs: nregs, counts: map[string]int64{}, params: params, global: global, ctaid: uint64(cta)}
			if err := c.run(d.Threads); err != nil {
				t.Fatalf("%s, CTA %d: %v", d.Name, cta, err)
			}
		}
	}
	launch(rev, map[string]uint64{rev.Entry + "_in": inBase, rev.Entry + "_out": dataBase})
	for s := range 13 {
		launch(st, map[string]uint64{st.Entry + "_data": dataBase, st.Entry + "_tw": twBase, st.Entry + "_st": uint64(s)})
	}
	for b := range batch {
		y := make([]complex64, n)
		for i := range y {
			o := global[dataBase][8*(b*n+i):]
			y[i] = complex(math.Float32frombits(binary.LittleEndian.Uint32(o)), math.Float32frombits(binary.LittleEndian.Uint32(o[4:])))
		}
		e := relErr(y, fft64(x[b]))
		t.Logf("array %d: max error / max magnitude %.3g", b, e)
		if !(e < 1e-5) {
			t.Errorf("array %d: relative error %.3g", b, e)
		}
	}
	if _, err := FFTStage(4096, 1, Device{}); err == nil || !strings.Contains(err.Error(), "above 4096") {
		t.Errorf("FFTStage(4096) = %v", err)
	}
	if _, err := FFTBitrev(1<<20, 4096, Device{}); err == nil {
		t.Error("batch beyond 2^31 points accepted")
	}
}

// The shared-memory FFT over a batch: CTA 1 of a launch transforms the second array into
// the second half of out (the first H200 batch of 256 transforms per launch verified only
// the first, when every CTA read array 0).
func TestFFTBatchOffsets(t *testing.T) {
	const n = 64
	d, err := FFT(n, Device{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := parsePTX(d.PTX)
	if err != nil {
		t.Fatal(err)
	}
	prog, nregs, err := decodeCTA(m, "gw_smem")
	if err != nil {
		t.Fatal(err)
	}
	const inBase, outBase, twBase = 0x1000_0000, 0x2000_0000, 0x3000_0000
	global := map[uint64][]byte{inBase: make([]byte, 16*n), outBase: make([]byte, 16*n), twBase: make([]byte, 4*n)}
	r := rand.New(rand.NewPCG(9, 9))
	x := make([][]complex128, 2)
	for b := range 2 {
		x[b] = make([]complex128, n)
		for i := range n {
			re, im := float32(2*r.Float64()-1), float32(2*r.Float64()-1)
			x[b][i] = complex(float64(re), float64(im))
			binary.LittleEndian.PutUint32(global[inBase][8*(b*n+i):], math.Float32bits(re))
			binary.LittleEndian.PutUint32(global[inBase][8*(b*n+i)+4:], math.Float32bits(im))
		}
	}
	for i, v := range FFTTwiddles(n) {
		binary.LittleEndian.PutUint32(global[twBase][4*i:], math.Float32bits(v))
	}
	params := map[string]uint64{d.Entry + "_in": inBase, d.Entry + "_out": outBase, d.Entry + "_tw": twBase}
	for cta := range 2 {
		c := &ctaMachine{prog: prog, nregs: nregs, counts: map[string]int64{}, params: params, global: global, shared: make([]byte, 8*n), ctaid: uint64(cta)}
		if err := c.run(d.Threads); err != nil {
			t.Fatal(err)
		}
	}
	for b := range 2 {
		y := make([]complex64, n)
		for i := range y {
			o := global[outBase][8*(b*n+i):]
			y[i] = complex(math.Float32frombits(binary.LittleEndian.Uint32(o)), math.Float32frombits(binary.LittleEndian.Uint32(o[4:])))
		}
		if e := relErr(y, fft64(x[b])); !(e < 1e-5) {
			t.Errorf("array %d of the batch: relative error %.3g", b, e)
		}
	}
}
