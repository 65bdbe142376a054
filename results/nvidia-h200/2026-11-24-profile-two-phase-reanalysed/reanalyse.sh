#!/bin/bash
# issue 13: the two-phase profiles of ../2026-11-24-profile-two-phase computed again offline
# (gpuwatt profile --from: their runs recovered from the readings on the sample grid) with
# the models they were measured with, and run 3's also with the built-in model. No GPU.
#   GPUWATT=path/to/gpuwatt bash reanalyse.sh
set -u
B=${GPUWATT:-gpuwatt}
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$HERE/../2026-11-24-profile-two-phase"
cd "$HERE"
: > summary.txt
one() { # out dir model
  "$B" profile --from "$SRC/$2" --sensor-profile "$3" > "$1.txt" 2> "$1.stderr"; [ -s "$1.stderr" ] || rm -f "$1.stderr"
  "$B" profile --from "$SRC/$2" --sensor-profile "$3" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); lr = d["long_run"]["energy_per_launch_j"]; t = d.get("transition") or {}
ph = " ".join("%s %+.1f%%%s" % (p["name"], 100 * p["diff"], " resolved" if p["resolved"] else "") if p["bins"] else "%s -" % p["name"] for p in d["phases"])
print("%-22s %-26s res %5.2f ms | transition %5.2f -> %5.2f ms over %5.2f ms, stated %5.2f ms: %-6s | energy %.4f J [%.4f, %.4f], long runs %.4f J (%+.2f %%): %s | %s" % (
  sys.argv[1], sys.argv[2], d["resolution_s"] * 1e3, t.get("at_s", 0) * 1e3, t.get("mid_s", 0) * 1e3, t.get("width_s", 0) * 1e3, t.get("resolution_s", 0) * 1e3,
  "within" if t.get("within_resolution") else "BEYOND", d["energy_j"], d["energy_low_j"], d["energy_high_j"], lr, 100 * (d["energy_j"] - lr) / lr,
  "holds" if d["energy_low_j"] <= lr <= d["energy_high_j"] else "MISSES", ph))' "$1" "$(basename "$3")" >> summary.txt
}
for k in 0.5ms_0.5ms 1ms_1ms 2ms_2ms 4ms_4ms; do one "run2-$k-builtin" "run2-GPU-384f571f/$k" builtin-h200-samples.json; done
for k in 4ms_4ms 8ms_8ms; do
  one "run3-$k-fitted" "run3-GPU-bf414aeb/$k" "$SRC/run3-GPU-bf414aeb/sensor.json"
  one "run3-$k-builtin" "run3-GPU-bf414aeb/$k" builtin-h200-samples.json
done
for k in p4 p2 p1 p05; do one "run1-$k" "$k" "$SRC/h200-samples.json"; done
"$B" version > version.txt 2>&1
