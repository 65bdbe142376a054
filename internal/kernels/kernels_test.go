package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// small is a launch small enough to reason about by hand.
var small = Opts{Blocks: 3, Threads: 64, Iters: 7, Unroll: 24, Chains: 4}

func TestArith(t *testing.T) {
	configs := []struct {
		name string
		o    Opts
	}{
		{"default", Opts{}},
		{"small", small},
		{"sm_80", Opts{Device: Device{CC: "8.0", SMs: 108}, Unroll: 64}},
		{"chains3", Opts{Blocks: 1, Threads: 32, Iters: 1, Unroll: 9, Chains: 3}},
	}
	for _, cfg := range configs {
		for _, c := range ArithClasses {
			t.Run(cfg.name+"/"+string(c), func(t *testing.T) {
				d, err := Arith(c, cfg.o)
				if err != nil {
					t.Fatal(err)
				}
				m := checkModule(t, d)
				checkCounts(t, d, m)
				if d.Name != string(c) || d.Group != "arith" || d.Measured != c {
					t.Errorf("name %q group %q measured %q", d.Name, d.Group, d.Measured)
				}
				iters, _ := d.Param("iters")
				s, _ := cfg.o.shape(512)
				want := d.TotalThreads() * int64(iters.Int) * int64(s.unroll)
				if got := d.MeasuredOps(); got != want {
					t.Errorf("MeasuredOps = %d, want threads %d × iters %d × unroll %d = %d", got, d.TotalThreads(), iters.Int, s.unroll, want)
				}
				// The loop costs one add.s32, one setp and one bra per iteration and thread.
				trips := d.TotalThreads() * int64(iters.Int)
				if d.Overhead[Bra] != trips || d.Overhead[Setp] != trips+d.TotalThreads()*int64(s.chains) {
					t.Errorf("Overhead bra %d setp %d, want %d and %d", d.Overhead[Bra], d.Overhead[Setp], trips, trips+d.TotalThreads()*int64(s.chains))
				}
				if c != Int32Add && d.Overhead[Int32Add] != trips+d.TotalThreads()*int64(s.chains) {
					t.Errorf("Overhead[int32.add] = %d, want the loop counter %d + seeding %d", d.Overhead[Int32Add], trips, d.TotalThreads()*int64(s.chains))
				}
				if c.Flops() > 0 {
					if d.Flops() != c.Flops()*want || d.Ops[c] != want {
						t.Errorf("Flops = %d, want %d × %d", d.Flops(), c.Flops(), want)
					}
				} else if d.Flops() != 0 {
					t.Errorf("Flops = %d, want 0", d.Flops())
				}
				if !strings.Contains(d.PTX, ".target sm_"+fmt.Sprint(s.target.SM)) {
					t.Errorf("PTX does not target sm_%d", s.target.SM)
				}
			})
		}
	}
}

func TestFMAFlops(t *testing.T) {
	for _, tc := range []struct {
		c   OpClass
		per int64
	}{{FP32FMA, 2}, {FP64FMA, 2}, {FP16FMA, 4}, {BF16FMA, 4}, {FP32Add, 1}} {
		d, err := Arith(tc.c, small)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(3*64) * 7 * 24
		if d.Flops() != tc.per*n || d.MeasuredOps() != n {
			t.Errorf("%s: Flops %d MeasuredOps %d, want %d × %d", tc.c, d.Flops(), d.MeasuredOps(), tc.per, n)
		}
	}
}

func TestArithErrors(t *testing.T) {
	for _, tc := range []struct {
		c OpClass
		o Opts
	}{
		{"int8.add", Opts{}},
		{Setp, Opts{}},
		{FP32FMA, Opts{Unroll: 10, Chains: 4}},
		{FP32FMA, Opts{Threads: 48}},
		{FP32FMA, Opts{Threads: 2048}},
		{FP32FMA, Opts{Iters: -1}},
		{FP32FMA, Opts{Chains: 64}},
		{Int32Add, Opts{Chains: 2, Unroll: 8}},
		{BF16FMA, Opts{Device: Device{CC: "7.5"}}},
		{FP32FMA, Opts{Device: Device{CC: "nine"}}},
		{FP32FMA, Opts{Device: Device{CC: "4.0"}}},
		{FP32FMA, Opts{Device: Device{ThreadsPerSM: 100}}},
	} {
		if _, err := Arith(tc.c, tc.o); err == nil {
			t.Errorf("Arith(%q, %+v): no error", tc.c, tc.o)
		}
	}
}

