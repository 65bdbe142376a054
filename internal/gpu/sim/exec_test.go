package sim

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

type ops = map[kernels.OpClass]int64
type mem = map[kernels.MemLevel]int64

// fma is a pure FP32 FMA kernel that fills every SM of a Hopper: 2048 blocks of 256
// threads, 4096 FMAs each.
func fma(sms int) kernels.Descriptor {
	blocks := sms * 16
	return kernels.Descriptor{Name: "fp32.fma", Blocks: blocks, Threads: 256,
		Ops: ops{kernels.FP32FMA: int64(blocks) * 256 * 4096}}
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)+1e-300
}

func TestLaunchAgainstHandComputation(t *testing.T) {
	// The h100 preset: 132 SMs at 1.98 GHz, launch 2.79 µs, pi0 165 W, fp32.fma 2 × 4.89 pJ,
	// int32.add 5 pJ at 64 per SM per clock, DRAM 2.96e12 B/s at 96.5 pJ/B, shared memory
	// 128 B per SM per clock at 6 pJ/B, memory rail 30 pJ/B over 36 W.
	const (
		sms, f, L, pi0 = 132.0, 1.98e9, 2.79e-6, 165.0
		epsFMA, epsAdd = 9.78e-12, 5e-12
		epsDRAM, rail  = 96.5e-12, 30e-12
		epsShared      = 6e-12
	)
	dramBW := 3.35e12 * 4241 / 4800
	sharedBW := sms * 128 * f
	const n = 1 << 32
	tests := []struct {
		name     string
		d        kernels.Descriptor
		T        float64 // seconds per launch
		dyn      float64 // J
		dramB    float64
		limiter  string
		occupied float64
	}{
		{"fp32 fma, full", kernels.Descriptor{Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: n}},
			n/(128*sms*f) + L, n * epsFMA, 0, "compute", 1},
		{"fp32 fma + int32 add share the issue slots", kernels.Descriptor{Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: n, kernels.Int32Add: n / 2}},
			n/(128*sms*f) + n/2/(64*sms*f) + L, n*epsFMA + n/2*epsAdd, 0, "compute", 1},
		{"dram only", kernels.Descriptor{Blocks: 2112, Threads: 256, Bytes: mem{kernels.DRAM: 1 << 30}},
			(1<<30)/dramBW + L, (1 << 30) * epsDRAM, 1 << 30, "dram", 1},
		{"compute bound: dram hides under compute", kernels.Descriptor{Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: n}, Bytes: mem{kernels.DRAM: 1 << 20}},
			n/(128*sms*f) + L, n*epsFMA + (1<<20)*epsDRAM, 1 << 20, "compute", 1},
		{"memory bound: compute hides under dram", kernels.Descriptor{Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: 1 << 20}, Bytes: mem{kernels.DRAM: 1 << 30}},
			(1<<30)/dramBW + L, (1<<20)*epsFMA + (1<<30)*epsDRAM, 1 << 30, "dram", 1},
		{"shared memory", kernels.Descriptor{Blocks: 2112, Threads: 256, Bytes: mem{kernels.Shared: 1 << 34}},
			(1<<34)/sharedBW + L, (1 << 34) * epsShared, 0, "shared", 1},
		// 66 blocks on 132 SMs, 128 threads each of the 512 that saturate an SM: 1/8.
		{"low occupancy", kernels.Descriptor{Blocks: 66, Threads: 128, Ops: ops{kernels.FP32FMA: n}},
			8*n/(128*sms*f) + L, n * epsFMA, 0, "compute", 0.125},
		// 264 blocks of 128: every SM busy with 256 threads of 512.
		{"half occupancy", kernels.Descriptor{Blocks: 264, Threads: 128, Ops: ops{kernels.FP32FMA: n}},
			2*n/(128*sms*f) + L, n * epsFMA, 0, "compute", 0.5},
	}
	d := open(t, clock.NewVirtual(time.Time{}), mustPreset(t, "h100")).Device(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.d.Name = tt.name
			l, err := d.LaunchModel(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			E := tt.dyn + pi0*tt.T
			if !near(l.Seconds, tt.T, 1e-12) || !near(float64(l.Energy), E, 1e-12) || !near(float64(l.Dynamic), tt.dyn, 1e-12) ||
				!near(float64(l.Power), E/tt.T, 1e-12) || l.ClockHz != f || l.Capped || l.Limiter != tt.limiter || l.Occupancy != tt.occupied {
				t.Errorf("got %+v\nwant T=%g E=%g dyn=%g P=%g limiter %s occupancy %g", l, tt.T, E, tt.dyn, E/tt.T, tt.limiter, tt.occupied)
			}
			if mem := 36 + tt.dramB*rail/tt.T; !near(float64(l.MemoryPower), mem, 1e-12) {
				t.Errorf("memory power %v, want %v W", l.MemoryPower, mem)
			}
			dur, e, p, clk := d.TrueLaunch(tt.d)
			if dur != sensormodel.Seconds(tt.T) || e != l.Energy || p != l.Power || clk != f {
				t.Errorf("TrueLaunch = %v %v %v %v", dur, e, p, clk)
			}
		})
	}
}

