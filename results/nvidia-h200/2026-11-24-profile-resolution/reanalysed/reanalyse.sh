#!/bin/bash
# The profiles of this run computed again offline from their records (gpuwatt profile --from)
# with the analysis of gpuwatt main at the time (the run's binary, 1ed48ca, recorded the runs but
# analysed them with the step test and energy interval of before 29e8afe): with the built-in
# model they were measured with, and with the sensor.json fitted in the same run. No GPU.
#   GPUWATT=path/to/gpuwatt bash reanalyse.sh
set -u
B=${GPUWATT:-gpuwatt}
HERE="$(cd "$(dirname "$0")" && pwd)"
RUN="$HERE/.."
cd "$HERE"
: > summary.txt
one() { # name dir [model]
  local n=$1 d=$2; shift 2
  "$B" profile --from "$RUN/$d" "$@" > "$n.txt" 2> "$n.stderr"; [ -s "$n.stderr" ] || rm -f "$n.stderr"
  "$B" profile --from "$RUN/$d" "$@" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); lr = d["long_run"]["energy_per_launch_j"]; t = d.get("transition") or {}
ph = " ".join("%s %+.1f%%%s" % (p["name"], 100 * p["diff"], " resolved" if p["resolved"] else "") if p["bins"] else "%s -" % p["name"] for p in d["phases"])
print("%-18s res %5.2f ms place %5.2f ms | transition %5.2f -> %5.2f ms over %5.2f ms, stated %5.2f ms: %-6s | energy %.4f J [%.4f, %.4f], long runs %.4f J (%+.2f %%): %s | %s" % (
  sys.argv[1], d["resolution_s"] * 1e3, d["placement_s"] * 1e3, t.get("at_s", 0) * 1e3, t.get("mid_s", 0) * 1e3, t.get("width_s", 0) * 1e3, t.get("resolution_s", 0) * 1e3,
  "within" if t.get("within_resolution") else "BEYOND", d["energy_j"], d["energy_low_j"], d["energy_high_j"], lr, 100 * (d["energy_j"] - lr) / lr,
  "holds" if d["energy_low_j"] <= lr <= d["energy_high_j"] else "MISSES", ph))' "$n" >> summary.txt
}
for k in 8ms_8ms 4ms_4ms 2ms_2ms; do
  one "$k-builtin" "$k"
  one "$k-fitted" "$k" --sensor-profile "$RUN/sensor/sensor.json"
done
"$B" version > version.txt 2>&1
