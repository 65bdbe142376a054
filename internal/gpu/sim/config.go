package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensor/simsensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Config describes a sim system. Start from Preset (or LoadConfig, which does) rather than
// from a zero Config. The JSON keys are documented in doc.go.
type Config struct {
	Preset string // preset: the preset the config started from
	Seed   uint64 // seed: fixes noise, jitter, board errors of GPUs 1.., UUIDs
	GPUs   int    // gpus: number of devices
	Name   string // name: the product name devices report
	// Vendor (vendor) is "nvidia" (or empty) or "amd": the channels the board offers, as
	// NVML or amdsmi name them, and whether gpuwatt's own kernels (PTX, NVIDIA only) run.
	Vendor string

	Idle           units.Power   // idle_w: idle at rest: no CUDA context open, long after any load
	ActiveIdle     units.Power   // active_idle_w: active idle: a context open (ContextActiveIdle) or right after a load, nothing running
	ActiveIdleHold time.Duration // active_idle_hold_s: how long active idle is held after a load ends or the last context closes
	// PostLoadDip (post_load_dip_w) and PostLoadDipLength (post_load_dip_s): right after a
	// load ends the board draws this much below active idle, the dip closing in four equal
	// steps over the length (an H200 dips 3-6 W below active idle for ~150 ms after each
	// bf16 GEMM: results/nvidia-h200/2026-11-28-call-2). 0: none (every preset).
	PostLoadDip       units.Power
	PostLoadDipLength time.Duration
	// ContextActiveIdle (context_active_idle) says that an open CUDA context holds the board
	// at active idle while nothing runs, for as long as it is open (the H200); false: contexts
	// change nothing, and the board steps down to idle after every load (Burtscher et al.'s K20).
	ContextActiveIdle bool
	IdleSteps         int           // idle_steps: steps from active idle down to idle (>= 1)
	IdleStepInterval  time.Duration // idle_step_s: time between those steps
	CommandLoad       units.Power   // command_load_w: true power while a measured command runs

	PowerLimit        units.Power // power_limit_w: enforced limit (not applied to the truth yet)
	DefaultPowerLimit units.Power // default_power_limit_w: 0 = power_limit_w

	MemoryIdle         units.Power // memory_idle_w: memory power at idle
	MemoryLoadFraction float64     // memory_load_fraction: memory's share of board power above idle

	// BoardSpread is the spread of the per-board errors of GPUs 1.. (board_spread): their
	// power channels' gains are multiplied by 1 ± BoardSpread and their offsets moved by
	// ± BoardSpread × idle_w, uniformly, fixed by the seed. GPU 0 has the models as written.
	BoardSpread float64

	Load []LoadStep // load: scripted true power on the clock axis
	// Processes are scripted processes using the GPUs (processes): each holds a context,
	// shows an SM utilisation and draws a power of its own (process.go).
	Processes []Process
	// Sensors maps a channel name to its model, or marks it unsupported; a channel missing
	// from the map is unsupported.
	Sensors map[string]SensorConfig
	// Host is the host's RAPL counters the twin models (host, host.go); nil: none.
	Host *Host

	// The device's shape (gpu.Props) and its execution model (see doc.go, "Kernels").
	ComputeCapability      string          // compute_capability: "9.0"
	SMs                    int             // sms: streaming multiprocessors
	MaxSMClock             units.Frequency // max_sm_clock_hz: the clock kernels run at unless capped
	MinSMClock             units.Frequency // min_sm_clock_hz: the lowest clock power capping goes to
	MemClock               units.Frequency // mem_clock_hz: reported memory clock
	MemBusWidthBits        int             // mem_bus_width_bits
	L2Bytes                int64           // l2_bytes
	MemoryBytes            int64           // memory_bytes
	MaxThreadsPerSM        int             // max_threads_per_sm
	SharedPerSM            int             // shared_bytes_per_sm
	SaturatingThreadsPerSM int             // saturating_threads_per_sm: resident threads an SM needs for full throughput
	LaunchOverhead         time.Duration   // launch_overhead_s: added to every launch (> 0)
	// OpsPerCycleSM is the throughput of each instruction class, in thread-level
	// instructions per SM per clock (ops_per_cycle_sm); a class missing or at 0 is not
	// supported by the device.
	OpsPerCycleSM map[kernels.OpClass]float64
	// Bandwidth is the bandwidth of each memory level in bytes/s, for the whole GPU at the
	// top clock (bandwidth_bytes_per_s); a level missing or at 0 is not modelled.
	Bandwidth map[kernels.MemLevel]float64

	Pi0 units.Power // pi0_w: constant power while a kernel runs at the top clock (< power_limit_w)
	// PiOcc is the static power of occupied SMs (pi_occ_w): while a kernel runs, the board
	// draws PiOcc × the share of the GPU's resident thread slots it occupies on top of pi0
	// (0 in the presets: an effect archline's model has no term for unless the data asks).
	PiOcc         units.Power
	EpsFlopFP32   units.Energy // eps_flop_fp32_pj: energy per FP32 flop (fp32.fma = 2 flops)
	EpsFlopFP64   units.Energy // eps_flop_fp64_pj: energy per FP64 flop (fp64.fma = 2 flops)
	EpsMemPerByte units.Energy // eps_mem_pj_per_byte: energy per byte moved from or to DRAM
	// EpsOp is the energy per thread-level instruction of each class (eps_op_pj); fp32.fma
	// and fp64.fma default to 2 × EpsFlopFP32 and 2 × EpsFlopFP64 (see OpEnergy).
	EpsOp map[kernels.OpClass]units.Energy
	// EpsLevel is the energy per byte of the on-chip levels l2, shared and const
	// (eps_level_pj_per_byte); DRAM's is EpsMemPerByte.
	EpsLevel map[kernels.MemLevel]units.Energy
	// EpsMemRail is the part of EpsMemPerByte drawn on the memory rail, which the
	// power.memory.* channels observe (eps_mem_rail_pj_per_byte).
	EpsMemRail units.Energy
	// OperandToggleShare and OperandDensityShare are the shares of an instruction's energy
	// that scale with the share of its operand bits that toggle from one instruction to the
	// next, and that are set (operand_toggle_share, operand_density_share): an instruction
	// whose descriptor says its data (kernels.DataPattern: toggle t, density d) costs
	// eps_c × (1 − s_t − s_d + 2 s_t·t + 2 s_d·d), eps_c at t = d = 0.5 (random data, and
	// any kernel whose data is not described).
	OperandToggleShare  float64
	OperandDensityShare float64
}

