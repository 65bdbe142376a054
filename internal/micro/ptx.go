package micro

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// ManifestFormat is the value of Manifest.Format.
const ManifestFormat = "gpuwatt-kernels/1"

// Manifest is kernels.json, written beside the PTX by WritePTX: what gpuwatt counts for
// every kernel, for a check against the SASS that ptxas makes of it and against Nsight
// Compute's counters (bench/gpu/micro_verify.sh, internal/micro/sass).
type Manifest struct {
	Format  string           `json:"format"`
	CC      string           `json:"compute_capability"`
	Kernels []ManifestKernel `json:"kernels"`
}

// ManifestKernel is one kernel's descriptor, flattened.
type ManifestKernel struct {
	Name     string `json:"name"`
	Group    string `json:"group"`
	Entry    string `json:"entry"`
	File     string `json:"file"`
	Measured string `json:"measured,omitempty"` // the instruction class measured ("" for memory kernels)
	Operands string `json:"operands,omitempty"`
	// Unroll is the measured instructions per loop iteration and thread, Iters the loop's
	// trip count (arithmetic kernels).
	Unroll      int              `json:"unroll,omitempty"`
	Iters       int64            `json:"iters,omitempty"`
	Blocks      int              `json:"blocks"`
	Threads     int              `json:"threads"`
	SharedBytes int              `json:"shared_bytes,omitempty"`
	MeasuredOps int64            `json:"measured_ops,omitempty"` // per launch, thread-level
	Ops         map[string]int64 `json:"ops"`                    // per launch, thread-level, by class
	Overhead    map[string]int64 `json:"overhead"`
	Bytes       map[string]int64 `json:"bytes"`               // per launch, by memory level
	Requested   int64            `json:"requested,omitempty"` // useful bytes where they differ
	Params      []ManifestParam  `json:"params"`
	// MACsPerInstr and InstrThreads: a tensor-core kernel's MACs per instruction and the
	// threads that issue one together (32 for mma.sync, 128 for wgmma); Target its PTX
	// .target (sm_90a for wgmma: ptxas needs -arch=sm_90a).
	MACsPerInstr int64  `json:"macs_per_instruction,omitempty"`
	InstrThreads int    `json:"instruction_threads,omitempty"`
	Target       string `json:"target"`
}

// ManifestParam is a kernel parameter in the PTX entry's order: type "buffer" (Size bytes,
// zeroed), "u32", "u64", "f32" or "f64" with its Value.
type ManifestParam struct {
	Name  string  `json:"name"`
	Type  string  `json:"type"`
	Size  int64   `json:"size,omitempty"`
	Value float64 `json:"value"`
}

// WritePTX writes the PTX of every kernel of the suite o (those only names, if any) to dir,
// one <entry>.ptx each, with kernels.json.
func WritePTX(dir string, o kernels.SuiteOpts, only []string) error {
	suite, err := kernels.Default(o)
	if err != nil {
		return status.Inputf("%v", err)
	}
	if len(only) > 0 {
		if suite, err = kernels.ByName(suite, only...); err != nil {
			return status.Inputf("--only: %v", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cc := o.Device.CC
	if cc == "" {
		cc = kernels.DefaultDevice.CC
	}
	m := Manifest{Format: ManifestFormat, CC: cc}
	for _, d := range suite {
		file := d.Entry + ".ptx"
		if err := os.WriteFile(filepath.Join(dir, file), []byte(d.PTX), 0o644); err != nil {
			return err
		}
		k := ManifestKernel{Name: d.Name, Group: d.Group, Entry: d.Entry, File: file, Measured: string(d.Measured),
			Unroll: d.Unroll, Iters: d.Iters, Blocks: d.Blocks, Threads: d.Threads, SharedBytes: d.SharedBytes,
			MeasuredOps: d.MeasuredOps(), Ops: map[string]int64{}, Overhead: map[string]int64{}, Bytes: map[string]int64{},
			Requested: d.Requested}
		for _, p := range d.Params {
			mp := ManifestParam{Name: p.Name, Size: p.Size}
			switch p.Kind {
			case kernels.Buffer:
				mp.Type = "buffer"
			case kernels.U32:
				mp.Type, mp.Value = "u32", float64(p.Int)
			case kernels.U64:
				mp.Type, mp.Value = "u64", float64(p.Int)
			case kernels.F32:
				mp.Type, mp.Value = "f32", p.Real
			case kernels.F64:
				mp.Type, mp.Value = "f64", p.Real
			}
			k.Params = append(k.Params, mp)
		}
		if d.Data != nil {
			k.Operands = string(d.Data.Pattern)
		}
		if d.Tensor != nil {
			k.MACsPerInstr, k.InstrThreads = d.Tensor.MACs(), d.Tensor.Threads
		}
		k.Target = ptxTarget(d.PTX)
		for c, n := range d.Ops {
			k.Ops[string(c)] = n
		}
		for c, n := range d.Overhead {
			k.Overhead[string(c)] = n
		}
		for l, n := range d.Bytes {
			k.Bytes[string(l)] = n
		}
		m.Kernels = append(m.Kernels, k)
	}
	return report.WriteJSON(filepath.Join(dir, "kernels.json"), m)
}

// ptxTarget is a module's .target ("sm_90", "sm_90a").
func ptxTarget(ptx string) string {
	for _, l := range strings.Split(ptx, "\n") {
		if t, ok := strings.CutPrefix(l, ".target "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
