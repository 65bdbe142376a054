#!/usr/bin/env python3
"""The tables of bench/gpu/serve_lean.sh (issue 35): python3 serve_lean_table.py OUTDIR.

Markdown on stdout:
  1. the CPU of one call of each NVML function serve makes (calls/idle.json, calls/load.json);
  2. the whole gpuwatt process's CPU per run (cpu/NAME.json from cpu_run.py), per GPU,
     against issue 35's 1 % of one core per GPU, and the serve runs before/after (--poll
     100ms, serve's polling before issue 35, against the default);
  3. each serve run's last scrape: per GPU, the processes' energy + the unattributed energy
     against the board's energy (gpuwatt_gpu_energy_joules_total), within 0.4 %;
  4. the cross-check of measure's lean default and of every channel, recorded at once on one
     card (xc/lean/crosscheck.json, xc/all/crosscheck.json): by class of burst length, the
     largest |error| and the share of references inside the 95 % interval, for gpuwatt's
     default figure and power.samples; then each burst's default figure side by side.
Standard library only.
"""
import json
import os
import re
import sys

GOAL = 1.0  # % of one core per GPU
SUM_TOL = 0.4  # %: processes + unattributed against the counter
CPU_ORDER = ["measure-1-load", "measure-2-load", "serve-1-idle", "serve-1-load", "serve-1-load-100ms",
             "serve-2-load", "serve-2-load-100ms"]
CALLS = ["energy.total", "power.samples", "processes/one", "processes/size", "power.usage", "clock.sm", "temp.gpu"]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, nd=2):
    return "–" if v is None else f"{v:.{nd}f}"


def calls_table(out):
    idle, busy = load(os.path.join(out, "calls", "idle.json")), load(os.path.join(out, "calls", "load.json"))
    print("## 1. One driver call's CPU (calls/, bench/gpu/nvml_call_cpu.py)\n")
    if not idle and not busy:
        print("(no calls/idle.json or calls/load.json)\n")
        return
    g = idle or busy
    print(f"GPU {g.get('gpu')} ({g.get('name')}, {g.get('uuid')}); medians of calls spaced as serve spaces them; "
          "CPU is the calling thread's (user + system), wall the call's duration.\n")
    print("| call | idle: CPU ms | idle: wall ms | load: CPU ms | load: wall ms |")
    print("|---|---:|---:|---:|---:|")
    for c in CALLS:
        a = (idle or {}).get("calls", {}).get(c, {})
        b = (busy or {}).get("calls", {}).get(c, {})
        print(f"| {c} | {fmt(a.get('cpu_ms_median'), 3)} | {fmt(a.get('wall_ms_median'), 3)} | "
              f"{fmt(b.get('cpu_ms_median'), 3)} | {fmt(b.get('wall_ms_median'), 3)} |")
    print()


def cpu_table(out):
    print("## 2. The whole gpuwatt process's CPU at its defaults (cpu/, bench/gpu/cpu_run.py)\n")
    print("| run | GPUs | window (s) | % of one core (window) | per GPU | goal <= 1 %/GPU | whole life | exit | busiest threads (CPU s in the window) |")
    print("|---|---|---|---:|---:|---|---:|---|---|")
    runs = {}
    for name in CPU_ORDER:
        r = load(os.path.join(out, "cpu", name + ".json"))
        if r is None:
            print(f"| {name} | – | – | not run | | | | | |")
            continue
        runs[name] = r
        per = r.get("window_cpu_pct_per_gpu")
        ok = "–" if per is None else ("met" if per <= GOAL else "**not met**")
        if name.endswith("-100ms"):
            ok += " (before: --poll 100ms)"
        th = ", ".join(f"{t[1]} {t[2]:.2f}" for t in r.get("threads", [])[:3])
        w = r.get("window_s") or [None, None]
        print(f"| {name} | {r.get('gpus')} | {fmt(w[0], 0)}-{fmt(w[1], 0)} | {fmt(r.get('window_cpu_pct'))} | {fmt(per)} | {ok} | "
              f"{fmt(r.get('life_cpu_pct'))} | {r.get('exit')} | {th} |")
    print("\nWindow: seconds after each start (serve under load: the load from 1 s, its work from ~5 s); "
          "CPU from /proc/PID/stat (the gpuwatt process's own threads, not the command it runs or the load beside it).\n")
    pairs = [("serve-1-load-100ms", "serve-1-load"), ("serve-2-load-100ms", "serve-2-load")]
    per = lambda n: runs.get(n, {}).get("window_cpu_pct_per_gpu")
    rows = [(b, a) for b, a in pairs if per(b) is not None and per(a) is not None]
    if rows:
        print("Before/after in this run (same build, same cards, the same load): serve's polling before "
              "issue 35 (`--poll 100ms`: every channel every 100 ms, the ring every 0.5 s) against its "
              "lean default.\n")
        print("| GPUs | --poll 100ms (per GPU) | default (per GPU) | change |")
        print("|---|---:|---:|---:|")
        for b, a in rows:
            x, y = per(b), per(a)
            print(f"| {runs[a]['gpus']} | {x:.2f} | {y:.2f} | {y - x:+.2f} |")
        print()


METRIC = re.compile(r'^(\w+)\{([^}]*)\}\s+(\S+)$')