// opClasses are the instruction classes of kernels/descriptor.go, in its order: the
// classes the sim knows.
var opClasses = append([]kernels.OpClass{
	kernels.Int32Add, kernels.Int32Mul, kernels.Int32Popc, kernels.Int32Shift, kernels.Int32Logic,
	kernels.Int32Cmp, kernels.Int64Add, kernels.FP32Add, kernels.FP32FMA, kernels.FP32Sin,
	kernels.FP32Ex2, kernels.FP32Rsqrt, kernels.FP64FMA, kernels.FP16FMA, kernels.BF16FMA,
}, kernels.TensorClasses...) // tensor-core classes: their ops, rates and energies are per MAC

// memLevels are the memory levels of kernels/descriptor.go; onChipLevels those with an
// energy in EpsLevel.
var (
	memLevels    = []kernels.MemLevel{kernels.DRAM, kernels.L2, kernels.Shared, kernels.Const}
	onChipLevels = []kernels.MemLevel{kernels.L2, kernels.Shared, kernels.Const}
)

// OpEnergy returns the energy of one thread-level instruction of class op: EpsOp's entry,
// else 2 × EpsFlopFP32 for fp32.fma and 2 × EpsFlopFP64 for fp64.fma; false if none.
func (c Config) OpEnergy(op kernels.OpClass) (units.Energy, bool) {
	if e, ok := c.EpsOp[op]; ok {
		return e, true
	}
	switch op {
	case kernels.FP32FMA:
		return 2 * c.EpsFlopFP32, true
	case kernels.FP64FMA:
		return 2 * c.EpsFlopFP64, true
	}
	return 0, false
}

// DataFactor is the factor on an instruction's energy for the operand data d (nil: not
// described, 1): 1 − s_t − s_d + 2 s_t·toggle + 2 s_d·density.
func (c *Config) DataFactor(d *kernels.DataPattern) float64 {
	if d == nil {
		return 1
	}
	st, sd := c.OperandToggleShare, c.OperandDensityShare
	return 1 - st - sd + 2*st*d.Toggle + 2*sd*d.Density
}

// ByteEnergy returns the energy of one byte moved at level l: EpsMemPerByte for DRAM,
// EpsLevel's entry for the others; false if none.
func (c Config) ByteEnergy(l kernels.MemLevel) (units.Energy, bool) {
	if l == kernels.DRAM {
		return c.EpsMemPerByte, true
	}
	e, ok := c.EpsLevel[l]
	return e, ok
}

// LoadStep is one entry of a scripted load: power P from T on, for Duration, or until the
// next entry when Duration is 0 (for ever if it is the last). After a load ends the device
// goes to active idle, then steps down to idle.
type LoadStep struct {
	T        time.Duration // t_s
	Duration time.Duration // duration_s
	Power    units.Power   // power_w
}

// SensorConfig is the model of one channel, or the fact that the board lacks it.
type SensorConfig struct {
	Model       sensormodel.Model
	Unsupported bool // unsupported: the channel fails with simsensor.ErrNotSupported
	Ring        int  // ring: samples kept by a buffered channel (power.samples)
	// Stamps (buffered channels: off_grid, off_grid_late_s, off_grid_early_s,
	// off_grid_early_share) are the driver's stamps off the sample grid.
	Stamps simsensor.Stamps
	// Pairs (published channels: pair_share, pair_lead_s) are updates that come as two
	// close together, a half-done value first.
	Pairs simsensor.Pairs
}

// vendor is c.Vendor with the default spelled out: "nvidia" or "amd".
func (c Config) vendor() string {
	if c.Vendor == VendorAMD {
		return VendorAMD
	}
	return "nvidia"
}

// clone returns a deep copy of c.
func (c Config) clone() Config {
	c.Load = slices.Clone(c.Load)
	c.Processes = slices.Clone(c.Processes)
	s := make(map[string]SensorConfig, len(c.Sensors))
	for k, v := range c.Sensors {
		s[k] = v
	}
	c.Sensors = s
	c.OpsPerCycleSM = maps.Clone(c.OpsPerCycleSM)
	c.Bandwidth = maps.Clone(c.Bandwidth)
	c.EpsOp = maps.Clone(c.EpsOp)
	c.EpsLevel = maps.Clone(c.EpsLevel)
	if c.Host != nil {
		h := *c.Host
		c.Host = &h
	}
	return c
}

func numberOf(key, what string, raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: want a number (%s), got %s", key, what, short(raw))
	}
	return v, nil
}

// seconds reads a time in seconds, within ±sensormodel.MaxSeconds.
func seconds(key string, raw json.RawMessage) (float64, error) {
	v, err := numberOf(key, "seconds", raw)
	if err == nil && math.Abs(v) > sensormodel.MaxSeconds {
		return 0, fmt.Errorf("%s: want at most %g seconds, got %s", key, sensormodel.MaxSeconds, short(raw))
	}
	return v, err
}