func TestEpsOverrides(t *testing.T) {
	cfg := mustPreset(t, "h100")
	d := kernels.Descriptor{Name: "k", Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: 1000, kernels.FP64FMA: 1000}}
	base, err := cfg.launch(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1000 * (2*4.89e-12 + 2*11.68e-12); !near(float64(base.Dynamic), want, 1e-12) {
		t.Errorf("dynamic energy %v, want %v J from the eps_flop keys", base.Dynamic, want)
	}
	c2, err := LoadConfig(strings.NewReader(`{"eps_op_pj": {"fp32.fma": 12}, "eps_flop_fp64_pj": 10}`))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c2.launch(d)
	if want := 1000 * (12e-12 + 20e-12); !near(float64(l.Dynamic), want, 1e-12) {
		t.Errorf("dynamic energy %v, want %v J with fp32.fma overridden", l.Dynamic, want)
	}
	if e, ok := c2.OpEnergy(kernels.FP32FMA); !ok || !near(float64(e), 12e-12, 1e-12) {
		t.Errorf("OpEnergy(fp32.fma) = %v, %v", e, ok)
	}
	if e, ok := c2.ByteEnergy(kernels.DRAM); !ok || e != c2.EpsMemPerByte {
		t.Errorf("ByteEnergy(dram) = %v, %v", e, ok)
	}
}

// capped is a roofline kernel near the h200's balance point: about 880 W uncapped.
func capped() kernels.Descriptor {
	return kernels.Descriptor{Name: "roofline", Blocks: 2112, Threads: 256,
		Ops: ops{kernels.FP32FMA: 8 << 30}, Bytes: mem{kernels.DRAM: 1 << 30}}
}

