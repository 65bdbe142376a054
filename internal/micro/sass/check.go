package sass

import (
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Kernel is what gpuwatt counts for one kernel: an entry of the kernels.json that `gpuwatt
// micro --ptx` writes (internal/micro.ManifestKernel; the fields this check reads).
type Kernel struct {
	Name        string           `json:"name"`
	Group       string           `json:"group"`
	Entry       string           `json:"entry"`
	File        string           `json:"file"`
	Measured    string           `json:"measured"`
	Operands    string           `json:"operands"`
	Unroll      int              `json:"unroll"`
	Iters       int64            `json:"iters"`
	Blocks      int              `json:"blocks"`
	Threads     int              `json:"threads"`
	MeasuredOps int64            `json:"measured_ops"`
	Ops         map[string]int64 `json:"ops"`
	Bytes       map[string]int64 `json:"bytes"`
	// MACsPerInstr and InstrThreads describe a tensor-core kernel's instruction: its MACs,
	// issued together by InstrThreads threads (32: mma.sync; 128: wgmma); 0 for others.
	MACsPerInstr int64 `json:"macs_per_instruction"`
	InstrThreads int   `json:"instruction_threads"`
}

// Rule is the SASS that one PTX instruction of a class becomes: PerPTX machine
// instructions, each one of Ops. Shared says the loop's own counter may be one of Ops too
// (an IADD3), so up to 2 more per iteration are allowed.
type Rule struct {
	Ops    []string
	PerPTX int
	Shared bool
	Note   string
}

// Rules maps each instruction class to its SASS on sm_80/sm_90 (CUDA 12-13 ptxas).
var Rules = map[string]Rule{
	"fp32.fma":    {Ops: []string{"FFMA"}, PerPTX: 1},
	"fp64.fma":    {Ops: []string{"DFMA"}, PerPTX: 1},
	"fp32.add":    {Ops: []string{"FADD"}, PerPTX: 1},
	"fp16.fma":    {Ops: []string{"HFMA2", "HFMA2.MMA"}, PerPTX: 1},
	"bf16.fma":    {Ops: []string{"HFMA2.BF16_V2", "HFMA2.MMA.BF16_V2"}, PerPTX: 1},
	"fp32.sin":    {Ops: []string{"MUFU.SIN", "FMUL.RZ"}, PerPTX: 2, Note: "range scaling (FMUL.RZ) + MUFU.SIN"},
	"fp32.ex2":    {Ops: []string{"MUFU.EX2"}, PerPTX: 1},
	"fp32.rsqrt":  {Ops: []string{"MUFU.RSQ"}, PerPTX: 1},
	"int32.mad":   {Ops: []string{"IMAD"}, PerPTX: 1},
	"int32.popc":  {Ops: []string{"POPC"}, PerPTX: 1},
	"int32.shift": {Ops: []string{"SHF.L.U32"}, PerPTX: 1},
	"int32.logic": {Ops: []string{"LOP3.LUT"}, PerPTX: 1},
	"int32.cmp":   {Ops: []string{"IMNMX", "IMNMX.U32", "VIMNMX", "VIMNMX.U32"}, PerPTX: 1},
	"int32.add":   {Ops: []string{"IADD3", "IMAD.IADD"}, PerPTX: 1, Shared: true, Note: "IADD3 on the integer pipe, IMAD.IADD on the FMA pipe"},
	"int64.add":   {Ops: []string{"IADD3", "IADD3.X", "IMAD.X", "IMAD.IADD"}, PerPTX: 2, Shared: true, Note: "a 32-bit add and one with carry (.X)"},
	// Tensor cores (issue 33), as ptxas 13.0 made them on an H100 (2026-11-28).
	"fp16.mma":   {Ops: []string{"HMMA.16816.F32"}, PerPTX: 1},
	"bf16.mma":   {Ops: []string{"HMMA.16816.F32.BF16"}, PerPTX: 1},
	"tf32.mma":   {Ops: []string{"HMMA.1688.F32.TF32"}, PerPTX: 1},
	"int8.mma":   {Ops: []string{"IMMA.16832.S8.S8"}, PerPTX: 1},
	"fp16.wgmma": {Ops: []string{"HGMMA.64x256x16.F32"}, PerPTX: 1},
	"bf16.wgmma": {Ops: []string{"HGMMA.64x256x16.F32.BF16"}, PerPTX: 1},
	"e4m3.wgmma": {Ops: []string{"QGMMA.64x256x32.F32.E4M3.E4M3"}, PerPTX: 1},
	"e5m2.wgmma": {Ops: []string{"QGMMA.64x256x32.F32.E5M2.E5M2"}, PerPTX: 1},
}

// SASSRow is one arithmetic kernel's check against its SASS.
type SASSRow struct {
	Name     string `json:"name"`
	Class    string `json:"class"`
	Operands string `json:"operands,omitempty"`
	// PTXPerIter is the measured PTX instructions per loop iteration (Unroll), Expected
	// the SASS instructions of the class they should become (× Rule.PerPTX).
	PTXPerIter int `json:"ptx_per_iteration"`
	Expected   int `json:"expected_sass_per_iteration"`
	// Found is the class's instructions in the SASS loop, Unrolled how many PTX iterations
	// one SASS loop iteration holds (ptxas may unroll further), Split the class's
	// instructions by mnemonic and Other the loop's remaining ones.
	Found    int            `json:"found_in_loop"`
	Unrolled int            `json:"unrolled"`
	Split    map[string]int `json:"split"`
	Other    map[string]int `json:"other"`
	LoopLen  int            `json:"loop_instructions"`
	OK       bool           `json:"ok"`
	Why      string         `json:"why,omitempty"`
}

// CheckSASS checks kernel k against its parsed SASS.
func CheckSASS(k Kernel, fs []Function) SASSRow {
	row := SASSRow{Name: k.Name, Class: k.Measured, Operands: k.Operands, PTXPerIter: k.Unroll}
	rule, ok := Rules[k.Measured]
	if !ok {
		row.Why = "no SASS rule for class " + k.Measured
		return row
	}
	row.Expected = k.Unroll * rule.PerPTX
	var f *Function
	for i := range fs {
		if fs[i].Name == k.Entry {
			f = &fs[i]
		}
	}
	if f == nil {
		row.Why = "no function " + k.Entry + " in the SASS"
		return row
	}
	loop := f.Loop()
	if loop == nil {
		row.Why = "no loop in the SASS"
		return row
	}
	row.LoopLen = len(loop)
	row.Split, row.Other = map[string]int{}, map[string]int{}
	in := map[string]bool{}
	for _, o := range rule.Ops {
		in[o] = true
	}
	for op, n := range Histogram(loop) {
		if in[op] {
			row.Split[op] = n
			row.Found += n
		} else {
			row.Other[op] = n
		}
	}
	if row.Expected == 0 {
		row.Why = "no measured instructions per iteration in kernels.json"
		return row
	}
	row.Unrolled = max(1, int(math.Floor(float64(row.Found)/float64(row.Expected))))
	extra := row.Found - row.Unrolled*row.Expected
	allowed := 0
	if rule.Shared {
		allowed = 2 * row.Unrolled
	}
	switch {
	case extra < 0:
		row.Why = fmt.Sprintf("%d of the class in the loop, want %d per iteration: ptxas dropped or merged some", row.Found, row.Expected)
	case extra > allowed:
		row.Why = fmt.Sprintf("%d of the class in the loop, want %d per iteration (+%d for the loop counter)", row.Found, row.Unrolled*row.Expected, allowed)
	default:
		row.OK = true
	}
	return row
}

// NCURow is one kernel's check against Nsight Compute's counters for one launch.
type NCURow struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// DRAMBytes is the descriptor's DRAM bytes, NCUDRAMBytes ncu's dram__bytes_read +
	// dram__bytes_write, DRAMRatio the second over the first (0: not measured).
	DRAMBytes    int64   `json:"dram_bytes"`
	NCUDRAMBytes float64 `json:"ncu_dram_bytes"`
	DRAMRatio    float64 `json:"dram_ratio,omitempty"`
	// L2Bytes is the descriptor's L2 bytes (the L2 kernel), NCUL2Bytes ncu's lts__t_bytes,
	// L2Ratio the second over the first.
	L2Bytes    int64   `json:"l2_bytes,omitempty"`
	NCUL2Bytes float64 `json:"ncu_l2_bytes,omitempty"`
	L2Ratio    float64 `json:"l2_ratio,omitempty"`
	// ClassOps is the descriptor's instructions of the measured class (thread-level, with
	// the overhead's), NCUClassOps ncu's thread-level SASS count of the matching operation
	// (ffma, dfma, fadd, hfma), ClassRatio the second over the first.
	ClassOps    int64   `json:"class_ops,omitempty"`
	NCUClassOps float64 `json:"ncu_class_ops,omitempty"`
	ClassRatio  float64 `json:"class_ratio,omitempty"`
	NCUMetric   string  `json:"ncu_metric,omitempty"`
	// ThreadInstr is ncu's thread-level instructions executed; PerMeasured that over the
	// descriptor's measured instructions (arithmetic kernels).
	ThreadInstr float64 `json:"ncu_thread_instructions,omitempty"`
	PerMeasured float64 `json:"thread_instructions_per_measured,omitempty"`
	// Pipes is ncu's warp-level instructions per pipe (smsp__inst_executed_pipe_*), as
	// shares of all warp-level instructions.
	Pipes map[string]float64 `json:"pipe_shares,omitempty"`
	// TensorInstr is a tensor-core kernel's warp-level tensor instructions as counted (its
	// MACs over MACs per instruction, times the warps that issue each), NCUTensorInstr
	// ncu's count of them (smsp__inst_executed_pipe_tensor_op_hmma or _imma), TensorRatio
	// the second over the first; TensorPipePct ncu's tensor pipe utilisation (% of peak
	// sustained while active).
	TensorInstr    int64   `json:"tensor_instructions,omitempty"`
	NCUTensorInstr float64 `json:"ncu_tensor_instructions,omitempty"`
	TensorRatio    float64 `json:"tensor_ratio,omitempty"`
	TensorMetric   string  `json:"tensor_metric,omitempty"`
	TensorPipePct  float64 `json:"tensor_pipe_pct,omitempty"`
	// TimeS is the launch's duration under ncu.
	TimeS float64 `json:"time_s,omitempty"`
	OK    bool    `json:"ok"`
	Why   string  `json:"why,omitempty"`
}

