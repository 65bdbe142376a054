#!/usr/bin/env python3
"""characterize --quick's time and figures against earlier runs (issue 35).

    python3 bench/gpu/characterize_compare.py OUTDIR > OUTDIR/compare.md

Reads OUTDIR/wall_s (the run's wall seconds), OUTDIR/char/results.json (the stages' times)
and OUTDIR/compare.json (`gpuwatt report --json PREV... OUTDIR/char`: every headline figure
of every run with its interval, the new run last). The new run's figure is "inside" an
earlier run's where it lies within that run's 95 % interval (a run of the same board, by
UUID); for another board, where the two differ by no more than their intervals together
(root sum of squares of the half-widths) and 5 % of the earlier value (boards of one SKU
differ by up to +-5 % in gain; not for the balance points B_*, ratios in which it cancels).
A figure without an interval (B_tau) is not judged. Exit 0; the verdicts are in the text.
"""
import json
import os
import sys

GOAL_S = 180.0
GAIN = 0.05  # boards of one SKU: +-5 % gain error (Yang et al.; characterize.GainPart)


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def main(out):
    wall = None
    try:
        with open(os.path.join(out, "wall_s")) as f:
            wall = float(f.read().strip())
    except (OSError, ValueError):
        pass
    res = load(os.path.join(out, "char", "results.json"), {})
    print("## Time\n")
    print("| stage | GPU time (s) |")
    print("|---|---|")
    total = 0.0
    for st in res.get("stages", []) or []:
        total += st.get("clock_s", 0)  # on a GPU the wall clock; on the twin its own
        print(f"| {st['name']} ({st.get('status', '?')}) | {st.get('clock_s', 0):.1f} |")
    print(f"| stages together | {total:.1f} |")
    verdict = "–" if wall is None else ("**met**" if wall <= GOAL_S else "**not met**")
    print(f"| the whole command (wall) | {'–' if wall is None else f'{wall:.1f}'} |\n")
    print(f"Goal: at most {GOAL_S:.0f} s for the whole command: {verdict}. "
          f"Incomplete: {res.get('incomplete', '?')}.\n")

    cmp = load(os.path.join(out, "compare.json"))
    if not cmp:
        print("No comparison (compare.json missing or unreadable: see compare.stderr).")
        return 0
    runs, uuids = cmp["runs"], cmp["uuids"]
    new = len(runs) - 1
    print("## Figures against the earlier runs\n")
    print("Earlier runs: " + ", ".join(f"`{r}` ({u[:12]})" for r, u in zip(runs[:new], uuids[:new])) +
          f"; this run `{runs[new]}` ({uuids[new][:12]}).\n")
    print("| figure | this run | " + " | ".join(f"run {i + 1}" for i in range(new)) + " | inside |")
    print("|---|---|" + "---|" * new + "---|")
    n_in = n_all = 0
    for f in cmp["figures"]:
        vals, lows, highs = f["values"], f["lows"], f["highs"]
        if len(vals) != len(runs) or vals[new] in (None, 0):
            continue
        v = vals[new]
        cells, ok_all, judged = [], True, False
        for i in range(new):
            if vals[i] in (None, 0):
                cells.append("–")
                continue
            lo, hi = lows[i], highs[i]
            if uuids[i] == uuids[new] and hi > lo:
                ok = lo <= v <= hi
                why = "same board"
            else:
                # Another board: its interval widened by the gain part (not for the balance
                # points B_*, ratios in which the gain cancels).
                if not (hi > lo and highs[new] > lows[new]):
                    cells.append(f"{vals[i]:.4g} (no interval: not judged)")
                    continue
                g = 0 if "B_" in f["name"] else GAIN * abs(vals[i])
                hw = max(hi - vals[i], vals[i] - lo)
                hwn = max(highs[new] - v, v - lows[new])
                ok = abs(v - vals[i]) <= (hw * hw + hwn * hwn) ** 0.5 + g
                why = "other board: both intervals and the gain part"
            judged = True
            ok_all = ok_all and ok
            iv = f" [{lo:.4g}, {hi:.4g}]" if hi > lo else ""
            cells.append(f"{vals[i]:.4g}{iv} {'✓' if ok else '✗'} ({why})")
        lv, hv = lows[new], highs[new]
        mine = f"{v:.4g}" + (f" [{lv:.4g}, {hv:.4g}]" if hv > lv else "")
        if judged:
            n_all += 1
            n_in += ok_all
        verdict = "–" if not judged else ("yes" if ok_all else "**no**")
        print(f"| {f['name']} | {mine} | " + " | ".join(cells) + f" | {verdict} |")
    print(f"\n{n_in} of {n_all} figures inside every earlier run's interval (as above).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