func TestPowerCap(t *testing.T) {
	tests := []struct {
		name    string
		preset  string
		limit   units.Power
		d       kernels.Descriptor
		limiter string
	}{
		{"roofline at the h200's balance point", "h200", 0, capped(), "compute"},
		{"fp32 fma under a 300 W limit", "h100", 300, fma(132), "compute"},
		{"fp64 fma under a 250 W limit", "a100", 200, kernels.Descriptor{Name: "fp64", Blocks: 1728, Threads: 256, Ops: ops{kernels.FP64FMA: 1 << 34}}, "compute"},
		// DRAM alone is above the limit: the clock cannot help, the launch is slowed.
		{"dram under a 400 W limit", "h200", 400, kernels.Descriptor{Name: "copy", Blocks: 2112, Threads: 256, Bytes: mem{kernels.DRAM: 1 << 32}}, "power"},
		// So much work per clock that even min_sm_clock_hz is above the limit.
		{"fp32 fma under a 175 W limit", "h100", 175, fma(132), "power"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustPreset(t, tt.preset)
			if tt.limit > 0 {
				cfg.PowerLimit = tt.limit
			}
			free := cfg
			free.PowerLimit = 1e6
			u, err := free.launch(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if u.Power <= cfg.PowerLimit {
				t.Fatalf("uncapped power %v is within the limit %v: no test", u.Power, cfg.PowerLimit)
			}
			l, err := cfg.launch(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Capped || l.Power > cfg.PowerLimit*(1+1e-12) || l.Seconds <= u.Seconds || l.Limiter != tt.limiter {
				t.Errorf("capped launch %+v (uncapped %+v)", l, u)
			}
			if l.ClockHz >= float64(cfg.MaxSMClock) || l.ClockHz < float64(cfg.MinSMClock) {
				t.Errorf("clock %v Hz, want in [%v, %v)", l.ClockHz, cfg.MinSMClock, cfg.MaxSMClock)
			}
			if tt.limiter == "compute" {
				// The clock is the whole MHz just below the one that meets the limit exactly.
				if l.ClockHz != math.Round(l.ClockHz/1e6)*1e6 {
					t.Errorf("clock %v Hz is not a whole MHz", l.ClockHz)
				}
				up := cfg
				up.MinSMClock, up.MaxSMClock = units.Frequency(l.ClockHz+1e6), units.Frequency(l.ClockHz+1e6)
				up.PowerLimit = 1e6
				if l1, _ := up.launch(tt.d); l1.Power <= cfg.PowerLimit {
					t.Errorf("at one MHz more (%v W) the kernel would still meet the limit", l1.Power)
				}
				if cfg.PowerLimit-l.Power > 2 {
					t.Errorf("power %v, more than 2 W below the limit", l.Power)
				}
			}
			if tt.limiter == "power" && !near(float64(l.Power), float64(cfg.PowerLimit), 1e-9) {
				t.Errorf("power %v, want the limit", l.Power)
			}
			// Energy per instruction does not change with the clock: only T × pi0 grows.
			if !near(float64(l.Dynamic), float64(u.Dynamic), 1e-12) || !near(float64(l.Energy), float64(l.Dynamic)+float64(cfg.Pi0)*l.Seconds, 1e-12) {
				t.Errorf("energy %v (dynamic %v), uncapped %v", l.Energy, l.Dynamic, u.Dynamic)
			}
		})
	}
}

func TestRunOnVirtualClock(t *testing.T) {
	for _, tt := range []struct {
		preset string
		d      kernels.Descriptor
	}{{"h100", fma(132)}, {"h200", capped()}} {
		t.Run(tt.preset+"/"+tt.d.Name, func(t *testing.T) {
			cfg := quiet(t, tt.preset)
			// A counter that publishes every ns, so its delta spans exactly the run.
			ec := cfg.Sensors["energy.total"]
			ec.Model.Period, ec.Model.Phase, ec.Model.Jitter, ec.Model.Gain = 1, 0, 0, 1
			cfg.Sensors["energy.total"] = ec
			v := clock.NewVirtual(time.Time{})
			dev := open(t, v, cfg).Device(0)
			k, err := dev.Prepare(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			l, _ := dev.LaunchModel(tt.d)
			v.AdvanceTo(time.Second)
			counter := dev.Sensor("energy.total")
			read := func() float64 {
				r, err := counter.Read(nil)
				if err != nil {
					t.Fatal(err)
				}
				return r[0].Value
			}
			e0 := read()
			n := 10000 // long enough for a whole utilisation window
			t0, t1, err := k.Run(n)
			if err != nil {
				t.Fatal(err)
			}
			e1 := read()
			if t0 != time.Second || t1 != t0+sensormodel.Seconds(float64(n)*l.Seconds) || v.Now() != t1 {
				t.Errorf("run [%v, %v], clock at %v; want [1s, 1s + %v]", t0, t1, v.Now(), sensormodel.Seconds(float64(n)*l.Seconds))
			}
			want := float64(n) * float64(l.Energy)
			if got := e1 - e0; math.Abs(got-want) > 1e-3+1e-6 {
				t.Errorf("energy counter delta %.6f J, want %.6f J", got, want)
			}
			if got := float64(dev.TrueEnergy(t0, t1)); math.Abs(got-want) > 1e-6 {
				t.Errorf("TrueEnergy %.9f J, want %.9f J", got, want)
			}
			// The truths during and after the run: before it, gpuwatt's context (opened by
			// Prepare at 0) holds an H200 at active idle, not idle at rest.
			before := cfg.Idle
			if cfg.ContextActiveIdle {
				before = cfg.ActiveIdle
			}
			mid := t0 + (t1-t0)/2
			reasons := uint64(0)
			if l.Capped {
				reasons = reasonSWPowerCap
			}
			if dev.TruePower(t0) != l.Power || dev.TruePower(t1-1) != l.Power || dev.TruePower(t1) != cfg.ActiveIdle ||
				dev.TruePower(t0-1) != before || !dev.ContextOpen(t0-1) || dev.TrueMemoryPower(mid) != l.MemoryPower || !dev.Busy(mid) || dev.Busy(t1) ||
				math.Abs(float64(dev.TrueSMClock(mid))-l.ClockHz) > 1e-3 || dev.TrueThrottleReasons(mid) != reasons ||
				dev.TrueSMClock(t1) != 345e6 || dev.TrueThrottleReasons(t1) != 1 {
				t.Errorf("truths: power %v %v %v, memory %v, clock %v, reasons %d (launch %+v)", dev.TruePower(t0), dev.TruePower(t1-1), dev.TruePower(t1),
					dev.TrueMemoryPower(mid), dev.TrueSMClock(mid), dev.TrueThrottleReasons(mid), l)
			}
			// The channels read them.
			for name, want := range map[string]float64{"clock.sm": l.ClockHz, "throttle.reasons": float64(reasons), "util.gpu": 100, "pstate": 0} {
				s, _ := dev.Scheduled(name)
				k := s.UpdateIndex(t1 - 1)
				if s.UpdateTime(k) < t0 {
					t.Fatalf("%s: no update during the run", name)
				}
				if got := s.ValueAt(k); got != want {
					t.Errorf("%s reads %v during the run, want %v", name, got, want)
				}
			}
			if tt.preset == "h100" && l.Capped {
				t.Error("an FP32 FMA kernel should not be capped on the h100")
			}
			if tt.preset == "h200" && !l.Capped {
				t.Error("the roofline kernel should be capped on the h200")
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	v := clock.NewVirtual(time.Time{})
	dev := open(t, v, mustPreset(t, "h100")).Device(0)
	k, err := dev.Prepare(fma(132))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Run(0); err == nil {
		t.Error("Run(0) succeeded")
	}
	if _, _, err := k.Run(1 << 40); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Run(2^40) = %v", err)
	}
	k.Close()
	if _, _, err := k.Run(1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close = %v", err)
	}
	if v.Now() != 0 {
		t.Errorf("failed runs moved the clock to %v", v.Now())
	}
}

func TestPrepareRejects(t *testing.T) {
	good := func(f func(*kernels.Descriptor)) kernels.Descriptor {
		d := kernels.Descriptor{Name: "bad", Blocks: 8, Threads: 256, Ops: ops{kernels.FP32FMA: 10}, Bytes: mem{kernels.DRAM: 10}}
		f(&d)
		return d
	}
	noL2 := mustPreset(t, "h100")
	noL2.Bandwidth[kernels.L2] = 0
	tests := []struct {
		preset string
		cfg    *Config
		d      kernels.Descriptor
		want   string
	}{
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Blocks = 0 }), "at least one block"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Threads = 0 }), "at least one block of at least one thread"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Threads = 2048 }), "at most 1024"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Ops, d.Bytes = nil, nil }), "describes no work"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Ops, d.Bytes = ops{kernels.FP32FMA: 0}, nil }), "describes no work"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Ops["fp32.fmaa"] = 1 }), `unknown instruction class "fp32.fmaa"`},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Bytes["l3"] = 1 }), `unknown memory level "l3"`},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Ops[kernels.FP32FMA] = -1 }), "want >= 0"},
		{"h100", nil, good(func(d *kernels.Descriptor) { d.Bytes[kernels.DRAM] = -1 }), "want >= 0"},
		{"k20", nil, good(func(d *kernels.Descriptor) { d.Ops[kernels.FP16FMA] = 1 }), `"fp16.fma" is not supported by the gpuwatt sim K20c`},
		{"v100", nil, good(func(d *kernels.Descriptor) { d.Ops[kernels.BF16FMA] = 1 }), `"bf16.fma" is not supported`},
		{"h100", &noL2, good(func(d *kernels.Descriptor) { d.Bytes[kernels.L2] = 1 }), `memory level "l2" is not modelled`},
	}
	for _, tt := range tests {
		cfg := mustPreset(t, tt.preset)
		if tt.cfg != nil {
			cfg = *tt.cfg
		}
		dev := open(t, clock.NewVirtual(time.Time{}), cfg).Device(0)
		_, err := dev.Prepare(tt.d)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `sim: kernel "bad": `) {
			t.Errorf("%s %+v: err = %v, want %q", tt.preset, tt.d, err, tt.want)
		}
		if dur, e, p, f := dev.TrueLaunch(tt.d); dur != 0 || e != 0 || p != 0 || f != 0 {
			t.Errorf("TrueLaunch of a bad descriptor = %v %v %v %v", dur, e, p, f)
		}
	}
}

