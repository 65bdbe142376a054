package kernels

import (
	"fmt"
	"strings"
	"text/template"
)

// The generators write PTX through an emitter: it appends instruction lines and, for
// each line, counts its class at the loop depth where it stands. Descriptor counts come
// from those tallies and the loops' trip counts, never from reading the PTX back; the
// tests parse the PTX text on their own and must find the same numbers.

// ptxParam is an .entry parameter together with the Param that the descriptor shows.
type ptxParam struct {
	Name string // PTX name: <entry>_<param name>
	Type string // u64, u32, f32, f64
	P    Param
}

// emitter builds one kernel.
type emitter struct {
	entry   string
	params  []ptxParam
	globals []string
	lines   []string
	regs    map[string]int // prefix -> registers used
	regType map[string]string

	loops    []string                     // open loops: the params that give their trip counts
	counts   map[string]map[OpClass]int64 // loop path ("", "passes", "passes/iters") -> class -> instructions
	measured OpClass
	measCnt  map[string]int64 // loop path -> measured instructions
	labels   map[string]bool
}

func newEmitter(entry string) *emitter {
	return &emitter{
		entry: entry,
		regs:  map[string]int{},
		regType: map[string]string{
			"%p": "pred", "%r": "b32", "%rd": "b64", "%f": "f32", "%fd": "f64", "%h": "b16",
		},
		counts:  map[string]map[OpClass]int64{},
		measCnt: map[string]int64{},
		labels:  map[string]bool{},
	}
}

// param declares the next kernel parameter and returns its PTX name.
func (e *emitter) param(p Param) string {
	typ := map[ParamKind]string{Buffer: "u64", U32: "u32", U64: "u64", F32: "f32", F64: "f64"}[p.Kind]
	name := e.entry + "_" + p.Name
	e.params = append(e.params, ptxParam{Name: name, Type: typ, P: p})
	return name
}

// reg allocates a register: prefix is %r (.b32), %rd (.b64), %f (.f32), %fd (.f64),
// %h (.b16) or %p (.pred).
func (e *emitter) reg(prefix string) string {
	if _, ok := e.regType[prefix]; !ok {
		panic("kernels: unknown register prefix " + prefix)
	}
	n := e.regs[prefix]
	e.regs[prefix] = n + 1
	return fmt.Sprintf("%s%d", prefix, n)
}

func (e *emitter) regsN(prefix string, n int) []string {
	rs := make([]string, n)
	for i := range rs {
		rs[i] = e.reg(prefix)
	}
	return rs
}

func (e *emitter) path() string { return strings.Join(e.loops, "/") }

// op emits an instruction of class c ("" for none: mov, cvt, ld, st, ret).
func (e *emitter) op(c OpClass, format string, args ...any) {
	e.lines = append(e.lines, "\t"+fmt.Sprintf(format, args...)+";")
	if c == "" {
		return
	}
	p := e.path()
	if e.counts[p] == nil {
		e.counts[p] = map[OpClass]int64{}
	}
	e.counts[p][c]++
}

// raw emits an instruction of no class.
func (e *emitter) raw(format string, args ...any) { e.op("", format, args...) }

// measure emits one instruction of the measured sequence, of class c.
func (e *emitter) measure(c OpClass, format string, args ...any) {
	if e.measured != "" && e.measured != c {
		panic("kernels: two measured classes in one kernel")
	}
	e.measured = c
	e.op(c, format, args...)
	e.measCnt[e.path()]++
}

func (e *emitter) comment(format string, args ...any) {
	e.lines = append(e.lines, "\t// "+fmt.Sprintf(format, args...))
}

// loop is an open counted loop.
type loop struct {
	param, label, counter, pred, bound string
}

// beginLoop opens a do-while loop whose trip count is the u32 kernel parameter bound
// (a register holding it); the label names the parameter so that a reader knows the
// trip count: $L_<param>.
func (e *emitter) beginLoop(param, bound string) loop {
	l := loop{param: param, label: "$L_" + param, counter: e.reg("%r"), pred: e.reg("%p"), bound: bound}
	if e.labels[l.label] {
		panic("kernels: two loops over " + param)
	}
	e.labels[l.label] = true
	e.raw("mov.u32 %s, 0", l.counter)
	e.lines = append(e.lines, l.label+":")
	e.loops = append(e.loops, param)
	return l
}