func short(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

// configFile is the JSON form of a Config, its keys in their documented order (doc.go).
// Read, a key the file leaves out is nil (the preset's value stays); written, every key
// is set (the effective config).
type configFile struct {
	Preset                 *string         `json:"preset"`
	Seed                   *uint64         `json:"seed"`
	GPUs                   *int            `json:"gpus"`
	Name                   *string         `json:"name"`
	Vendor                 *string         `json:"vendor"`
	IdleW                  *float64        `json:"idle_w"`
	ActiveIdleW            *float64        `json:"active_idle_w"`
	ActiveIdleHoldS        *float64        `json:"active_idle_hold_s"`
	PostLoadDipW           *float64        `json:"post_load_dip_w,omitempty"`
	PostLoadDipS           *float64        `json:"post_load_dip_s,omitempty"`
	ContextActiveIdle      *bool           `json:"context_active_idle"`
	IdleSteps              *int            `json:"idle_steps"`
	IdleStepS              *float64        `json:"idle_step_s"`
	CommandLoadW           *float64        `json:"command_load_w"`
	PowerLimitW            *float64        `json:"power_limit_w"`
	DefaultPowerLimitW     *float64        `json:"default_power_limit_w"`
	MemoryIdleW            *float64        `json:"memory_idle_w"`
	MemoryLoadFraction     *float64        `json:"memory_load_fraction"`
	BoardSpread            *float64        `json:"board_spread"`
	ComputeCapability      *string         `json:"compute_capability"`
	SMs                    *int            `json:"sms"`
	MaxSMClockHz           *float64        `json:"max_sm_clock_hz"`
	MinSMClockHz           *float64        `json:"min_sm_clock_hz"`
	MemClockHz             *float64        `json:"mem_clock_hz"`
	MemBusWidthBits        *int            `json:"mem_bus_width_bits"`
	L2Bytes                *int64          `json:"l2_bytes"`
	MemoryBytes            *int64          `json:"memory_bytes"`
	MaxThreadsPerSM        *int            `json:"max_threads_per_sm"`
	SharedBytesPerSM       *int            `json:"shared_bytes_per_sm"`
	SaturatingThreadsPerSM *int            `json:"saturating_threads_per_sm"`
	LaunchOverheadS        *float64        `json:"launch_overhead_s"`
	OpsPerCycleSM          json.RawMessage `json:"ops_per_cycle_sm"`
	BandwidthBytesPerS     json.RawMessage `json:"bandwidth_bytes_per_s"`
	Pi0W                   *float64        `json:"pi0_w"`
	PiOccW                 *float64        `json:"pi_occ_w"`
	EpsFlopFP32PJ          *float64        `json:"eps_flop_fp32_pj"`
	EpsFlopFP64PJ          *float64        `json:"eps_flop_fp64_pj"`
	EpsMemPJPerByte        *float64        `json:"eps_mem_pj_per_byte"`
	EpsOpPJ                json.RawMessage `json:"eps_op_pj"`
	EpsLevelPJPerByte      json.RawMessage `json:"eps_level_pj_per_byte"`
	EpsMemRailPJPerByte    *float64        `json:"eps_mem_rail_pj_per_byte"`
	OperandToggleShare     *float64        `json:"operand_toggle_share"`
	OperandDensityShare    *float64        `json:"operand_density_share"`
	Load                   json.RawMessage `json:"load"`
	Processes              json.RawMessage `json:"processes"`
	Sensors                json.RawMessage `json:"sensors"`
	Host                   json.RawMessage `json:"host"`
}

// ConfigKeys returns the top-level keys of the JSON config in their documented order.
func ConfigKeys() []string {
	t := reflect.TypeFor[configFile]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// ptrIf is ptr of v, or nil where v is 0 (a key written only where it is set).
func ptrIf(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}

// file is c's JSON form, every key set.
func (c Config) file() configFile {
	rawMap := func(m map[string]float64) json.RawMessage {
		b, _ := json.Marshal(m)
		return b
	}
	pj := func(e units.Energy) *float64 { return ptr(float64(e / units.Picojoule)) }
	ops, bw, epsOp, epsLevel := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for k, v := range c.OpsPerCycleSM {
		ops[string(k)] = v
	}
	for k, v := range c.Bandwidth {
		bw[string(k)] = v
	}
	for k, v := range c.EpsOp {
		epsOp[string(k)] = float64(v / units.Picojoule)
	}
	for k, v := range c.EpsLevel {
		epsLevel[string(k)] = float64(v / units.Picojoule)
	}
	load, _ := json.Marshal(loadJSON(c.Load))
	procs, _ := json.Marshal(processesJSON(c.Processes))
	sensors, _ := json.Marshal(sensorsJSON(c.vendor(), c.Sensors))
	return configFile{
		Preset: ptr(c.Preset), Seed: ptr(c.Seed), GPUs: ptr(c.GPUs), Name: ptr(c.Name), Vendor: ptr(c.vendor()),
		IdleW: ptr(float64(c.Idle)), ActiveIdleW: ptr(float64(c.ActiveIdle)), ActiveIdleHoldS: ptr(c.ActiveIdleHold.Seconds()), ContextActiveIdle: ptr(c.ContextActiveIdle),
		PostLoadDipW: ptrIf(float64(c.PostLoadDip)), PostLoadDipS: ptrIf(c.PostLoadDipLength.Seconds()),
		IdleSteps: ptr(c.IdleSteps), IdleStepS: ptr(c.IdleStepInterval.Seconds()), CommandLoadW: ptr(float64(c.CommandLoad)),
		PowerLimitW: ptr(float64(c.PowerLimit)), DefaultPowerLimitW: ptr(float64(c.DefaultPowerLimit)),
		MemoryIdleW: ptr(float64(c.MemoryIdle)), MemoryLoadFraction: ptr(c.MemoryLoadFraction), BoardSpread: ptr(c.BoardSpread),
		ComputeCapability: ptr(c.ComputeCapability), SMs: ptr(c.SMs),
		MaxSMClockHz: ptr(float64(c.MaxSMClock)), MinSMClockHz: ptr(float64(c.MinSMClock)), MemClockHz: ptr(float64(c.MemClock)),
		MemBusWidthBits: ptr(c.MemBusWidthBits), L2Bytes: ptr(c.L2Bytes), MemoryBytes: ptr(c.MemoryBytes),
		MaxThreadsPerSM: ptr(c.MaxThreadsPerSM), SharedBytesPerSM: ptr(c.SharedPerSM), SaturatingThreadsPerSM: ptr(c.SaturatingThreadsPerSM),
		LaunchOverheadS: ptr(c.LaunchOverhead.Seconds()),
		OpsPerCycleSM:   rawMap(ops), BandwidthBytesPerS: rawMap(bw),
		Pi0W: ptr(float64(c.Pi0)), PiOccW: ptr(float64(c.PiOcc)), EpsFlopFP32PJ: pj(c.EpsFlopFP32), EpsFlopFP64PJ: pj(c.EpsFlopFP64), EpsMemPJPerByte: pj(c.EpsMemPerByte),
		EpsOpPJ: rawMap(epsOp), EpsLevelPJPerByte: rawMap(epsLevel), EpsMemRailPJPerByte: pj(c.EpsMemRail),
		OperandToggleShare: ptr(c.OperandToggleShare), OperandDensityShare: ptr(c.OperandDensityShare),
		Load: load, Processes: procs, Sensors: sensors, Host: hostToJSON(c.Host),
	}
}

// apply overrides c's settings with those f sets.
func (f configFile) apply(c *Config) error {
	setPtr(&c.Seed, f.Seed)
	setPtr(&c.OperandToggleShare, f.OperandToggleShare)
	setPtr(&c.OperandDensityShare, f.OperandDensityShare)
	setPtr(&c.GPUs, f.GPUs)
	setPtr(&c.Name, f.Name)
	setPtr(&c.Vendor, f.Vendor)
	if c.Vendor == "nvidia" {
		c.Vendor = VendorNVIDIA // one spelling: the presets'
	}
	setPtr(&c.IdleSteps, f.IdleSteps)
	setPtr(&c.ContextActiveIdle, f.ContextActiveIdle)
	setPtr(&c.ComputeCapability, f.ComputeCapability)
	setPtr(&c.SMs, f.SMs)
	setPtr(&c.MemBusWidthBits, f.MemBusWidthBits)
	setPtr(&c.L2Bytes, f.L2Bytes)
	setPtr(&c.MemoryBytes, f.MemoryBytes)
	setPtr(&c.MaxThreadsPerSM, f.MaxThreadsPerSM)
	setPtr(&c.SharedPerSM, f.SharedBytesPerSM)
	setPtr(&c.SaturatingThreadsPerSM, f.SaturatingThreadsPerSM)
	setPtr(&c.MemoryLoadFraction, f.MemoryLoadFraction)
	setPtr(&c.BoardSpread, f.BoardSpread)
	for _, p := range []struct {
		dst *units.Power
		v   *float64
	}{{&c.Idle, f.IdleW}, {&c.ActiveIdle, f.ActiveIdleW}, {&c.CommandLoad, f.CommandLoadW}, {&c.PowerLimit, f.PowerLimitW},
		{&c.DefaultPowerLimit, f.DefaultPowerLimitW}, {&c.MemoryIdle, f.MemoryIdleW}, {&c.Pi0, f.Pi0W}, {&c.PiOcc, f.PiOccW}, {&c.PostLoadDip, f.PostLoadDipW}} {
		if p.v != nil {
			*p.dst = units.Power(*p.v)
		}
	}
	for _, p := range []struct {
		dst *units.Frequency
		v   *float64
	}{{&c.MaxSMClock, f.MaxSMClockHz}, {&c.MinSMClock, f.MinSMClockHz}, {&c.MemClock, f.MemClockHz}} {
		if p.v != nil {
			*p.dst = units.Frequency(*p.v)
		}
	}
	for _, p := range []struct {
		dst *units.Energy
		v   *float64
	}{{&c.EpsFlopFP32, f.EpsFlopFP32PJ}, {&c.EpsFlopFP64, f.EpsFlopFP64PJ}, {&c.EpsMemPerByte, f.EpsMemPJPerByte}, {&c.EpsMemRail, f.EpsMemRailPJPerByte}} {
		if p.v != nil {
			*p.dst = units.Energy(*p.v) * units.Picojoule
		}
	}
	for _, p := range []struct {
		key string
		dst *time.Duration
		v   *float64
	}{{"active_idle_hold_s", &c.ActiveIdleHold, f.ActiveIdleHoldS}, {"post_load_dip_s", &c.PostLoadDipLength, f.PostLoadDipS}, {"idle_step_s", &c.IdleStepInterval, f.IdleStepS}, {"launch_overhead_s", &c.LaunchOverhead, f.LaunchOverheadS}} {
		if p.v == nil {
			continue
		}
		if math.Abs(*p.v) > sensormodel.MaxSeconds {
			return fmt.Errorf("%s: want at most %g seconds, got %g", p.key, sensormodel.MaxSeconds, *p.v)
		}
		*p.dst = sensormodel.Seconds(*p.v)
	}
	if err := setMap("ops_per_cycle_sm", "instructions per SM per clock", opClasses, 1, f.OpsPerCycleSM, &c.OpsPerCycleSM); err != nil {
		return err
	}
	if err := setMap("bandwidth_bytes_per_s", "bytes per second", memLevels, 1, f.BandwidthBytesPerS, &c.Bandwidth); err != nil {
		return err
	}
	if err := setMap("eps_op_pj", "picojoules per instruction", opClasses, units.Picojoule, f.EpsOpPJ, &c.EpsOp); err != nil {
		return err
	}
	if err := setMap("eps_level_pj_per_byte", "picojoules per byte", onChipLevels, units.Picojoule, f.EpsLevelPJPerByte, &c.EpsLevel); err != nil {
		return err
	}
	if len(f.Load) > 0 {
		if err := setLoad(c, f.Load); err != nil {
			return err
		}
	}
	if len(f.Processes) > 0 {
		if err := setProcesses(c, f.Processes); err != nil {
			return err
		}
	}
	if len(f.Sensors) > 0 {
		if err := setSensors(c, f.Sensors); err != nil {
			return err
		}
	}
	if len(f.Host) > 0 {
		if err := setHost(c, f.Host); err != nil {
			return err
		}
	}
	return nil
}

func setPtr[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// setMap overrides the entries of *m named in raw (an object from class or level names to
// numbers, each scaled by scale: units.Picojoule for pJ); the others keep theirs.
func setMap[K ~string, V ~float64](key, what string, known []K, scale V, raw json.RawMessage, m *map[K]V) error {
	if len(raw) == 0 {
		return nil
	}
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	ms, err := members(raw, key)
	if err != nil {
		return err
	}
	out := maps.Clone(*m)
	if out == nil {
		out = map[K]V{}
	}
	for _, mb := range ms {
		if !slices.Contains(names, mb.key) {
			return unknownKey(key+": ", mb.key, names)
		}
		v, err := numberOf(fmt.Sprintf("%s[%q]", key, mb.key), what, mb.val)
		if err != nil {
			return err
		}
		out[K(mb.key)] = V(v) * scale
	}
	*m = out
	return nil
}

// jsonKind names what a Go type holds in JSON, for an error.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// decodeError turns a decoding error of a configFile into one naming the key.
func decodeError(err error, data []byte) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := te.Value
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) == nil && top[te.Field] != nil {
			got = short(top[te.Field])
		}
		if te.Field == "seed" {
			return fmt.Errorf("seed: want a whole number >= 0, got %s", got)
		}
		if te.Field == "" {
			return fmt.Errorf("want an object, got %s", short(data))
		}
		return fmt.Errorf("%s: want %s, got %s", te.Field, jsonKind(te.Type), got)
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return unknownKey("", strings.Trim(k, `"`), ConfigKeys())
	}
	return err
}