func TestMemoryKernels(t *testing.T) {
	gens := map[string]func(Opts) (Descriptor, error){
		"dram.read": DRAMRead, "dram.copy": DRAMCopy, "l2.read": L2Read,
		"shared.read": SharedRead, "const.read": ConstRead,
	}
	for _, cfg := range []struct {
		name string
		o    Opts
	}{{"default", Opts{}}, {"small", Opts{Blocks: 3, Threads: 64, Iters: 2, Unroll: 3, Bytes: 1 << 20}}} {
		for name, gen := range gens {
			t.Run(cfg.name+"/"+name, func(t *testing.T) {
				d, err := gen(cfg.o)
				if err != nil {
					t.Fatal(err)
				}
				m := checkModule(t, d)
				c := checkCounts(t, d, m)
				if d.Name != name || d.Measured != "" || d.MeasuredOps() != 0 {
					t.Errorf("name %q measured %q", d.Name, d.Measured)
				}
				var level MemLevel
				for l := range d.Bytes {
					level = l
				}
				if len(d.Bytes) != 1 || d.Bytes[level] <= 0 {
					t.Fatalf("Bytes %v: want one level", d.Bytes)
				}
				switch level {
				case DRAM, L2:
					if c.bytes["global"] != d.Requested || d.Bytes[level] != d.Requested {
						t.Errorf("PTX moves %d global bytes; Bytes %d, Requested %d", c.bytes["global"], d.Bytes[level], d.Requested)
					}
					checkBounds(t, d, m)
				case Shared:
					if c.bytes["shared"] != d.Bytes[Shared] {
						t.Errorf("PTX moves %d shared bytes, Bytes %d", c.bytes["shared"], d.Bytes[Shared])
					}
				case Const:
					if c.bytes["const"] != d.Bytes[Const] {
						t.Errorf("PTX moves %d constant bytes, Bytes %d", c.bytes["const"], d.Bytes[Const])
					}
				}
				if name == "l2.read" && cfg.name == "default" {
					src, _ := d.Param("src")
					if src.Size < 4*mib || src.Size > 16*mib {
						t.Errorf("L2 working set %d B: want 4 to 16 MiB", src.Size)
					}
				}
				if strings.HasPrefix(name, "dram") && cfg.name == "default" {
					src, _ := d.Param("src")
					if src.Size < gib*95/100 {
						t.Errorf("DRAM buffer %d B: want about 1 GiB", src.Size)
					}
				}
			})
		}
	}
}

