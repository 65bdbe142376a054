#!/usr/bin/env python3
"""The table of bench/gpu/call_gemm.sh: each call's energy from `gpuwatt call` against the
board's energy counter over the same run (bench/gpu/call_reference.py, from the log
bench/gpu/call_worker.py writes; a reference.json of the 2026-11-28 run, the steady run's
figures at its top level, is read too).

    python3 bench/gpu/call_table.py OUTDIR

OUTDIR/<item>/call.json (gpuwatt call --out) and OUTDIR/<item>/reference.json, for every
item directory that has both; writes OUTDIR/call_table.md and OUTDIR/call_table.json and
prints the table. Per item: the repetitions and calls per repetition, the repetitions the
spread says ±1 % needs, the time per call (gpuwatt's mean of the isolated calls against the
steady run's), the energy per call above active idle and in all (gpuwatt's with its 95 %
interval against the reference, the difference, whether the reference lies inside).
Standard library only.
"""
import csv
import gzip
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def flat(ref):
    """The reference's figures: those of call_reference.py where the file has them (computed
    again from its log where it has one): the replay's (call_worker.py --replay: the same calls
    with gpuwatt's waits, counter alone, >= 10 s) where the worker ran one, else the counter's
    over gpuwatt's own run (the 2026-11-28-call-2 run's reference); else the old steady run's
    at its top level. The second value is the counter's figure over gpuwatt's run (None where
    that is the reference itself, or there is no log)."""
    if "changes" in ref and "spans" in ref:
        import call_reference
        same = dict(call_reference.reference(ref))
        same["op"] = ref.get("op")
        if ref.get("replay_spans"):
            x = dict(call_reference.replay_reference(ref))
            x["op"] = ref.get("op")
            x["reference_is"] = "replay"
            return x, same
        same["reference_is"] = "same_run"
        return same, None
    return ref, None