func TestEveryPresetRunsFMA(t *testing.T) {
	for _, name := range Presets() {
		t.Run(name, func(t *testing.T) {
			cfg := mustPreset(t, name)
			v := clock.NewVirtual(time.Time{})
			dev := open(t, v, cfg).Device(0)
			p := dev.Props()
			// An AMD board has no CUDA compute capability.
			if p.Name != cfg.Name || p.SMs != cfg.SMs || p.MaxSMClockHz != float64(cfg.MaxSMClock) || (p.ComputeCapability == "") != (cfg.Vendor == VendorAMD) ||
				p.MemClockHz <= 0 || p.MemBusWidthBits <= 0 || p.L2Bytes <= 0 || p.MemoryBytes < 1<<32 || p.MaxThreadsPerSM != 2048 || p.SharedPerSM <= 0 {
				t.Errorf("props %+v", p)
			}
			// The clock.sm channel's top clock is max_sm_clock_hz.
			m := cfg.Sensors["clock.sm"].Model
			if float64(m.Offset)+m.Gain != float64(cfg.MaxSMClock) || float64(m.Offset) != float64(cfg.MinSMClock) {
				t.Errorf("clock.sm model %v + %v, clocks %v..%v", m.Offset, m.Gain, cfg.MinSMClock, cfg.MaxSMClock)
			}
			d := fma(cfg.SMs)
			k, err := dev.Prepare(d)
			if err != nil {
				t.Fatal(err)
			}
			l, _ := dev.LaunchModel(d)
			rate := cfg.OpsPerCycleSM[kernels.FP32FMA] * float64(cfg.SMs) * float64(cfg.MaxSMClock)
			T := float64(d.Ops[kernels.FP32FMA])/rate + cfg.LaunchOverhead.Seconds()
			E := float64(d.Ops[kernels.FP32FMA])*2*float64(cfg.EpsFlopFP32) + T*float64(cfg.Pi0)
			if !near(l.Seconds, T, 1e-12) || !near(float64(l.Energy), E, 1e-12) || l.Capped {
				t.Errorf("launch %+v, want T=%g E=%g", l, T, E)
			}
			if l.Power <= cfg.ActiveIdle || l.Power > cfg.PowerLimit {
				t.Errorf("power %v, want between active idle %v and the limit %v", l.Power, cfg.ActiveIdle, cfg.PowerLimit)
			}
			t0, t1, err := k.Run(10)
			if err != nil || t1-t0 != sensormodel.Seconds(10*T) {
				t.Errorf("Run(10) = %v, %v, %v", t0, t1, err)
			}
			if got := float64(dev.TrueEnergy(t0, t1)); !near(got, 10*E, 1e-6) {
				t.Errorf("energy %v, want %v", got, 10*E)
			}
		})
	}
}