def parse_metrics(path):
    """[(name, labels dict, value)] of an exposition, or None."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    out = []
    for line in text.splitlines():
        m = METRIC.match(line.strip())
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        try:
            out.append((m.group(1), labels, float(m.group(3))))
        except ValueError:
            pass
    return out


def split_check(metrics):
    """Per GPU: (counter J, processes J, unattributed J, processes + unattributed vs counter %, n processes)."""
    by = {}
    for name, lab, v in metrics:
        g = lab.get("gpu")
        if g is None:
            continue
        d = by.setdefault(g, {"counter": None, "procs": 0.0, "un": None, "n": 0})
        if name == "gpuwatt_gpu_energy_joules_total":
            d["counter"] = v
        elif name == "gpuwatt_process_gpu_energy_joules_total":
            d["procs"] += v
            d["n"] += 1
        elif name == "gpuwatt_gpu_unattributed_energy_joules_total":
            d["un"] = v
    rows = []
    for g in sorted(by, key=lambda s: int(s) if s.isdigit() else 0):
        d = by[g]
        if d["counter"] is None or d["un"] is None or d["counter"] <= 0:
            continue
        pct = 100 * ((d["procs"] + d["un"]) / d["counter"] - 1)
        rows.append((g, d["counter"], d["procs"], d["un"], pct, d["n"]))
    return rows


def scrape_table(out):
    print("## 3. serve's split at its last scrape: processes + unattributed against the board's energy\n")
    print("| run | GPU | board energy (J) | processes (J) | unattributed (J) | processes + unattributed vs board | within 0.4 % | processes |")
    print("|---|---|---:|---:|---:|---:|---|---:|")
    for name in CPU_ORDER:
        if not name.startswith("serve"):
            continue
        m = parse_metrics(os.path.join(out, "cpu", name + ".metrics"))
        if m is None:
            print(f"| {name} | – | no scrape | | | | | |")
            continue
        for g, c, p, u, pct, n in split_check(m):
            ok = "yes" if abs(pct) <= SUM_TOL else "**no**"
            print(f"| {name} | {g} | {c:.1f} | {p:.1f} | {u:.1f} | {pct:+.3f} % | {ok} | {n} |")
    print()


def xc_table(out):
    print("## 4. The cross-check, measure's lean default and every channel, one card, one run (xc/)\n")
    lean, every = load(os.path.join(out, "xc", "lean", "crosscheck.json")), load(os.path.join(out, "xc", "all", "crosscheck.json"))
    if not lean or not every:
        print("(missing: xc/lean/crosscheck.json or xc/all/crosscheck.json; see xc/*/crosscheck-stderr.txt)\n")
        return
    print(f"Both recorded the same {len({r['burst'] for r in lean['rows']})} bursts on GPU {lean.get('gpu')} "
          f"({lean.get('gpu_uuid')}) against one poller's counter log: `--channels default` (the lean default) "
          "ran `--channels all` as its command.\n")
    print("| channel | class | lean: max abs error | all: max abs error | lean: inside | all: inside | lean: median half-width | all: median half-width |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    key = lambda r: (r["channel"], r["class"])
    a = {key(r): r for r in lean.get("by_class", [])}
    b = {key(r): r for r in every.get("by_class", [])}
    for ch in ["default", "power.samples"]:
        for cls in sorted({k[1] for k in a if k[0] == ch} | {k[1] for k in b if k[0] == ch}, reverse=True):
            x, y = a.get((ch, cls), {}), b.get((ch, cls), {})
            ins = lambda r: f"{r.get('inside')}/{r.get('with_interval')}" if r else "–"
            print(f"| {ch} | {cls} | {fmt(x.get('max_abs_error_pct'))} % | {fmt(y.get('max_abs_error_pct'))} % | {ins(x)} | {ins(y)} | "
                  f"{fmt(x.get('median_half_width_pct'))} % | {fmt(y.get('median_half_width_pct'))} % |")
    print("\nEach burst, gpuwatt's default figure:\n")
    print("| burst | reference (J) | lean | lean error | inside | all | all error | inside |")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    rows = lambda d: {r["burst"]: r for r in d["rows"] if r["channel"] == "default"}
    ra, rb = rows(lean), rows(every)
    for burst in sorted(set(ra) | set(rb)):
        x, y = ra.get(burst), rb.get(burst)
        ref = (x or y)["reference_j"]
        cell = lambda r: ("–", "–", "–") if r is None or r.get("energy_j") is None else (
            f"{r['energy_j']:.2f}", f"{100 * (r['energy_j'] / ref - 1):+.2f} %",
            "–" if r.get("low_j") is None else ("yes" if r["low_j"] <= ref <= r["high_j"] else "**no**"))
        print(f"| {burst} | {ref:.2f} | " + " | ".join(cell(x)) + " | " + " | ".join(cell(y)) + " |")
    print()


def main(argv):
    if len(argv) != 1:
        print("usage: serve_lean_table.py OUTDIR", file=sys.stderr)
        return 2
    out = argv[0]
    env = ""
    try:
        with open(os.path.join(out, "env.txt")) as f:
            env = f.read()
    except OSError:
        pass
    print("# Issue 35 on one host: serve's and measure's CPU at their defaults, and the lean cross-check\n")
    print("```\n" + env.strip() + "\n```\n")
    calls_table(out)
    cpu_table(out)
    scrape_table(out)
    xc_table(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
