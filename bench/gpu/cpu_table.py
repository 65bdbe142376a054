#!/usr/bin/env python3
"""The table of bench/gpu/cpu_probe.sh's runs (issue 35): python3 cpu_table.py OUTDIR.

One row per run (OUTDIR/NAME.json from cpu_run.py): the gpuwatt process's CPU over the
window and over its life, as % of one core and per GPU, gpuwatt's own figure beside it
(measure: summary.json's sampler_cpu_share; serve: gpuwatt_sampler_cpu_seconds_total over
the process's life), and whether the window's figure per GPU is within the 1 % goal.
"""
import json
import os
import sys

GOAL = 1.0  # % of one core per GPU
ORDER = ["measure-1-idle", "measure-1-load", "measure-2-idle", "measure-2-load", "serve-1", "serve-2"]


def own_figure(out, name, run):
    """gpuwatt's own CPU figure for the run, as % of one core, or None."""
    try:
        with open(os.path.join(out, name, "summary.json")) as f:
            s = json.load(f)
        v = s.get("sampler_cpu_share")
        return None if v is None else 100 * v
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(out, name + ".metrics")) as f:
            for line in f:
                if line.startswith("gpuwatt_sampler_cpu_seconds_total"):
                    return 100 * float(line.split()[-1]) / max(run.get("life_wall_s", 0) - 1, 1e-9)
    except (OSError, ValueError):
        pass
    return None


def fmt(v, nd=2):
    return "–" if v is None else f"{v:.{nd}f}"


def main(out):
    runs = {}
    for fn in os.listdir(out):
        if fn.endswith(".json") and fn[:-5] in ORDER:
            with open(os.path.join(out, fn)) as f:
                runs[fn[:-5]] = json.load(f)
    print("| run | GPUs | whole process, window (% of a core) | per GPU | goal <= 1 %/GPU | whole life | gpuwatt's own figure | exit | busiest threads (CPU s in the window) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ORDER:
        r = runs.get(name)
        if r is None:
            print(f"| {name} | – | not run | | | | | | |")
            continue
        w, pg = r.get("window_cpu_pct"), r.get("window_cpu_pct_per_gpu")
        ok = "–" if pg is None else ("met" if pg <= GOAL else "**not met**")
        th = ", ".join(f"{c} {s:.2f}" for _, c, s in r.get("threads", [])[:3] if s > 0)
        err = r.get("window_error", "")
        print(f"| {name} | {r.get('gpus')} | {fmt(w)}{' (' + err + ')' if err else ''} | {fmt(pg)} | {ok} | "
              f"{fmt(r.get('life_cpu_pct'))} | {fmt(own_figure(out, name, r))} | {r.get('exit')} | {th} |")
    print()
    windows = ", ".join("%s %g-%g s" % (n, r["window_s"][0], r["window_s"][1]) for n, r in sorted(runs.items()))
    tck = next(iter(runs.values()))["ticks_per_s"] if runs else 100
    print(f"Window: {windows}; CPU from /proc/PID/stat (the gpuwatt process's own threads, not the "
          f"command it runs), {tck} ticks a second.")


if __name__ == "__main__":
    main(sys.argv[1])
