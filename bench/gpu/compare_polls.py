#!/usr/bin/env python3
"""Share of updates the adaptive Sampler caught, against a --poll max recording made at the
same time on the same GPU (one gpuwatt measure nested inside the other).

    python3 bench/gpu/compare_polls.py MAX_DIR ADAPTIVE_DIR

For each channel, every new value the busy-polling recording saw inside the adaptive
recording's time span is looked for among the adaptive recording's samples (same value,
within 150 ms of wall-clock time; driver samples by their driver timestamp). Prints a
Markdown table. Uses only the standard library.
"""
import csv
import datetime as dt
import json
import sys

HOLD = 0.010  # seconds


def load(d):
    meta = json.load(open(f"{d}/trace.json"))
    t0 = dt.datetime.fromisoformat(meta["start"].replace("Z", "+00:00")).timestamp()
    rows = {}
    for r in csv.DictReader(open(f"{d}/trace.csv")):
        rows.setdefault(r["channel"], []).append((t0 + float(r["t_s"]), r["value"], r["driver_t_us"]))
    return meta, rows


def main(maxdir, addir):
    mmeta, mrows = load(maxdir)
    ameta, arows = load(addir)
    a0 = dt.datetime.fromisoformat(ameta["start"].replace("Z", "+00:00")).timestamp()
    lo, hi = a0 + 0.3, a0 + ameta["duration_s"] - 0.3
    stats = {c["name"]: c["stats"] for c in ameta["channels"]}
    print(f"adaptive recording: {ameta['duration_s']:.2f} s, sampler CPU {ameta.get('sampler_cpu_s', 0):.3f} s "
          f"= {100 * ameta.get('sampler_cpu_s', 0) / ameta['duration_s']:.2f} % of one core")
    print(f"max recording: {mmeta['duration_s']:.2f} s, sampler CPU {mmeta.get('sampler_cpu_s', 0):.3f} s "
          f"= {100 * mmeta.get('sampler_cpu_s', 0) / mmeta['duration_s']:.1f} % of one core\n")
    print("| channel | updates seen by --poll max | caught by adaptive | share | transient values (< 10 ms) seen by max | adaptive poll interval | adaptive polls/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    stamp_err = {}
    for ch in sorted(mrows):
        allref = mrows[ch]
        # A value that held less than HOLD before the next change is a transient read
        # (the driver's update caught half-way: power.usage for ~0.1 ms, temperature and
        # memory clock for 3-7 ms on an H200); it is counted apart, not as an update.
        # A held value equal to the last held one (after a transient) is no update either.
        ref, transient, last = [], 0, None
        for i, x in enumerate(allref):
            held = allref[i + 1][0] - x[0] if i + 1 < len(allref) else 1.0
            if held < HOLD and not x[2]:
                transient += lo <= x[0] <= hi
                continue
            if (x[2] or x[1] != last) and lo <= x[0] <= hi:
                ref.append(x)
            last = x[1]
        got = arows.get(ch, [])
        if not ref or ch not in stats:
            continue
        if ref[0][2]:
            # Driver timestamps of the same sample differ by ~0.3 ms between two processes
            # (NVML maps them per process): match value and timestamp within 2 ms.
            import bisect
            gts = sorted((int(x[2]), x[1]) for x in got)
            keys = [k for k, _ in gts]
            caught = 0
            for _, v, d in ref:
                i = bisect.bisect_left(keys, int(d) - 2000)
                while i < len(gts) and gts[i][0] <= int(d) + 2000:
                    if gts[i][1] == v:
                        caught += 1
                        break
                    i += 1
        else:
            caught, dts = 0, []
            for t, v, _ in ref:
                best = min((abs(t - gt) for gt, gv, _ in got if v == gv and abs(t - gt) <= 0.15), default=None)
                if best is not None:
                    caught += 1
                    dts.append(best)
            dts.sort()
            if dts:
                stamp_err[ch] = (1e3 * dts[len(dts) // 2], 1e3 * dts[int(0.95 * (len(dts) - 1))])
        st = stats[ch]
        if ch.startswith("energy."):
            print(f"| {ch} | {len(ref)} | {len(got)} readings | cumulative: read sparingly by design | {transient} | "
                  f"{1e3 * st['poll_interval_s']:.1f} ms | {st['polls'] / ameta['duration_s']:.1f} |")
            continue
        print(f"| {ch} | {len(ref)} | {caught} | {100 * caught / len(ref):.1f} % | {transient} | "
              f"{1e3 * st['poll_interval_s']:.1f} ms | {st['polls'] / ameta['duration_s']:.1f} |")


    if stamp_err:
        print("\nTimestamp of each caught update, adaptive minus busy-poll, |dt| median / 95th percentile (ms):")
        for ch, (med, p95) in sorted(stamp_err.items()):
            print(f"  {ch}: {med:.2f} / {p95:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
