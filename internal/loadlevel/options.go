package loadlevel

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/ptd"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// Variants of the workload.
const (
	VariantAuto  = "auto"
	VariantCPU   = "cpu"
	VariantGPU   = "gpu"   // gpuwatt's own FFT in PTX (gpufft.Own)
	VariantCuFFT = "cufft" // NVIDIA's cuFFT (gpufft.CuFFT)
	// VariantCuBLAS is the GEMM workload's GPU variant: cuBLAS's Sgemm (gpufft.CuBLAS).
	VariantCuBLAS = "cublas"
)

// Workloads.
const (
	WorkloadAuto = "auto" // gemm on a real GPU, fft elsewhere
	WorkloadFFT  = "fft"
	WorkloadGEMM = "gemm"
)

// Presets (--preset): named workloads. PresetSeed is the seed paper's transactions (one
// small FFT each: on a modern GPU they are bound by the host's round trip, and the report
// says so); PresetServe is the default on a GPU, a batch of tokens through dense layers
// that loads the GPU (the H200's 100 % level reached RESULT of its power limit).
const (
	PresetSeed  = "seed"
	PresetServe = "serve"
)

// Serve preset's shape: width, batch (rows per transaction) and layers.
const (
	ServeWidth  = 4096
	ServeBatch  = 256
	ServeLayers = 8
)

// Label names a transaction of w: "gemm-4096x256x8/tf32", "fft-64/gpu", "fft-1048576x8/cufft".
func (w Work) Label() string {
	if w.Workload == WorkloadGEMM {
		return fmt.Sprintf("gemm-%dx%dx%d/%s", w.Size, w.Batch, w.Layers, w.Math)
	}
	if w.Batch > 1 {
		return fmt.Sprintf("fft-%dx%d/%s", w.Size, w.Batch, w.Variant)
	}
	return fmt.Sprintf("fft-%d/%s", w.Size, w.Variant)
}

// Work is one workload configuration handed to a GPU runtime.
type Work struct {
	Workload string // fft or gemm
	Variant  string // gpu, cufft (fft); cublas (gemm)
	Size     int    // FFT points, or the GEMM's width (features)
	Batch    int    // FFTs per transaction, or the GEMM's rows (tokens) per transaction
	Layers   int    // GEMM: dense layers per transaction
	Math     string // GEMM: tf32 or fp32
}

// DefaultGPUUsers is the users of the GPU variants when none are asked: the H200 runs had
// the lowest run-to-run CV with 8.
const DefaultGPUUsers = 8

// GPURuntime runs the GPU variants on one GPU (gpufft.Runtime, which imports this package,
// so the command line hands its opener in through Options.OpenGPU).
type GPURuntime interface {
	Name() string
	// NewTx returns the transaction of a GPU variant.
	NewTx(w Work) (Transaction, error)
	// Check says why variant cannot run (cuFFT or cuBLAS not found), or nil.
	Check(variant string) error
	Close() error
}

// Options are one `gpuwatt loadlevel` run: the workload, the sweep, the intervals and the
// power sources. Start from DefaultOptions.
type Options struct {
	Preset    string // "", seed or serve: named in the report's warnings (seed: host-bound)
	Workload  string // auto, fft, gemm
	Variant   string // auto, cpu, gpu, cufft, cublas
	GPU       int    // the GPU (index in the opened system) that runs GPU variants and is measured
	Sizes     []int  // FFT points, or GEMM width, per transaction
	Batch     int    // FFTs per transaction, or GEMM rows; 0: 1 for fft, ServeBatch for gemm
	Layers    int    // GEMM layers; 0: ServeLayers
	Math      string // GEMM math: tf32 (default) or fp32
	Contexts  []int  // users; nil: DefaultGPUUsers for the GPU variants, the host's cores for cpu
	Levels    []float64
	Intervals Intervals
	Runs      int
	PTD       string  // PTDaemon host:port; "" none
	RAPLRoot  string  // powercap tree for CPU package power
	NsPerOp   float64 // virtual clock: modelled ns per n·log2(n) of the CPU FFT
	// VerifyFraction of results checked against the float64 reference (0: none).
	VerifyFraction float64
	Tolerance      float64 // verification tolerance
	LoadTolerance  float64 // allowed |actual - target| load, a fraction
	Seed           uint64
	// OpenGPU opens the GPU variants' runtime on the GPU with this UUID (gpufft.Open);
	// nil: the GPU variants cannot run.
	OpenGPU func(uuid string) (GPURuntime, error)
}

