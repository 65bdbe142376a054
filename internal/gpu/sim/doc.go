// Package sim is the sim device: gpuwatt's digital twin of an NVIDIA GPU, whose true power
// is known, so that tests and `--device sim` runs can compare what gpuwatt measures with
// the truth.
//
// # Model
//
// Each device has a true board power that is piecewise constant on the clock axis (the
// t=0 of the config's load is the clock's origin):
//
//   - idle_w, idle at rest, when nothing has run yet (no CUDA context open);
//   - while loads run (the scripted load, a command measured by `gpuwatt measure`, which
//     reports its start and end through gpu.CommandObserver, or AddLoad), the highest of
//     their powers; a command draws command_load_w;
//   - active_idle_w, active idle, while nothing runs and a CUDA context is open, on a board
//     whose contexts hold it up (context_active_idle: the H200, ~120 W with a context open
//     against 76–81 W at rest). A measured command opens one at its start and closes it at
//     its end; gpuwatt's own kernels open one (Props or the first Prepare, as the real
//     executor does) held until the system closes; OpenContext and CloseContext script more;
//   - after the last running load ends (and the last context closes, where they count),
//     active_idle_w held for active_idle_hold_s, then idle_steps equal steps down to idle_w,
//     one every idle_step_s (Burtscher et al. on the K20: 52.5 W held ~3.5 s, then lowered
//     step by step every second, a context open or not).
//
// Device.TrueIdle (gpu.Truth) gives both levels, so that tests check each verb's idle
// figure against the one it should see: idle at rest for `measure`'s baseline, active idle
// for the verbs that run gpuwatt's own kernels.
//
// The true memory power is memory_idle_w + memory_load_fraction × (board − idle_w), and a
// busy signal is 1 while a load runs, else 0. Kernels (below) are loads too, with powers,
// a clock and throttle reasons of their own.
//
// Every channel of the real driver exists, with the real channel's name, quantity and unit
// (Device.Sensors, in this order): power.usage, power.instant, power.average,
// power.module.instant, power.module.average, power.memory.instant, power.memory.average,
// power.samples, energy.total, clock.sm, clock.mem, temp.gpu, throttle.reasons, pstate,
// util.gpu, util.mem, power.limit; on an AMD board (vendor "amd": the mi300x preset) the
// channels amdsmi gives, as internal/sensor/amdsensor reads them: power.socket_current,
// power.socket_average, energy.total, clock.sm, clock.mem, temp.gpu, util.gpu, util.mem,
// power.limit. Each is a truth passed through its own sensor model
// (sensormodel.Model):
//
//   - power.*: board power (memory power for power.memory.*; module = board in the sim);
//   - power.samples: a ring buffer of timestamped samples (as nvmlDeviceGetSamples);
//   - energy.total: the exact integral of board power × gain, quantised to 1 mJ, published
//     at its own update instants, counting from a large value fixed by the seed;
//   - clock.sm, clock.mem, throttle.reasons, pstate: offset + gain × busy (sampled at the
//     update instant): e.g. clock.sm offset = idle clock, gain = max − idle clock, in Hz;
//     throttle.reasons gain −1 offset 1 (the GpuIdle bit while idle). While a kernel runs,
//     the "busy" that clock.sm and throttle.reasons observe is the level at which their
//     model reads the kernel's clock and reasons: (f − offset) / gain, so clock.sm reads
//     the clock f, and 1 − 0x4 = −3 for throttle.reasons while power capped, so that it
//     reads 0x4 (sw_power_cap); 1 (the top clock, no reason) for commands and loads;
//   - util.gpu, util.mem: gain × the fraction of the window that was busy (window = period
//     = 1/6 s, NVML's sample period);
//   - temp.gpu: offset (ambient, degC) + gain (degC/W) × board power through a thermal
//     lag tau_s (30 s), published in whole degrees;
//   - power.limit: the constant power_limit_w.
//
// Channels the preset's real board lacks fail with an error wrapping
// simsensor.ErrNotSupported ("not supported on this device").
//
// Everything runs on any clock.Clock: on a Virtual clock a whole run is instant and
// deterministic; on a Real clock (`gpuwatt measure --device sim -- sleep 2`) the channels
// update in wall time. Values are computed lazily and exactly on Read.
//
// # Config (--sim-config FILE)
//
// A JSON object. "preset" (default "h100") is applied first; every other key overrides it.
// An unknown key anywhere is an error naming it. Times in seconds, powers in watts.
//
//	key                    meaning
//	preset                 h100, h200, a100, v100, k20 or mi300x
//	seed                   fixes noise, jitter, the board errors of GPUs 1.. and UUIDs (default 1)
//	gpus                   number of devices (default 1)
//	name                   product name the devices report
//	vendor                 nvidia (default) or amd: the channels (NVML's or amdsmi's) and
//	                       whether gpuwatt's kernels run (PTX: NVIDIA only)
//	idle_w                 idle at rest: true power with no CUDA context open, long after any load
//	active_idle_w          active idle: true power with a context open and nothing running
//	                       (context_active_idle), and right after a load ends
//	active_idle_hold_s     how long active idle is held after a load ends (or the last context closes)
//	post_load_dip_w        how far below active idle the board draws right after a load ends
//	                       (0 = none, every preset): the dip closes in four equal steps over
//	post_load_dip_s        its length (an H200: 3-6 W for ~150 ms after a bf16 GEMM)
//	context_active_idle    true: an open CUDA context holds the board at active_idle_w (the H200);
//	                       false: contexts change nothing (h100, a100, v100, k20: not measured so)
//	idle_steps             steps from active idle down to idle (1 = straight down)
//	idle_step_s            time between those steps
//	command_load_w         true power while a measured command runs
//	power_limit_w          enforced power limit: kernels are capped at it
//	default_power_limit_w  default power limit (0 = power_limit_w)
//	memory_idle_w          true memory power at idle
//	memory_load_fraction   memory's share of the board power above idle
//	board_spread           per-board error of GPUs 1..: gain × (1 ± s), offset ± s × idle_w
//	load                   scripted true power: a list of steps, in time order, either
//	                       {"t_s": 1, "power_w": 500} (until the next step, or for ever) or
//	                       {"t_s": 1, "duration_s": 2, "power_w": 500} (then active idle)
//	processes              scripted processes (gpuwatt serve's per-process split): a list of
//	                       {"gpu": 0, "pid": 4242, "comm": "train", "t_s": 2, "duration_s": 10,
//	                       "sm_util": 60, "power_w": 240}: while it runs the process shows
//	                       sm_util % of SM use and the board draws active_idle_w plus the
//	                       power_w of every process running (a load like the others); its
//	                       true energy is its power_w over the time it ran
//	sensors                per channel: {"unsupported": true} or overrides of the model:
//	                       period_s, jitter (± fraction of the period, < 0.5), phase_s,
//	                       window_s (0 = point sample), delay_s, tau_s (RC lag), noise_w
//	                       (Gaussian sigma per update), quantum_w, gain, offset_w; and
//	                       "ring" (samples kept) for power.samples. For channels other
//	                       than power, *_w values are in the channel's unit (J, Hz, degC,
//	                       %, state, mask). power.limit takes only "unsupported".
//
// Kernel execution (see Kernels; maps override the preset's entries one by one):
//
//	compute_capability     "9.0" (gpu.Props)
//	sms                    streaming multiprocessors
//	max_sm_clock_hz        the SM clock kernels run at unless power capped
//	min_sm_clock_hz        the lowest SM clock power capping goes down to
//	mem_clock_hz, mem_bus_width_bits, l2_bytes, memory_bytes, max_threads_per_sm,
//	shared_bytes_per_sm    reported by Props
//	saturating_threads_per_sm
//	                       resident threads an SM needs for full throughput (latency hiding)
//	launch_overhead_s      added to every launch (> 0)
//	ops_per_cycle_sm       {class: thread-level instructions per SM per clock; for a
//	                       tensor-core class (kernels.TensorClasses) MACs}; a class
//	                       missing or at 0 is not supported (Prepare fails)
//	bandwidth_bytes_per_s  {level: bytes/s of the whole GPU at the top clock}; dram, l2,
//	                       shared, const
//	pi0_w                  constant board power while a kernel runs (< power_limit_w)
//	pi_occ_w               static power of occupied SMs: while a kernel runs the board draws
//	                       pi_occ_w × the share of the resident thread slots it occupies
//	                       (threads / (sms × max_threads_per_sm), at most 1) on top of pi0_w;
//	                       0 in the presets
//	eps_flop_fp32_pj       energy per FP32 flop: fp32.fma costs 2 × this per instruction
//	eps_flop_fp64_pj       energy per FP64 flop: fp64.fma costs 2 × this per instruction
//	eps_mem_pj_per_byte    energy per DRAM byte (read or written)
//	eps_op_pj              {class: pJ per thread-level instruction; per MAC for a tensor
//	                       class}; an entry for fp32.fma or fp64.fma overrides the
//	                       eps_flop keys
//	eps_level_pj_per_byte  {level: pJ per byte} for l2, shared, const
//	eps_mem_rail_pj_per_byte
//	                       the part of eps_mem_pj_per_byte drawn on the memory rail
//	operand_toggle_share, operand_density_share
//	                       the shares s_t, s_d of an instruction's energy that scale with
//	                       its operand bits that toggle and that are set (presets: 0.55, 0.05)
//
// The classes are those of internal/kernels: int32.add, int32.mad, int32.popc, int32.shift,
// int32.logic, int32.cmp, int64.add, fp32.add, fp32.fma, fp32.sin, fp32.ex2, fp32.rsqrt,
// fp64.fma, fp16.fma, bf16.fma (one fp16.fma or bf16.fma is one x2 instruction: 2 FMAs).
//
// Example: a K20 with a 2 s load at 150 W from t = 1 s, and a noiseless instant channel:
//
//	{"preset": "k20", "load": [{"t_s": 1, "duration_s": 2, "power_w": 150}],
//	 "sensors": {"power.usage": {"noise_w": 0}}}
//
// # Kernels
//
// Device implements gpu.Executor: Prepare checks a kernels.Descriptor (at least one block
// of 1 to 1024 threads, some instructions or bytes counted, no negative count, classes and
// levels this device runs) and Kernel.Run(n) runs n launches back to back. One launch of a
// descriptor with ops_c instructions of class c and bytes_l bytes at level l, B blocks of
// b threads, on S SMs at SM clock f (f_max = max_sm_clock_hz) takes
//
//	a      = (B_a / S) × min(1, B×b / (B_a × n_sat)),  B_a = min(B, S)   (occupancy)
//	t_c    = Σ_c ops_c / (r_c × S × f) / a                              (compute)
//	t_l    = bytes_l / (bw_l × f / f_max × a)       for shared, const   (per SM, SM clock)
//	t_l    = bytes_l / bw_l                         for dram, l2
//	T      = max(t_c, t_l over levels) + t_launch
//
// with r_c = ops_per_cycle_sm, n_sat = saturating_threads_per_sm (for a kernel that
// measures a tensor-core class at most 256: two warps per sub-partition keep the tensor
// pipes busy), bw_l =
// bandwidth_bytes_per_s and t_launch = launch_overhead_s. The classes share the SMs'
// issue slots, so their times add up (the conservative choice: a real SM overlaps some
// classes on separate pipes); compute and memory overlap, so the longer wins (the
// roofline). An SM without a block is idle; one with fewer than n_sat threads cannot hide
// the latency of dependent instructions, and its throughput scales with its threads. DRAM
// and L2 bandwidths do not depend on occupancy or clock.
//
// Its energy and the board power while it runs are (E = W·eps_flop + Q·eps_mem + T·pi0 of
// seed 002, per class and level)
//
//	E_dyn  = Σ_c ops_c × eps_c + Σ_l bytes_l × eps_l
//	E      = E_dyn + pi0 × T,    P = E / T = pi0 + E_dyn / T
//
// where pi0 is pi0_w + pi_occ_w × the kernel's share of the resident thread slots, with
// eps_c from eps_op_pj (or the eps_flop keys), for the measured class of a kernel
// whose operand data is described (kernels.DataPattern: toggle t, density d) times
// 1 − s_t − s_d + 2 s_t·t + 2 s_d·d (1 at random data, t = d = 0.5; zeros 1 − s_t − s_d),
// eps_dram = eps_mem_pj_per_byte and the
// others from eps_level_pj_per_byte; the memory rail draws memory_idle_w + bytes_dram ×
// eps_mem_rail_pj_per_byte / T.
//
// Power capping: when P at f_max exceeds power_limit_w, the clock drops to the whole MHz
// at or below the f at which T(f) = E_dyn / (limit − pi0), so that P meets the limit (the
// energy per instruction and pi0 are taken as independent of the clock, so only T grows);
// not below min_sm_clock_hz. If the clock alone cannot do it (work bound by DRAM or L2, or
// at min_sm_clock_hz) the whole launch is slowed to T = E_dyn / (limit − pi0) and P equals
// the limit. A capped kernel sets the sw_power_cap reason (0x4) and its clock on clock.sm.
//
// Run at the clock's now t0 makes the truths hold P (board), the memory power, busy = 1,
// the clock and the reasons over [t0, t0 + n·T) (one segment per Run, n·T rounded to the
// ns once), then active idle as after a command; it then advances a Virtual clock to the
// end (a Sampler registered on it polls through the run) or sleeps on any other clock.
// Runs of one device are serialised. LaunchModel and TrueLaunch give the truth of one
// launch; TrueEnergy over [t0, t1] of a run is n × E, and the energy counter's delta over
// it is the counter's gain (the board's gain error) × n × E, quantised to 1 mJ.
//
// # Presets
//
// The value published at update k is quantise(gain × mean over [t_k − delay − W, t_k −
// delay] of lag_tau(P) + offset + noise), t_k = phase + k·T ± jitter·T. All power channels
// are quantised to 1 mW, the energy counter to 1 mJ; the board's gain and offset are shared
// by its board power channels (and the counter's gain), as they come from one ADC.
//
//	preset  channel                 T       W      tau     gain/offset       noise  state
//	h100    power.usage, .average   100 ms  1 s    0       1.021 / −1.2 W    0.05   ok
//	        power.instant           100 ms  25 ms  0       1.021 / −1.2 W    0.15   ok
//	        power.memory.instant    100 ms  25 ms  0       1.04 / −0.4 W     0.05   ok
//	        power.memory.average    100 ms  1 s    0       1.04 / −0.4 W     0.02   ok
//	        power.samples (119)     20 ms   20 ms  0       1.021 / −1.2 W    0.3    ok
//	        energy.total            100 ms  -      -       1.021             -      ok
//	        power.module.*          -       -      -       -                 -      unsupported
//	h200    as h100 with gain/offset 0.985 / +2.1 W (memory 0.97 / +0.6 W)
//	a100    as h100 with gain/offset 1.032 / −0.8 W; power.memory.* unsupported
//	v100    power.usage             20 ms   10 ms  0       0.975 / +1.5 W    0.2    ok
//	        power.samples (119)     20 ms   10 ms  0       0.975 / +1.5 W    0.2    ok
//	        energy.total            20 ms   -      -       0.975             -      ok
//	        power.instant, .average, .module.*, .memory.*                           unsupported
//	k20     power.usage             15 ms ± 45 %  0  0.84 s  1.01 / +2.4 W   0.3    ok
//	        every other power channel, power.samples, energy.total                  unsupported
//	mi300x  power.socket_current    1 ms    1 ms   0       1.012 / +0.8 W    1      ok (assumed)
//	        energy.total            1 ms    -      -       1.012 (15.3 µJ)   -      ok (assumed T)
//	        power.socket_average    1 ms    1 s    0       1.012 / +0.8 W    0.2    unsupported
//	        (whole watts; sources and what is assumed: presets.go, mi300x)
//
// Delays are 0 everywhere; jitter is ±1 % on Hopper and A100, ±2 % on V100.
//
//	preset  idle   active idle (hold, steps)  command  limit  memory idle  SM clock (MHz)
//	h100    118 W  128 W (2 s, 1)             650 W    700 W  36 W         345-1980, mem 2619
//	h200    122 W  132 W (2 s, 1)             690 W    700 W  39 W         345-1980, mem 3201
//	a100    62 W   75 W (2 s, 1)              350 W    400 W  20 W         210-1410, mem 1593
//	v100    42 W   55 W (2 s, 1)              250 W    300 W  15 W         135-1530, mem 877
//	k20     25 W   52.5 W (3.5 s, 4 × 1 s)    158 W    225 W  8 W          324-705, mem 324-2600, P8 idle
//	mi300x  140 W  191 W (2 s, 1)             670 W    750 W  -            132-2100, mem 900-1300
//
// Execution model of the presets (energies in pJ per thread-level instruction or byte):
//
//	preset  cc   SMs  clock (MHz)  n_sat  launch   DRAM B/s  L2 B/s  shared/const B/s  pi0
//	h100    9.0  132  345-1980     512    2.79 µs  2.96e12   7e12    128 B/clk/SM      165 W
//	h200    9.0  132  345-1980     512    2.79 µs  4.241e12  7e12    128 B/clk/SM      169 W
//	a100    8.0  108  210-1410     512    3 µs     1.80e12   4.5e12  128 B/clk/SM      107 W
//	v100    7.0  80   135-1530     512    3.5 µs   0.80e12   2.5e12  128 B/clk/SM      85 W
//	k20     3.5  13   324-705      1024   5 µs     0.15e12   0.5e12  128 B/clk/SM      75 W
//	mi300x  -    304  132-2100     512    5 µs     4.68e12   14.7e12 128 B/clk/SM      250 W
//
//	preset  eps_flop fp32/fp64  eps_mem  rail  other classes and levels
//	h100    4.89 / 11.68        96.5     30    Hopper table (below)
//	h200    4.89 / 11.68        96.5     30    Hopper table
//	a100    6.63 / 14.96        102      32    Hopper table × 1.36
//	v100    9 / 18              110      35    Hopper table × 1.84
//	k20     22 / 50             250      120   Hopper table × 4.5
//	mi300x  2 / 4 (assumed)     96.5     30    Hopper table (its kernels refuse AMD boards
//	                                           but for the sensor verb's step loads)
//
//	Hopper  int32.add 5, int32.mad 9, int32.popc 7.5, int32.shift 5.5, int32.logic 4.5,
//	        int32.cmp 5, int64.add 11, fp32.add 6, fp32.sin 30, fp32.ex2 28, fp32.rsqrt 28,
//	        fp16.fma 11, bf16.fma 11 (fp32.fma 9.78, fp64.fma 23.36 from eps_flop);
//	        l2 25, shared 6, const 4 pJ/B
//
// Throughputs per SM per clock (CUDA C++ Programming Guide, arithmetic instructions):
// sm_90 fp32.add/fma 128, fp64.fma 64, fp16.fma and bf16.fma 128 (x2 instructions: 256
// half results), int32 add/mad/shift/logic/cmp 64, popc and the special functions 16,
// int64.add 32 (two 32-bit instructions); sm_80 as sm_90 with FP32 64, FP64 32 and
// bf16.fma 64 (A100 whitepaper: BF16 non-tensor 39 TFLOP/s, FP16 78); sm_70 as sm_80
// with fp16.fma 64 and no bf16; sm_35 fp32 192, fp64 64, int32 add/logic/cmp 160,
// mad 32, shift 64, popc and special functions 32, int64.add 51 (MIPP's Kepler), no
// 16-bit arithmetic. So the h100/h200 FP32 FMA peak is 132 × 128 × 2 × 1.98 GHz = 66.9
// TFLOP/s (FACTS.md measured 65.23 from Go) and FP64 33.45 (measured 33.22).
//
// Sources of the execution model. FACTS.md: H200 memcpy device to device 4241 GB/s (the
// h200 DRAM bandwidth; 4241/4800 of the nominal bandwidth is applied to the nominal
// 3.35, 2.039 and 0.9 TB/s of the H100 SXM, A100 SXM4 80GB and V100 SXM2), empty launch
// 2.79 µs from Go, FP32/FP64 FMA near the nominal peaks, clocks 345-1980 MHz. Seed 002
// (archline, Tables 6 and 8): the GH200 (the same GH100 GPU as H100 and H200) eps_flop
// FP32 4.89 pJ, FP64 11.68 pJ, eps_mem 96.5 pJ/B, pi0 169 W; A100 80GB FP32 6.63, FP64
// 14.96, eps_mem 102.06, pi0 107.21. Seed 001 (MIPP): the ordering of the per-class
// energies (FP64 and special functions several times a simple integer or FP32
// instruction). NVIDIA data sheets: SM counts, clocks, L2 and memory sizes, shared memory
// per SM. Assumed: every other energy (V100 and K20 scaled for their process; the K20's
// pi0 and eps so that an FP32 kernel draws about the 158 W of Burtscher et al.'s NB
// kernel), the H100 pi0, the L2 bandwidths, the K20's DRAM bandwidth (ECC on), the
// memory rail's share, launch overheads other than the H200's, n_sat. With these, an
// FP32 or FP64 FMA kernel stays below the limit on every preset while a roofline kernel
// near its balance point is power capped on the h200 (about 1450 MHz at 700 W; FACTS.md
// saw a bf16 GEMM capped at 1515 MHz).
//
// Sources. FACTS.md (H200, driver 580): idle ~122 W at P0, ~690 W under a GEMM at the
// 700 W limit, power.usage a 1 s moving average updated every ~100 ms, the instant and
// average fields updated every ~100 ms, a 119-sample ring every 20 ms following a step
// within one sample, the energy counter stepping every ~100 ms, memory power ~39 W at idle.
// Yang, Adámek, Armour (SC'24): A100/H100 instant = the last 25 ms of every 100 ms, H100
// average a 1 s window, V100 20 ms period over ~10 ms, per-board gain/offset errors of
// up to ±5 %. Burtscher, Zecena, Zong (K20): RC lag C = 0.84 s, true update rate 66.7 Hz
// with intervals varying from 0.27 to 130 ms (between true updates the driver repeats the
// last value), active idle 52.5 W held ~3.5 s then lowered every second, the NB kernel
// at ~158 W, sensor accurate to 5 W; idle 25 W and 4 steps make the tail above idle about
// the 130 J they report. Assumed (not measured): the H100 numbers not in FACTS.md (taken
// as the H200's), the active-idle levels and holds of the Hopper, A100 and V100 presets,
// the A100/V100 sample buffer and energy counter periods, clocks, temperature and
// utilisation models, memory power fractions.
package sim
