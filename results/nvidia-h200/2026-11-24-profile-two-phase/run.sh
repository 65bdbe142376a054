#!/bin/bash
# issue 13: two-phase kernel profiles (fp32.fma then dram.read) on power.samples, a sweep of
# phase lengths, each with its phases' steady powers measured apart. At most 120 s (each step under timeout; a cut profile is kept, marked incomplete).
OUT="$1"; mkdir -p "$OUT"
HERE="$(cd "$(dirname "$0")" && pwd)"
GW=/tmp/gw-profile-$$
gunzip -c "$HERE/gpuwatt.gz" > $GW && chmod +x $GW
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60; } > "$OUT/env.txt" 2>&1
$GW version > "$OUT/version.txt" 2>&1
cp "$HERE/h200-samples.json" "$HERE/built_from.txt" "$OUT/"
step() { # name timeout args...
  local n=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  timeout $to $GW "$@" > "$OUT/$n.stdout" 2> "$OUT/$n.stderr"
  local rc=$?
  echo "$n rc=$rc wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s: $*" >> "$OUT/steps.txt"
}
step p4 32 profile --kernel 4ms+4ms --runs 500 --sensor-profile "$HERE/h200-samples.json" --out "$OUT/p4"
step p1 28 profile --kernel 1ms+1ms --runs 500 --sensor-profile "$HERE/h200-samples.json" --out "$OUT/p1"
step p2 28 profile --kernel 2ms+2ms --runs 500 --sensor-profile "$HERE/h200-samples.json" --out "$OUT/p2"
step p05 28 profile --kernel 0.5ms+0.5ms --runs 400 --sensor-profile "$HERE/h200-samples.json" --out "$OUT/p05"
date -u >> "$OUT/env.txt"
rm -f $GW
exit 0
