#!/usr/bin/env python3
"""The table of bench/gpu/call_repeat.sh (issue 34): each item's runs by `gpuwatt call`
(OUTDIR/<item>-run<pass>/call.json) against the reference (the replay after the item's last
run: the same calls with the same waits, NVML's energy counter alone, E/N over >= 10 s,
bench/gpu/call_reference.py from the log in reference.json), and the runs against each other.

    python3 bench/gpu/call_repeat_table.py OUTDIR

A directory named <item> without -run<pass> is pass 1 (bench/gpu/call_gemm.sh's layout, each
item with its own replay). Per run: repetitions × calls, the time per call, gpuwatt's energy
per call above active idle ± 95 % (and its run-to-run part, call.json `run_to_run`), whether
±target was reached, the reference's difference and whether it lies inside the interval
(and inside it without the run-to-run part). Per item with two runs or more: the first two
runs' difference against their intervals combined. Then the run-to-run spread the pairs
show: the per-run standard deviation beyond each run's own interval less its run-to-run
part, and the floor it gives (1.96 × √2 × that: the half-width that holds another run).
Writes OUTDIR/call_repeat_table.md and .json and prints the table. Standard library only.
"""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_reference  # noqa: E402


def load(outdir, pass_of_dir=None):
    """{item: {pass: (call, raw)}} for every directory with call.json and reference.json
    (pass_of_dir: the pass of every item in outdir, whatever its name)."""
    items = {}
    for name in sorted(os.listdir(outdir)):
        d = os.path.join(outdir, name)
        cj, rj = os.path.join(d, "call.json"), os.path.join(d, "reference.json")
        if not (os.path.isfile(cj) and os.path.isfile(rj)):
            continue
        m = re.match(r"^(.*)-run(\d+)$", name)
        item, p = (m.group(1), int(m.group(2))) if m else (name, 1)
        if pass_of_dir is not None:
            item, p = name, pass_of_dir
        with open(cj) as f:
            call = json.load(f)
        with open(rj) as f:
            raw = json.load(f)
        items.setdefault(item, {})[p] = (call, raw)
    return items


def reference(runs):
    """The replay reference of the item's last run that has one: (J per call, half-width J, pass)."""
    for p in sorted(runs, reverse=True):
        raw = runs[p][1]
        if raw.get("replay_spans") and raw.get("changes"):
            r = call_reference.replay_reference(raw)
            if r.get("active_per_call_j"):
                return r["active_per_call_j"], r.get("active_half_width_j") or 0.0, p
    return None, None, None


def run_row(item, p, call, raw, ref):
    a = call["active_j"]
    hw = (a["high"] - a["low"]) / 2
    rr = (call.get("run_to_run") or {}).get("half_width_j") or 0.0
    hw_no = math.sqrt(max(0.0, hw * hw - rr * rr))
    spans = raw.get("spans") or []
    r = {"item": item, "pass": p, "op": raw.get("op") or item, "uuid": raw.get("uuid"), "calls": call["calls"], "batch": call["batch"],
         "seconds": call["time_s"]["value"], "active_j": a["value"], "half_width_j": hw, "rel": hw / abs(a["value"]),
         "run_to_run_j": rr, "run_to_run_measured": (call.get("run_to_run") or {}).get("measured"),
         "blocks": len((call.get("run_to_run") or {}).get("blocks") or []),
         "half_width_without_run_to_run_j": hw_no, "reached": call.get("reached"), "target": call.get("target"),
         "calls_needed": call.get("calls_needed"), "scale": "counter" if call.get("counter_scale") else call.get("channel"),
         "start": spans[0][0] if spans else None, "warnings": [w.get("code") for w in call.get("warnings") or []]}
    if ref is not None:
        r["ref_j"] = ref
        r["diff"] = a["value"] / ref - 1
        r["inside"] = a["low"] <= ref <= a["high"]
        r["inside_without_run_to_run"] = abs(a["value"] - ref) <= hw_no
    return r


