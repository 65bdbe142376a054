#!/usr/bin/env python3
"""Issue 28's reproducibility check: in a `characterize --repeat N` directory's repeat.json,
is each run's figure inside every other run's (relative, same-board) interval?

    python3 bench/gpu/repeat_inside.py DIR/repeat.json [--need 0.95]

Counts ordered pairs (run i's value against run j's interval, i != j) for every figure with an
interval; figures without one (B_tau, B_eps: ratios with no interval) are listed as not judged.
Prints a markdown table and the share inside; exits 1 when the share is below --need."""
import json
import sys


def judge(doc):
    rows, inside, total, unjudged = [], 0, 0, []
    for f in doc["figures"]:
        v, lo, hi = f["values"], f.get("lows") or [], f.get("highs") or []
        if not lo or all(a == 0 and b == 0 for a, b in zip(lo, hi)):
            unjudged.append(f["name"])
            continue
        k = n = 0
        for i in range(len(v)):
            for j in range(len(v)):
                if i == j or lo[j] == hi[j]:
                    continue
                n += 1
                k += lo[j] <= v[i] <= hi[j]
        inside, total = inside + k, total + n
        half = max((h - l) / 2 / abs(x) * 100 for x, l, h in zip(v, lo, hi) if x)
        rows.append((f["name"], v, f.get("cv_pct", 0), half, k, n))
    return rows, inside, total, unjudged


def main(argv):
    path = argv[1]
    need = float(argv[argv.index("--need") + 1]) if "--need" in argv else 0.95
    rows, inside, total, unjudged = judge(json.load(open(path)))
    print("| figure | values | CV % | largest half-width % | pairs inside |")
    print("|---|---|---|---|---|")
    for name, v, cv, half, k, n in rows:
        vals = ", ".join(f"{x:.4g}" for x in v)
        print(f"| {name} | {vals} | {cv:.2f} | {half:.2f} | {k}/{n} |")
    share = inside / total if total else 0
    print(f"\n{inside} of {total} ordered pairs inside ({share:.1%}); not judged (no interval): "
          + (", ".join(unjudged) or "none"))
    return 0 if total and share >= need else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
