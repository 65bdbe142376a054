#!/bin/bash
# issue 15 (api): region markers on a GPU. A small PyTorch training loop (MLP 4 x 8192,
# FP32, 24 steps of batch 1024/4096/16384 in turn, ~5 s of steps) under `gpuwatt measure`,
# a region per step through python/gpuwatt.py: once with torch.cuda.synchronize() at every
# marker, once without (the unsynchronised markers should be flagged). Reads only; changes
# nothing on the card. At most ~150 s (each run under its own 70 s timeout; typical 15-20 s).
OUT="$1"; mkdir -p "$OUT"
HERE="$(cd "$(dirname "$0")" && pwd)"
GW=/tmp/gw-api-$$
gunzip -c "$HERE/gpuwatt.gz" > $GW && chmod +x $GW
DEV=${DEV:-}   # local test: DEV="--device sim:h200"
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60;
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > "$OUT/env.txt" 2>&1
$GW version > "$OUT/version.txt" 2>&1
cp "$HERE/built_from.txt" "$OUT/" 2>/dev/null
step() { # name timeout args...
  local n=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  timeout -s INT -k 5 $to $GW "$@" > "$OUT/$n.json" 2> "$OUT/$n.stderr"
  local rc=$?
  echo "$n rc=$rc wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}') s: $*" >> "$OUT/steps.txt"
}
step sync 70 measure $DEV --out "$OUT/sync" --json -- python3 "$HERE/train.py" --sync
step nosync 70 measure $DEV --out "$OUT/nosync" --json -- python3 "$HERE/train.py" --no-sync
for d in sync nosync; do
  [ -f "$OUT/$d/trace.csv" ] && gzip -9 "$OUT/$d/trace.csv"
done
rm -f $GW
cat "$OUT/steps.txt"