// DefaultOptions are the quick defaults of the command line.
func DefaultOptions() Options {
	return Options{Workload: WorkloadAuto, Variant: VariantAuto, Levels: append([]float64(nil), DefaultLevels...),
		Intervals: QuickIntervals(), Runs: 1, RAPLRoot: "/sys/class/powercap", NsPerOp: 100,
		VerifyFraction: 0.01, Tolerance: DefaultTolerance, LoadTolerance: 0.02, Seed: 1}
}

// Validate checks the options without running anything; its errors name the flag.
func (o Options) Validate() error {
	switch o.Workload {
	case WorkloadAuto, WorkloadFFT, WorkloadGEMM, "":
	default:
		return fmt.Errorf("--workload %q: want auto, fft or gemm", o.Workload)
	}
	switch o.Variant {
	case VariantAuto, VariantCPU, VariantGPU, VariantCuFFT, VariantCuBLAS:
	default:
		return fmt.Errorf("--variant %q: want auto, gpu, cufft, cublas or cpu", o.Variant)
	}
	if o.Workload == WorkloadGEMM && (o.Variant == VariantGPU || o.Variant == VariantCuFFT) {
		return fmt.Errorf("--variant %s is an FFT variant: the gemm workload runs cublas", o.Variant)
	}
	if o.Workload == WorkloadFFT && o.Variant == VariantCuBLAS {
		return fmt.Errorf("--variant cublas is the gemm workload's: the fft workload runs gpu, cufft or cpu")
	}
	if o.GPU < 0 {
		return fmt.Errorf("--gpu %d: want a GPU index from 0", o.GPU)
	}
	if o.Batch < 0 || o.Batch > 1<<16 {
		return fmt.Errorf("--batch %d: want 1 to 65536", o.Batch)
	}
	if o.Layers < 0 || o.Layers > 1024 {
		return fmt.Errorf("--layers %d: want 1 to 1024", o.Layers)
	}
	switch o.Math {
	case "", "tf32", "fp32":
	default:
		return fmt.Errorf("--math %q: want tf32 or fp32", o.Math)
	}
	for _, n := range o.Sizes {
		if o.Workload == WorkloadGEMM {
			if n < 16 || n > 1<<15 {
				return fmt.Errorf("--size %d: the gemm workload's width: want 16 to 32768", n)
			}
			continue
		}
		if err := CheckFFTSize(n); err != nil {
			return fmt.Errorf("--size: %v", err)
		}
	}
	for _, c := range o.Contexts {
		if c < 1 {
			return fmt.Errorf("--contexts %d: want at least 1 user", c)
		}
	}
	for _, l := range o.Levels {
		if !(l > 0 && l <= 1) {
			return fmt.Errorf("--levels: %g %%: want a load in (0, 100]", 100*l)
		}
	}
	iv := o.Intervals
	switch {
	case iv.Calibrations < 2:
		return fmt.Errorf("--calibrations %d: want at least 2", iv.Calibrations)
	case iv.Record <= 0 || iv.Idle <= 0:
		return fmt.Errorf("--record and --idle must be positive")
	case iv.Pre < 0 || iv.Post < 0 || iv.Warmup < 0:
		return fmt.Errorf("--warmup, --pre and --post must not be negative")
	case o.Runs < 1:
		return fmt.Errorf("--runs %d: want at least 1", o.Runs)
	case !(o.VerifyFraction >= 0 && o.VerifyFraction <= 1):
		return fmt.Errorf("--verify-fraction %g: want a fraction in [0, 1]", o.VerifyFraction)
	case !(o.Tolerance > 0) || !(o.LoadTolerance > 0) || !(o.NsPerOp > 0):
		return fmt.Errorf("--tolerance, --load-tolerance and --ns-per-op must be positive")
	}
	return nil
}

func usageErr(format string, a ...any) error {
	return status.Inputf("%s", fmt.Sprintf(format, a...))
}

