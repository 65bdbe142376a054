package kernels

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// SuiteOpts configure the default suite.
type SuiteOpts struct {
	Device Device // zero fields from DefaultDevice
	// LaunchTime is the duration every launch is sized for (default 5 ms); the estimate
	// uses the spec rates and Device's bandwidths, so real launches take about 1 to 10 ms.
	LaunchTime time.Duration
	// Conflicts are the bank-conflict counts of the bank-conflict variants (default
	// 0, 1, 2, 3, 7, 15, 31).
	Conflicts []int
	// Operands are the operand patterns each arithmetic class with patterns runs under, in
	// this order (nil: the kernels without a pattern, Opts.Operands ""; micro asks for
	// DefaultOperands). A class runs under those of its patterns that are listed
	// (PatternsFor); one with none listed, or none at all, runs once without a pattern. A
	// kernel under a pattern other than DefaultOperands is named "<class>@<pattern>".
	Operands []Operands
	// TensorOperands are the patterns the tensor-core classes run under (nil: Operands,
	// else DefaultOperands): the datasheet runs them under random data only.
	TensorOperands []Operands
}

// DefaultConflicts are the bank-conflict variants of the default suite.
var DefaultConflicts = []int{0, 1, 2, 3, 7, 15, 31}

// Coalescings and AccessSizes are the swept values of those variants (MIPP Figs. 6, 7).
var (
	Coalescings = []int{1, 2, 4, 8, 16, 32}
	AccessSizes = []int{1, 2, 4, 8, 16}
)

// Default returns the whole MIPP suite, in MIPP's order after the baseline kernel (whose
// power is pi0): the arithmetic classes (integer,
// then floating point; bf16.fma only from compute capability 8.0), the memory levels
// (DRAM read and copy, L2, shared, constant), then the coalescing, access-size and
// bank-conflict variants. Every launch is sized to take about o.LaunchTime.
func Default(o SuiteOpts) ([]Descriptor, error) {
	var ds []Descriptor
	for _, g := range suite(o) {
		if g.skip {
			continue
		}
		d, err := g.gen()
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// Names returns the names of the default suite's kernels, in order (for --list; every
// name that Default can return for some device).
func Names() []string {
	var ns []string
	for _, g := range suite(SuiteOpts{}) {
		ns = append(ns, g.name)
	}
	return ns
}

// PatternName is the name of class c's kernel under operand pattern p: the class, with
// "@<pattern>" unless p is DefaultOperands (or "").
func PatternName(c OpClass, p Operands) string {
	if p == "" || p == DefaultOperands {
		return string(c)
	}
	return string(c) + "@" + string(p)
}

// BaseName is a kernel's name without its operand pattern ("fp32.fma@zeros" -> "fp32.fma").
func BaseName(name string) string {
	b, _, _ := strings.Cut(name, "@")
	return b
}

// ByName returns the descriptors whose names match any of the patterns, in the order of
// ds (for --only). A pattern is a name or a path.Match pattern ("coalesce.*",
// "int32.*"; '*' matches '/' too), matched against the name and the name without its
// operand pattern (BaseName: "fp32.fma" selects fp32.fma@zeros too); one that matches
// nothing is an error naming it.
func ByName(ds []Descriptor, patterns ...string) ([]Descriptor, error) {
	used := make([]bool, len(patterns))
	var out []Descriptor
	for _, d := range ds {
		for i, p := range patterns {
			ok := p == d.Name || p == BaseName(d.Name)
			for _, name := range []string{d.Name, BaseName(d.Name)} {
				if ok {
					break
				}
				// '*' matches the '/' of "coalesce.1/16" too.
				slash := strings.NewReplacer("/", "|")
				m, err := path.Match(slash.Replace(p), slash.Replace(name))
				if err != nil {
					return nil, fmt.Errorf("kernels: bad pattern %q: %w", p, err)
				}
				ok = m
			}
			if ok {
				used[i] = true
				out = append(out, d)
				break
			}
		}
	}
	var missing []string
	for i, u := range used {
		if !u {
			missing = append(missing, fmt.Sprintf("%q", patterns[i]))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kernels: no kernel matches %s (see --list)", strings.Join(missing, ", "))
	}
	return out, nil
}

type suiteEntry struct {
	name string
	skip bool
	gen  func() (Descriptor, error)
}

func suite(o SuiteOpts) []suiteEntry {
	opts := Opts{Device: o.Device, LaunchTime: o.LaunchTime}
	sm := 90
	if t, err := TargetFor(orDefault(o.Device.CC)); err == nil {
		sm = t.SM
	}
	// The baseline runs one warp per SM: enough to hold the top clock, too little work for
	// its own dynamic energy to count (the sim: ~0.03 W on top of pi0).
	base := opts
	if dev, _, err := o.Device.withDefaults(); err == nil {
		base.Threads, base.Blocks = 32, dev.SMs
	}
	es := []suiteEntry{{name: "baseline", gen: func() (Descriptor, error) { return Baseline(base) }}}
	for _, c := range ArithClasses {
		pats := []Operands{""}
		if PatternsFor(c) != nil && len(o.Operands) > 0 {
			pats = nil
			for _, p := range o.Operands {
				if supports(c, p) {
					pats = append(pats, p)
				}
			}
			if len(pats) == 0 {
				pats = []Operands{""}
			}
		}
		for _, p := range pats {
			ao := opts
			ao.Operands = p
			es = append(es, suiteEntry{name: PatternName(c, p), skip: c == BF16FMA && sm < 80,
				gen: func() (Descriptor, error) { return Arith(c, ao) }})
		}
	}
	for _, c := range TensorClasses {
		pats := []Operands{DefaultOperands}
		switch {
		case len(o.TensorOperands) > 0:
			pats = o.TensorOperands
		case len(o.Operands) > 0:
			pats = o.Operands
		}
		ok, _ := TensorSupported(c, orDefault(o.Device.CC))
		for _, p := range pats {
			to := opts
			to.Operands = p
			es = append(es, suiteEntry{name: PatternName(c, p), skip: !ok,
				gen: func() (Descriptor, error) { return Tensor(c, to) }})
		}
	}
	es = append(es,
		suiteEntry{name: "dram.read", gen: func() (Descriptor, error) { return DRAMRead(opts) }},
		suiteEntry{name: "dram.copy", gen: func() (Descriptor, error) { return DRAMCopy(opts) }},
		suiteEntry{name: "l2.read", gen: func() (Descriptor, error) { return L2Read(opts) }},
		suiteEntry{name: "shared.read", gen: func() (Descriptor, error) { return SharedRead(opts) }},
		suiteEntry{name: "const.read", gen: func() (Descriptor, error) { return ConstRead(opts) }},
	)
	for _, k := range Coalescings {
		es = append(es, suiteEntry{name: "coalesce." + coalesceName(k),
			gen: func() (Descriptor, error) { return Coalescing(k, opts) }})
	}
	for _, b := range AccessSizes {
		es = append(es, suiteEntry{name: fmt.Sprintf("access.%dB", b),
			gen: func() (Descriptor, error) { return AccessSize(b, opts) }})
	}
	conflicts := o.Conflicts
	if conflicts == nil {
		conflicts = DefaultConflicts
	}
	for _, n := range conflicts {
		es = append(es, suiteEntry{name: fmt.Sprintf("bank.%d", n),
			gen: func() (Descriptor, error) { return BankConflicts(n, opts) }})
	}
	return es
}

func orDefault(cc string) string {
	if cc == "" {
		return DefaultDevice.CC
	}
	return cc
}
