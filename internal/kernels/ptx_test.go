package kernels

// A small PTX reader of its own, independent of the generators: it parses the module
// text, checks that it is well-formed, counts the instructions of each class executed
// by a launch (loop bodies times the trip counts of the loops' parameters), and runs the
// straight-line address arithmetic to find the bytes every access touches.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

type ptxInstr struct {
	line     int
	guard    string // "@%p1", "@!%p1" or ""
	opcode   string // "fma.rn.f32"
	operands []string
	loops    []string // the parameters of the enclosing loops, outermost first
}

type ptxModule struct {
	version, target, addressSize string
	entries                      []string
	params                       [][2]string // name, type
	directives                   []string    // .maxntid ..., .minnctapersm ...
	regs                         map[string]int
	regTypes                     map[string]string
	globals                      []string
	labels                       map[string]int // label -> instruction index
	instrs                       []ptxInstr
}

var (
	reReg     = regexp.MustCompile(`%([a-z]+)([0-9]+)\b`)
	reRegDecl = regexp.MustCompile(`^\.reg\s+\.(\w+)\s+%([a-z]+)<(\d+)>;$`)
	reParam   = regexp.MustCompile(`^\.param\s+\.(\w+)\s+(\w+),?$`)
	reEntry   = regexp.MustCompile(`^\.visible\s+\.entry\s+(\w+)\($`)
	reLabel   = regexp.MustCompile(`^(\$?\w+):$`)
)

// parsePTX reads a module; it fails on anything it does not understand.
func parsePTX(src string) (*ptxModule, error) {
	m := &ptxModule{regs: map[string]int{}, regTypes: map[string]string{}, labels: map[string]int{}}
	for i, r := range src {
		if r > 0x7e || (r < 0x20 && r != '\n' && r != '\t') {
			return nil, fmt.Errorf("byte %d: non-ASCII or control character %q (ptxas rejects it)", i, r)
		}
	}
	if strings.Count(src, "{")-strings.Count(src, "}") != 0 {
		return nil, fmt.Errorf("unbalanced braces: %d { and %d }", strings.Count(src, "{"), strings.Count(src, "}"))
	}
	var loops []string
	inParams, inBody := false, false
	for n, raw := range strings.Split(src, "\n") {
		line := raw
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		fail := func(f string, a ...any) (*ptxModule, error) {
			return nil, fmt.Errorf("line %d %q: %s", n+1, raw, fmt.Sprintf(f, a...))
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, ".version "):
			m.version = strings.TrimPrefix(line, ".version ")
		case strings.HasPrefix(line, ".target "):
			m.target = strings.TrimPrefix(line, ".target ")
		case strings.HasPrefix(line, ".address_size "):
			m.addressSize = strings.TrimPrefix(line, ".address_size ")
		case reEntry.MatchString(line):
			m.entries = append(m.entries, reEntry.FindStringSubmatch(line)[1])
			inParams = true
		case inParams && line == ")":
			inParams = false
		case inParams:
			p := reParam.FindStringSubmatch(line)
			if p == nil {
				return fail("not a parameter")
			}
			m.params = append(m.params, [2]string{p[2], p[1]})
		case strings.HasPrefix(line, ".maxntid") || strings.HasPrefix(line, ".minnctapersm"):
			m.directives = append(m.directives, line)
		case strings.HasPrefix(line, ".shared ") || strings.HasPrefix(line, ".const "):
			if inBody {
				return fail("module variable inside the body")
			}
			m.globals = append(m.globals, line)
		case line == "{":
			if inBody {
				return fail("nested block")
			}
			inBody = true
		case line == "}":
			inBody = false
		case !inBody:
			return fail("outside the entry's body")
		case reRegDecl.MatchString(line):
			d := reRegDecl.FindStringSubmatch(line)
			if _, dup := m.regs["%"+d[2]]; dup {
				return fail("register %%%s declared twice", d[2])
			}
			k, _ := strconv.Atoi(d[3])
			m.regs["%"+d[2]] = k
			m.regTypes["%"+d[2]] = d[1]
		case reLabel.MatchString(line):
			l := reLabel.FindStringSubmatch(line)[1]
			if _, dup := m.labels[l]; dup {
				return fail("label defined twice")
			}
			m.labels[l] = len(m.instrs)
			if p, ok := strings.CutPrefix(l, "$L_"); ok {
				loops = append(loops, p)
			}
		default:
			if !strings.HasSuffix(line, ";") {
				return fail("instruction without ';'")
			}
			line = strings.TrimSuffix(line, ";")
			in := ptxInstr{line: n + 1, loops: append([]string(nil), loops...)}
			if strings.HasPrefix(line, "@") {
				g, rest, _ := strings.Cut(line, " ")
				in.guard, line = g, strings.TrimSpace(rest)
			}
			op, rest, _ := strings.Cut(line, " ")
			in.opcode = op
			if rest = strings.TrimSpace(rest); rest != "" {
				in.operands = splitOperands(rest)
			}
			m.instrs = append(m.instrs, in)
			if strings.HasPrefix(op, "bra") {
				target := in.operands[0]
				p, ok := strings.CutPrefix(target, "$L_")
				if !ok || len(loops) == 0 || loops[len(loops)-1] != p {
					return fail("branch to %s is not the back edge of the innermost loop", target)
				}
				loops = loops[:len(loops)-1]
			}
		}
	}
	if len(loops) != 0 {
		return nil, fmt.Errorf("loops %v never closed", loops)
	}
	return m, nil
}