// Run runs the sweep on env: the policy of `gpuwatt loadlevel` and of characterize's
// load-level stage.
//
//   - On a real GPU (env.System not simulated): auto is the gpu variant; its board power
//     is measured (GPUMeter), then the CPU packages (RAPL); DefaultGPUUsers users.
//   - On the sim device on its virtual clock: the sim runs no FFT kernels, so the cpu
//     variant runs (Go FFT, modelled times) and its transactions drive the sim device's
//     power (SimLoad), which is read through the device's sensors (GPUMeter).
//   - On a real clock without a GPU (env.System nil, or the sim on a real clock): the cpu
//     variant on the host's cores, measured by RAPL.
//
// A PTDaemon, when given, comes first (the wall). The report's warnings say which of these
// happened.
func (o Options) Run(ctx context.Context, env device.Env) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, status.Inputf("%v", err)
	}
	if env.Clock == nil {
		return nil, fmt.Errorf("loadlevel: no clock")
	}
	p, err := o.plan(env)
	if err != nil {
		return nil, err
	}
	rt, err := o.openRuntime(p)
	if err != nil {
		return nil, err
	}
	if rt != nil {
		defer rt.Close()
		p.deviceName = rt.Name()
	}
	var warnings []status.Warning
	var meters []Meter
	if o.PTD != "" {
		pc, err := ptd.Dial(ctx, o.PTD, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("--ptd %s: %v", o.PTD, err)
		}
		defer pc.Close()
		if id, err := pc.Identify(); err == nil {
			warnings = append(warnings, status.Warnf(CodePTD, "PTDaemon: %s", id))
		}
		meters = append(meters, &PTDMeter{C: pc})
	}
	ms, err := o.meters(env, p, len(meters) > 0)
	if err != nil {
		return nil, err
	}
	meters = append(meters, ms.meters...)
	if ms.deviceName != "" {
		p.deviceName = ms.deviceName
	}
	warnings = append(warnings, ms.warnings...)
	sw := Sweep{Workload: p.workload, Sizes: p.sizes, Contexts: p.users, Runs: o.Runs, Variant: p.variant, Device: p.deviceName,
		Base: Config{Levels: o.Levels, Intervals: o.Intervals, Clock: env.Clock, Meters: meters, Seed: o.Seed,
			VerifyFraction: o.VerifyFraction, Tolerance: o.Tolerance, LoadTolerance: o.LoadTolerance, Busy: ms.busy,
			HostUnavailable: ms.hostNA},
		NewTx: o.transactions(env, p, rt, ms.km)}
	if o.VerifyFraction == 0 {
		sw.Base.VerifyFraction = -1
	}
	warnings = append(warnings, o.planWarnings(p, ms.hostNA)...)
	if !p.verifiable() {
		sw.Base.VerifyFraction = -1
	}
	sw.Base.Progress = env.Progress
	rep, err := RunSweep(ctx, sw)
	if rep != nil {
		rep.Simulated = p.simulated
		rep.Warnings = append(warnings, rep.Warnings...)
	}
	return rep, err
}

// plan is what Run decides before it opens or measures anything.
type plan struct {
	dev        gpu.Device // the GPU measured and running GPU variants; nil without a system
	virtual    bool       // env's clock is virtual
	simulated  bool       // env's system is the sim device
	realGPU    bool       // a real GPU the GPU variants can be opened on
	simGPU     bool       // the GPU variants run on the sim's execution model (virtual clock)
	gpuVariant bool       // variant runs on a GPU (gpu, cufft, cublas)
	variant    string
	workload   string
	work       Work // Batch, Layers and Math of every transaction (Size per configuration)
	sizes      []int
	users      []int
	deviceName string // where the variant runs, for the report
}

// plan makes Run's decisions: the board, the variant and workload, the transaction's
// shape and the users.
func (o Options) plan(env device.Env) (plan, error) {
	p := plan{virtual: clock.IsVirtual(env.Clock), simulated: env.System != nil && env.System.Simulated()}
	var err error
	if p.dev, err = o.board(env); err != nil {
		return p, err
	}
	if err := o.chooseVariant(&p); err != nil {
		return p, err
	}
	if err := o.shape(&p); err != nil {
		return p, err
	}
	return p, nil
}

