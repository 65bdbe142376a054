#!/usr/bin/env python3
"""The table of bench/gpu/call_spread.sh (issue 34): each GEMM's energy per call above
active idle by the counter alone, round by round, and the spread between rounds that differ
in one thing: the same process and operands (rounds 1 and 2), fresh operands in the same
process (2 and 3), a new process with the first operands again (1, 2 and 4).

    python3 bench/gpu/call_spread_table.py OUTDIR

Per pair of rounds: each item's difference, and the per-round standard deviation beyond the
two figures' own intervals (the mean over items of d² less their variances, halved). Writes
OUTDIR/call_spread_table.md and prints it. Standard library only.
"""
import glob
import json
import math
import os
import sys

PAIRS = [(1, 2, "same process, same operands, ~1 min apart"), (2, 3, "same process, fresh operands"),
         (2, 4, "new process, the first operands again"), (1, 4, "new process, the first operands again"),
         (3, 4, "new process and other operands")]


def load(outdir):
    """{round: round*.json} of outdir."""
    rounds = {}
    for f in glob.glob(os.path.join(outdir, "round*.json")):
        with open(f) as fh:
            r = json.load(fh)
        rounds[r["round"]] = r
    return rounds


def figures(rounds):
    """{(round, item): (J per call above active idle, its 95 % half-width)}."""
    fig = {}
    for k, r in rounds.items():
        for i, x in r["items"].items():
            f = x.get("figure") or {}
            if f.get("active_per_call_j"):
                fig[(k, i)] = (f["active_per_call_j"], f.get("active_half_width_j") or 0.0)
    return fig


def spread(fig, items, a, b):
    """Rounds a and b: each item's relative difference (None where one lacks a figure), and
    the per-round standard deviation beyond the two figures' intervals."""
    diffs, ex = [], []
    for i in items:
        if (a, i) in fig and (b, i) in fig:
            (x, hx), (y, hy) = fig[(a, i)], fig[(b, i)]
            diffs.append(y / x - 1)
            ex.append(((y - x) ** 2 - (hx * hx + hy * hy) / 1.96 ** 2) / ((x + y) / 2) ** 2)
        else:
            diffs.append(None)
    return diffs, (math.sqrt(max(0.0, sum(ex) / len(ex)) / 2) if ex else float("nan"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: call_spread_table.py OUTDIR")
    rounds = load(sys.argv[1])
    if not rounds:
        sys.exit("call_spread_table.py: no round*.json in %s" % sys.argv[1])
    items = sorted({i for r in rounds.values() for i in r["items"]})
    out = ["| item | " + " | ".join("round %d (seed %d, pid %d)" % (k, rounds[k]["seed"], rounds[k]["pid"]) for k in sorted(rounds)) + " |",
           "|---|" + "---|" * len(rounds)]
    fig = figures(rounds)
    for i in items:
        cells = []
        for k in sorted(rounds):
            x = rounds[k]["items"].get(i, {})
            f = x.get("figure") or {}
            v, hw = f.get("active_per_call_j"), f.get("active_half_width_j")
            if v:
                cells.append("%.5g J ± %.2f %% (%s→%s °C)" % (v, 100 * (hw or 0) / v, x.get("temp_before"), x.get("temp_after")))
            else:
                cells.append("– (%s)" % f.get("error", "no figure"))
        out.append("| %s | %s |" % (i, " | ".join(cells)))
    out += ["", "| rounds | what differs | " + " | ".join(items) + " | sd per round beyond the intervals |", "|---|---|" + "---:|" * (len(items) + 1)]
    for a, b, what in PAIRS:
        if a not in rounds or b not in rounds:
            continue
        diffs, sd = spread(fig, items, a, b)
        cells = ["–" if d is None else "%+.2f %%" % (100 * d) for d in diffs]
        out.append("| %d vs %d | %s | %s | %.2f %% |" % (a, b, what, " | ".join(cells), 100 * sd))
    md = "\n".join(out) + "\n"
    with open(os.path.join(sys.argv[1], "call_spread_table.md"), "w") as fh:
        fh.write(md)
    print(md)


if __name__ == "__main__":
    main()