func TestExecConfigKeys(t *testing.T) {
	c, err := LoadConfig(strings.NewReader(`{"preset": "h200", "sms": 100, "max_sm_clock_hz": 1.5e9, "min_sm_clock_hz": 2e8,
		"compute_capability": "9.9", "launch_overhead_s": 5e-6, "saturating_threads_per_sm": 256, "l2_bytes": 1234, "memory_bytes": 99999999999,
		"ops_per_cycle_sm": {"fp32.fma": 64, "bf16.fma": 0}, "bandwidth_bytes_per_s": {"dram": 1e12},
		"eps_op_pj": {"fp32.fma": 12, "int32.add": 1.5}, "eps_level_pj_per_byte": {"l2": 10}, "eps_mem_rail_pj_per_byte": 20, "pi0_w": 150}`))
	if err != nil {
		t.Fatal(err)
	}
	base := mustPreset(t, "h200")
	if c.SMs != 100 || c.MaxSMClock != 1.5e9 || c.MinSMClock != 2e8 || c.ComputeCapability != "9.9" || c.LaunchOverhead != 5*time.Microsecond ||
		c.SaturatingThreadsPerSM != 256 || c.L2Bytes != 1234 || c.MemoryBytes != 99999999999 || c.Pi0 != 150 || c.MemBusWidthBits != base.MemBusWidthBits {
		t.Errorf("scalars %+v", c)
	}
	if c.OpsPerCycleSM[kernels.FP32FMA] != 64 || c.OpsPerCycleSM[kernels.BF16FMA] != 0 || c.OpsPerCycleSM[kernels.FP64FMA] != 64 {
		t.Errorf("ops_per_cycle_sm %v (keys not given keep the preset's)", c.OpsPerCycleSM)
	}
	if c.Bandwidth[kernels.DRAM] != 1e12 || c.Bandwidth[kernels.L2] != base.Bandwidth[kernels.L2] {
		t.Errorf("bandwidth %v", c.Bandwidth)
	}
	if !near(float64(c.EpsOp[kernels.FP32FMA]), 12e-12, 1e-12) || !near(float64(c.EpsOp[kernels.Int32Add]), 1.5e-12, 1e-12) ||
		c.EpsOp[kernels.FP32Sin] != base.EpsOp[kernels.FP32Sin] || !near(float64(c.EpsLevel[kernels.L2]), 10e-12, 1e-12) ||
		c.EpsLevel[kernels.Shared] != base.EpsLevel[kernels.Shared] || !near(float64(c.EpsMemRail), 20e-12, 1e-12) {
		t.Errorf("energies %v %v %v", c.EpsOp, c.EpsLevel, c.EpsMemRail)
	}
	if !reflect.DeepEqual(base, mustPreset(t, "h200")) {
		t.Error("LoadConfig changed the preset")
	}
	// The effective config reads back to itself.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadConfig(strings.NewReader(string(b)))
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %v\n%s", err, b)
	}
	for _, key := range []string{"sms", "ops_per_cycle_sm", "eps_op_pj", "eps_level_pj_per_byte", "bandwidth_bytes_per_s", "launch_overhead_s"} {
		if !strings.Contains(string(b), `"`+key+`":`) {
			t.Errorf("marshalled config lacks %s", key)
		}
	}
	// Every preset's maps are its own.
	p1, p2 := mustPreset(t, "h100"), mustPreset(t, "h200")
	p1.OpsPerCycleSM[kernels.FP32FMA] = 1
	p1.EpsOp[kernels.Int32Add] = 1
	if p2.OpsPerCycleSM[kernels.FP32FMA] != 128 || mustPreset(t, "h100").OpsPerCycleSM[kernels.FP32FMA] != 128 || mustPreset(t, "h100").EpsOp[kernels.Int32Add] == 1 {
		t.Error("presets share their maps")
	}
	bad := []struct{ in, want string }{
		{`{"eps_op_pj": {"fp32.fmaa": 1}}`, `eps_op_pj: unknown key "fp32.fmaa" (want one of int32.add,`},
		{`{"ops_per_cycle_sm": {"int32.ad": 1}}`, `ops_per_cycle_sm: unknown key "int32.ad"`},
		{`{"eps_level_pj_per_byte": {"dram": 1}}`, `eps_level_pj_per_byte: unknown key "dram" (want one of l2, shared, const)`},
		{`{"bandwidth_bytes_per_s": {"l3": 1}}`, `bandwidth_bytes_per_s: unknown key "l3"`},
		{`{"bandwidth_bytes_per_s": {"dram": "fast"}}`, `bandwidth_bytes_per_s["dram"]: want a number`},
		{`{"eps_op_pj": [1]}`, `eps_op_pj: want an object`},
		{`{"ops_per_cycle_sm": {"fp32.add": -1}}`, `ops_per_cycle_sm["fp32.add"]: want >= 0`},
		{`{"eps_op_pj": {"fp32.add": -1}}`, `eps_op_pj["fp32.add"]: want >= 0`},
		{`{"sms": 0}`, `sms: want 1 to`},
		{`{"min_sm_clock_hz": 3e9}`, `min_sm_clock_hz: want > 0 and at most max_sm_clock_hz`},
		{`{"max_sm_clock_hz": 0}`, `max_sm_clock_hz: want > 0`},
		{`{"launch_overhead_s": 0}`, `launch_overhead_s: want > 0`},
		{`{"saturating_threads_per_sm": 4096}`, `saturating_threads_per_sm: want 1 to max_threads_per_sm`},
		{`{"pi0_w": 700}`, `pi0_w: want below power_limit_w`},
		{`{"eps_mem_rail_pj_per_byte": 200}`, `eps_mem_rail_pj_per_byte: want at most eps_mem_pj_per_byte`},
		{`{"compute_capability": 9}`, `compute_capability: want a string`},
		{`{"l2_bytes": 1.5}`, `l2_bytes: want a whole number`},
	}
	for _, tt := range bad {
		_, err := LoadConfig(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sim config: ") {
			t.Errorf("%s: err = %v, want %q", tt.in, err, tt.want)
		}
	}
	// A class that runs needs an energy.
	c = mustPreset(t, "h100")
	delete(c.EpsOp, kernels.FP32Sin)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `eps_op_pj: no energy for "fp32.sin"`) {
		t.Errorf("missing energy: %v", err)
	}
	c = mustPreset(t, "h100")
	delete(c.EpsLevel, kernels.Shared)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `no energy for "shared"`) {
		t.Errorf("missing level energy: %v", err)
	}
}