// classMetric is the ncu metric that counts a class's SASS operation, thread-level.
var classMetric = map[string]string{
	"fp32.fma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
	"fp64.fma": "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
	"fp32.add": "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
	"fp16.fma": "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
	"bf16.fma": "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
}

// DRAMTolerance is how far ncu's DRAM bytes may lie from the descriptor's: refresh of a
// few sectors, the buffers' first touch, and the kernel parameters' page.
const DRAMTolerance = 0.02

// CheckNCU checks kernel k against ncu's metrics for one launch (nil: none).
func CheckNCU(k Kernel, m map[string]float64) NCURow {
	row := NCURow{Name: k.Name, Group: k.Group, DRAMBytes: k.Bytes["dram"]}
	if m == nil {
		row.Why = "not profiled"
		return row
	}
	var whys []string
	r, rok := m["dram__bytes_read.sum"]
	w, wok := m["dram__bytes_write.sum"]
	if rok || wok {
		row.NCUDRAMBytes = r + w
		if row.DRAMBytes > 0 {
			row.DRAMRatio = row.NCUDRAMBytes / float64(row.DRAMBytes)
			if math.Abs(row.DRAMRatio-1) > DRAMTolerance {
				whys = append(whys, fmt.Sprintf("DRAM bytes %.4g against %d counted (%.3f)", row.NCUDRAMBytes, row.DRAMBytes, row.DRAMRatio))
			}
		}
	}
	if n := k.Bytes["l2"]; n > 0 {
		if v, ok := m["lts__t_bytes.sum"]; ok {
			row.L2Bytes, row.NCUL2Bytes, row.L2Ratio = n, v, v/float64(n)
			if math.Abs(row.L2Ratio-1) > DRAMTolerance {
				whys = append(whys, fmt.Sprintf("L2 bytes %.4g against %d counted (%.3f)", v, n, row.L2Ratio))
			}
		}
	}
	if metric, ok := classMetric[k.Measured]; ok {
		if v, ok := m[metric]; ok {
			row.NCUMetric, row.ClassOps, row.NCUClassOps = metric, k.Ops[k.Measured], v
			if row.ClassOps > 0 {
				row.ClassRatio = v / float64(row.ClassOps)
				if math.Abs(row.ClassRatio-1) > 1e-3 {
					whys = append(whys, fmt.Sprintf("%s %.6g against %d counted", metric, v, row.ClassOps))
				}
			}
		}
	}
	if k.MACsPerInstr > 0 && k.InstrThreads > 0 {
		metric := "smsp__inst_executed_pipe_tensor_op_hmma.sum" // HMMA, HGMMA, QGMMA
		if strings.HasPrefix(k.Measured, "int8.") {
			metric = "smsp__inst_executed_pipe_tensor_op_imma.sum"
		}
		row.TensorInstr = k.Ops[k.Measured] / k.MACsPerInstr * int64(k.InstrThreads/32)
		if v, ok := m[metric]; ok && row.TensorInstr > 0 {
			row.TensorMetric, row.NCUTensorInstr, row.TensorRatio = metric, v, v/float64(row.TensorInstr)
			if math.Abs(row.TensorRatio-1) > 1e-3 {
				whys = append(whys, fmt.Sprintf("%s %.6g against %d counted", metric, v, row.TensorInstr))
			}
		} else {
			whys = append(whys, "no "+metric+" in ncu's output")
		}
		for _, name := range []string{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"} {
			if v, ok := m[name]; ok && row.TensorPipePct == 0 {
				row.TensorPipePct = v
			}
		}
	}
	if v, ok := m["smsp__thread_inst_executed.sum"]; ok {
		row.ThreadInstr = v
		if k.MeasuredOps > 0 {
			row.PerMeasured = v / float64(k.MeasuredOps)
		}
	}
	if all := m["smsp__inst_executed.sum"]; all > 0 {
		row.Pipes = map[string]float64{}
		for name, v := range m {
			if p, ok := strings.CutPrefix(name, "smsp__inst_executed_pipe_"); ok && v > 0 {
				row.Pipes[strings.TrimSuffix(p, ".sum")] = v / all
			}
		}
	}
	if v, ok := m["gpu__time_duration.sum"]; ok {
		row.TimeS = v
	}
	row.OK = len(whys) == 0
	row.Why = strings.Join(whys, "; ")
	return row
}