// member is one key of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// members returns the members of a JSON object in document order.
func members(raw json.RawMessage, what string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%s: want an object, got %s", what, short(raw))
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", what, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %v", what, err)
		}
		out = append(out, member{tok.(string), v})
	}
	return out, nil
}

func unknownKey(where, key string, known []string) error {
	return fmt.Errorf("%sunknown key %q (want one of %s)", where, key, strings.Join(known, ", "))
}

// LoadConfig reads a JSON config: the preset named by "preset" (default h100), then every
// other key overriding it. An unknown key anywhere is an error naming it; the result is
// validated.
func LoadConfig(r io.Reader) (Config, error) {
	dec := json.NewDecoder(r)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("sim config: not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, errors.New("sim config: unexpected data after the top-level object")
	}
	ms, err := members(raw, "sim config")
	if err != nil {
		return Config{}, err
	}
	// encoding/json matches keys without regard to case: hold them to their exact spelling.
	for _, m := range ms {
		if !slices.Contains(ConfigKeys(), m.key) {
			return Config{}, unknownKey("sim config: ", m.key, ConfigKeys())
		}
	}
	var f configFile
	fd := json.NewDecoder(bytes.NewReader(raw))
	fd.DisallowUnknownFields()
	if err := fd.Decode(&f); err != nil {
		return Config{}, fmt.Errorf("sim config: %w", decodeError(err, raw))
	}
	preset := DefaultPreset
	if f.Preset != nil {
		preset = *f.Preset
	}
	cfg, err := Preset(preset)
	if err != nil {
		return Config{}, fmt.Errorf("sim config: preset: %w", err)
	}
	if err := f.apply(&cfg); err != nil {
		return Config{}, fmt.Errorf("sim config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("sim config: %w", err)
	}
	return cfg, nil
}

// LoadConfigFile is LoadConfig on the named file; errors name the file.
func LoadConfigFile(path string) (Config, error) {
	b, err := infile.ReadFile(path, infile.SmallLimit)
	if err != nil {
		return Config{}, err
	}
	cfg, err := LoadConfig(bytes.NewReader(b))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

var loadKeys = []string{"t_s", "duration_s", "power_w"}

func setLoad(c *Config, raw json.RawMessage) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("load: want a list of {\"t_s\", \"power_w\"} or {\"t_s\", \"duration_s\", \"power_w\"} objects, got %s", short(raw))
	}
	var out []LoadStep // nil when empty, as in the presets
	for i, it := range items {
		where := fmt.Sprintf("load[%d]", i)
		ms, err := members(it, where)
		if err != nil {
			return err
		}
		var st LoadStep
		seen := map[string]bool{}
		for _, m := range ms {
			var v float64
			if !slices.Contains(loadKeys, m.key) {
				return unknownKey(where+": ", m.key, loadKeys)
			}
			if m.key == "power_w" {
				if v, err = numberOf(m.key, "watts", m.val); err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
			} else if v, err = seconds(m.key, m.val); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			seen[m.key] = true
			switch m.key {
			case "t_s":
				st.T = sensormodel.Seconds(v)
			case "duration_s":
				st.Duration = sensormodel.Seconds(v)
			case "power_w":
				st.Power = units.Power(v)
			}
		}
		for _, k := range []string{"t_s", "power_w"} {
			if !seen[k] {
				return fmt.Errorf("%s: missing key %q", where, k)
			}
		}
		out = append(out, st)
	}
	c.Load = out
	return nil
}