// board is the GPU --gpu names in env's system, or nil without a system.
func (o Options) board(env device.Env) (gpu.Device, error) {
	if env.System == nil {
		return nil, nil
	}
	devs := env.System.Devices()
	if o.GPU >= len(devs) {
		return nil, usageErr("--gpu %d: %s has %d GPUs", o.GPU, env.System.Name(), len(devs))
	}
	return devs[o.GPU], nil
}

// chooseVariant resolves auto in --variant and --workload for where Run runs: the GPU
// variants on a real NVIDIA GPU or on the sim's virtual clock, the cpu variant elsewhere
// (and on an AMD board, whose power is still measured); gemm where a GPU runs, fft else.
func (o Options) chooseVariant(p *plan) error {
	variant, workload := o.Variant, o.Workload
	if p.dev != nil && p.dev.Info().Vendor == trace.VendorAMD {
		// The GPU workloads are PTX and cuBLAS/cuFFT: on an AMD board only the host's FFTs
		// run, with the board's power measured.
		if isGPUVariant(variant) || workload == WorkloadGEMM {
			return device.NVIDIAOnly(p.dev, o.GPU)
		}
		variant = VariantCPU
	}
	switch variant {
	case VariantGPU, VariantCuFFT:
		workload = WorkloadFFT
	case VariantCuBLAS:
		workload = WorkloadGEMM
	}
	p.realGPU = p.dev != nil && !p.simulated && o.OpenGPU != nil
	// On the sim device on its virtual clock the GPU variants run there: their kernels
	// take the sim's times and draw its power (SimTx); --variant cpu keeps the Go FFT,
	// whose modelled times drive the sim's command load (SimLoad).
	p.simGPU = p.simulated && p.virtual && variant != VariantCPU
	if workload == WorkloadAuto || workload == "" {
		workload = WorkloadFFT
		if (p.realGPU || p.simGPU) && variant == VariantAuto {
			workload = WorkloadGEMM
		}
	}
	if workload == WorkloadGEMM && variant == VariantAuto {
		variant = VariantCuBLAS
	}
	switch {
	case p.virtual && !p.simulated:
		return usageErr("the virtual clock needs the sim device (--device sim)")
	case p.simGPU && variant == VariantAuto:
		variant = VariantGPU
	case isGPUVariant(variant) && !p.simGPU && (p.simulated || p.dev == nil):
		return usageErr("--variant %s runs on a GPU: a real NVIDIA GPU, or the sim device on its virtual clock", variant)
	case variant == VariantAuto && p.realGPU:
		variant = VariantGPU
	case variant == VariantAuto:
		variant = VariantCPU
	}
	if workload == WorkloadGEMM && variant == VariantCPU {
		return usageErr("--workload gemm has no cpu variant: it runs on a GPU (cuBLAS) or on the sim device's virtual clock; --workload fft runs on the host's cores")
	}
	p.variant, p.workload, p.gpuVariant = variant, workload, isGPUVariant(variant)
	return nil
}

// isGPUVariant says whether variant runs on a GPU.
func isGPUVariant(variant string) bool {
	return variant == VariantGPU || variant == VariantCuFFT || variant == VariantCuBLAS
}

// shape fills in the transaction's defaults for the chosen workload (64-point FFTs, or the
// serve preset's GEMM) and the users (DefaultGPUUsers on a GPU, the host's cores on it).
func (o Options) shape(p *plan) error {
	gemm := p.workload == WorkloadGEMM
	p.sizes = o.Sizes
	if len(p.sizes) == 0 {
		p.sizes = []int{pick(gemm, ServeWidth, 64)}
	}
	p.work = Work{Workload: p.workload, Variant: p.variant, Batch: o.Batch, Layers: o.Layers, Math: o.Math}
	if p.work.Batch == 0 {
		p.work.Batch = pick(gemm, ServeBatch, 1)
	}
	if p.work.Layers == 0 {
		p.work.Layers = ServeLayers
	}
	if p.work.Math == "" {
		p.work.Math = "tf32"
	}
	if p.work.Batch > 1 && p.variant == VariantCPU {
		return usageErr("--batch %d: the cpu variant runs one FFT per transaction", p.work.Batch)
	}
	p.users = o.Contexts
	if p.users == nil {
		p.users = []int{pick(p.gpuVariant, DefaultGPUUsers, runtime.GOMAXPROCS(0))}
	}
	return nil
}

