#!/usr/bin/env python3
"""A dry run of bench/gpu/crosscheck.py without a GPU: on the sim device, through the real
`gpuwatt measure`, with the reference taken from the trace's own energy counter.

    python3 bench/gpu/crosscheck_sim.py OUTDIR [--gpuwatt PATH] [--lengths 0.1,0.2,0.5,1]
        [--gap 2] [--preset h200]

1. A --sim-config whose scripted load is the bursts (690 W, the lengths given, separated by
   --gap seconds of idle), the measured command drawing the preset's active idle power;
2. `gpuwatt measure --sim-config ... --out OUTDIR/measure -- sleep T` (real time: T is the
   bursts and gaps, about 12 s with the defaults);
3. a poller CSV made from the trace's energy.total readings: gpuwatt stamps each new value
   midway between its two calls, so the update lies within half its poll interval of the
   stamp, which the CSV says with a reading of the old value just before and one of the new
   value just after; bursts.jsonl from the config's loads on the wall clock (trace.json's
   start + t: the sim's load axis is the trace's);
4. crosscheck.py on them, then a check that every burst's reference equals the difference of
   the trace's counter readings at the window's edges, found here independently (exit 1 if
   not), so the figures in crosscheck.md are each channel's corrected energy against a
   reference known to the mJ.

Standard library only.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import crosscheck as cc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--gpuwatt", default=".gpu/gpuwatt", help="the gpuwatt binary (default .gpu/gpuwatt)")
    ap.add_argument("--lengths", default="0.1,0.2,0.5,1", help="burst lengths in seconds (default 0.1,0.2,0.5,1)")
    ap.add_argument("--gap", type=float, default=2.0, help="idle seconds before each burst and after the last (default 2)")
    ap.add_argument("--preset", default="h200", choices=["h100", "h200", "a100", "v100", "k20"],
                    help="the sim's preset (default h200)")
    ap.add_argument("--pad", type=float, default=0.15)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    mdir = os.path.join(a.out, "measure")

    lengths = [float(x) for x in a.lengths.split(",") if x.strip()]
    loads, t = [], 1.0 + a.gap  # measure's 1 s baseline, then a gap
    for L in lengths:
        loads.append({"t_s": round(t, 3), "duration_s": L, "power_w": 690})
        t += L + a.gap
    # The command (sleep) draws the preset's active idle, as a workload holding a CUDA context
    # between its bursts does: only the scripted bursts load the board.
    active_idle = {"h100": 128, "h200": 121, "a100": 75, "v100": 55, "k20": 52.5}[a.preset]
    cfg = {"preset": a.preset, "command_load_w": active_idle, "load": loads}
    cfgp = os.path.join(a.out, "sim.json")
    with open(cfgp, "w") as f:
        json.dump(cfg, f, indent=1)
    cmd = [a.gpuwatt, "measure", "--channels", "all", "--sim-config", cfgp, "--quiet", "--out", mdir, "--", "sleep", f"{t - 1.0:.3f}"]
    print("+", " ".join(cmd), file=sys.stderr)
    with open(os.path.join(a.out, "measure.txt"), "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)

    meta = cc.load_trace_meta(mdir)
    t0 = cc.parse_rfc3339(meta["start"])
    st = next(c["stats"] for c in meta["channels"] if c["name"] == "energy.total" and c.get("gpu", 0) == 0)
    h = st["poll_interval_s"] / 2
    counter = cc.trace_counter_readings(mdir, 0)
    with open(os.path.join(a.out, "poller.csv"), "w") as f:
        f.write("t_before_unix_s,t_after_unix_s,energy_mj\n")
        prev = None
        for s, v in counter:
            mj = round(v * 1000)
            if prev is not None:
                f.write(f"{t0 + s - h:.6f},{t0 + s - h:.6f},{prev}\n")
            f.write(f"{t0 + s + h:.6f},{t0 + s + h:.6f},{mj}\n")
            prev = mj
    with open(os.path.join(a.out, "bursts.jsonl"), "w") as f:
        for i, l in enumerate(loads):
            f.write(json.dumps({"name": f"burst-{i:02d}-{l['duration_s']:g}s", "length_s": l["duration_s"],
                                "start_unix_s": round(t0 + l["t_s"], 6),
                                "end_unix_s": round(t0 + l["t_s"] + l["duration_s"], 6)}) + "\n")

    code = cc.main([mdir, os.path.join(a.out, "poller.csv"), os.path.join(a.out, "bursts.jsonl"),
                    "--gpuwatt", a.gpuwatt, "--out", a.out, "--pad", str(a.pad)])
    if code:
        return code

    # The expected references, from the trace's readings directly: the last stamp at or before
    # start - pad, the first at or after end + pad.
    with open(os.path.join(a.out, "crosscheck.json")) as f:
        res = json.load(f)
    bad = 0
    seen = set()
    for r in res["rows"]:
        if r["burst"] in seen or "reference_j" not in r:
            continue
        seen.add(r["burst"])
        s, e = r["start_unix_s"] - t0, r["end_unix_s"] - t0
        before = [v for ts, v in counter if ts <= s - a.pad]
        after = [v for ts, v in counter if ts >= e + a.pad]
        want = after[0] - before[-1]
        ok = abs(r["reference_j"] - want) < 0.0015
        bad += not ok
        print(f"{r['burst']}: reference {r['reference_j']:.3f} J, the trace's counter {want:.3f} J: "
              f"{'same' if ok else 'DIFFERENT'}", file=sys.stderr)
    if bad or len(seen) != len(loads):
        print(f"crosscheck_sim: {bad} references differ, {len(loads) - len(seen)} bursts without one", file=sys.stderr)
        return 1
    print(f"crosscheck_sim: all {len(seen)} references equal the trace's counter differences", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
