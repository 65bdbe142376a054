#!/bin/bash
# issue 13 (profile): the two-phase kernels 8+8, 4+4, 2+2 ms on power.samples with the
# built-in model (no --sensor-profile), and this card's own sensor.json fitted first in the
# same run (sensor --quick); profile.json records every run and reading, so each profile is
# computed again offline with the fitted model (profile --from DIR --sensor-profile
# sensor.json). At most ~230 s: sensor ~25 s, each profile ~50-60 s (800 runs), each step
# under its own timeout (a cut profile is kept, marked incomplete). Changes nothing on the card.
OUT="$1"; mkdir -p "$OUT"
HERE="$(cd "$(dirname "$0")" && pwd)"
GW=/tmp/gw-profile-$$
gunzip -c "$HERE/gpuwatt.gz" > $GW && chmod +x $GW
DEV=${DEV:-}   # local test: DEV="--device sim:h200"
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60; } > "$OUT/env.txt" 2>&1
$GW version > "$OUT/version.txt" 2>&1
cp "$HERE/built_from.txt" "$OUT/" 2>/dev/null
step() { # name timeout args...
  local n=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  timeout -s INT -k 5 $to $GW "$@" > "$OUT/$n.txt" 2> "$OUT/$n.stderr"
  local rc=$?
  echo "$n rc=$rc wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s: $*" >> "$OUT/steps.txt"
}
step sensor 35 sensor --quick $DEV --out "$OUT/sensor"
for kt in 8ms+8ms:62 4ms+4ms:58 2ms+2ms:58; do
  k=${kt%:*}; d="${k//+/_}"
  step "$d" ${kt#*:} profile --kernel "$k" --runs 800 $DEV --out "$OUT/$d"
done
# each profile again with this card's fitted model (offline, from the recorded runs)
if [ -s "$OUT/sensor/sensor.json" ]; then
  for k in 8ms+8ms 4ms+4ms 2ms+2ms; do
    d="${k//+/_}"
    [ -s "$OUT/$d/profile.json" ] && step "$d-fitted" 15 profile --from "$OUT/$d" --sensor-profile "$OUT/sensor/sensor.json" --out "$OUT/$d-fitted"
  done
fi
for f in "$OUT"/*/profile.json "$OUT"/*/profile.csv "$OUT"/sensor/trace.csv; do [ -f "$f" ] && gzip -9 "$f"; done
date -u >> "$OUT/env.txt"
rm -f $GW
exit 0
