#!/usr/bin/env python3
"""Set the Prometheus scrape log of `gpuwatt serve` beside `gpuwatt measure`'s energy for the
same span (results/nvidia-h200/2026-11-24-serve; bench/gpu/serve.sh records the inputs).

usage: serve_analyze.py RUNDIR  -> prints a summary, writes RUNDIR/compare.json and timeline.csv

The command's span [T0, T1] is measure's (trace.json start + summary start_s/end_s). From the
scrapes: the energy counter's increase over the span (linear between the scrapes around each
edge), the corrected power gauge integrated over the span shifted by its delay, and
DCGM_FI_DEV_POWER_USAGE (the driver's 1 s average, as dcgm-exporter would export it)
integrated over the span as scraped, without a shift.
"""
import csv, datetime, gzip, json, os, sys

run = sys.argv[1]
def load(p):
    op = gzip.open if p.endswith(".gz") else open
    with op(p, "rt") as f:
        return json.load(f)

scr = load(os.path.join(run, "scrapes.json.gz") if os.path.exists(os.path.join(run, "scrapes.json.gz")) else os.path.join(run, "scrapes.json"))
meta = load(os.path.join(run, "measure", "trace.json"))
summ = load(os.path.join(run, "measure", "summary.json"))
t_start = datetime.datetime.fromisoformat(meta["start"].replace("Z", "+00:00")).timestamp()
T0, T1 = t_start + summ["start_s"], t_start + summ["end_s"]

def series(name, match=None):
    out = []
    for r in scr[name]["data"]["result"]:
        if match and any(r["metric"].get(k) != v for k, v in match.items()):
            continue
        out.append((r["metric"], [(float(t), float(v)) for t, v in r["values"]]))
    return out

def at(vals, t):
    """linear between the samples around t"""
    for (ta, va), (tb, vb) in zip(vals, vals[1:]):
        if ta <= t <= tb:
            return va + (vb - va) * (t - ta) / (tb - ta)
    raise ValueError("t outside the scrapes")

def integrate(vals, a, b, shift=lambda t: 0.0):
    """sum of value x its scrape interval for scrapes whose (t - shift) lies in (a, b]"""
    e = 0.0
    for (ta, va), (tb, vb) in zip(vals, vals[1:]):
        tm = tb - shift(tb)
        if a < tm <= b:
            e += vb * (tb - ta)
    return e

res = {"span_unix": [T0, T1], "duration_s": T1 - T0, "gpus": []}
for mg in summ["gpus"]:
    uuid = mg["uuid"]
    (m, ctr), = series("gpuwatt_gpu_energy_joules_total", {"uuid": uuid})
    (_, corr), = series("gpuwatt_gpu_power_watts", {"uuid": uuid, "channel": "corrected"})
    (_, delay), = series("gpuwatt_gpu_corrected_power_delay_seconds", {"uuid": uuid})
    dmap = dict(delay)
    e_ctr = at(ctr, T1) - at(ctr, T0)
    e_corr = integrate(corr, T0, T1, lambda t: dmap.get(t, 0.0))
    g = {"uuid": uuid, "source": m.get("source"),
         "measure_energy_j": mg["energy_j"], "measure_low_j": mg["energy_low_j"], "measure_high_j": mg["energy_high_j"],
         "measure_source": mg["energy_source"], "measure_method": mg["energy_method"],
         "serve_counter_j": e_ctr, "serve_counter_vs_measure_pct": 100 * (e_ctr / mg["energy_j"] - 1),
         "serve_corrected_gauge_j": e_corr, "serve_corrected_vs_measure_pct": 100 * (e_corr / mg["energy_j"] - 1),
         "corrected_delay_s": [min(v for _, v in delay), max(v for _, v in delay)],
         "scrapes_in_span": sum(1 for t, _ in ctr if T0 <= t <= T1)}
    dc = series("DCGM_FI_DEV_POWER_USAGE", {"UUID": uuid})
    if dc:
        e_dcgm = integrate(dc[0][1], T0, T1)
        g["dcgm_power_usage_j"] = e_dcgm
        g["dcgm_power_usage_vs_measure_pct"] = 100 * (e_dcgm / mg["energy_j"] - 1)
    procs = series("gpuwatt_process_gpu_energy_joules_total", {"gpu": str(mg["index"])})
    g["processes"] = [{"pid": pm["pid"], "comm": pm["comm"], "energy_j": v[-1][1]} for pm, v in procs]
    (_, un), = series("gpuwatt_gpu_unattributed_energy_joules_total", {"uuid": uuid}) or [(None, [(0, 0)])]
    g["unattributed_j"] = un[-1][1]
    res["gpus"].append(g)
    with open(os.path.join(run, "timeline.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "counter_rate_w", "corrected_w", "corrected_delay_s"])
        cmap = dict(corr)
        for (ta, va), (tb, vb) in zip(ctr, ctr[1:]):
            w.writerow([round(tb - T0, 3), round((vb - va) / (tb - ta), 1), cmap.get(tb, ""), dmap.get(tb, "")])
sc = series("scrape_duration_seconds")
if sc:
    d = sorted(v for _, v in sc[0][1])
    res["scrape_duration_s"] = {"median": d[len(d) // 2], "max": d[-1], "n": len(d)}
cpu = series("gpuwatt_sampler_cpu_seconds_total")
if cpu:
    v = cpu[0][1]
    res["serve_cpu_share"] = (v[-1][1] - v[0][1]) / (v[-1][0] - v[0][0])
json.dump(res, open(os.path.join(run, "compare.json"), "w"), indent=1)
print(json.dumps(res, indent=1))