func loadJSON(steps []LoadStep) any {
	out := []map[string]float64{}
	for _, s := range steps {
		m := map[string]float64{"t_s": s.T.Seconds(), "power_w": float64(s.Power)}
		if s.Duration != 0 {
			m["duration_s"] = s.Duration.Seconds()
		}
		out = append(out, m)
	}
	return out
}

func setSensors(c *Config, raw json.RawMessage) error {
	ms, err := members(raw, "sensors")
	if err != nil {
		return err
	}
	if c.Sensors == nil {
		c.Sensors = map[string]SensorConfig{}
	}
	for _, m := range ms {
		spec, ok := specOf(c.vendor(), m.key)
		if !ok {
			return fmt.Errorf("sensors: unknown channel %q of a %s board (want one of %s)", m.key, c.vendor(), strings.Join(names(specsFor(c.vendor())), ", "))
		}
		where := fmt.Sprintf("sensors[%q]", m.key)
		sc := c.Sensors[m.key]
		if err := sc.apply(spec, m.val, where); err != nil {
			return err
		}
		c.Sensors[m.key] = sc
	}
	return nil
}

// keysFor lists the keys a channel's entry accepts.
func keysFor(spec chanSpec) []string {
	keys := []string{"unsupported"}
	switch spec.kind {
	case kindConst:
		return keys
	case kindBuffered:
		keys = append(keys, "ring", "off_grid", "off_grid_late_s", "off_grid_early_s", "off_grid_early_share")
	case kindPublished:
		keys = append(keys, "pair_share", "pair_lead_s")
	}
	return append(keys, sensormodel.Keys()...)
}