// TestIncrementalTruthEqualsFullProfile checks that the truths built one activity at a
// time (from the activities that matter from each change on) equal the profile of all
// activities at once.
func TestIncrementalTruthEqualsFullProfile(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := mustPreset(t, []string{"h100", "k20"}[seed%2])
		v := clock.NewVirtual(time.Time{})
		dev := open(t, v, cfg).Device(0)
		k, _ := dev.Prepare(fma(cfg.SMs))
		ms := func(n int) time.Duration { return time.Duration(rng.IntN(n)) * time.Millisecond }
		for range 40 {
			switch rng.IntN(5) {
			case 0:
				s := v.Now() - ms(3000) + ms(3000)
				dev.AddLoad(max(s, 0), max(s, 0)+ms(2000), units.Power(100+rng.IntN(500)))
			case 1:
				dev.CommandStarted(v.Now())
				v.Advance(ms(500))
				dev.CommandEnded(v.Now())
			case 2:
				v.Advance(ms(5000))
			default:
				k.Run(1 + rng.IntN(30))
			}
		}
		dev.mu.Lock()
		want := dev.profile(dev.acts)
		dev.mu.Unlock()
		check := func(at time.Duration, w truthState) {
			if dev.TruePower(at) != w.board || dev.TrueMemoryPower(at) != w.mem || float64(dev.busy.Power(at)) != w.busy ||
				float64(dev.smClock.Power(at)) != w.clk || float64(dev.reasons.Power(at)) != w.rsn {
				t.Fatalf("seed %d at %v: board %v mem %v busy %v clk %v rsn %v, want %+v", seed, at, dev.TruePower(at), dev.TrueMemoryPower(at),
					dev.busy.Power(at), dev.smClock.Power(at), dev.reasons.Power(at), w)
			}
		}
		for i, w := range want {
			check(w.t, w)
			if i+1 < len(want) && want[i+1].t > w.t+1 {
				check(want[i+1].t-1, w)
			}
		}
	}
}