// ReadNCU reads Nsight Compute's CSV (--csv --page raw): per kernel name, its metrics in
// base units (bytes, instructions, seconds). A kernel profiled more than once keeps its
// first launch.
func ReadNCU(r io.Reader) (map[string]map[string]float64, error) {
	// ncu writes its table after the profiled program's own output and its ==PROF== lines:
	// keep the lines of the table (each field quoted).
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, `"`) {
			keep = append(keep, l)
		}
	}
	cr := csv.NewReader(strings.NewReader(strings.Join(keep, "\n")))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("ncu csv: %w", err)
	}
	var head []string
	var unitsRow []string
	out := map[string]map[string]float64{}
	for _, rec := range recs {
		if head == nil {
			if len(rec) > 0 && rec[0] == "ID" {
				head = rec
			}
			continue
		}
		if len(rec) != len(head) {
			continue
		}
		if rec[0] == "" && unitsRow == nil {
			unitsRow = rec
			continue
		}
		name := ""
		for i, h := range head {
			if h == "Kernel Name" {
				name = rec[i]
			}
		}
		if name == "" {
			continue
		}
		if i := strings.IndexByte(name, '('); i > 0 {
			name = name[:i]
		}
		if _, seen := out[name]; seen {
			continue
		}
		m := map[string]float64{}
		for i, h := range head {
			if !strings.Contains(h, "__") {
				continue
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(rec[i], ",", ""), 64)
			if err != nil {
				continue
			}
			u := ""
			if unitsRow != nil {
				u = unitsRow[i]
			}
			m[h] = v * unitScale(u)
		}
		out[name] = m
	}
	if head == nil {
		return nil, fmt.Errorf("ncu csv: no header row (\"ID\", ...)")
	}
	return out, nil
}