// pick is a if cond, else b.
func pick(cond bool, a, b int) int {
	if cond {
		return a
	}
	return b
}

// verifiable says whether the transactions compute something that can be checked: on the
// sim's execution model only the small single FFTs do (their Go FFT runs alongside).
func (p plan) verifiable() bool {
	return !p.simGPU || (p.workload == WorkloadFFT && p.work.Batch == 1)
}

// openRuntime opens the GPU variants' runtime on a real GPU (nil elsewhere) and checks
// that it can run the variant.
func (o Options) openRuntime(p plan) (GPURuntime, error) {
	if !p.gpuVariant || p.simGPU {
		return nil, nil
	}
	if o.OpenGPU == nil {
		return nil, fmt.Errorf("--variant %s: this build cannot run the GPU variants", p.variant)
	}
	rt, err := o.OpenGPU(p.dev.Info().UUID)
	if err != nil {
		return nil, fmt.Errorf("--variant %s: %v", p.variant, err)
	}
	if err := rt.Check(p.variant); err != nil {
		rt.Close()
		return nil, fmt.Errorf("--variant %s: %v", p.variant, err)
	}
	return rt, nil
}

// meterSet is what measures the power (after a PTDaemon, which Run dials itself) and
// what drives the sim's power.
type meterSet struct {
	meters     []Meter
	busy       BusyObserver // the sim's command load, driven by the cpu variant's transactions
	km         KernelModel  // the sim's execution model, running the GPU variants
	hostNA     string       // why the host's power cannot be read, or ""
	deviceName string       // the sim's name, where the variant runs there
	warnings   []status.Warning
}

// meters chooses the power sources for plan p: the sim's sensors where the sim is loaded
// on its virtual clock, else the GPU the variant runs on first, then RAPL. havePTD says
// that a PTDaemon measures already.
func (o Options) meters(env device.Env, p plan, havePTD bool) (meterSet, error) {
	const simHost = "the sim device models the GPU only: the host's power is not modelled"
	var ms meterSet
	switch {
	case p.simGPU:
		var ok bool
		if ms.km, ok = p.dev.(KernelModel); !ok {
			return ms, fmt.Errorf("loadlevel: %s has no execution model", env.System.Name())
		}
		if _, ok := p.dev.(BusyDevice); !ok {
			return ms, fmt.Errorf("loadlevel: %s cannot be loaded by transactions", env.System.Name())
		}
		ms.meters = []Meter{&GPUMeter{Dev: p.dev, Clock: env.Clock, Simulated: true}}
		ms.deviceName, ms.hostNA = env.System.Name(), simHost
		what := "the own FFT's kernels"
		if p.workload == WorkloadGEMM {
			what = "the GEMM's FP32 FMAs and DRAM bytes (the sim has no tensor-core class: TF32 is modelled as FP32)"
		}
		ms.warnings = append(ms.warnings, status.Warnf(CodeModelledLoad, "sim device: each transaction's kernels (%s) take the time and draw the power of the sim's execution model, on a device the users share; copies in and out take %v of round trip plus bytes at %.0f GB/s; power is read through the device's sensors", what, SimRoundTrip, SimPCIe/1e9))
	case p.simulated && p.virtual:
		bd, ok := p.dev.(BusyDevice)
		if !ok {
			return ms, fmt.Errorf("loadlevel: %s cannot be loaded by transactions", env.System.Name())
		}
		ms.busy = &SimLoad{Dev: bd} // Run sets its users per configuration
		ms.meters = []Meter{&GPUMeter{Dev: p.dev, Clock: env.Clock, Simulated: true}}
		ms.deviceName, ms.hostNA = env.System.Name(), simHost
		ms.warnings = append(ms.warnings, status.Warnf(CodeModelledLoad, "sim device: it runs no FFT kernels, so the cpu variant runs (Go FFT, transaction times modelled at --ns-per-op) and its transactions drive the sim device's power (active idle plus the busy share of each millisecond of the way to its command load), read through the device's sensors"))
	default:
		o.hostMeters(env, p, havePTD, &ms)
	}
	return ms, nil
}