// TestSensorsFollowShortKernels runs 10,000 short launches with gaps, so that the truth
// changes every millisecond or so, with a Sampler polling every channel: the channels
// still read the truth through their models, and it takes little real time.
func TestSensorsFollowShortKernels(t *testing.T) {
	cfg := quiet(t, "h200")
	cfg.GPUs = 2
	// The check below is the plain window mean: without the h200's measured lag and delay.
	for _, n := range []string{"power.instant", "power.samples", "power.usage", "power.average"} {
		sc := cfg.Sensors[n]
		sc.Model.Tau, sc.Model.Delay = 0, 0
		cfg.Sensors[n] = sc
	}
	v := clock.NewVirtual(time.Time{})
	sys := open(t, v, cfg)
	dev, hot := sys.Device(0), sys.Device(1) // hot runs a power-capped kernel
	// About 0.5 ms per launch.
	small := kernels.Descriptor{Name: "small", Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: 1 << 34}}
	big := capped()
	big.Name = "capped"
	k1, _ := dev.Prepare(small)
	k2, _ := hot.Prepare(big)
	s := sensor.New(v, append(dev.Sensors(), hot.Sensors()...), sensor.Options{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v.AdvanceTo(time.Second)
	t0 := v.Now()
	for i := range 10000 {
		if _, _, err := k1.Run(1 + i%3); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			v.Advance(time.Duration(200+i%700) * time.Microsecond)
		}
		if i%100 == 0 {
			k2.Run(1 + i%50) // up to 17 ms
		}
	}
	t1 := v.Now()
	v.Advance(time.Second)
	_, samples := s.Stop()
	elapsed := time.Since(start)
	t.Logf("%v of virtual time, %d samples, in %v", t1-t0, len(samples), elapsed)
	if elapsed > 3*time.Second {
		t.Errorf("took %v of real time", elapsed)
	}
	// Published values against the truth: instant (25 ms window), average (1 s), the ring
	// buffer's 20 ms samples, the memory channel, at every update of the run.
	for _, name := range []string{"power.instant", "power.usage", "power.samples", "power.memory.instant"} {
		ch, _ := dev.Scheduled(name)
		m := ch.Model()
		truth := dev.Board()
		if name == "power.memory.instant" {
			truth = dev.Memory()
		}
		n := 0
		for _, tk := range ch.UpdateTimes(t0, t1) {
			k := ch.UpdateIndex(tk)
			want := m.Gain*float64(truth.Mean(tk-m.Window, tk, 0)) + float64(m.Offset)
			if got := ch.ValueAt(k); math.Abs(got-want) > 0.0005+1e-9 {
				t.Fatalf("%s at %v: %v, want %v", name, tk, got, want)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: no update", name)
		}
	}
	// The sampler recorded the busy power: a mean over the run between active idle and the
	// kernel's power.
	var sum float64
	var cnt int
	for _, x := range samples {
		if x.GPU == 0 && x.Channel == "power.samples" && x.T >= t0+50*time.Millisecond && x.T < t1 {
			sum += x.Value
			cnt++
		}
	}
	l, _ := dev.LaunchModel(small)
	if mean := sum / float64(max(cnt, 1)); cnt < 100 || mean < float64(cfg.ActiveIdle) || mean > float64(l.Power) {
		t.Errorf("%d ring samples, mean %v W", cnt, mean)
	}
	// The energy counter matches the truth, and the capped device reported its cap.
	ec, _ := dev.Scheduled("energy.total")
	k0, kN := ec.UpdateIndex(t0), ec.UpdateIndex(t1)
	got := ec.ValueAt(kN) - ec.ValueAt(k0)
	if want := ec.Model().Gain * float64(dev.TrueEnergy(ec.UpdateTime(k0), ec.UpdateTime(kN))); math.Abs(got-want) > 0.001+1e-9 {
		t.Errorf("counter %v J, truth %v J", got, want)
	}
	rs, _ := hot.Scheduled("throttle.reasons")
	published, seen := 0, 0
	for _, tk := range rs.UpdateTimes(t0, t1) {
		if rs.ValueAt(rs.UpdateIndex(tk)) == reasonSWPowerCap {
			published++
		}
	}
	for _, x := range samples {
		if x.GPU == 1 && x.Channel == "throttle.reasons" && x.Value == reasonSWPowerCap {
			seen++
		}
	}
	if published == 0 || seen == 0 {
		t.Errorf("sw_power_cap published %d times, recorded %d times", published, seen)
	}
}

func TestRunOnRealClock(t *testing.T) {
	clk := clock.NewReal()
	dev := open(t, clk, mustPreset(t, "h100")).Device(0)
	// About 2 ms per launch.
	d := kernels.Descriptor{Name: "k", Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: 1 << 36}}
	k, err := dev.Prepare(d)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := dev.LaunchModel(d)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Every sensor read over and over while the runs run, each read followed by a yield
	// (issue 30): without it the ~20 spinning readers kept both cores and delayed each run's
	// wake-up by their time slices (0.6-1.5 s of wall at 2 cores, for ~40 ms of runs); the
	// reads still come ~150 000 times in the runs' span (the log line counts them).
	var reads atomic.Int64
	for _, s := range dev.Sensors() {
		wg.Go(func() {
			var buf []sensor.Reading
			for ctx.Err() == nil {
				buf, _ = s.Read(buf[:0])
				reads.Add(1)
				runtime.Gosched()
			}
		})
	}
	type span struct{ a, b time.Duration }
	var mu sync.Mutex
	var spans []span
	var runs sync.WaitGroup
	for range 3 {
		runs.Go(func() {
			for range 3 {
				a, b, err := k.Run(2)
				if err != nil {
					t.Error(err)
					return
				}
				if clk.Now() < b || b-a != sensormodel.Seconds(2*l.Seconds) {
					t.Errorf("run [%v, %v] returned at %v", a, b, clk.Now())
				}
				mu.Lock()
				spans = append(spans, span{a, b})
				mu.Unlock()
			}
		})
	}
	runs.Wait()
	during := reads.Load()
	cancel()
	wg.Wait()
	t.Logf("%d sensor reads while %d runs ran", during, len(spans))
	// Runs of one device do not overlap.
	for i, x := range spans {
		for _, y := range spans[i+1:] {
			if x.a < y.b && y.a < x.b {
				t.Errorf("runs [%v, %v] and [%v, %v] overlap", x.a, x.b, y.a, y.b)
			}
		}
		if dev.TruePower(x.a) != l.Power {
			t.Errorf("true power at %v: %v, want %v", x.a, dev.TruePower(x.a), l.Power)
		}
	}
}

func BenchmarkRunWithSampler(b *testing.B) {
	cfg, _ := Preset("h100")
	v := clock.NewVirtual(time.Time{})
	sys, _ := Open(v, cfg)
	dev := sys.Device(0)
	k, _ := dev.Prepare(kernels.Descriptor{Name: "small", Blocks: 2112, Threads: 256, Ops: ops{kernels.FP32FMA: 1 << 34}})
	s := sensor.New(v, dev.Sensors(), sensor.Options{})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	for b.Loop() {
		k.Run(1)
		v.Advance(300 * time.Microsecond)
	}
	b.ReportMetric(float64(v.Now())/float64(b.N)/1e3, "virtual-µs/op")
}