def ring_rows(d):
    """power.samples' (t, W) from d/trace.csv or d/trace.csv.gz (gpuwatt's recording), or []."""
    for name, opener in (("trace.csv", open), ("trace.csv.gz", gzip.open)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with opener(p, "rb") as f:
                rows = csv.DictReader(io.TextIOWrapper(f, "utf-8"))
                return [(float(r["t_s"]), float(r["value"])) for r in rows if r["channel"] == "power.samples"]
    return []


def integral(rows, a, b):
    """The trapezoid integral of (t, W) rows over [a, b] (J), or None where they do not cover it."""
    if not rows or rows[0][0] > a or rows[-1][0] < b:
        return None
    e = 0.0
    for (t0, p0), (t1, p1) in zip(rows, rows[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            pa = p0 + (p1 - p0) * (lo - t0) / (t1 - t0)
            pb = p0 + (p1 - p0) * (hi - t0) / (t1 - t0)
            e += (hi - lo) * (pa + pb) / 2
    return e


def ring_split(d, raw, ref, call):
    """The same whole-run arithmetic as the reference on gpuwatt's own channel (the ring, from
    its recording) and on the counter, both less gpuwatt's idle level: the ring's figure per
    call against gpuwatt's tests the per-call method on one sensor; the ring's against the
    counter's is the two sensors' scale for the calls' energy. gpuwatt's recording ends ~0.3 s
    after the last call, so the run here ends at the counter's last update inside it."""
    import call_reference
    pc = call.get("per_call") or []
    spans = raw.get("spans") or []
    if not spans or len(pc) != len(spans) or "run_from" not in ref:
        return {}
    offs = sorted(s[0] - p["start_s"] for s, p in zip(spans, pc))
    off = offs[len(offs) // 2]
    if offs[-1] - offs[0] > 0.002:  # not the same calls, or another clock
        return {}
    rows = ring_rows(d)
    pts, _, _ = call_reference.change_times(raw["changes"])
    ends = [t for t, _ in pts if spans[-1][1] + 0.15 <= t and rows and t - off <= rows[-1][0]]
    idle = (call.get("active_idle_w") or {}).get("value")
    if not ends or not idle:
        return {}
    E = dict(pts)
    a, b = ref["run_from"], ends[-1]
    e = integral(rows, a - off, b - off)
    if e is None:
        return {}
    ec = E[b] - E[a]
    n = ref["calls"]
    ring = (e - idle * (b - a)) / n
    ctr = (ec - idle * (b - a)) / n
    return {"ring_run_j": e, "counter_run_j": ec, "ring_over_counter": e / ec, "ring_active_per_call_j": ring,
            "counter_active_per_call_gpuwatt_idle_j": ctr, "ring_over_counter_active": ring / ctr}


def row(name, call, ref, d=None):
    raw = ref
    ref, same = flat(ref)
    r = {"item": name, "op": ref.get("op", name), "calls": call["calls"], "batch": call["batch"],
         "calls_needed": call.get("calls_needed"), "rel_half_width": call["rel_half_width"],
         "target": call.get("target"), "reached": call.get("reached"),
         "seconds": call["time_s"]["value"], "ref_seconds": ref.get("seconds_per_call"),
         "idle_w": (call.get("active_idle_w") or {}).get("value"),
         "channel": call.get("channel"), "warnings": [w.get("message", "") for w in call.get("warnings") or []],
         "scale": "counter" if call.get("counter_scale") else call.get("channel") or "–"}
    for key, rkey in (("active_j", "active_per_call_j"), ("energy_j", "energy_per_call_j")):
        f, x = call[key], ref.get(rkey)
        r[key], r[key + "_low"], r[key + "_high"] = f["value"], f["low"], f["high"]
        r[key + "_ref"] = x
        if x:
            r[key + "_diff"] = f["value"] / x - 1
            r[key + "_inside"] = f["low"] <= x <= f["high"]
            r[key + "_abs_inside"] = f.get("absolute_low", f["low"]) <= x <= f.get("absolute_high", f["high"])
    # the reference's own 95 % half-width (call_reference.py), and the test with it added
    rhw = ref.get("active_half_width_j")
    if rhw is not None and r.get("active_j_ref"):
        hw = (call["active_j"]["high"] - call["active_j"]["low"]) / 2
        r["ref_rel_half_width"] = rhw / abs(r["active_j_ref"])
        r["active_j_inside_both"] = abs(r["active_j"] - r["active_j_ref"]) <= (hw * hw + rhw * rhw) ** 0.5
    r["reference_is"] = ref.get("reference_is")
    run = same if same is not None else ref
    if same is not None and same.get("active_per_call_j"):
        # the counter over gpuwatt's own run: the scale gpuwatt calibrates to, beside the reference
        x = same["active_per_call_j"]
        r["active_j_same_run"] = x
        r["active_j_same_run_half_width"] = same.get("active_half_width_j")
        r["active_j_same_run_diff"] = call["active_j"]["value"] / x - 1
        r["active_j_same_run_inside"] = call["active_j"]["low"] <= x <= call["active_j"]["high"]
        r["same_run_idle_w"] = same.get("idle_w")
    if d is not None and "run_from" in run:
        r.update(ring_split(d, raw, run, call))
    for k in ("idle_used", "idle_w", "idle_in_run_w", "idle_in_run_s", "idle_before_w", "idle_after_w",
              "active_per_call_linear_j", "run_s", "change_times", "error"):
        if k in ref:
            r["ref_" + k] = ref[k]
    return r


def load(outdir):
    rows = []
    for name in sorted(os.listdir(outdir)):
        d = os.path.join(outdir, name)
        cj, rj = os.path.join(d, "call.json"), os.path.join(d, "reference.json")
        if not (os.path.isfile(cj) and os.path.isfile(rj)):
            continue
        with open(cj) as f:
            call = json.load(f)
        with open(rj) as f:
            ref = json.load(f)
        rows.append(row(name, call, ref, d))
    return rows


def pct(x):
    return "–" if x is None else "%+.2f %%" % (100 * x)


def markdown(rows):
    out = ["| op | repetitions × calls | ±1 % reached | repetitions ±1 % needs | time per call: gpuwatt / reference | above active idle: gpuwatt ± 95 % | scale | reference ± 95 % | diff | inside | idle: reference's / gpuwatt's | in all: gpuwatt ± 95 % | reference | diff | inside |",
           "|---|---|---|---:|---|---|---|---|---:|---|---|---|---:|---:|---|"]
    yes = lambda x: {True: "yes", False: "**no**"}.get(x, "–")
    for r in rows:
        hw = lambda k: (r[k + "_high"] - r[k + "_low"]) / 2
        rel = lambda k: 100 * hw(k) / abs(r[k]) if r[k] else float("inf")
        # gpuwatt's own count where it gave one (on the counter's scale the readings' part
        # shrinks as 1/n and the idle's stays: 0 there says ±1 % cannot be had), else the
        # spread's 1/√n
        need = r.get("calls_needed") or 0
        if not need and r.get("scale") != "counter":
            need = r["calls"] * (r["rel_half_width"] / 0.01) ** 2
        ref = "–"
        if r.get("active_j_ref"):
            ref = "%.5g J" % r["active_j_ref"]
            if r.get("ref_rel_half_width") is not None:
                ref += " ± %.2f %%" % (100 * r["ref_rel_half_width"])
        idle = "%s / %s" % ("%.2f W (%s)" % (r["ref_idle_w"], r.get("ref_idle_used", "steady run's")) if r.get("ref_idle_w") else "–",
                            "%.2f W" % r["idle_w"] if r.get("idle_w") else "–")
        out.append("| %s | %d × %d | %s | %s | %.4g / %.4g ms | %.5g J ± %.2f %% | %s | %s | %s | %s | %s | %.5g J ± %.2f %% | %s | %s | %s |" % (
            r["op"], r["calls"], r["batch"], yes(r.get("reached")), round(need) if need else "– (cannot)", 1e3 * r["seconds"], 1e3 * (r["ref_seconds"] or 0),
            r["active_j"], rel("active_j"), r.get("scale", "–"), ref, pct(r.get("active_j_diff")), yes(r.get("active_j_inside")), idle,
            r["energy_j"], rel("energy_j"), "%.5g J" % r["energy_j_ref"] if r.get("energy_j_ref") else "–",
            pct(r.get("energy_j_diff")), yes(r.get("energy_j_inside"))))
    same = [r for r in rows if r.get("active_j_same_run")]
    if same:
        out += ["", "The counter over gpuwatt's own run (the calls as gpuwatt ran them, idle before and after "
                "that run), beside the reference run: the scale gpuwatt's figure is calibrated to, and how "
                "far the reference run, minutes apart at most, lies from it.", "",
                "| op | gpuwatt ± 95 % | counter over gpuwatt's run ± 95 % | diff | inside | reference run / gpuwatt's run |",
                "|---|---|---|---:|---|---:|"]
        for r in same:
            hw = (r["active_j_high"] - r["active_j_low"]) / 2
            shw = r.get("active_j_same_run_half_width")
            out.append("| %s | %.5g J ± %.2f %% | %.5g J%s | %s | %s | %s |" % (
                r["op"], r["active_j"], 100 * hw / abs(r["active_j"]), r["active_j_same_run"],
                " ± %.2f %%" % (100 * shw / abs(r["active_j_same_run"])) if shw else "",
                pct(r["active_j_same_run_diff"]), yes(r["active_j_same_run_inside"]),
                pct(r["active_j_ref"] / r["active_j_same_run"] - 1) if r.get("active_j_ref") else "–"))
    split = [r for r in rows if r.get("ring_over_counter")]
    if split:
        out += ["", "The reference's arithmetic on gpuwatt's own channel and on the counter, both less gpuwatt's "
                "idle level: gpuwatt's per-call figure against the ring's whole-run one is the method on one "
                "sensor; the ring's against the counter's is the two sensors' scale for the calls' energy.", "",
                "| op | gpuwatt per call ± 95 % | ring over the run, per call | diff | inside | counter over the run, per call | ring / counter: the calls | in all |",
                "|---|---|---:|---:|---|---:|---:|---:|"]
        for r in split:
            hw = (r["active_j_high"] - r["active_j_low"]) / 2
            ins = abs(r["active_j"] - r["ring_active_per_call_j"]) <= hw
            out.append("| %s | %.5g J ± %.2f %% | %.5g J | %s | %s | %.5g J | %.4f | %.4f |" % (
                r["op"], r["active_j"], 100 * hw / abs(r["active_j"]), r["ring_active_per_call_j"],
                pct(r["active_j"] / r["ring_active_per_call_j"] - 1), yes(ins),
                r["counter_active_per_call_gpuwatt_idle_j"], r["ring_over_counter_active"], r["ring_over_counter"]))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: call_table.py OUTDIR")
    outdir = sys.argv[1]
    rows = load(outdir)
    if not rows:
        sys.exit("call_table.py: no item directory with call.json and reference.json in %s" % outdir)
    md = markdown(rows)
    with open(os.path.join(outdir, "call_table.md"), "w") as f:
        f.write(md)
    with open(os.path.join(outdir, "call_table.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(md)


if __name__ == "__main__":
    main()
