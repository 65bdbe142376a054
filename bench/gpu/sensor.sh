#!/usr/bin/env bash
# The sensor issue's runs on a GPU machine. From the repository root, with the binary built
# by `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/sensor.sh OUTDIR
#
# 1. `gpuwatt sensor`: every channel's T, W, delay, tau, sensor.json, the anomaly tests.
# 2. `gpuwatt profile` of a 5 ms kernel, offline and online, with that sensor.json, on the
#    default channel (power.samples where it works: 1000 runs, about 40 s each) and, for
#    comparison, on power.instant (400 runs, about 70 s offline).
# 3. The same default profiles with the built-in H200 model (no sensor.json), to show
#    what the measured model changes.
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
prof() { # NAME ARGS...
  local name=$1; shift
  local S=$(date +%s)
  "$B" profile --kernel 5ms "$@" --out "$R/profile-$name" >"$R/profile-$name.txt" 2>&1
  echo "profile $name: exit $? after $(( $(date +%s) - S )) s" | tee -a "$R/steps.txt"
}
prof offline --sensor-profile "$R/sensor/sensor.json"
prof online --online --sensor-profile "$R/sensor/sensor.json"
prof instant-offline --channel power.instant --sensor-profile "$R/sensor/sensor.json"
prof builtin-offline
tar czf "$OUT/results.tgz" -C "$(dirname "$R")" r