// endLoop closes l: counter increment (Int32Add), test (Setp) and back edge (Bra).
func (e *emitter) endLoop(l loop) {
	if len(e.loops) == 0 || e.loops[len(e.loops)-1] != l.param {
		panic("kernels: loops closed out of order")
	}
	e.op(Int32Add, "add.s32 %s, %s, 1", l.counter, l.counter)
	e.op(Setp, "setp.lt.u32 %s, %s, %s", l.pred, l.counter, l.bound)
	e.op(Bra, "@%s bra.uni %s", l.pred, l.label)
	e.loops = e.loops[:len(e.loops)-1]
}

// tally turns the emitter's counts into per-launch totals given the loops' trip counts
// (by parameter name) and the launch's threads.
func (e *emitter) tally(trips map[string]int64, threads int64) (ops, overhead map[OpClass]int64, measured int64) {
	mult := func(path string) int64 {
		m := threads
		if path == "" {
			return m
		}
		for _, p := range strings.Split(path, "/") {
			t, ok := trips[p]
			if !ok {
				panic("kernels: no trip count for loop " + p)
			}
			m *= t
		}
		return m
	}
	ops = map[OpClass]int64{}
	overhead = map[OpClass]int64{}
	for path, cs := range e.counts {
		m := mult(path)
		for c, n := range cs {
			if c == Setp || c == Bra {
				overhead[c] += n * m
				continue
			}
			ops[c] += n * m
			overhead[c] += n * m
		}
	}
	for path, n := range e.measCnt {
		measured += n * mult(path)
	}
	if e.measured != "" {
		overhead[e.measured] -= measured
		if overhead[e.measured] == 0 {
			delete(overhead, e.measured)
		}
	}
	return ops, overhead, measured
}

// module is what the module template renders: the module up to its body, whose lines
// render writes after it.
type module struct {
	Name, Entry string
	Target      Target
	Comments    []string
	Globals     []string
	Params      []ptxParam
	MaxNTID     int
	MinCTAs     int
	Regs        []regDecl
}

type regDecl struct {
	Type, Prefix string
	N            int
}

var moduleTmpl = template.Must(template.New("module").Parse(`//
// gpuwatt kernel {{.Name}}: generated by gpuwatt/internal/kernels; do not edit.
{{- range .Comments}}
// {{.}}
{{- end}}
//
.version {{.Target.ISA}}
.target sm_{{.Target.SM}}{{.Target.Suffix}}
.address_size 64
{{range .Globals}}
{{.}}
{{end}}
.visible .entry {{.Entry}}(
{{- range $i, $p := .Params}}{{if $i}},{{end}}
	.param .{{$p.Type}} {{$p.Name}}
{{- end}}
)
.maxntid {{.MaxNTID}}, 1, 1
.minnctapersm {{.MinCTAs}}
{
{{- range .Regs}}
	.reg .{{.Type}} {{.Prefix}}<{{.N}}>;
{{- end}}

`))

// render writes the module's PTX.
func (e *emitter) render(name string, t Target, s shape, comments []string) string {
	var regs []regDecl
	for _, p := range []string{"%p", "%h", "%r", "%rd", "%f", "%fd"} {
		if n := e.regs[p]; n > 0 {
			regs = append(regs, regDecl{Type: e.regType[p], Prefix: p, N: n})
		}
	}
	for i, c := range comments {
		comments[i] = asciiOnly(c)
	}
	var b strings.Builder
	err := moduleTmpl.Execute(&b, module{
		Name: name, Entry: e.entry, Target: t, Comments: comments, Globals: e.globals,
		Params: e.params, MaxNTID: s.threads, MinCTAs: s.minCTAs(), Regs: regs,
	})
	if err != nil {
		panic(err) // the template is fixed and its data well-formed
	}
	// The body's lines (thousands in an unrolled kernel) written directly, one a line: the
	// template's range over them was a third of the suite's generation (micro --only
	// builds the suite twice).
	n := b.Len() + 2
	for _, l := range e.lines {
		n += len(l) + 1
	}
	b.Grow(n - b.Len())
	for _, l := range e.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.String()
}

// params returns the descriptor's parameter list.
func (e *emitter) descParams() []Param {
	ps := make([]Param, len(e.params))
	for i, p := range e.params {
		ps[i] = p.P
	}
	return ps
}

// entryName turns a kernel name into a PTX identifier: gw_fp32_fma.
func entryName(name string) string {
	r := strings.NewReplacer(".", "_", "/", "_", "-", "_", "@", "_")
	return "gw_" + r.Replace(name)
}

// asciiOnly keeps a PTX comment ASCII: ptxas (CUDA 13) rejects any other byte, even in
// comments.
func asciiOnly(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '×':
			return 'x'
		case r > 0x7e || (r < 0x20 && r != '\t'):
			return '?'
		}
		return r
	}, s)
}
