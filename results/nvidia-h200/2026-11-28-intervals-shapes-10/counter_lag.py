"""For each energy-counter reading gpuwatt's measure recorded (recorded/measure/trace.csv.gz),
when the independent poller (recorded/poller.csv.gz) first saw the same value: how early
gpuwatt stamped it. Usage: python3 counter_lag.py [RECORDED_DIR]"""
import bisect, csv, datetime, gzip, json, sys
d = sys.argv[1] if len(sys.argv) > 1 else "recorded"
tr = json.load(open(f"{d}/measure/trace.json"))
st = datetime.datetime.fromisoformat(tr["start"].replace("Z", "+00:00")).timestamp()
rows = [r for r in csv.DictReader(gzip.open(f"{d}/measure/trace.csv.gz", "rt")) if r["channel"] == "energy.total"]
pol = [(float(r["t_before_unix_s"]), int(r["energy_mj"]) / 1000) for r in csv.DictReader(gzip.open(f"{d}/poller.csv.gz", "rt"))]
pe = [e for _, e in pol]
lags = []
for r in rows:
    t, v = float(r["t_s"]), float(r["value"])
    i = bisect.bisect_left(pe, v - 1e-6)
    if 0 < i < len(pol):
        lags.append((t, pol[i][0] - st - t))
early = [l for _, l in lags if l > 0.2]
print(f"{len(rows)} counter readings, {len(lags)} matched to the poller; stamped more than 0.2 s early: {len(early)}"
      f" (median {sorted(early)[len(early)//2]:.2f} s, max {max(early):.2f} s)" if early else "")
for t, l in lags:
    print(f"  t={t:8.3f} s  the poller first saw the value {l:+.3f} s later")
