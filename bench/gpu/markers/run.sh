#!/bin/bash
# bash bench/gpu/markers/run.sh OUTDIR [GPUWATT]: the markers run on a GPU (issue 15): a
# small PyTorch training loop under `gpuwatt measure`, a region per step through
# python/gpuwatt/markers.py, with torch.cuda.synchronize() at each marker and once without.
# Reads only; never changes the card's settings. About 60 s.
out=${1:?usage: run.sh OUTDIR [GPUWATT]}
gw=${2:-.gpu/gpuwatt}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{
  date -u
  nvidia-smi -L
  nvidia-smi -q | head -60
  "$gw" version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$out/env.txt" 2>&1
step() { # name, then the command
  local name=$1; shift
  local t0=$(date +%s%N)
  timeout 150 "$@" > "$out/$name.stdout" 2> "$out/$name.stderr"
  local rc=$?
  local t1=$(date +%s%N)
  echo "$name rc=$rc wall_ms=$(( (t1 - t0) / 1000000 ))" >> "$out/steps.txt"
}
step sync "$gw" measure --out "$out/sync" --json -- python3 "$here/train.py" --sync
step nosync "$gw" measure --out "$out/nosync" --json -- python3 "$here/train.py" --no-sync
for d in sync nosync; do
  [ -f "$out/$d/trace.csv" ] && gzip -9 "$out/$d/trace.csv"
done
cat "$out/steps.txt"