func (sc *SensorConfig) apply(spec chanSpec, raw json.RawMessage, where string) error {
	ms, err := members(raw, where)
	if err != nil {
		return err
	}
	known := keysFor(spec)
	model := map[string]json.RawMessage{}
	for _, m := range ms {
		if !slices.Contains(known, m.key) {
			if spec.kind == kindConst {
				return fmt.Errorf("%s: unknown key %q (only \"unsupported\" may be set: the value is power_limit_w)", where, m.key)
			}
			return unknownKey(where+": ", m.key, known)
		}
		switch m.key {
		case "unsupported":
			if err := json.Unmarshal(m.val, &sc.Unsupported); err != nil {
				return fmt.Errorf("%s: unsupported: want true or false, got %s", where, short(m.val))
			}
		case "ring":
			if err := json.Unmarshal(m.val, &sc.Ring); err != nil {
				return fmt.Errorf("%s: ring: want a whole number of samples, got %s", where, short(m.val))
			}
		case "off_grid", "off_grid_early_share", "pair_share":
			v, err := numberOf(m.key, "a share from 0 to 1", m.val)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			*map[string]*float64{"off_grid": &sc.Stamps.Share, "off_grid_early_share": &sc.Stamps.EarlyShare, "pair_share": &sc.Pairs.Share}[m.key] = v
		case "off_grid_late_s", "off_grid_early_s", "pair_lead_s":
			v, err := seconds(m.key, m.val)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			*map[string]*time.Duration{"off_grid_late_s": &sc.Stamps.Late, "off_grid_early_s": &sc.Stamps.Early, "pair_lead_s": &sc.Pairs.Lead}[m.key] = sensormodel.Seconds(v)
		default:
			model[m.key] = m.val
		}
	}
	if len(model) > 0 {
		b, _ := json.Marshal(model)
		if err := sc.Model.UnmarshalJSON(b); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// sensorJSON is the JSON form of a SensorConfig: the model's keys flattened beside
// "unsupported" (and "ring").
func sensorJSON(spec chanSpec, sc SensorConfig) json.RawMessage {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"unsupported":%t`, sc.Unsupported)
	num := func(v float64) string { x, _ := json.Marshal(v); return string(x) }
	switch spec.kind {
	case kindBuffered:
		fmt.Fprintf(&b, `,"ring":%d,"off_grid":%s,"off_grid_late_s":%s,"off_grid_early_s":%s,"off_grid_early_share":%s`, sc.Ring,
			num(sc.Stamps.Share), num(sc.Stamps.Late.Seconds()), num(sc.Stamps.Early.Seconds()), num(sc.Stamps.EarlyShare))
	case kindPublished:
		fmt.Fprintf(&b, `,"pair_share":%s,"pair_lead_s":%s`, num(sc.Pairs.Share), num(sc.Pairs.Lead.Seconds()))
	}
	if spec.kind != kindConst {
		m, _ := sc.Model.MarshalJSON()
		if len(m) > 2 {
			b.WriteByte(',')
			b.Write(m[1 : len(m)-1])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

func sensorsJSON(vendor string, s map[string]SensorConfig) any {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, spec := range specsFor(vendor) {
		sc, ok := s[spec.name]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(&b, "%q:%s", spec.name, sensorJSON(spec, sc))
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes())
}

// MarshalJSON writes every key of c in the documented order: the effective config, which
// LoadConfig reads back to the same Config.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.file())
}

// Validate reports the first setting of c that is out of range.
func (c Config) Validate() error {
	if c.Vendor != "" && c.Vendor != "nvidia" && c.Vendor != VendorAMD {
		return fmt.Errorf("vendor: want nvidia or amd, got %q", c.Vendor)
	}
	for _, check := range []func() error{c.validateNonNegative, c.validatePlausible, c.validateCounts, c.validateExec, c.validateLoad, c.validateProcesses, c.validateSensors} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateNonNegative checks the powers, times and energies that must be finite and >= 0.
func (c Config) validateNonNegative() error {
	finite := func(key string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: not a finite number", key)
		}
		return nil
	}
	nonNeg := func(key string, v float64) error {
		if err := finite(key, v); err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("%s: want >= 0, got %g", key, v)
		}
		return nil
	}
	checks := []struct {
		key string
		v   float64
	}{
		{"idle_w", float64(c.Idle)},
		{"active_idle_w", float64(c.ActiveIdle)},
		{"active_idle_hold_s", c.ActiveIdleHold.Seconds()},
		{"idle_step_s", c.IdleStepInterval.Seconds()},
		{"command_load_w", float64(c.CommandLoad)},
		{"default_power_limit_w", float64(c.DefaultPowerLimit)},
		{"memory_idle_w", float64(c.MemoryIdle)},
		{"pi0_w", float64(c.Pi0)},
		{"pi_occ_w", float64(c.PiOcc)},
		{"eps_flop_fp32_pj", float64(c.EpsFlopFP32)},
		{"eps_flop_fp64_pj", float64(c.EpsFlopFP64)},
		{"eps_mem_pj_per_byte", float64(c.EpsMemPerByte)},
		{"eps_mem_rail_pj_per_byte", float64(c.EpsMemRail)},
		{"launch_overhead_s", c.LaunchOverhead.Seconds()},
	}
	for _, ch := range checks {
		if err := nonNeg(ch.key, ch.v); err != nil {
			return err
		}
	}
	return nil
}

// validateCounts checks the board count, the idle steps, the power limit and the shares.
func (c Config) validateCounts() error {
	switch {
	case c.GPUs < 1 || c.GPUs > 64:
		return fmt.Errorf("gpus: want 1 to 64, got %d", c.GPUs)
	case c.IdleSteps < 1:
		return fmt.Errorf("idle_steps: want >= 1, got %d", c.IdleSteps)
	case c.IdleSteps > 1 && c.IdleStepInterval <= 0:
		return fmt.Errorf("idle_step_s: want > 0 with %d idle_steps", c.IdleSteps)
	case !(c.PowerLimit > 0) || math.IsInf(float64(c.PowerLimit), 0):
		return fmt.Errorf("power_limit_w: want > 0, got %g", float64(c.PowerLimit))
	case !(c.MemoryLoadFraction >= 0 && c.MemoryLoadFraction <= 1):
		return fmt.Errorf("memory_load_fraction: want 0 to 1, got %g", c.MemoryLoadFraction)
	case !(c.BoardSpread >= 0 && c.BoardSpread <= 0.2):
		return fmt.Errorf("board_spread: want 0 to 0.2, got %g", c.BoardSpread)
	}
	return nil
}

// validateLoad checks the load schedule: times from the origin, in order, powers >= 0.
func (c Config) validateLoad() error {
	for i, s := range c.Load {
		where := fmt.Sprintf("load[%d]", i)
		switch {
		case s.T < 0:
			return fmt.Errorf("%s: t_s: want >= 0 (the clock's origin), got %g", where, s.T.Seconds())
		case s.Duration < 0:
			return fmt.Errorf("%s: duration_s: want >= 0, got %g", where, s.Duration.Seconds())
		case !(s.Power >= 0) || math.IsInf(float64(s.Power), 0):
			return fmt.Errorf("%s: power_w: want >= 0, got %g", where, float64(s.Power))
		case i > 0 && s.T < c.Load[i-1].T:
			return fmt.Errorf("%s: t_s %g is before the previous entry's %g: list the load in time order", where, s.T.Seconds(), c.Load[i-1].T.Seconds())
		}
	}
	return nil
}

// validateSensors checks each configured channel: known to the vendor's board, its model,
// ring, stamps and pairs.
func (c Config) validateSensors() error {
	for name, sc := range c.Sensors {
		spec, ok := specOf(c.vendor(), name)
		if !ok {
			return fmt.Errorf("sensors: unknown channel %q of a %s board (want one of %s)", name, c.vendor(), strings.Join(names(specsFor(c.vendor())), ", "))
		}
		if sc.Unsupported || spec.kind == kindConst {
			continue
		}
		where := fmt.Sprintf("sensors[%q]", name)
		var err error
		if spec.kind == kindCounter {
			err = sc.Model.ValidateCounter()
		} else {
			err = sc.Model.ValidateGenerating()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if spec.kind == kindBuffered && (sc.Ring < 1 || sc.Ring > 1<<20) {
			return fmt.Errorf("%s: ring: want 1 to %d samples, got %d", where, 1<<20, sc.Ring)
		}
		if err := sc.Stamps.Validate(sc.Model.Period); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := sc.Pairs.Validate(sc.Model.Period); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// Upper bounds of validatePlausible: beyond them a figure describes no GPU, and the sim's
// arithmetic would print infinities (idle_w: 1e308 gave +Inf W and 7e306 °C).
const (
	maxPlausibleW       = trace.MaxBoardPowerW // W, any board's power
	maxPlausibleHoldS   = 86400.0              // s, a day
	maxPlausibleLaunchS = 1.0                  // s, per launch
	maxPlausiblePJ      = 1e6                  // pJ per flop, op or byte (a µJ)
	maxPlausibleHz      = 1e11                 // Hz, a clock
	maxPlausibleBps     = 1e15                 // bytes/s, a memory level
	maxPlausibleOps     = 1e6                  // instructions per cycle per SM
)

// validatePlausible refuses figures no GPU has, naming the key.
func (c Config) validatePlausible() error {
	type bound struct {
		key      string
		v, limit float64
		unit     string
	}
	pj := func(e units.Energy) float64 { return float64(e / units.Picojoule) }
	bounds := []bound{
		{"idle_w", float64(c.Idle), maxPlausibleW, "W"},
		{"active_idle_w", float64(c.ActiveIdle), maxPlausibleW, "W"},
		{"command_load_w", float64(c.CommandLoad), maxPlausibleW, "W"},
		{"power_limit_w", float64(c.PowerLimit), maxPlausibleW, "W"},
		{"default_power_limit_w", float64(c.DefaultPowerLimit), maxPlausibleW, "W"},
		{"memory_idle_w", float64(c.MemoryIdle), maxPlausibleW, "W"},
		{"pi0_w", float64(c.Pi0), maxPlausibleW, "W"},
		{"pi_occ_w", float64(c.PiOcc), maxPlausibleW, "W"},
		{"active_idle_hold_s", c.ActiveIdleHold.Seconds(), maxPlausibleHoldS, "s"},
		{"idle_step_s", c.IdleStepInterval.Seconds(), maxPlausibleHoldS, "s"},
		{"launch_overhead_s", c.LaunchOverhead.Seconds(), maxPlausibleLaunchS, "s"},
		{"eps_flop_fp32_pj", pj(c.EpsFlopFP32), maxPlausiblePJ, "pJ"},
		{"eps_flop_fp64_pj", pj(c.EpsFlopFP64), maxPlausiblePJ, "pJ"},
		{"eps_mem_pj_per_byte", pj(c.EpsMemPerByte), maxPlausiblePJ, "pJ"},
		{"eps_mem_rail_pj_per_byte", pj(c.EpsMemRail), maxPlausiblePJ, "pJ"},
		{"max_sm_clock_hz", float64(c.MaxSMClock), maxPlausibleHz, "Hz"},
		{"min_sm_clock_hz", float64(c.MinSMClock), maxPlausibleHz, "Hz"},
		{"mem_clock_hz", float64(c.MemClock), maxPlausibleHz, "Hz"},
	}
	for i, l := range c.Load {
		bounds = append(bounds, bound{fmt.Sprintf("load[%d]: power_w", i), float64(l.Power), maxPlausibleW, "W"})
	}
	for _, op := range slices.Sorted(maps.Keys(c.OpsPerCycleSM)) {
		bounds = append(bounds, bound{fmt.Sprintf("ops_per_cycle_sm[%q]", op), c.OpsPerCycleSM[op], maxPlausibleOps, ""})
	}
	for _, op := range slices.Sorted(maps.Keys(c.EpsOp)) {
		bounds = append(bounds, bound{fmt.Sprintf("eps_op_pj[%q]", op), pj(c.EpsOp[op]), maxPlausiblePJ, "pJ"})
	}
	for _, l := range slices.Sorted(maps.Keys(c.Bandwidth)) {
		bounds = append(bounds, bound{fmt.Sprintf("bandwidth_bytes_per_s[%q]", l), c.Bandwidth[l], maxPlausibleBps, "bytes/s"})
	}
	for _, l := range slices.Sorted(maps.Keys(c.EpsLevel)) {
		bounds = append(bounds, bound{fmt.Sprintf("eps_level_pj_per_byte[%q]", l), pj(c.EpsLevel[l]), maxPlausiblePJ, "pJ"})
	}
	for _, b := range bounds {
		if b.v > b.limit { // NaN and negative values are the other checks'
			u := ""
			if b.unit != "" {
				u = " " + b.unit
			}
			return fmt.Errorf("%s: %g%s is beyond any GPU's: want at most %g%s", b.key, b.v, u, b.limit, u)
		}
	}
	return nil
}

// validateExec checks the keys of the execution model.
func (c Config) validateExec() error {
	finitePos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	switch {
	case c.SMs < 1 || c.SMs > 1<<16:
		return fmt.Errorf("sms: want 1 to %d, got %d", 1<<16, c.SMs)
	case !finitePos(float64(c.MaxSMClock)):
		return fmt.Errorf("max_sm_clock_hz: want > 0, got %g", float64(c.MaxSMClock))
	case !finitePos(float64(c.MinSMClock)) || c.MinSMClock > c.MaxSMClock:
		return fmt.Errorf("min_sm_clock_hz: want > 0 and at most max_sm_clock_hz (%g), got %g", float64(c.MaxSMClock), float64(c.MinSMClock))
	case !(c.MemClock >= 0) || math.IsInf(float64(c.MemClock), 0):
		return fmt.Errorf("mem_clock_hz: want >= 0, got %g", float64(c.MemClock))
	case c.MemBusWidthBits < 0:
		return fmt.Errorf("mem_bus_width_bits: want >= 0, got %d", c.MemBusWidthBits)
	case c.L2Bytes < 0:
		return fmt.Errorf("l2_bytes: want >= 0, got %d", c.L2Bytes)
	case c.MemoryBytes < 0:
		return fmt.Errorf("memory_bytes: want >= 0, got %d", c.MemoryBytes)
	case c.MaxThreadsPerSM < 1:
		return fmt.Errorf("max_threads_per_sm: want >= 1, got %d", c.MaxThreadsPerSM)
	case c.SharedPerSM < 0:
		return fmt.Errorf("shared_bytes_per_sm: want >= 0, got %d", c.SharedPerSM)
	case c.SaturatingThreadsPerSM < 1 || c.SaturatingThreadsPerSM > c.MaxThreadsPerSM:
		return fmt.Errorf("saturating_threads_per_sm: want 1 to max_threads_per_sm (%d), got %d", c.MaxThreadsPerSM, c.SaturatingThreadsPerSM)
	case c.LaunchOverhead <= 0:
		return fmt.Errorf("launch_overhead_s: want > 0 (at least 1 ns), got %g", c.LaunchOverhead.Seconds())
	case c.Pi0 >= c.PowerLimit:
		return fmt.Errorf("pi0_w: want below power_limit_w (%g W), got %g", float64(c.PowerLimit), float64(c.Pi0))
	case !(c.OperandToggleShare >= 0 && c.OperandDensityShare >= 0 && c.OperandToggleShare+c.OperandDensityShare <= 1):
		return fmt.Errorf("operand_toggle_share %g, operand_density_share %g: want each >= 0 and their sum at most 1",
			c.OperandToggleShare, c.OperandDensityShare)
	case c.Pi0+c.PiOcc >= c.PowerLimit:
		return fmt.Errorf("pi_occ_w: want pi0_w + pi_occ_w below power_limit_w (%g W), got %g", float64(c.PowerLimit), float64(c.Pi0+c.PiOcc))
	case c.EpsMemRail > c.EpsMemPerByte:
		return fmt.Errorf("eps_mem_rail_pj_per_byte: want at most eps_mem_pj_per_byte (%g), got %g",
			float64(c.EpsMemPerByte/units.Picojoule), float64(c.EpsMemRail/units.Picojoule))
	}
	if err := c.validateOpRates(); err != nil {
		return err
	}
	return c.validateMemLevels()
}

// validateOpRates checks the instruction classes' rates and energies: known classes,
// finite and >= 0, an energy for every class that runs.
func (c Config) validateOpRates() error {
	for _, op := range slices.Sorted(maps.Keys(c.OpsPerCycleSM)) {
		r := c.OpsPerCycleSM[op]
		where := fmt.Sprintf("ops_per_cycle_sm[%q]", op)
		switch {
		case !slices.Contains(opClasses, op):
			return fmt.Errorf("ops_per_cycle_sm: unknown class %q", op)
		case !(r >= 0) || math.IsInf(r, 0):
			return fmt.Errorf("%s: want >= 0, got %g", where, r)
		}
		if _, ok := c.OpEnergy(op); r > 0 && !ok {
			return fmt.Errorf("eps_op_pj: no energy for %q, which ops_per_cycle_sm runs", op)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(c.EpsOp)) {
		e := float64(c.EpsOp[op])
		switch {
		case !slices.Contains(opClasses, op):
			return fmt.Errorf("eps_op_pj: unknown class %q", op)
		case !(e >= 0) || math.IsInf(e, 0):
			return fmt.Errorf("eps_op_pj[%q]: want >= 0, got %g", op, e/float64(units.Picojoule))
		}
	}
	return nil
}

// validateMemLevels checks the memory levels' bandwidths and energies: known levels,
// finite and >= 0, an energy for every level that serves bytes.
func (c Config) validateMemLevels() error {
	for _, l := range slices.Sorted(maps.Keys(c.Bandwidth)) {
		b := c.Bandwidth[l]
		switch {
		case !slices.Contains(memLevels, l):
			return fmt.Errorf("bandwidth_bytes_per_s: unknown level %q", l)
		case !(b >= 0) || math.IsInf(b, 0):
			return fmt.Errorf("bandwidth_bytes_per_s[%q]: want >= 0, got %g", l, b)
		}
		if _, ok := c.ByteEnergy(l); b > 0 && !ok {
			return fmt.Errorf("eps_level_pj_per_byte: no energy for %q, which bandwidth_bytes_per_s serves", l)
		}
	}
	for _, l := range slices.Sorted(maps.Keys(c.EpsLevel)) {
		e := float64(c.EpsLevel[l])
		switch {
		case !slices.Contains(onChipLevels, l):
			return fmt.Errorf("eps_level_pj_per_byte: unknown level %q (want l2, shared or const; DRAM's is eps_mem_pj_per_byte)", l)
		case !(e >= 0) || math.IsInf(e, 0):
			return fmt.Errorf("eps_level_pj_per_byte[%q]: want >= 0, got %g", l, e/float64(units.Picojoule))
		}
	}
	return nil
}
