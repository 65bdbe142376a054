// Package sass checks what gpuwatt counts for its kernels against what the GPU runs: the
// SASS that ptxas makes of each kernel's PTX (cuobjdump -sass) and Nsight Compute's
// counters for one launch (bench/gpu/micro_verify.sh records both; `gpuwatt micro --check
// DIR` reads them). For every arithmetic kernel it finds the measured loop in the SASS and
// counts the machine instructions of the measured class per loop iteration against the
// PTX's (Unroll per iteration, times the SASS instructions one PTX instruction of the class
// becomes); for every kernel it compares Nsight Compute's DRAM bytes and executed
// instructions with the descriptor's.
package sass

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Instr is one SASS instruction.
type Instr struct {
	Addr     int64
	Pred     string // "@P0", "@!P1", "" when unpredicated
	Op       string // the mnemonic with its modifiers: "IADD3", "IMAD.IADD", "HFMA2.MMA"
	Operands string
}

// Function is one kernel's SASS.
type Function struct {
	Name   string
	Instrs []Instr
}

var (
	reFunc  = regexp.MustCompile(`^\s*Function\s*:\s*(\S+)`)
	reInstr = regexp.MustCompile(`^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.x]*)\s*([^;]*);`) // HGMMA.64x256x16.F32.BF16
	reHex   = regexp.MustCompile(`0x([0-9a-f]+)`)
)

// Parse reads the output of cuobjdump -sass (or nvdisasm): the functions and their
// instructions.
func Parse(r io.Reader) ([]Function, error) {
	var fs []Function
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := reFunc.FindStringSubmatch(l); m != nil {
			fs = append(fs, Function{Name: m[1]})
			continue
		}
		m := reInstr.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("sass: instruction before any Function line: %q", strings.TrimSpace(l))
		}
		a, err := strconv.ParseInt(m[1], 16, 64)
		if err != nil {
			return nil, err
		}
		f := &fs[len(fs)-1]
		f.Instrs = append(f.Instrs, Instr{Addr: a, Pred: strings.TrimSpace(m[2]), Op: m[3], Operands: strings.TrimSpace(m[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("sass: no Function in the dump")
	}
	return fs, nil
}

// Loop returns the instructions of f's largest loop: from a backward branch's target to
// the branch, inclusive (nil if f has none).
func (f Function) Loop() []Instr {
	var best []Instr
	for i, in := range f.Instrs {
		if !strings.HasPrefix(in.Op, "BRA") {
			continue
		}
		m := reHex.FindStringSubmatch(in.Operands)
		if m == nil {
			continue
		}
		t, err := strconv.ParseInt(m[1], 16, 64)
		if err != nil || t >= in.Addr {
			continue
		}
		j := sort.Search(len(f.Instrs), func(k int) bool { return f.Instrs[k].Addr >= t })
		if j < i && i-j+1 > len(best) {
			best = f.Instrs[j : i+1]
		}
	}
	return best
}

// Histogram counts the mnemonics of instrs.
func Histogram(instrs []Instr) map[string]int {
	h := map[string]int{}
	for _, in := range instrs {
		h[in.Op]++
	}
	return h
}
