"""Each window of python_loop.py: the package's figure (live: end_window; final: close)
beside the figure `gpuwatt measure` gave the marker region of the same span.

    python3 python_compare.py LOOP.json MEASURE_SUMMARY.json [--gpu N]

Two recorders read the same GPU (the package's `gpuwatt record` and measure's): their
figures are two measurements of one span, each with its 95 % interval; they agree where the
difference lies within the two half-widths together. Prints one row per window and a
summary line; exit 0 (the figures are the result, not a pass/fail).
"""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def gpu_of(entries, idx):
    for g in entries or []:
        if g.get("index") == idx:
            return g
    return None


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("loop")
    ap.add_argument("summary")
    ap.add_argument("--gpu", type=int, default=None, help="GPU index (default: the loop's)")
    a = ap.parse_args(argv)
    loop, summ = load(a.loop), load(a.summary)
    gpus = loop["meta"]["hello"].get("gpus") or [{"index": 0}]
    idx = a.gpu if a.gpu is not None else gpus[0]["index"]
    regions = {(r["name"], r["instance"]): r for r in summ.get("regions") or []}
    live = {(w["name"], w["instance"]): w for w in loop["live"]}
    rows, agree, agree_live, inside, n = [], 0, 0, 0, 0
    worst = 0.0
    print("%-12s %7s  %-30s %-10s %-30s %8s %8s" % ("window", "s", "package live J [95 %]", "final J", "measure J [95 %]", "fin-meas", "live-fin"))
    for w in loop["final"]:
        key = (w["name"], w["instance"])
        r, lv = regions.get(key), live.get(key)
        p, m = gpu_of(w.get("gpus"), idx), gpu_of(r.get("gpus") if r else None, idx)
        pl = gpu_of(lv.get("gpus") if lv else None, idx)
        if not p or not m or p.get("no_figure") or m.get("no_figure"):
            print("%-12s no figure on one side (package %s, measure %s)" % ("%s#%d" % key, bool(p), bool(m)))
            continue
        n += 1
        d = p["energy_j"] - m["energy_j"]
        hw = (p["energy_high_j"] - p["energy_low_j"]) / 2 + (m["energy_high_j"] - m["energy_low_j"]) / 2
        ok = abs(d) <= hw
        agree += ok
        inside += m["energy_low_j"] <= p["energy_j"] <= m["energy_high_j"]
        worst = max(worst, abs(d) / m["energy_j"])
        dl = ""
        if pl and not pl.get("no_figure"):
            dl = "%+.2f%%" % (100 * (pl["energy_j"] - p["energy_j"]) / p["energy_j"])
            hwl = (pl["energy_high_j"] - pl["energy_low_j"]) / 2 + (m["energy_high_j"] - m["energy_low_j"]) / 2
            agree_live += abs(pl["energy_j"] - m["energy_j"]) <= hwl
        print("%-12s %7.3f  %-30s %-10.2f %-30s %+7.2f%% %8s %s" % (
            "%s#%d" % key, w["duration_s"],
            "%.2f [%.2f, %.2f]" % (pl["energy_j"], pl["energy_low_j"], pl["energy_high_j"]) if pl else "-",
            p["energy_j"], "%.2f [%.2f, %.2f]" % (m["energy_j"], m["energy_low_j"], m["energy_high_j"]),
            100 * d / m["energy_j"], dl, "" if ok else "DISAGREE"))
    print("summary: %d windows; final figures agree with measure's within their intervals in %d, live ones in %d; "
          "the package's final figure inside measure's interval in %d; largest |final - measure| %.2f %%" % (
              n, agree, agree_live, inside, 100 * worst))
    host = [w for w in loop["final"] if w.get("host")]
    if host:
        print("host (RAPL) energy in %d windows, e.g. %s: %s" % (len(host), host[0]["name"],
              ", ".join("%s %.2f J" % (h["name"], h["energy_j"]) for h in host[0]["host"])))
    else:
        why = next((w.get("host_unavailable") for w in loop["final"] if w.get("host_unavailable")), "")
        print("host (RAPL) energy: not read%s" % (": " + why if why else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
