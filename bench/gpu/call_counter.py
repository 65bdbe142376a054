#!/usr/bin/env python3
"""The isolated calls against the board's own energy counter over the same run.

    python3 bench/gpu/call_counter.py OUTDIR

For every OUTDIR/<item>/ of bench/gpu/call_gemm.sh (call.json, trace.csv): the counter's
increase (energy.total, linearly interpolated at the ends) from the first call's window start
to the last call's window end, less the active-idle level gpuwatt measured between the calls
× that span, against the sum of gpuwatt's per-call energies above active idle. Standard
library only. The idle level is gpuwatt's (the ring's scale), so a 1 % error in it moves the
check by 1 % × idle × span / (the calls' energy).
"""
import csv
import json
import os
import sys


def check(d):
    c = json.load(open(os.path.join(d, "call.json")))
    pc = [x for x in c["per_call"] if x.get("method") != "left_out"]
    t0, t1 = pc[0]["start_s"] - c["window_pre_s"], pc[-1]["end_s"] + c["window_post_s"]
    rows = [(float(r["t_s"]), float(r["value"])) for r in csv.DictReader(open(os.path.join(d, "trace.csv")))
            if r["channel"] == "energy.total"]

    def at(t):
        for (a, ea), (b, eb) in zip(rows, rows[1:]):
            if a <= t <= b:
                return ea + (eb - ea) * (t - a) / (b - a)
        return None

    e = at(t1) - at(t0)
    idle = c["active_idle_w"]["value"]
    above = e - idle * (t1 - t0)
    s = sum(x["active_j"] for x in pc)
    return {"span_s": t1 - t0, "counter_j": e, "idle_w": idle, "counter_above_idle_j": above,
            "gpuwatt_sum_above_idle_j": s, "diff": s / above - 1, "idle_share": idle * (t1 - t0) / e}


def main():
    out = sys.argv[1]
    print("| item | span | counter above idle | gpuwatt: sum of the calls above idle | diff | idle's share of the counter |")
    print("|---|---:|---:|---:|---:|---:|")
    res = {}
    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        if os.path.isfile(os.path.join(d, "call.json")) and os.path.isfile(os.path.join(d, "trace.csv")):
            r = check(d)
            res[name] = r
            print("| %s | %.2f s | %.1f J | %.1f J | %+.2f %% | %.0f %% |" % (name, r["span_s"], r["counter_above_idle_j"],
                  r["gpuwatt_sum_above_idle_j"], 100 * r["diff"], 100 * r["idle_share"]))
    json.dump(res, open(os.path.join(out, "call_counter.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
