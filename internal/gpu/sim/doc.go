// Package sim is the sim device: gpuwatt's digital twin of an NVIDIA GPU, whose true power
// is known, so that tests and `--device sim` runs can compare what gpuwatt measures with
// the truth.
//
// # Model
//
// Each device has a true board power that is piecewise constant on the clock axis (the
// t=0 of the config's load is the clock's origin):
//
//   - idle_w when nothing has run yet;
//   - while loads run (the scripted load, a command measured by `gpuwatt measure`, which
//     reports its start and end through gpu.CommandObserver, or AddLoad), the highest of
//     their powers; a command draws command_load_w;
//   - after the last running load ends, active_idle_w held for active_idle_hold_s, then
//     idle_steps equal steps down to idle_w, one every idle_step_s (Burtscher et al. on the
//     K20: 52.5 W held ~3.5 s, then lowered step by step every second).
//
// The true memory power is memory_idle_w + memory_load_fraction × (board − idle_w), and a
// busy signal is 1 while a load runs, else 0.
//
// Every channel of the real driver exists, with the real channel's name, quantity and unit
// (Device.Sensors, in this order): power.usage, power.instant, power.average,
// power.module.instant, power.module.average, power.memory.instant, power.memory.average,
// power.samples, energy.total, clock.sm, clock.mem, temp.gpu, throttle.reasons, pstate,
// util.gpu, util.mem, power.limit. Each is a truth passed through its own sensor model
// (simsensor.Model):
//
//   - power.*: board power (memory power for power.memory.*; module = board in the sim);
//   - power.samples: a ring buffer of timestamped samples (as nvmlDeviceGetSamples);
//   - energy.total: the exact integral of board power × gain, quantised to 1 mJ, published
//     at its own update instants, counting from a large value fixed by the seed;
//   - clock.sm, clock.mem, throttle.reasons, pstate: offset + gain × busy (sampled at the
//     update instant): e.g. clock.sm offset = idle clock, gain = max − idle clock, in Hz;
//     throttle.reasons gain −1 offset 1 (the GpuIdle bit while idle);
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
//	preset                 h100, h200, a100, v100 or k20
//	seed                   fixes noise, jitter, the board errors of GPUs 1.. and UUIDs (default 1)
//	gpus                   number of devices (default 1)
//	name                   product name the devices report
//	idle_w                 true power when idle
//	active_idle_w          true power right after a load ends
//	active_idle_hold_s     how long active idle is held
//	idle_steps             steps from active idle down to idle (1 = straight down)
//	idle_step_s            time between those steps
//	command_load_w         true power while a measured command runs
//	power_limit_w          enforced power limit (reported; capping comes later)
//	default_power_limit_w  default power limit (0 = power_limit_w)
//	memory_idle_w          true memory power at idle
//	memory_load_fraction   memory's share of the board power above idle
//	board_spread           per-board error of GPUs 1..: gain × (1 ± s), offset ± s × idle_w
//	load                   scripted true power: a list of steps, in time order, either
//	                       {"t_s": 1, "power_w": 500} (until the next step, or for ever) or
//	                       {"t_s": 1, "duration_s": 2, "power_w": 500} (then active idle)
//	sensors                per channel: {"unsupported": true} or overrides of the model:
//	                       period_s, jitter (± fraction of the period, < 0.5), phase_s,
//	                       window_s (0 = point sample), delay_s, tau_s (RC lag), noise_w
//	                       (Gaussian sigma per update), quantum_w, gain, offset_w; and
//	                       "ring" (samples kept) for power.samples. For channels other
//	                       than power, *_w values are in the channel's unit (J, Hz, degC,
//	                       %, state, mask). power.limit takes only "unsupported".
//	pi0_w, eps_flop_fp32_pj, eps_flop_fp64_pj, eps_mem_pj_per_byte
//	                       reserved for kernel execution (a later issue): parsed, not used
//
// Example: a K20 with a 2 s load at 150 W from t = 1 s, and a noiseless instant channel:
//
//	{"preset": "k20", "load": [{"t_s": 1, "duration_s": 2, "power_w": 150}],
//	 "sensors": {"power.usage": {"noise_w": 0}}}
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
//
// Delays are 0 everywhere; jitter is ±1 % on Hopper and A100, ±2 % on V100.
//
//	preset  idle   active idle (hold, steps)  command  limit  memory idle  SM clock (MHz)
//	h100    118 W  128 W (2 s, 1)             650 W    700 W  36 W         345-1980, mem 2619
//	h200    122 W  132 W (2 s, 1)             690 W    700 W  39 W         345-1980, mem 3201
//	a100    62 W   75 W (2 s, 1)              350 W    400 W  20 W         210-1410, mem 1593
//	v100    42 W   55 W (2 s, 1)              250 W    300 W  15 W         135-1530, mem 877
//	k20     25 W   52.5 W (3.5 s, 4 × 1 s)    158 W    225 W  8 W          324-705, mem 324-2600, P8 idle
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
