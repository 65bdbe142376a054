#!/usr/bin/env python3
"""What `gpuwatt serve --gpu all` answered while every board worked (issue 36), from the
scrape log that bench/gpu/multi_gpu4.sh writes.

usage: serve_scrapes.py RUNDIR   (RUNDIR holds scrapes.jsonl[.gz] and serve-ranks.jsonl)

Prints, as Markdown:
- the scrapes: how many, errors, latency (median, 95th percentile, max), exposition size;
- the sampler's CPU (gpuwatt_sampler_cpu_seconds_total's slope: the polling lanes);
- per GPU over the load (the first and last scrape whose counters moved): the energy counter's
  increase, each process's attributed energy and the unattributed rest, the share attributed,
  missed sensor updates; a process that drove several GPUs (serve-ranks.jsonl names the pid
  on each GPU it drove) is shown on each, so its energy per GPU can be read;
- the check that the parts add up: attributed + unattributed = the counter's increase
  (within 1 %), per GPU.
Exits 1 if a GPU's parts do not add up or a scrape failed.
"""
import gzip
import json
import os
import re
import statistics
import sys

LABELS = re.compile(r'(\w+)="([^"]*)"')


def load_scrapes(run):
    p = os.path.join(run, "scrapes.jsonl.gz")
    op = gzip.open if os.path.exists(p) else open
    p = p if os.path.exists(p) else os.path.join(run, "scrapes.jsonl")
    with op(p, "rt") as f:
        return [json.loads(l) for l in f if l.strip()]


def parse(lines):
    """metric name -> list of (labels dict, value)"""
    out = {}
    for l in lines:
        if l.startswith("#"):
            continue
        head, _, val = l.rpartition(" ")
        name, _, rest = head.partition("{")
        out.setdefault(name, []).append((dict(LABELS.findall(rest)), float(val)))
    return out


def by(metric, key):
    return {tuple(lab.get(k, "") for k in key): v for lab, v in metric}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(run):
    scr = load_scrapes(run)
    ok = [s for s in scr if "error" not in s]
    errs = len(scr) - len(ok)
    lat = [s["latency_s"] * 1e3 for s in ok]
    print(f"## serve's scrapes ({run})\n")
    print(f"- {len(scr)} scrapes, {errs} failed; latency median {statistics.median(lat):.1f} ms, "
          f"95th percentile {pct(lat, 0.95):.1f} ms, max {max(lat):.1f} ms; "
          f"exposition {statistics.median(s['bytes'] for s in ok) / 1024:.1f} KiB")
    m = [(s["t"], parse(s["lines"])) for s in ok]
    cpu = [(t, d["gpuwatt_sampler_cpu_seconds_total"][0][1]) for t, d in m if "gpuwatt_sampler_cpu_seconds_total" in d]
    if len(cpu) > 1:
        (t0, c0), (t1, c1) = cpu[0], cpu[-1]
        print(f"- sampler lanes' CPU (gpuwatt_sampler_cpu_seconds_total): {100 * (c1 - c0) / (t1 - t0):.2f} % of one core over {t1 - t0:.0f} s")
    # The load: from the last scrape before any counter moved fast to the last scrape.
    energy = [(t, by(d.get("gpuwatt_gpu_energy_joules_total", []), ("gpu",))) for t, d in m]
    gpus = sorted({g for _, e in energy for (g,) in e}, key=int)
    ranks = {}
    rp = os.path.join(run, "serve-ranks.jsonl")
    if os.path.exists(rp):
        for l in open(rp):
            if l.strip():
                r = json.loads(l)
                ranks[str(r["gpu"])] = str(r["pid"])
    i0, i1 = 0, len(m) - 1
    bad = errs > 0
    print("\n| GPU | counter increase | process (pid: energy) | unattributed | attributed share | parts vs counter | missed updates |")
    print("|---|---|---|---|---|---|---|")
    for g in gpus:
        (ta, da), (tb, db) = m[i0], m[i1]
        ea = by(da.get("gpuwatt_gpu_energy_joules_total", []), ("gpu",))[(g,)]
        eb = by(db.get("gpuwatt_gpu_energy_joules_total", []), ("gpu",))[(g,)]
        pa = by(da.get("gpuwatt_process_gpu_energy_joules_total", []), ("gpu", "pid"))
        pb = by(db.get("gpuwatt_process_gpu_energy_joules_total", []), ("gpu", "pid"))
        procs = {pid: v - pa.get((gg, pid), 0.0) for (gg, pid), v in pb.items() if gg == g}
        ua = by(da.get("gpuwatt_gpu_unattributed_energy_joules_total", []), ("gpu",)).get((g,), 0.0)
        ub = by(db.get("gpuwatt_gpu_unattributed_energy_joules_total", []), ("gpu",)).get((g,), 0.0)
        ma = by(da.get("gpuwatt_sampler_missed_updates_total", []), ("gpu",)).get((g,), 0.0)
        mb = by(db.get("gpuwatt_sampler_missed_updates_total", []), ("gpu",)).get((g,), 0.0)
        de, du = eb - ea, ub - ua
        parts = sum(procs.values()) + du
        share = sum(procs.values()) / de if de > 0 else float("nan")
        dev = parts / de - 1 if de > 0 else float("nan")
        if not abs(dev) <= 0.01:
            bad = True
        ptxt = ", ".join(f"{pid}{' (drives GPU ' + ','.join(k for k, v in ranks.items() if v == pid) + ')' if list(ranks.values()).count(pid) > 1 else ''}: {v:.0f} J"
                         for pid, v in sorted(procs.items()) if v > 0) or "none"
        print(f"| {g} | {de:.0f} J over {tb - ta:.0f} s | {ptxt} | {du:.0f} J | {100 * share:.1f} % | {100 * dev:+.2f} % | {mb - ma:.0f} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
