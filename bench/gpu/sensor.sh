#!/usr/bin/env bash
# The sensor issue's runs on a GPU machine. From the repository root, with the binary built
# by `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/sensor.sh OUTDIR
#
# 1. `gpuwatt sensor`: every channel's T, W, delay, tau, sensor.json, the anomaly tests.
# 2. `gpuwatt profile` of a 5 ms kernel, offline and online, with that sensor.json.
# Writes OUTDIR/results.tgz.
set -u
OUT=${1:?usage: sensor.sh OUTDIR}
R=${WORKDIR:-/tmp/gpuwatt-sensor}/r
rm -rf "$R"; mkdir -p "$R"
B=${GPUWATT:-.gpu/gpuwatt}
{ date -u; nvidia-smi; "$B" version; } >"$R/env.txt" 2>&1
S=$(date +%s)
"$B" sensor --out "$R/sensor" >"$R/sensor.txt" 2>"$R/sensor-progress.txt"
echo "sensor: exit $? after $(( $(date +%s) - S )) s" | tee -a "$R/steps.txt"
for mode in offline online; do
  flag=""; [ $mode = online ] && flag=--online
  S=$(date +%s)
  "$B" profile --kernel 5ms $flag --sensor-profile "$R/sensor/sensor.json" --out "$R/profile-$mode" >"$R/profile-$mode.txt" 2>&1
  echo "profile $mode: exit $? after $(( $(date +%s) - S )) s" | tee -a "$R/steps.txt"
done
tar czf "$OUT/results.tgz" -C "$(dirname "$R")" r