// splitOperands splits "a, {b, c}, [d+4]" at the top-level commas.
func splitOperands(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// classOf is this test's own opcode -> class table. ok is false for instructions of no
// class; unknown opcodes fail the test.
func classOf(op string) (OpClass, bool, error) {
	classes := map[string]OpClass{
		"add.s32": Int32Add, "mad.lo.s32": Int32Mul, "mul.lo.s32": Int32Mul, "mul.wide.u32": Int32Mul,
		"popc.b32": Int32Popc, "shl.b32": Int32Shift, "shr.u32": Int32Shift,
		"lop3.b32": Int32Logic, "xor.b32": Int32Logic, "and.b32": Int32Logic, "or.b32": Int32Logic,
		"min.s32": Int32Cmp, "min.u32": Int32Cmp, "max.u32": Int32Cmp,
		"add.s64": Int64Add, "add.rn.f32": FP32Add, "fma.rn.f32": FP32FMA,
		"sin.approx.ftz.f32": FP32Sin, "ex2.approx.ftz.f32": FP32Ex2, "rsqrt.approx.ftz.f32": FP32Rsqrt,
		"fma.rn.f64": FP64FMA, "fma.rn.f16x2": FP16FMA, "fma.rn.bf16x2": BF16FMA,
		"bra.uni": Bra,
	}
	if c, ok := classes[op]; ok {
		return c, true, nil
	}
	if strings.HasPrefix(op, "setp.") {
		return Setp, true, nil
	}
	if c, ok := tensorOpcode(op); ok {
		return c, true, nil
	}
	for _, p := range []string{"mov.", "cvt.", "cvta.", "ld.", "st.", "wgmma.fence.", "wgmma.commit_group.", "wgmma.wait_group.", "fence.proxy.async.", "bar.sync"} {
		if strings.HasPrefix(op, p) {
			return "", false, nil
		}
	}
	if op == "ret" {
		return "", false, nil
	}
	return "", false, fmt.Errorf("unknown opcode %q", op)
}

// tensorOpcode is this test's own table of tensor-core opcodes: the class by form (mma.sync
// or wgmma) and operand type.
func tensorOpcode(op string) (OpClass, bool) {
	parts := strings.Split(op, ".")
	var form string
	switch {
	case strings.HasPrefix(op, "mma.sync.aligned."):
		form = "mma"
	case strings.HasPrefix(op, "wgmma.mma_async.sync.aligned."):
		form = "wgmma"
	default:
		return "", false
	}
	typ := parts[len(parts)-2] // the B type: ...f32.bf16.bf16.f32 (mma) or ...f32.bf16.bf16 (wgmma)
	if form == "wgmma" {
		typ = parts[len(parts)-1]
	}
	if name, ok := map[string]string{"s8": "int8", "f16": "fp16"}[typ]; ok {
		typ = name
	}
	return OpClass(typ + "." + form), true
}

// tensorMACs is the MACs per thread of one tensor instruction, from its shape (mMnNkK)
// over the threads that issue it together (a warp; a warpgroup for wgmma).
func tensorMACs(op string) (num, per int64) {
	m := regexp.MustCompile(`\.m(\d+)n(\d+)k(\d+)\.`).FindStringSubmatch(op)
	a, _ := strconv.ParseInt(m[1], 10, 64)
	b, _ := strconv.ParseInt(m[2], 10, 64)
	c, _ := strconv.ParseInt(m[3], 10, 64)
	per = 32
	if strings.HasPrefix(op, "wgmma.") {
		per = 128
	}
	return a * b * c, per
}

// mult is how often an instruction runs in one launch.
func mult(in ptxInstr, d Descriptor) (int64, error) {
	m := d.TotalThreads()
	for _, l := range in.loops {
		p, ok := d.Param(l)
		if !ok || p.Kind != U32 {
			return 0, fmt.Errorf("loop $L_%s: no u32 parameter %q gives its trip count", l, l)
		}
		if p.Int < 1 {
			return 0, fmt.Errorf("loop $L_%s: trip count %d (the loops run at least once)", l, p.Int)
		}
		m *= int64(p.Int)
	}
	return m, nil
}

// accessBytes is the bytes one thread moves with a load or store, and its state space.
func accessBytes(op string) (space string, n int64, ok bool) {
	if !strings.HasPrefix(op, "ld.") && !strings.HasPrefix(op, "st.") {
		return "", 0, false
	}
	parts := strings.Split(op, ".")
	space = parts[1]
	if space == "volatile" {
		space = parts[2]
	}
	if space == "param" {
		return "", 0, false
	}
	last := parts[len(parts)-1]
	size := map[string]int64{"u8": 1, "u16": 2, "u32": 4, "b32": 4, "f32": 4, "u64": 8, "b64": 8, "f64": 8}[last]
	vec := int64(1)
	for _, p := range parts {
		switch p {
		case "v2":
			vec = 2
		case "v4":
			vec = 4
		}
	}
	return space, size * vec, size > 0
}

// counted is what the reader finds in a module.
type counted struct {
	ops, overhead map[OpClass]int64 // overhead: Setp and Bra only
	bytes         map[string]int64  // state space -> bytes moved by unguarded accesses
}

func countPTX(m *ptxModule, d Descriptor) (counted, error) {
	c := counted{ops: map[OpClass]int64{}, overhead: map[OpClass]int64{}, bytes: map[string]int64{}}
	for _, in := range m.instrs {
		k, ok, err := classOf(in.opcode)
		if err != nil {
			return c, fmt.Errorf("line %d: %w", in.line, err)
		}
		n, err := mult(in, d)
		if err != nil {
			return c, fmt.Errorf("line %d: %w", in.line, err)
		}
		if ok {
			if k.Tensor() { // MACs: the threads of a warp (warpgroup) issue one instruction together
				macs, per := tensorMACs(in.opcode)
				n = n / per * macs
			}
			if k == Setp || k == Bra {
				c.overhead[k] += n
			} else {
				c.ops[k] += n
			}
		}
		if space, b, ok := accessBytes(in.opcode); ok && in.guard == "" {
			c.bytes[space] += b * n
		}
	}
	return c, nil
}

// checkModule checks the module's form against its descriptor.
func checkModule(t *testing.T, d Descriptor) *ptxModule {
	t.Helper()
	m, err := parsePTX(d.PTX)
	if err != nil {
		t.Fatalf("%s: %v", d.Name, err)
	}
	if len(m.entries) != 1 || m.entries[0] != d.Entry {
		t.Errorf("%s: entries %v, want exactly [%s]", d.Name, m.entries, d.Entry)
	}
	if m.addressSize != "64" {
		t.Errorf("%s: .address_size %q, want 64", d.Name, m.addressSize)
	}
	if !regexp.MustCompile(`^sm_\d+a?$`).MatchString(m.target) || !regexp.MustCompile(`^\d+\.\d+$`).MatchString(m.version) {
		t.Errorf("%s: .target %q .version %q", d.Name, m.target, m.version)
	}
	want := []string{fmt.Sprintf(".maxntid %d, 1, 1", d.Threads)}
	if len(m.directives) != 2 || m.directives[0] != want[0] {
		t.Errorf("%s: directives %q, want %q and .minnctapersm", d.Name, m.directives, want)
	}
	// Parameters: declared in the descriptor's order, each loaded.
	kinds := map[ParamKind]string{Buffer: "u64", U32: "u32", U64: "u64", F32: "f32", F64: "f64"}
	if len(m.params) != len(d.Params) {
		t.Fatalf("%s: %d PTX parameters, %d in the descriptor", d.Name, len(m.params), len(d.Params))
	}
	loaded := map[string]bool{}
	for _, in := range m.instrs {
		if strings.HasPrefix(in.opcode, "ld.param.") {
			loaded[strings.Trim(in.operands[1], "[]")] = true
		}
	}
	for i, p := range d.Params {
		name, typ := m.params[i][0], m.params[i][1]
		if name != d.Entry+"_"+p.Name || typ != kinds[p.Kind] {
			t.Errorf("%s: parameter %d is .%s %s, want .%s %s_%s", d.Name, i, typ, name, kinds[p.Kind], d.Entry, p.Name)
		}
		if !loaded[name] {
			t.Errorf("%s: parameter %s is never loaded", d.Name, name)
		}
		if p.Kind == Buffer && p.Size <= 0 {
			t.Errorf("%s: buffer %s of %d bytes", d.Name, p.Name, p.Size)
		}
	}
	// Registers: every one used is declared, of a declared prefix and below its count;
	// every declared prefix is used.
	used := map[string]bool{}
	for _, in := range m.instrs {
		for _, o := range append([]string{in.guard}, in.operands...) {
			for _, r := range reReg.FindAllStringSubmatch(o, -1) {
				n, ok := m.regs["%"+r[1]]
				k, _ := strconv.Atoi(r[2])
				if !ok || k >= n {
					t.Errorf("%s: line %d uses %s, not declared (%%%s<%d>)", d.Name, in.line, r[0], r[1], n)
				}
				used["%"+r[1]] = true
			}
		}
	}
	for p := range m.regs {
		if !used[p] {
			t.Errorf("%s: registers %s<...> declared, never used", d.Name, p)
		}
	}
	// Every label is a loop's, and the branch at its end is its only branch.
	for l := range m.labels {
		if !strings.HasPrefix(l, "$L_") {
			t.Errorf("%s: label %s is not a loop's", d.Name, l)
		}
	}
	return m
}

// checkCounts compares the reader's counts with the descriptor.
func checkCounts(t *testing.T, d Descriptor, m *ptxModule) counted {
	t.Helper()
	c, err := countPTX(m, d)
	if err != nil {
		t.Fatalf("%s: %v", d.Name, err)
	}
	if !equalCounts(c.ops, d.Ops) {
		t.Errorf("%s: Ops %v, the PTX executes %v", d.Name, d.Ops, c.ops)
	}
	for _, k := range []OpClass{Setp, Bra} {
		if d.Overhead[k] != c.overhead[k] {
			t.Errorf("%s: Overhead[%s] = %d, the PTX executes %d", d.Name, k, d.Overhead[k], c.overhead[k])
		}
	}
	for k, n := range d.Overhead {
		if k != Setp && k != Bra && (n < 0 || n > d.Ops[k]) {
			t.Errorf("%s: Overhead[%s] = %d, Ops %d", d.Name, k, n, d.Ops[k])
		}
	}
	if d.Measured == "" {
		for k, n := range d.Ops {
			if d.Overhead[k] != n {
				t.Errorf("%s: memory kernel: Overhead[%s] = %d, want all of Ops (%d)", d.Name, k, d.Overhead[k], n)
			}
		}
	}
	return c
}

func equalCounts(a, b map[OpClass]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// run interprets the straight-line integer code of a module for one thread, from the
// start up to the first global or shared access that runs in a loop, ignoring loop
// control and treating buffers as starting at address 0 (module arrays too): it returns
// that access's address (register plus immediate offset), its size and its state space.
func run(m *ptxModule, d Descriptor, ctaid, tid int64) (addr int64, size int64, space string, err error) {
	regs := map[string]int64{}
	val := func(o string) (int64, error) {
		switch o {
		case "%tid.x":
			return tid, nil
		case "%ctaid.x":
			return ctaid, nil
		case "%clock":
			return 0, nil
		case "gw_smem", "gw_cdata":
			return 0, nil
		}
		if strings.HasPrefix(o, "%") {
			v, ok := regs[o]
			if !ok {
				return 0, fmt.Errorf("register %s read before it is written", o)
			}
			return v, nil
		}
		return strconv.ParseInt(o, 0, 64)
	}
	for _, in := range m.instrs {
		op, ops := in.opcode, in.operands
		if space, b, ok := accessBytes(op); ok && len(in.loops) > 0 && in.guard == "" && (space == "global" || space == "shared" || space == "const") {
			ref := ops[1]
			if strings.HasPrefix(op, "st.") {
				ref = ops[0]
			}
			base, off, _ := strings.Cut(strings.Trim(ref, "[]"), "+")
			a, err := val(base)
			if err != nil {
				return 0, 0, "", err
			}
			if off != "" {
				o, err := strconv.ParseInt(off, 10, 64)
				if err != nil {
					return 0, 0, "", err
				}
				a += o
			}
			return a, b, space, nil
		}
		if in.guard != "" || strings.HasPrefix(op, "bra") || strings.HasPrefix(op, "setp") || strings.HasPrefix(op, "st.") || op == "ret" {
			continue
		}
		if strings.HasPrefix(op, "ld.param.") {
			name := strings.TrimPrefix(strings.Trim(ops[1], "[]"), d.Entry+"_")
			p, _ := d.Param(name)
			regs[ops[0]] = int64(p.Int) // buffers: address 0
			continue
		}
		if strings.HasPrefix(op, "ld.") {
			continue // loaded data is not address arithmetic
		}
		var a []int64
		for _, o := range ops[1:] {
			if strings.HasPrefix(o, "{") {
				a = append(a, 0) // packing halves: not an address
				continue
			}
			v, err := val(o)
			if err != nil {
				return 0, 0, "", fmt.Errorf("line %d: %w", in.line, err)
			}
			a = append(a, v)
		}
		var r int64
		switch {
		case op == "mov.u32" || op == "mov.u64" || op == "mov.b32" || op == "cvta.to.global.u64" || op == "cvt.u64.u32":
			r = a[0]
		case strings.HasPrefix(op, "cvt."), strings.HasPrefix(op, "mov."):
			r = 0 // conversions of seeds
		case op == "and.b32":
			r = a[0] & a[1]
		case op == "or.b32":
			r = a[0] | a[1]
		case op == "shr.u32":
			r = int64(uint32(a[0]) >> a[1])
		case op == "shl.b32":
			r = int64(uint32(a[0] << a[1]))
		case op == "min.u32":
			r = min(a[0], a[1])
		case op == "mul.lo.s32":
			r = int64(int32(a[0] * a[1]))
		case op == "xor.b32":
			r = a[0] ^ a[1]
		case op == "mad.lo.s32":
			r = int64(int32(a[0]*a[1] + a[2]))
		case op == "mul.wide.u32":
			r = a[0] * a[1]
		case op == "add.s32":
			r = int64(int32(a[0] + a[1]))
		case op == "add.s64":
			r = a[0] + a[1]
		default:
			return 0, 0, "", fmt.Errorf("line %d: the interpreter does not know %s", in.line, op)
		}
		regs[ops[0]] = r
	}
	return 0, 0, "", fmt.Errorf("no access in a loop")
}

// loopImmediates returns the immediate offsets of the accesses in the innermost loop and
// the pointer increment per trip (add.s64 p, p, imm), for the streaming kernels.
func loopImmediates(m *ptxModule) (offsets []int64, step int64) {
	for _, in := range m.instrs {
		if len(in.loops) == 0 || in.guard != "" {
			continue
		}
		if space, _, ok := accessBytes(in.opcode); ok && space == "global" && strings.HasPrefix(in.opcode, "ld.") {
			_, off, _ := strings.Cut(strings.Trim(in.operands[1], "[]"), "+")
			o, _ := strconv.ParseInt(off, 10, 64)
			offsets = append(offsets, o)
		}
		if in.opcode == "add.s64" && in.operands[0] == in.operands[1] {
			step, _ = strconv.ParseInt(in.operands[2], 10, 64)
		}
	}
	return offsets, step
}
