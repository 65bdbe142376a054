package kernels

import (
	"math"
	"strings"
	"testing"
)

// TestOperandPatterns: every pattern of every class changes only the kernel's parameters
// (the PTX's code is the same), keeps the counts, and gives the data it says: zeros and
// const never toggle a bit, random toggles a good share of them without settling.
func TestOperandPatterns(t *testing.T) {
	for _, c := range ArithClasses {
		pats := PatternsFor(c)
		if pats == nil {
			if _, err := Arith(c, Opts{Operands: OperandsZeros, Unroll: 16, Iters: 2}); err == nil {
				t.Errorf("%s: a pattern was accepted for a class without patterns", c)
			}
			continue
		}
		var code string
		var ops int64
		for _, p := range pats {
			d, err := Arith(c, Opts{Operands: p, Unroll: 64, Iters: 3})
			if err != nil {
				t.Fatalf("%s/%s: %v", c, p, err)
			}
			if d.Data == nil || d.Data.Pattern != p {
				t.Fatalf("%s/%s: data %+v", c, p, d.Data)
			}
			body := strings.ReplaceAll(ptxCode(d.PTX), d.Entry, "ENTRY")
			if code == "" {
				code, ops = body, d.MeasuredOps()
			} else if body != code || d.MeasuredOps() != ops {
				t.Errorf("%s/%s: the code or the counts differ from the first pattern's", c, p)
			}
			dp := d.Data
			t.Logf("%-11s %-6s toggle %.3f density %.3f", c, p, dp.ToggleEmulated, dp.DensityEmulated)
			switch p {
			case OperandsZeros:
				if dp.ToggleEmulated != 0 || dp.DensityEmulated != 0 {
					t.Errorf("%s/zeros: toggle %g density %g, want 0", c, dp.ToggleEmulated, dp.DensityEmulated)
				}
			case OperandsConst:
				if dp.ToggleEmulated != 0 || dp.DensityEmulated < 0.1 {
					t.Errorf("%s/const: toggle %g density %g, want 0 and some bits set", c, dp.ToggleEmulated, dp.DensityEmulated)
				}
			case OperandsRandom:
				// Over all source operands, the constant ones included (fp32.add: b; fma: c), and
				// exponents that move little (bf16: 8 of its 16 bits).
				if dp.ToggleEmulated < 0.15 || dp.ToggleEmulated > 0.6 {
					t.Errorf("%s/random: toggle %g, want 0.15 to 0.6", c, dp.ToggleEmulated)
				}
			}
		}
		if _, err := Arith(c, Opts{Operands: "ones"}); err == nil {
			t.Errorf("%s: pattern \"ones\" accepted", c)
		}
	}
}

// ptxCode is a module without its parameter values (in the comments) and constants.
func ptxCode(ptx string) string {
	var b strings.Builder
	for _, l := range strings.Split(ptx, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "//") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestChaosStaysFinite: the random FMA chains stay in [-2, 2] and keep changing over a
// long run (2^20 steps of one chain), in every precision.
func TestChaosStaysFinite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sig, min int
		c        float64
	}{{"f32", 24, -126, chaosC}, {"f16", 11, -14, halfValue(halfChaosC&0xffff, false)}, {"bf16", 8, -126, halfValue(bhalfChaosC&0xffff, true)}} {
		x := 0.75
		seen := map[float64]bool{}
		for i := 0; i < 1<<20; i++ {
			x = roundSig(x*x+tc.c, tc.sig, tc.min)
			if math.Abs(x) > 2 || math.IsNaN(x) {
				t.Fatalf("%s: step %d: x = %g", tc.name, i, x)
			}
			if i > 1<<19 {
				seen[x] = true
			}
		}
		if len(seen) < 8 {
			t.Errorf("%s: the chain settled on %d values", tc.name, len(seen))
		}
	}
}

func TestParseOperands(t *testing.T) {
	if p, err := ParseOperands("zeros, random,zeros"); err != nil || len(p) != 2 || p[1] != OperandsRandom {
		t.Errorf("ParseOperands = %v, %v", p, err)
	}
	if p, err := ParseOperands("all"); err != nil || len(p) != 3 {
		t.Errorf("all = %v, %v", p, err)
	}
	if _, err := ParseOperands("zeros,ones"); err == nil || !strings.Contains(err.Error(), `"ones"`) {
		t.Errorf("ones: %v", err)
	}
	if h := halfBits(halfValue(0xbff6, false), false); h != 0xbff6 {
		t.Errorf("f16 round trip: %#x", h)
	}
}

// TestSuiteOperands: the suite runs each class with patterns under each listed pattern it
// has (named <class>@<pattern>, the default pattern keeping the class's name), the others
// once; --only's class name selects every pattern of it.
func TestSuiteOperands(t *testing.T) {
	ds, err := Default(SuiteOpts{Operands: []Operands{OperandsConst, OperandsRandom}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range ds {
		if seen[d.Name] || seen[d.Entry] {
			t.Errorf("%s (%s) twice", d.Name, d.Entry)
		}
		seen[d.Name], seen[d.Entry] = true, true
	}
	for _, n := range []string{"fp32.fma@const", "fp32.fma", "int32.mad@const", "int32.add", "fp32.sin"} {
		if !seen[n] {
			t.Errorf("no %s", n)
		}
	}
	if seen["int32.add@const"] || seen["fp32.fma@zeros"] {
		t.Error("a pattern that was not asked for, or that the class lacks")
	}
	fma, err := ByName(ds, "fp32.fma")
	if err != nil || len(fma) != 2 || fma[0].Data.Pattern != OperandsConst || fma[1].Data.Pattern != OperandsRandom {
		t.Errorf("ByName(fp32.fma) = %d kernels, %v", len(fma), err)
	}
	plain, _ := Default(SuiteOpts{})
	for _, d := range plain {
		// The tensor kernels' data is always controlled: random unless asked otherwise.
		if d.Group == "tensor" {
			if d.Data == nil || d.Data.Pattern != OperandsRandom {
				t.Errorf("%s: tensor kernel without random operands: %v", d.Name, d.Data)
			}
			continue
		}
		if d.Data != nil {
			t.Errorf("%s: a pattern in the suite without operands", d.Name)
		}
	}
}