// hostMeters measures a run on a real clock: the device the variant runs on first, then
// the other (the GPU's board power, RAPL's CPU packages).
func (o Options) hostMeters(env device.Env, p plan, havePTD bool, ms *meterSet) {
	if p.simulated {
		ms.warnings = append(ms.warnings, status.Warnf(CodeCPUVariant, "sim device on a real clock: the cpu variant runs on the host's cores; the sim's power is not driven by them (it needs the virtual clock), so power comes from RAPL or PTD only"))
	}
	var gm, rm Meter
	if p.dev != nil && !p.simulated {
		gm = &GPUMeter{Dev: p.dev, Clock: env.Clock}
	}
	r, rerr := OpenRAPL(o.RAPLRoot, env.Clock)
	if rerr == nil {
		rm = r
	} else {
		ms.hostNA = fmt.Sprintf("no RAPL: %v (a virtual machine usually has none); --ptd reads an external analyzer", rerr)
	}
	order := []Meter{rm, gm}
	if p.gpuVariant {
		order = []Meter{gm, rm}
	}
	for _, m := range order {
		if m != nil {
			ms.meters = append(ms.meters, m)
		}
	}
	if len(ms.meters) == 0 && !havePTD {
		ms.warnings = append(ms.warnings, status.Warnf(CodeNoPowerSource, "no power source: %v; no NVIDIA GPU", rerr))
	}
	if p.variant == VariantCPU && !p.simulated {
		ms.warnings = append(ms.warnings, status.Warnf(CodeCPUVariant, "the cpu variant runs Go FFT transactions on the host's cores: these figures describe the host, not the GPU"))
	}
}

// transactions makes each configuration's transaction: the GPU runtime's on a real GPU,
// the sim's kernels on its execution model (with the Go FFT alongside for small single
// FFTs, to verify), or the Go FFT on the host's cores at the modelled --ns-per-op.
func (o Options) transactions(env device.Env, p plan, rt GPURuntime, km KernelModel) func(n, users int) (Transaction, error) {
	return func(n, users int) (Transaction, error) {
		w := p.work
		w.Size = n
		if rt != nil {
			return rt.NewTx(w)
		}
		if km != nil {
			return simTransaction(w, km, env.Clock.(*clock.Virtual), users, p.dev.(BusyDevice))
		}
		f, err := NewFFT(n)
		if f != nil {
			f.NsPerOp = o.NsPerOp
		}
		return f, err
	}
}

// simTransaction is w's kernels on the sim's execution model, loading its power.
func simTransaction(w Work, km KernelModel, clk *clock.Virtual, users int, dev BusyDevice) (Transaction, error) {
	ks, in, out, err := SimKernels(w, km.Props().ComputeCapability)
	if err != nil {
		return nil, err
	}
	st, err := NewSimTx(w.Label(), km, clk, ks, in, out, users, &SimLoad{Dev: dev})
	if err != nil {
		return nil, err
	}
	if w.Workload == WorkloadFFT && w.Batch == 1 && w.Size <= 4096 {
		f, err := NewFFT(w.Size)
		if err != nil {
			return nil, err
		}
		st.Inner = f
	}
	return st, nil
}

// planWarnings say what the plan means for the figures: the seed preset is host-bound,
// the host's power is unread, the sim's transactions compute nothing to verify.
func (o Options) planWarnings(p plan, hostNA string) []status.Warning {
	var ws []status.Warning
	if o.Preset == PresetSeed {
		ws = append(ws, status.Warnf(CodeHostBound, "--preset seed: the seed paper's transactions, one %d-point FFT each; on a modern GPU they are bound by the host's round trip (about 19 µs per transaction and user on the H200), so the levels differ in throughput far more than in power (results/nvidia-h200/2026-11-21-loadlevel-*)", p.sizes[0]))
	}
	if hostNA != "" {
		ws = append(ws, status.Warnf(CodeNoHostPower, "host power cannot be read: %s; the figures are the GPU's alone", hostNA))
	}
	if !p.verifiable() {
		ws = append(ws, status.Warnf(CodeModelledLoad, "sim device: nothing is computed for these transactions, so no result is verified"))
	}
	return ws
}
