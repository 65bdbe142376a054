#!/usr/bin/env bash
# The foundation issue's runs on a GPU machine. From the repository root, with the binary
# built by `CGO_ENABLED=0 go build -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/foundation.sh OUTDIR
#
# writes OUTDIR/r/... and OUTDIR/results.tgz: the environment, `gpuwatt devices`, a
# `gpuwatt measure` of a 5 s matmul load with all its files, the Sampler benchmark (adaptive
# vs --poll max, idle and under load), and measure's wall-time overhead on the load.
set -u
OUT=${1:?usage: foundation.sh OUTDIR}
R=${WORKDIR:-/tmp/gpuwatt-run}/r
rm -rf "$R"; mkdir -p "$R"
B=${GPUWATT:-.gpu/gpuwatt}
LOAD="python3 bench/load/matmul.py"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$R/steps.txt"; }

log env
{
  date -u; uname -a; nvidia-smi; nvidia-smi -q -d POWER,CLOCK,PERFORMANCE
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
} >"$R/env.txt" 2>&1
"$B" version >"$R/version.txt" 2>&1

log devices
"$B" devices >"$R/devices.txt" 2>&1
"$B" devices --json >"$R/devices.json" 2>&1

log "measure of a 5 s matmul load"
"$B" measure --out "$R/measure" -- $LOAD --seconds 5 >"$R/measure.stdout.txt" 2>"$R/measure.txt"
echo "exit $?" >>"$R/measure.txt"

log "sampler benchmark: adaptive recording nested inside a --poll max recording of the same GPU"
for what in idle load; do
  if [ $what = idle ]; then W="sleep 10"; else W="$LOAD --seconds 10"; fi
  "$B" measure --poll max --out "$R/pmax-$what" -- "$B" measure --out "$R/pad-$what" -- $W >/dev/null 2>"$R/poll-$what.txt"
done
"$B" measure --out "$R/adaptive-alone" -- sleep 10 >/dev/null 2>"$R/adaptive-alone.txt"

log "overhead: the same fixed work bare and under measure, alternating"
TIMEFORMAT="wall %R s"
for i in 1 2 3 4 5; do
  { time $LOAD --iters 3000; } >>"$R/overhead-bare.txt" 2>&1
  { time "$B" measure --quiet --baseline 0 --tail 0 --json -- $LOAD --iters 3000; } >>"$R/overhead-measure.txt" 2>&1
done
for i in 1 2; do
  { time "$B" measure --quiet --poll max --baseline 0 --tail 0 --json -- $LOAD --iters 3000; } >>"$R/overhead-max.txt" 2>&1
done
log done
tar czf "$OUT/results.tgz" -C "$(dirname "$R")" r
