#!/usr/bin/env bash
# Issue 34 on a real GPU: the energy of one call, measured by `gpuwatt call` (repetitions
# at phases spread over the sensor's cycle), against the same call's long steady run.
# Time budget: about 190 s of wall time per card (7 items × ~27 s); one GPU (index $GPU).
# Works on an H100 and an H200 (bf16 cuBLAS GEMMs, flash attention, softmax; ~4 GB of GPU
# memory at most).
#
#   bash bench/gpu/call_gemm.sh OUTDIR
#
# For each item, `gpuwatt call --out OUTDIR/<item> -- python3 bench/gpu/call_worker.py ...`:
# the worker sets the call up, measures its reference first (2 s of active idle, then 10 s
# back to back; NVML's energy counter polled by a thread of its own, no gpuwatt code:
# OUTDIR/<item>/reference.json), says `ready`, and then runs the call on each `call N`
# gpuwatt sends (N = the item's batch: repetitions of ~10-45 ms), answering with
# time.monotonic() around two torch.cuda.synchronize(). gpuwatt stops at ±1 % (--target)
# or after --max-time 12 s. Then bench/gpu/call_table.py: OUTDIR/call_table.md and .json.
#
# The sensor model passed (--sensor) only sets the windows around each call and the waits
# between them (docs/call.md): a 14 ms lag on a 20 ms grid, 4 ms late, as fitted on the
# H100 and the H200s (FACTS.md); the readings in each window are integrated as they are.
#
# Environment: GPUWATT (default .gpu/gpuwatt), GPU (default 0), TARGET (default 1%),
# MAX_TIME (default 12s), STEADY (default 10), ONLY (a space-separated list of item names).
set -u
OUT=${1:?usage: call_gemm.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
GPU=${GPU:-0}
TARGET=${TARGET:-1%}
MAX_TIME=${MAX_TIME:-12s}
STEADY=${STEADY:-10}
SENSOR=${SENSOR:-rc:tau=14ms,period=20ms,delay=4ms}
if [ ! -x "$B" ]; then
  echo "call_gemm.sh: no gpuwatt binary at $B (build it: CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt)" >&2
  exit 2
fi
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  echo "call_gemm.sh: $OUT is not empty: give a new OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT"

# name  op  batch (calls per repetition: ~10-45 ms each)
ITEMS="
gemm-4096 gemm:4096x4096x4096 40
gemm-8192x4096 gemm:8192x8192x4096 10
gemm-8192 gemm:8192x8192x8192 5
gemm-16384x8192 gemm:16384x16384x8192 2
gemm-16384x49152 gemm:16384x16384x49152 1
sdpa-8x16x4096x128 sdpa:8,16,4096,128 10
softmax-16384 softmax:16384,16384 30
"

{
  echo "# bench/gpu/call_gemm.sh $OUT"
  date -u +%Y-%m-%dT%H:%M:%SZ
  "$B" version
  nvidia-smi -q | sed -n '1,40p' | grep -E 'Driver Version|CUDA Version|Product Name|GPU UUID|Power Limit' || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "GPU=$GPU TARGET=$TARGET MAX_TIME=$MAX_TIME STEADY=$STEADY SENSOR=$SENSOR"
} > "$OUT/meta.txt" 2>&1
cat "$OUT/meta.txt"

echo "$ITEMS" | while read -r name op batch; do
  [ -n "$name" ] || continue
  if [ -n "${ONLY:-}" ] && ! echo " $ONLY " | grep -q " $name "; then continue; fi
  d="$OUT/$name"
  cmd=("$B" call --gpu "$GPU" --target "$TARGET" --max-time "$MAX_TIME" --batch "$batch" --sensor "$SENSOR"
       --ready-timeout 2m --out "$d" --
       python3 bench/gpu/call_worker.py --gpu "$GPU" --op "$op" --steady "$STEADY" --idle 2 --reference "$OUT/$name.reference.json")
  echo "== $name: ${cmd[*]}" | tee -a "$OUT/commands.txt"
  s=$(date +%s)
  "${cmd[@]}" > "$OUT/$name.txt" 2> "$OUT/$name.stderr.txt"
  rc=$?
  echo "   exit $rc in $(( $(date +%s) - s )) s" | tee -a "$OUT/commands.txt"
  [ -f "$OUT/$name.reference.json" ] && [ -d "$d" ] && cp "$OUT/$name.reference.json" "$d/reference.json"
  sed -n '1,12p' "$OUT/$name.txt"
  grep -E '^reference:' "$OUT/$name.stderr.txt" || tail -3 "$OUT/$name.stderr.txt"
done

python3 bench/gpu/call_table.py "$OUT"