// unitScale is the factor from ncu's unit to the base unit (ncu scales with SI prefixes).
func unitScale(u string) float64 {
	switch u {
	case "nsecond", "ns":
		return 1e-9
	case "usecond", "us":
		return 1e-6
	case "msecond", "ms":
		return 1e-3
	}
	if len(u) > 1 && strings.ContainsRune("KMGT", rune(u[0])) && u[1] >= 'a' && u[1] <= 'z' {
		return map[byte]float64{'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}[u[0]]
	}
	return 1
}

// Report is the whole check of a recorded directory.
type Report struct {
	SASS []SASSRow `json:"sass"`
	NCU  []NCURow  `json:"ncu"`
	// Missing lists what the directory lacked (a dump, a CSV).
	Missing []string `json:"missing,omitempty"`
}

// CheckDir checks a directory that bench/gpu/micro_verify.sh wrote (ptx/ and sass/
// unpacked): ptx/kernels.json, sass/<entry>.sass, ncu-*.csv (each may be gzipped: .gz).
func CheckDir(dir string) (*Report, error) {
	b, err := infile.ReadFile(filepath.Join(dir, "ptx", "kernels.json"), infile.JSONLimit)
	if err != nil {
		return nil, err
	}
	var man struct {
		Kernels []Kernel `json:"kernels"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "ptx", "kernels.json"), err)
	}
	rep := &Report{}
	ncu := map[string]map[string]float64{}
	csvs, _ := filepath.Glob(filepath.Join(dir, "ncu*.csv"))
	gz, _ := filepath.Glob(filepath.Join(dir, "ncu*.csv.gz"))
	csvs = append(csvs, gz...)
	sort.Strings(csvs)
	for _, p := range csvs {
		f, err := open(p)
		if err != nil {
			return nil, err
		}
		m, err := ReadNCU(f)
		f.Close()
		if err != nil {
			rep.Missing = append(rep.Missing, fmt.Sprintf("%s: %v", filepath.Base(p), err))
			continue
		}
		for k, v := range m {
			if _, ok := ncu[k]; !ok {
				ncu[k] = v
			}
		}
	}
	if len(csvs) == 0 {
		rep.Missing = append(rep.Missing, "no ncu*.csv")
	}
	for _, k := range man.Kernels {
		if k.Measured != "" {
			p := filepath.Join(dir, "sass", k.Entry+".sass")
			if _, err := os.Stat(p); err != nil {
				p += ".gz"
			}
			f, err := open(p)
			if err != nil {
				rep.Missing = append(rep.Missing, strings.TrimSuffix(filepath.Base(p), ".gz"))
			} else {
				fs, err := Parse(f)
				f.Close()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				rep.SASS = append(rep.SASS, CheckSASS(k, fs))
			}
		}
		if m, ok := ncu[k.Entry]; ok {
			rep.NCU = append(rep.NCU, CheckNCU(k, m))
		}
	}
	return rep, nil
}

// open opens a file, through gzip if its name ends in .gz.
func open(p string) (io.ReadCloser, error) {
	f, err := infile.Open(p, false)
	if err != nil || !strings.HasSuffix(p, ".gz") {
		return f, err
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{z, f}, nil
}

// WriteMarkdown writes the two tables.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	b.WriteString("### SASS: the measured class's machine instructions per loop iteration\n\n")
	b.WriteString("| kernel | class | PTX per iteration | SASS expected | SASS in loop | split | other in loop | ok |\n|---|---|---:|---:|---:|---|---|---|\n")
	for _, x := range r.SASS {
		ok := "yes"
		if !x.OK {
			ok = "**no**: " + x.Why
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %s | %s |\n", x.Name, x.Class, x.PTXPerIter, x.Expected*max(1, x.Unrolled), x.Found, hist(x.Split), hist(x.Other), ok)
	}
	writeTensorNCU(&b, r.NCU)
	b.WriteString("\n### Nsight Compute: one launch against the descriptor\n\n")
	b.WriteString("| kernel | DRAM bytes counted | ncu DRAM bytes | ncu / counted | L2 bytes counted | ncu L2 bytes | ncu / counted | class ops counted | ncu class ops | ncu / counted | thread instr. per measured op | pipes (share of warp instr.) | ok |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, x := range r.NCU {
		ok := "yes"
		if !x.OK {
			ok = "**no**: " + x.Why
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Name, num(float64(x.DRAMBytes)), num(x.NCUDRAMBytes), rat(x.DRAMRatio),
			num(float64(x.L2Bytes)), num(x.NCUL2Bytes), rat(x.L2Ratio), num(float64(x.ClassOps)), num(x.NCUClassOps), rat(x.ClassRatio), rat(x.PerMeasured), pipes(x.Pipes), ok)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(&b, "\nMissing: %s\n", strings.Join(r.Missing, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func hist(h map[string]int) string {
	var ks []string
	for k := range h {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return h[ks[i]] > h[ks[j]] || h[ks[i]] == h[ks[j]] && ks[i] < ks[j] })
	var s []string
	for _, k := range ks {
		s = append(s, fmt.Sprintf("%s %d", k, h[k]))
	}
	return strings.Join(s, ", ")
}

func pipes(p map[string]float64) string {
	var ks []string
	for k, v := range p {
		if v >= 0.005 {
			ks = append(ks, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool { return p[ks[i]] > p[ks[j]] })
	var s []string
	for _, k := range ks {
		s = append(s, fmt.Sprintf("%s %.2f", k, p[k]))
	}
	return strings.Join(s, ", ")
}

func num(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func rat(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// writeTensorNCU writes the tensor-core kernels' instruction counts and pipe utilisation.
func writeTensorNCU(b *strings.Builder, rows []NCURow) {
	n := 0
	for _, x := range rows {
		if x.TensorInstr > 0 {
			n++
		}
	}
	if n == 0 {
		return
	}
	b.WriteString("\n### Nsight Compute: tensor-core instructions (warp-level) and the tensor pipe\n\n")
	b.WriteString("| kernel | counted | ncu | ncu / counted | metric | tensor pipe active (% of peak) | ok |\n|---|---:|---:|---:|---|---:|---|\n")
	for _, x := range rows {
		if x.TensorInstr == 0 {
			continue
		}
		ok := "yes"
		if !x.OK {
			ok = "**no**: " + x.Why
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s |\n", x.Name, x.TensorInstr, num(x.NCUTensorInstr), rat(x.TensorRatio), x.TensorMetric, num(x.TensorPipePct), ok)
	}
}
