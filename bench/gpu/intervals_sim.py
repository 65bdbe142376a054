#!/usr/bin/env python3
"""A dry run of bench/gpu/intervals_shapes.sh's analysis without a GPU: bench/load/shapes.py's
shapes as the sim device's scripted load, recorded by the real `gpuwatt measure`, with the
reference taken from the trace's own energy counter (as bench/gpu/crosscheck_sim.py does).

    python3 bench/gpu/intervals_sim.py OUTDIR [--gpuwatt PATH] [--rounds 1] [--preset h200]

1. a --sim-config whose load is the shapes (compute 690 W, memory 450 W, square waves as
   half-period loads on a fixed grid, the ramps as duty cycles in 20 and 13 ms slots), the gaps as shapes.py draws
   them (real time: about 40 s a round);
2. `gpuwatt measure --sim-config ... --out OUTDIR/measure -- sleep T`;
3. OUTDIR/poller.csv from the trace's energy.total readings (each new value bracketed by a
   reading of the old one half a poll before), OUTDIR/shapes.jsonl on the wall clock;
4. crosscheck.py --named and intervals_table.py on them, as the GPU script runs them.

Standard library only.
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "load"))
import crosscheck as cc  # noqa: E402
import intervals_table as it  # noqa: E402
import shapes  # noqa: E402

COMPUTE_W, MEMORY_W = 690.0, 450.0


def loads_of(shape, t):
    """The sim loads of one shape starting at t, and its windows (name suffix, a, b, pad)."""
    L = shapes.LENGTH[shape]
    out, wins = [], []
    if shape.startswith("compute") or shape.startswith("memory"):
        out.append({"t_s": round(t, 4), "duration_s": L, "power_w": COMPUTE_W if shape[0] == "c" else MEMORY_W})
    elif shape.startswith("square"):
        p = int(shape.split("-")[1][:-2]) / 1000
        k = 0
        while t + k * p < t + L - 1e-9:
            out.append({"t_s": round(t + k * p, 4), "duration_s": round(min(p / 2, t + L - (t + k * p)), 4), "power_w": COMPUTE_W})
            k += 1
    elif shape.startswith("ramp"):
        # as shapes.py runs it: each slot busy for a share rising from 0 to 1 (a duty cycle
        # locked to the ring's 20 ms samples for ramp-3s, to nothing for ramp13-3s)
        k, slot = 0, shapes.RAMP_SLOT[shape]
        while t + k * slot < t + L - 1e-9:
            busy = (k + 0.5) * slot / L * slot
            if busy >= 1e-4:
                out.append({"t_s": round(t + k * slot, 4), "duration_s": round(busy, 4), "power_w": COMPUTE_W})
            k += 1
    elif shape == "b2b":
        out.append({"t_s": round(t, 4), "duration_s": 0.5, "power_w": COMPUTE_W})
        out.append({"t_s": round(t + 0.5, 4), "duration_s": 0.5, "power_w": MEMORY_W})
        for k in range(10):
            out.append({"t_s": round(t + 1 + 0.1 * k, 4), "duration_s": 0.05, "power_w": COMPUTE_W})
        wins += [("-compute", t, t + 0.5, 0), ("-memory", t + 0.5, t + 1, 0), ("-square", t + 1, t + 2, 0)]
    wins.insert(0, ("", t, t + L, None))
    if L >= 2 and shape != "b2b":
        a, b = shapes.inner(t, t + L)
        wins.insert(1, ("-inner", a, b, 0))
    return out, wins


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--gpuwatt", default=".gpu/gpuwatt")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--gap", type=float, default=1.6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--preset", default="h200", choices=["h100", "h200", "a100"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    mdir = os.path.join(a.out, "measure")
    rng = random.Random(a.seed + 1)
    loads, windows = [], []
    t = 1.0  # measure's 1 s baseline
    for r, s in shapes.schedule(a.rounds, a.seed):
        t += a.gap + rng.uniform(0, 0.4)
        ls, ws = loads_of(s, t)
        loads += ls
        windows += [(f"r{r}-{s}{suf}", s + suf if suf else s, x, y, pad) for suf, x, y, pad in ws]
        t += shapes.LENGTH[s]
    t += a.gap
    active_idle = {"h100": 128, "h200": 121, "a100": 75}[a.preset]
    cfgp = os.path.join(a.out, "sim.json")
    with open(cfgp, "w") as f:
        json.dump({"preset": a.preset, "command_load_w": active_idle, "load": loads}, f, indent=1)
    cmd = [a.gpuwatt, "measure", "--channels", "all", "--sim-config", cfgp, "--quiet", "--out", mdir, "--", "sleep", f"{t - 1.0:.3f}"]
    print("+", " ".join(cmd), file=sys.stderr)
    with open(os.path.join(a.out, "measure.txt"), "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)

    meta = cc.load_trace_meta(mdir)
    t0 = cc.parse_rfc3339(meta["start"])
    st = next(c["stats"] for c in meta["channels"] if c["name"] == "energy.total" and c.get("gpu", 0) == 0)
    h = st["poll_interval_s"] / 2
    with open(os.path.join(a.out, "poller.csv"), "w") as f:
        f.write("t_before_unix_s,t_after_unix_s,energy_mj\n")
        prev = None
        for s, v in cc.trace_counter_readings(mdir, 0):
            mj = round(v * 1000)
            if prev is not None:
                f.write(f"{t0 + s - h:.6f},{t0 + s - h:.6f},{prev}\n")
            f.write(f"{t0 + s + h:.6f},{t0 + s + h:.6f},{mj}\n")
            prev = mj
    sj = os.path.join(a.out, "shapes.jsonl")
    with open(sj, "w") as f:
        for name, shape, x, y, pad in windows:
            rec = {"name": name, "shape": shape, "length_s": round(y - x, 6),
                   "start_unix_s": round(t0 + x, 6), "end_unix_s": round(t0 + y, 6)}
            if pad is not None:
                rec["pad_s"] = pad
            f.write(json.dumps(rec) + "\n")
    code = cc.main([mdir, os.path.join(a.out, "poller.csv"), sj, "--gpuwatt", a.gpuwatt, "--out", a.out,
                    "--named", "--jobs", "2"])
    if code:
        return code
    return it.main([os.path.join(a.out, "crosscheck.json"), "--out", a.out])


if __name__ == "__main__":
    sys.exit(main())
