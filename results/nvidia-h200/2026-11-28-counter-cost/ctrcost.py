# What an NVML call costs the CPU, not just the wall: thread CPU vs wall per call, idle and under load.
import time, os, sys, json, threading, resource
import pynvml as N
gpu = int(os.environ.get("GPU", "0"))
N.nvmlInit(); h = N.nvmlDeviceGetHandleByIndex(gpu)
calls = {
 "energy_counter": lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),
 "power_usage": lambda: N.nvmlDeviceGetPowerUsage(h),
 "field_instant": lambda: N.nvmlDeviceGetFieldValues(h, [186]),
 "samples_ring": lambda: N.nvmlDeviceGetSamples(h, N.NVML_TOTAL_POWER_SAMPLES, 0),
 "clock_sm": lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
 "throttle": lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h),
}
def probe(tag, n=150, gap=0.01):
    out = {}
    for name, f in calls.items():
        w = c = 0.0; ws = []; cs = []
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        for i in range(n):
            t0 = time.perf_counter(); c0 = time.thread_time()
            try: f()
            except Exception as e: out[name] = str(e); break
            c1 = time.thread_time(); t1 = time.perf_counter()
            ws.append(t1 - t0); cs.append(c1 - c0)
            time.sleep(gap)
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        if ws:
            ws.sort(); cs.sort()
            out[name] = {"wall_med_ms": 1e3*ws[len(ws)//2], "wall_mean_ms": 1e3*sum(ws)/len(ws),
                         "cpu_med_ms": 1e3*cs[len(cs)//2], "cpu_mean_ms": 1e3*sum(cs)/len(cs),
                         "vol_ctx_switches_per_call": (r1.ru_nvcsw - r0.ru_nvcsw)/len(ws), "n": len(ws)}
    return out
res = {"gpu": gpu, "uuid": N.nvmlDeviceGetUUID(h), "driver": N.nvmlSystemGetDriverVersion(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
res["idle"] = probe("idle")
import torch
torch.cuda.set_device(0)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
stop = False
def load():
    while not stop:
        for _ in range(20): a @ b
        torch.cuda.synchronize()
th = threading.Thread(target=load); th.start(); time.sleep(1.0)
res["load"] = probe("load")
# counter step period: poll 2 ms for 2 s under load
vals = []; t_end = time.perf_counter() + 2.0
while time.perf_counter() < t_end:
    t = time.perf_counter(); v = N.nvmlDeviceGetTotalEnergyConsumption(h); vals.append((t, v))
steps = [vals[i][0] for i in range(1, len(vals)) if vals[i][1] != vals[i-1][1]]
d = [b-a for a, b in zip(steps, steps[1:])]
res["counter_step_ms"] = {"n": len(d), "median": 1e3*sorted(d)[len(d)//2] if d else None, "min": 1e3*min(d) if d else None, "max": 1e3*max(d) if d else None, "reads": len(vals)}
stop = True; th.join()
print(json.dumps(res, indent=1))
json.dump(res, open(sys.argv[1] + "/ctrcost.json", "w"), indent=1)