def table(items):
    rows, pairs = [], []
    for item, runs in items.items():
        ref, ref_hw, ref_pass = reference(runs)
        rr = [run_row(item, p, runs[p][0], runs[p][1], ref) for p in sorted(runs)]
        for r in rr:
            r["ref_half_width_j"], r["ref_pass"] = ref_hw, ref_pass
        rows += rr
        if len(rr) >= 2:
            x, y = rr[0], rr[1]
            hw = math.hypot(x["half_width_j"], y["half_width_j"])
            hw_no = math.hypot(x["half_width_without_run_to_run_j"], y["half_width_without_run_to_run_j"])
            mean = (x["active_j"] + y["active_j"]) / 2
            pairs.append({"item": item, "op": x["op"], "a": x["active_j"], "b": y["active_j"], "diff": y["active_j"] / x["active_j"] - 1,
                          "apart_s": (y["start"] - x["start"]) if x["start"] is not None and y["start"] is not None else None,
                          "half_width_j": hw, "inside": abs(x["active_j"] - y["active_j"]) <= hw,
                          "inside_without_run_to_run": abs(x["active_j"] - y["active_j"]) <= hw_no,
                          # the difference's square beyond the two runs' own errors (their
                          # intervals less the run-to-run parts, as 95 % half-widths), relative
                          "excess_rel2": ((x["active_j"] - y["active_j"]) ** 2 - (hw_no / 1.96) ** 2) / mean ** 2})
    # the counter alone over a gpuwatt run (its worker's poller, paused during the run) and
    # over the replay right after it: two runs of the same calls, seconds apart, one sensor
    counter_pairs = []
    for item, runs in items.items():
        for p in sorted(runs):
            raw = runs[p][1]
            if not (raw.get("replay_spans") and raw.get("changes") and raw.get("spans")):
                continue
            same, rep = call_reference.reference(raw), call_reference.replay_reference(raw)
            x, y = same.get("active_per_call_j"), rep.get("active_per_call_j")
            if not x or not y:
                continue
            hx, hy = same.get("active_half_width_j") or 0.0, rep.get("active_half_width_j") or 0.0
            counter_pairs.append({"item": item, "pass": p, "run_j": x, "replay_j": y, "diff": y / x - 1,
                                  "inside": abs(x - y) <= math.hypot(hx, hy),
                                  "excess_rel2": ((x - y) ** 2 - (hx * hx + hy * hy) / 1.96 ** 2) / ((x + y) / 2) ** 2})
    # the replays of one item's runs against each other: the counter alone, the same calls
    # with the same waits, a pass apart
    replay_pairs = []
    for item, runs in items.items():
        reps = []
        for p in sorted(runs):
            raw = runs[p][1]
            if raw.get("replay_spans") and raw.get("changes"):
                r = call_reference.replay_reference(raw)
                if r.get("active_per_call_j"):
                    reps.append((p, r["active_per_call_j"], r.get("active_half_width_j") or 0.0))
        if len(reps) >= 2:
            (pa, x, hx), (pb, y, hy) = reps[0], reps[1]
            replay_pairs.append({"item": item, "a": x, "b": y, "diff": y / x - 1, "inside": abs(x - y) <= math.hypot(hx, hy),
                                 "excess_rel2": ((x - y) ** 2 - (hx * hx + hy * hy) / 1.96 ** 2) / ((x + y) / 2) ** 2})
    spread = None
    if replay_pairs:
        ex = sum(p["excess_rel2"] for p in replay_pairs) / len(replay_pairs)
        sd = math.sqrt(max(0.0, ex) / 2)
        spread = {"replay_pairs": len(replay_pairs), "replay_per_run_sd_rel": sd, "replay_floor_rel": 1.96 * math.sqrt(2) * sd}
    if counter_pairs:
        ex = sum(p["excess_rel2"] for p in counter_pairs) / len(counter_pairs)
        sd = math.sqrt(max(0.0, ex) / 2)
        spread = dict(spread or {}, counter_pairs=len(counter_pairs), counter_per_run_sd_rel=sd, counter_floor_rel=1.96 * math.sqrt(2) * sd)
    if pairs:
        ex = sum(p["excess_rel2"] for p in pairs) / len(pairs)
        sd = math.sqrt(max(0.0, ex) / 2)
        spread = dict(spread or {}, pairs=len(pairs), per_run_sd_rel=sd, floor_rel=1.96 * math.sqrt(2) * sd)
    return rows, pairs, counter_pairs, replay_pairs, spread


def pct(x):
    return "–" if x is None else "%+.2f %%" % (100 * x)