// checkBounds runs the address arithmetic of the first and the last thread and checks
// that every access of a streaming kernel falls inside its buffer.
func checkBounds(t *testing.T, d Descriptor, m *ptxModule) {
	t.Helper()
	offsets, step := loopImmediates(m)
	steps, _ := d.Param("steps")
	src, _ := d.Param("src")
	first, size, _, err := run(m, d, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, _, _, err := run(m, d, int64(d.Blocks-1), int64(d.Threads-1))
	if err != nil {
		t.Fatal(err)
	}
	end := last + slices.Max(offsets) + int64(steps.Int-1)*step + size
	if first != 0 || end > src.Size {
		t.Errorf("accesses from %d to %d, buffer %d B", first, end, src.Size)
	}
	if int64(len(offsets))*(offsets[1]-offsets[0]) != step {
		t.Errorf("step %d, %d accesses %d apart", step, len(offsets), offsets[1]-offsets[0])
	}
}

// sectorsPerWarp returns the 32-byte sectors that one access of a warp touches, from
// the addresses that the PTX computes for its 32 lanes.
func sectorsPerWarp(t *testing.T, d Descriptor, m *ptxModule, warp int64) (sectors int, span int64) {
	t.Helper()
	return unitsPerWarp(t, d, m, warp, 32)
}

// unitsPerWarp is sectorsPerWarp for units of unit bytes (aligned).
func unitsPerWarp(t *testing.T, d Descriptor, m *ptxModule, warp, unit int64) (units int, span int64) {
	t.Helper()
	seen := map[int64]bool{}
	lo, hi := int64(1<<62), int64(0)
	for lane := range int64(32) {
		g := warp*32 + lane
		a, size, _, err := run(m, d, g/int64(d.Threads), g%int64(d.Threads))
		if err != nil {
			t.Fatal(err)
		}
		for b := a; b < a+size; b += unit {
			seen[b/unit] = true
		}
		seen[(a+size-1)/unit] = true
		lo, hi = min(lo, a), max(hi, a+size)
	}
	return len(seen), hi - lo
}

func TestCoalescing(t *testing.T) {
	// Bytes over Requested: DRAM moves 64-byte units on sm_90 (DRAMFetchBytes), 32-byte
	// sectors before.
	ratios := map[string]map[int]int64{
		"9.0": {1: 16, 2: 8, 4: 4, 8: 2, 16: 1, 32: 1},
		"8.0": {1: 8, 2: 4, 4: 2, 8: 1, 16: 1, 32: 1},
	}
	for _, o := range []Opts{{}, {Blocks: 5, Threads: 96, Iters: 2, Unroll: 3, Bytes: 4 << 20}, {Device: Device{CC: "8.0"}}} {
		cc := o.Device.CC
		if cc == "" {
			cc = DefaultDevice.CC
		}
		unit := int64(32)
		if cc == "9.0" {
			unit = 64
		}
		for _, k := range Coalescings {
			d, err := Coalescing(k, o)
			if err != nil {
				t.Fatal(err)
			}
			m := checkModule(t, d)
			c := checkCounts(t, d, m)
			checkBounds(t, d, m)
			if c.bytes["global"] != d.Requested {
				t.Errorf("%s: PTX reads %d B, Requested %d", d.Name, c.bytes["global"], d.Requested)
			}
			if d.Bytes[DRAM] != ratios[cc][k]*d.Requested {
				t.Errorf("%s cc %s: Bytes %d = %.2f × Requested, want %d×", d.Name, cc, d.Bytes[DRAM], float64(d.Bytes[DRAM])/float64(d.Requested), ratios[cc][k])
			}
			// The fetch units the lanes' addresses touch, warp by warp.
			warps := d.TotalThreads() / 32
			accesses := c.bytes["global"] / 4 / d.TotalThreads() // per thread
			for _, w := range []int64{0, 1, warps - 1} {
				n, _ := unitsPerWarp(t, d, m, w, unit)
				if got := int64(n) * unit * warps * accesses; got != d.Bytes[DRAM] {
					t.Errorf("%s: warp %d touches %d units of %d B per access: %d B per launch, descriptor %d", d.Name, w, n, unit, got, d.Bytes[DRAM])
				}
			}
			if d.Variant["coalescing"] != float64(k) || d.Group != "coalescing" {
				t.Errorf("%s: variant %v group %q", d.Name, d.Variant, d.Group)
			}
		}
	}
	if _, err := Coalescing(3, Opts{}); err == nil {
		t.Error("Coalescing(3): no error")
	}
}

func TestAccessSize(t *testing.T) {
	var buf int64
	for _, b := range AccessSizes {
		d, err := AccessSize(b, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		m := checkModule(t, d)
		c := checkCounts(t, d, m)
		checkBounds(t, d, m)
		passes, _ := d.Param("passes")
		src, _ := d.Param("src")
		dst, _ := d.Param("dst")
		if src.Size != dst.Size || d.Bytes[DRAM] != 2*src.Size*int64(passes.Int) || d.Requested != d.Bytes[DRAM] || c.bytes["global"] != d.Requested {
			t.Errorf("%s: Bytes %d Requested %d PTX %d, buffers %d + %d × %d passes", d.Name, d.Bytes[DRAM], d.Requested, c.bytes["global"], src.Size, dst.Size, passes.Int)
		}
		if n, span := sectorsPerWarp(t, d, m, 1); int64(n)*32 != span || span != int64(32*b) {
			t.Errorf("%s: a warp's access spans %d B in %d sectors, want %d B, whole sectors", d.Name, span, n, 32*b)
		}
		if buf != 0 && (src.Size < buf*9/10 || src.Size > buf*11/10) {
			t.Errorf("%s: buffer %d B, the others %d", d.Name, src.Size, buf)
		}
		buf = src.Size
		if want := "ld.global." + ldSuffix[b] + " "; !strings.Contains(d.PTX, want) {
			t.Errorf("%s: no %q in the PTX", d.Name, want)
		}
	}
	for _, b := range []int{0, 3, 32} {
		if _, err := AccessSize(b, Opts{}); err == nil {
			t.Errorf("AccessSize(%d): no error", b)
		}
	}
}

func TestBankConflicts(t *testing.T) {
	for n := range 32 {
		d, err := BankConflicts(n, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		m := checkModule(t, d)
		c := checkCounts(t, d, m)
		if c.bytes["shared"] != d.Bytes[Shared] {
			t.Errorf("%s: PTX stores %d B, Bytes %d", d.Name, c.bytes["shared"], d.Bytes[Shared])
		}
		// Wavefronts of a warp's store: the most distinct words any bank holds.
		for _, warp := range []int64{0, 3} {
			words := map[int64]map[int64]bool{}
			for lane := range int64(32) {
				g := warp*32 + lane
				a, _, space, err := run(m, d, g/int64(d.Threads), g%int64(d.Threads))
				if err != nil || space != "shared" {
					t.Fatal(err, space)
				}
				bank := (a / 4) % 32
				if words[bank] == nil {
					words[bank] = map[int64]bool{}
				}
				words[bank][a/4] = true
			}
			ways := 0
			for _, w := range words {
				ways = max(ways, len(w))
			}
			if ways != n+1 || d.Variant["wavefronts"] != float64(n+1) || d.Variant["conflicts"] != float64(n) {
				t.Errorf("%s: warp %d's store takes %d wavefronts, variant %v; want %d", d.Name, warp, ways, d.Variant, n+1)
			}
		}
	}
	for _, n := range []int{-1, 32} {
		if _, err := BankConflicts(n, Opts{}); err == nil {
			t.Errorf("BankConflicts(%d): no error", n)
		}
	}
}

// MIPP's own layout, lane*(n+1) words, gives gcd(n+1, 32)-way conflicts: the reason
// BankConflicts uses another.
func TestMIPPLayoutIsNotNWay(t *testing.T) {
	ways := func(stride int) int {
		words := map[int]map[int]bool{}
		for lane := range 32 {
			w := lane * stride
			if words[w%32] == nil {
				words[w%32] = map[int]bool{}
			}
			words[w%32][w] = true
		}
		m := 0
		for _, s := range words {
			m = max(m, len(s))
		}
		return m
	}
	if ways(3) != 1 || ways(2) != 2 || ways(32) != 32 || ways(8) != 8 {
		t.Errorf("lane*(n+1): n=2 %d-way, n=1 %d, n=31 %d, n=7 %d", ways(3), ways(2), ways(32), ways(8))
	}
}

func TestDefault(t *testing.T) {
	ds, err := Default(SuiteOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range Names() {
		if c := OpClass(BaseName(n)); c.Tensor() {
			if ok, _ := TensorSupported(c, "9.0"); !ok {
				continue // fp8 mma.sync: not generated for sm_90
			}
		}
		names = append(names, n)
	}
	if len(ds) != len(names) {
		t.Fatalf("%d kernels, %d names", len(ds), len(names))
	}
	seen := map[string]bool{}
	for i, d := range ds {
		if d.Name != names[i] {
			t.Errorf("kernel %d is %s, Names says %s", i, d.Name, names[i])
		}
		if seen[d.Name] || seen[d.Entry] {
			t.Errorf("%s: name or entry twice", d.Name)
		}
		seen[d.Name], seen[d.Entry] = true, true
		m := checkModule(t, d)
		checkCounts(t, d, m)
		if d.Notes == "" || d.Group == "" {
			t.Errorf("%s: no notes or group", d.Name)
		}
	}
	if ds[0].Name != "baseline" || ds[1].Name != "int32.add" || ds[len(ds)-1].Name != "bank.31" {
		t.Errorf("order: %s ... %s", ds[0].Name, ds[len(ds)-1].Name)
	}
	// Older GPUs get no bf16 kernel, other sizes and targets.
	old, err := Default(SuiteOpts{Device: Device{CC: "7.0", SMs: 80}, Conflicts: []int{0, 5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range old {
		if d.Name == "bf16.fma" || d.Group == "tensor" || !strings.Contains(d.PTX, ".target sm_70") {
			t.Errorf("7.0: %s targets %q", d.Name, d.PTX[strings.Index(d.PTX, ".target"):][:14])
		}
	}
	if len(old) != len(ds)-1-(len(TensorClasses)-2)-len(DefaultConflicts)+2 {
		t.Errorf("7.0 suite: %d kernels", len(old))
	}
	if _, err := Default(SuiteOpts{Device: Device{CC: "x"}}); err == nil {
		t.Error("bad compute capability: no error")
	}
}

func TestLaunchTime(t *testing.T) {
	// The launch length scales the loops.
	short, _ := Arith(FP32FMA, Opts{LaunchTime: time.Millisecond})
	long, _ := Arith(FP32FMA, Opts{LaunchTime: 10 * time.Millisecond})
	if r := float64(long.MeasuredOps()) / float64(short.MeasuredOps()); r < 9.5 || r > 10.5 {
		t.Errorf("10 ms / 1 ms launch: %.2f × the work", r)
	}
	// At the spec rate, the default fp32.fma launch takes about 5 ms on an H200.
	d, _ := Arith(FP32FMA, Opts{})
	if s := float64(d.MeasuredOps()) / (128 * 132 * 1.98e9); s < 4.5e-3 || s > 5.5e-3 {
		t.Errorf("fp32.fma: %.2f ms at the spec rate", s*1e3)
	}
}

func TestByName(t *testing.T) {
	ds, err := Default(SuiteOpts{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ByName(ds, "fp32.fma", "coalesce.*", "bank.1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Name)
	}
	want := []string{"fp32.fma", "coalesce.1/32", "coalesce.1/16", "coalesce.1/8", "coalesce.1/4", "coalesce.1/2", "coalesce.1/1", "bank.1"}
	if !slices.Equal(names, want) {
		t.Errorf("ByName: %v, want %v", names, want)
	}
	if _, err := ByName(ds, "fp32.fma", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := ByName(ds, "["); err == nil {
		t.Error("bad pattern: no error")
	}
}

func TestTargetFor(t *testing.T) {
	for _, tc := range []struct {
		cc   string
		sm   int
		isa  string
		fail bool
	}{
		{"9.0", 90, "7.8", false}, {"8.0", 80, "7.0", false}, {"8.6", 86, "7.1", false},
		{"8.9", 89, "7.8", false}, {"7.0", 70, "6.0", false}, {"sm_90", 90, "7.8", false},
		{"90", 90, "7.8", false}, {"10.0", 100, "8.6", false}, {"12.0", 120, "8.7", false},
		{"", 0, "", true}, {"9", 0, "", true}, {"9.x", 0, "", true}, {"6.1", 0, "", true}, {"9.5", 0, "", true},
	} {
		tg, err := TargetFor(tc.cc)
		if (err != nil) != tc.fail || (!tc.fail && (tg.SM != tc.sm || tg.ISA != tc.isa)) {
			t.Errorf("TargetFor(%q) = %v, %v", tc.cc, tg, err)
		}
	}
	d, err := Arith(FP32FMA, Opts{Device: Device{CC: "8.0"}})
	if err != nil || !strings.Contains(d.PTX, ".version 7.0\n.target sm_80\n") {
		t.Errorf("cc 8.0: %v\n%s", err, d.PTX[:300])
	}
}

func TestSpec(t *testing.T) {
	for _, tc := range []struct {
		c    OpClass
		cc   string
		want float64
		ok   bool
	}{
		{FP32FMA, "9.0", 128, true}, {FP32FMA, "8.0", 64, true}, {FP64FMA, "9.0", 64, true},
		{FP64FMA, "8.0", 32, true}, {FP16FMA, "9.0", 128, true}, {FP32Sin, "9.0", 16, true},
		{Int32Add, "9.0", 64, true}, {Int32Popc, "9.0", 16, true}, {Int32Logic, "8.0", 64, true},
		{Int64Add, "9.0", 0, false}, {BF16FMA, "9.0", 0, false}, {Setp, "9.0", 0, false},
		{FP32FMA, "7.5", 0, false}, {FP32FMA, "bad", 0, false}, {FP32FMA, "sm_90", 128, true},
	} {
		got, ok := SpecOpsPerCycleSM(tc.c, tc.cc)
		if got != tc.want || ok != tc.ok {
			t.Errorf("SpecOpsPerCycleSM(%s, %s) = %g, %v; want %g, %v", tc.c, tc.cc, got, ok, tc.want, tc.ok)
		}
	}
	// FACTS.md: fp32 FMA at 97.5 % and fp64 at 99.3 % of 132 SMs × spec × 2 × 1.98 GHz.
	fp32, _ := SpecOpsPerCycleSM(FP32FMA, "9.0")
	if r := 65.23e12 / (132 * fp32 * 2 * 1.98e9); r < 0.97 || r > 0.98 {
		t.Errorf("fp32: measured/spec %.3f", r)
	}
}

func TestAllClassesCovered(t *testing.T) {
	if len(ArithClasses) != len(arithKinds) {
		t.Errorf("%d classes, %d kinds", len(ArithClasses), len(arithKinds))
	}
	for _, c := range ArithClasses {
		if _, ok := arithKinds[c]; !ok {
			t.Errorf("no kernel for %s", c)
		}
	}
}
