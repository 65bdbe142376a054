"""Summarise the markers run (bench/gpu/markers/run.sh): per step size, the regions'
energies from gpuwatt's summary.json, their spread, duration, and energy per TFLOP from
train.py's own line (flops per step); the unsynchronised flags; the steps against the
train region that holds them.

    python3 summarize.py RUNDIR      (RUNDIR holds sync/ and nosync/, each from measure --out)
"""
import json
import os
import statistics as st
import sys


def load(d):
    with open(os.path.join(d, "summary.json")) as f:
        return json.load(f)


def train_line(path):
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{") and '"flops_per_step"' in line:
                    return json.loads(line)
    except OSError:
        pass
    return None


def main(run):
    for mode in ("sync", "nosync"):
        d = os.path.join(run, mode)
        if not os.path.exists(os.path.join(d, "summary.json")):
            print("%s: no summary.json" % mode)
            continue
        s = load(d)
        tl = train_line(os.path.join(run, mode + ".stderr"))
        g = s["gpus"][0]
        print("## %s: command %.2f s, %.1f J (%s), exit %d" % (mode, s["duration_s"], g["energy_j"], g["energy_method"], s["exit_code"]))
        regs = s.get("regions") or []
        by = {}
        for r in regs:
            by.setdefault(r["name"], []).append(r)
        print("| region | n | duration (mean) | energy (mean ± SD) | CV | half-width (median) | mean power | methods | J/TFLOP | flagged |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, rs in by.items():
            es = [r["gpus"][0]["energy_j"] for r in rs]
            ds = [r["duration_s"] for r in rs]
            hw = [(r["gpus"][0]["energy_high_j"] - r["gpus"][0]["energy_low_j"]) / 2 for r in rs]
            ps = [r["gpus"][0]["mean_power_w"] for r in rs]
            meth = sorted({r["gpus"][0]["method"] for r in rs})
            flagged = sum(1 for r in rs if any(w["code"] == "unsynchronised_marker" for w in r["gpus"][0]["warnings"]))
            m = st.mean(es)
            sd = st.stdev(es) if len(es) > 1 else 0
            jt = ""
            if tl and name.startswith("step_b"):
                fl = tl["flops_per_step"].get(name[len("step_b"):])
                if fl:
                    jt = "%.2f" % (m / (fl / 1e12))
            print("| %s | %d | %.1f ms | %.1f ± %.1f J | %.1f %% | %.1f J (%.1f %%) | %.0f W | %s | %s | %d |" % (
                name, len(rs), 1000 * st.mean(ds), m, sd, 100 * sd / m if m else 0, st.median(hw), 100 * st.median(hw) / m if m else 0,
                st.mean(ps), ",".join(meth), jt, flagged))
        train = by.get("train", [])
        steps = [r for r in regs if r["name"].startswith("step_")]
        if train and steps:
            t = train[0]["gpus"][0]["energy_j"]
            sm = sum(r["gpus"][0]["energy_j"] for r in steps)
            span = sum(r["duration_s"] for r in steps)
            print("\nsteps together: %.1f J over %.3f s; the train region: %.1f J over %.3f s (steps %+.2f %% of it)" % (
                sm, span, t, train[0]["duration_s"], 100 * (sm / t - 1)))
        for w in s["warnings"]:
            if w["code"] == "unsynchronised_marker":
                print("\nflag: %s: %s" % (w.get("subject", ""), w["message"]))
        if tl:
            print("\ntrain.py: host saw the loop queued in %.3f s, done after %.3f s" % (tl["train_host_s"], tl["train_done_s"]))
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
