#!/usr/bin/env python3
"""The CPU time of one call of each NVML function gpuwatt serve makes (issue 35).

    python3 bench/gpu/nvml_call_cpu.py --gpu 0 --out calls.json [--scale 1]

For each function, calls spaced as serve spaces them (not back to back: a driver may answer
a call that follows another at once from what it just read), each timed by this thread's
CPU clock (time.thread_time: user + system of the calling thread, the driver's work in the
kernel included) and by the wall clock. Prints one line per function and writes the
medians to --out:

  energy.total      nvmlDeviceGetTotalEnergyConsumption
  power.samples     nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES) since the last read
  processes/one     nvmlDeviceGetProcessUtilization with room for 64 samples (serve now)
  processes/size    the same with a NULL buffer (the size query serve made first before)
  power.usage       nvmlDeviceGetPowerUsage
  clock.sm          nvmlDeviceGetClockInfo(SM)
  temp.gpu          nvmlDeviceGetTemperature(GPU)

A raw call's return codes are counted (return_codes; 2026-11-28-lean-3 did not record them,
and its 0.04 ms process-utilisation calls against ~2-4 ms a read in serve's profile are not
explained). Needs pynvml. Reads only.
"""
import argparse
import ctypes
import json
import statistics
import sys
import time

import pynvml as N


def timed(fn, n, gap):
    """Each call's CPU and wall time; a raw call (returning its nvmlReturn_t) has its codes
    counted: a call answered early with an error is cheap, and says nothing of the work."""
    cpu, wall, errs, codes = [], [], 0, {}
    for _ in range(n):
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            r = fn()
        except N.NVMLError:
            errs += 1
            r = None
        c1, w1 = time.thread_time(), time.perf_counter()
        if isinstance(r, int):
            codes[str(r)] = codes.get(str(r), 0) + 1
            errs += r not in (0, 7)  # NVML_SUCCESS; INSUFFICIENT_SIZE is the size query's answer
        cpu.append(c1 - c0)
        wall.append(w1 - w0)
        time.sleep(gap)
    return {"calls": n, "errors": errs, "return_codes": codes, "cpu_ms_median": 1e3 * statistics.median(cpu),
            "cpu_ms_max": 1e3 * max(cpu), "wall_ms_median": 1e3 * statistics.median(wall), "wall_ms_max": 1e3 * max(wall)}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the number of calls (tests: smaller)")
    a = ap.parse_args(argv)
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(a.gpu)
    k = lambda n: max(2, int(n * a.scale))
    last = {"ring": 0, "proc": 0}

    def ring():
        try:
            _, samples = N.nvmlDeviceGetSamples(h, N.NVML_TOTAL_POWER_SAMPLES, last["ring"])
            if samples:
                last["ring"] = max(s.timeStamp for s in samples)
        except N.NVMLError_NotFound:
            pass

    get = N._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
    buf = (N.c_nvmlProcessUtilizationSample_t * 64)()

    def proc_one():
        n = ctypes.c_uint(64)
        r = get(h, buf, ctypes.byref(n), ctypes.c_ulonglong(last["proc"]))
        if r == 0 and n.value:
            last["proc"] = max(buf[i].timeStamp for i in range(n.value))
        return int(r)

    def proc_size():
        n = ctypes.c_uint(0)
        return int(get(h, None, ctypes.byref(n), ctypes.c_ulonglong(last["proc"])))

    res = {"gpu": a.gpu, "name": N.nvmlDeviceGetName(h), "uuid": N.nvmlDeviceGetUUID(h), "calls": {}}
    plan = [
        ("energy.total", lambda: N.nvmlDeviceGetTotalEnergyConsumption(h), k(12), 0.25),
        ("power.samples", ring, k(10), 0.2),
        ("processes/one", proc_one, k(10), 0.2),
        ("processes/size", proc_size, k(10), 0.1),
        ("power.usage", lambda: N.nvmlDeviceGetPowerUsage(h), k(20), 0.01),
        ("clock.sm", lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM), k(20), 0.01),
        ("temp.gpu", lambda: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU), k(20), 0.01),
    ]
    for name, fn, n, gap in plan:
        r = timed(fn, n, gap)
        res["calls"][name] = r
        print(f"{name}: cpu {r['cpu_ms_median']:.3f} ms (max {r['cpu_ms_max']:.3f}), wall {r['wall_ms_median']:.3f} ms, "
              f"{r['errors']} errors of {n}{', return codes ' + str(r['return_codes']) if r['return_codes'] else ''}")
    N.nvmlShutdown()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