def markdown(rows, pairs, counter_pairs, replay_pairs, spread):
    yes = lambda v: {True: "yes", False: "**no**"}.get(v, "–")
    out = ["| item | run | repetitions × calls | time per call | gpuwatt above active idle ± 95 % | of which run to run | ±target reached | reference ± 95 % | diff | inside | inside without run to run |",
           "|---|---:|---|---:|---|---|---|---|---:|---|---|"]
    for r in rows:
        ref = "–"
        if r.get("ref_j"):
            ref = "%.5g J ± %.2f %% (after run %d)" % (r["ref_j"], 100 * r["ref_half_width_j"] / r["ref_j"], r["ref_pass"])
        rr = "±%.2f %% (%d blocks%s)" % (100 * r["run_to_run_j"] / abs(r["active_j"]), r["blocks"], "" if r["run_to_run_measured"] else ", not measured")
        reached = yes(r["reached"])
        if r["reached"] is False:
            reached += " (needs %s)" % (r["calls_needed"] or "more than calls can give")
        out.append("| %s | %d | %d × %d | %.4g ms | %.5g J ± %.2f %% | %s | %s | %s | %s | %s | %s |" % (
            r["item"], r["pass"], r["calls"], r["batch"], 1e3 * r["seconds"], r["active_j"], 100 * r["rel"], rr, reached, ref,
            pct(r.get("diff")), yes(r.get("inside")), yes(r.get("inside_without_run_to_run"))))
    if pairs:
        out += ["", "The same call's two runs against each other:", "",
                "| item | run 1 | run 2 | diff | apart | inside both intervals | without run to run |", "|---|---:|---:|---:|---:|---|---|"]
        for p in pairs:
            out.append("| %s | %.5g J | %.5g J | %s | %s | %s | %s |" % (p["item"], p["a"], p["b"], pct(p["diff"]),
                       "%.0f s" % p["apart_s"] if p["apart_s"] is not None else "–", yes(p["inside"]), yes(p["inside_without_run_to_run"])))
    if spread and spread.get("pairs"):
        out += ["", "Run-to-run spread from the %d pairs: per run ±%.2f %% (sd) beyond each run's own interval; the floor it gives (1.96 × √2 × that) ±%.2f %%." % (
            spread["pairs"], 100 * spread["per_run_sd_rel"], 100 * spread["floor_rel"])]
    if counter_pairs:
        out += ["", "The counter alone (the worker's poller) over each gpuwatt run and over the replay right after it:", "",
                "| item | run | counter over the run | replay | replay / run | inside both intervals |", "|---|---:|---:|---:|---:|---|"]
        for p in counter_pairs:
            out.append("| %s | %d | %.5g J | %.5g J | %s | %s |" % (p["item"], p["pass"], p["run_j"], p["replay_j"], pct(p["diff"]), yes(p["inside"])))
        out += ["", "Run-to-run spread of the counter alone from these %d pairs: per run ±%.2f %% (sd) beyond their intervals; the floor it gives ±%.2f %%." % (
            spread["counter_pairs"], 100 * spread["counter_per_run_sd_rel"], 100 * spread["counter_floor_rel"])]
    if replay_pairs:
        out += ["", "The replays (the counter alone, the same calls with the same waits, >= 10 s) of the same call's two runs:", "",
                "| item | replay 1 | replay 2 | diff | inside both intervals |", "|---|---:|---:|---:|---|"]
        for p in replay_pairs:
            out.append("| %s | %.5g J | %.5g J | %s | %s |" % (p["item"], p["a"], p["b"], pct(p["diff"]), yes(p["inside"])))
        out += ["", "Run-to-run spread of the replays from these %d pairs: per run ±%.2f %% (sd) beyond their intervals; the floor it gives ±%.2f %%." % (
            spread["replay_pairs"], 100 * spread["replay_per_run_sd_rel"], 100 * spread["replay_floor_rel"])]
    ins = [r for r in rows if r.get("ref_j")]
    if ins:
        out += ["", "The reference inside %d of %d intervals (%d without the run-to-run part)." % (
            sum(1 for r in ins if r["inside"]), len(ins), sum(1 for r in ins if r["inside_without_run_to_run"]))]
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    out = None
    if len(args) >= 2 and args[0] == "--out":
        out, args = args[1], args[2:]
    if not args:
        sys.exit("usage: call_repeat_table.py OUTDIR | call_repeat_table.py --out PREFIX RUNDIR1 RUNDIR2 ... (each RUNDIR a pass)")
    if len(args) == 1:
        items = load(args[0])
        out = out or os.path.join(args[0], "call_repeat_table")
    else:
        items = {}
        for k, d in enumerate(args):
            for item, runs in load(d, k + 1).items():
                items.setdefault(item, {}).update(runs)
        if out is None:
            sys.exit("call_repeat_table.py: with several run directories, --out PREFIX")
    if not items:
        sys.exit("call_repeat_table.py: no run directory with call.json and reference.json in %s" % " ".join(args))
    rows, pairs, counter_pairs, replay_pairs, spread = table(items)
    md = markdown(rows, pairs, counter_pairs, replay_pairs, spread)
    with open(out + ".md", "w") as f:
        f.write(md)
    with open(out + ".json", "w") as f:
        json.dump({"runs": rows, "pairs": pairs, "counter_pairs": counter_pairs, "replay_pairs": replay_pairs, "spread": spread}, f, indent=1)
    print(md)


if __name__ == "__main__":
    main()
