#!/usr/bin/env python3
"""The last request otlpbridge received (decoded by the Collector's pdata) against what
Prometheus answers for hw_energy_joules_total and hw_power_watts: same value, same time (ms)."""
import glob, json, sys
last = json.load(open(sorted(glob.glob("requests/request-*.json"))[-1]))
pushed = {}
for rm in last["resourceMetrics"]:
    for sm in rm["scopeMetrics"]:
        for m in sm["metrics"]:
            dps = (m.get("sum") or m.get("gauge"))["dataPoints"]
            pushed[m["name"]] = (dps[-1]["asDouble"], int(dps[-1]["timeUnixNano"]) // 1_000_000)
ok = True
for name, q in (("hw.energy", "query-hw_energy_joules_total_.json"), ("hw.power", "query-hw_power_watts_.json")):
    r = json.load(open(q))["data"]["result"]
    got = float(r[0]["value"][1])
    want, ms = pushed[name]
    same = len(r) == 1 and got == want
    ok &= same
    print(f"{name}: pushed {want!r} at {ms} ms; Prometheus has {got!r}: {'same' if same else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
