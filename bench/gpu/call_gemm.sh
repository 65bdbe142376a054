#!/usr/bin/env bash
# Issue 34 on a real GPU: the energy of one call, measured by `gpuwatt call` (repetitions
# at phases spread over the sensor's cycle, calibrated to the board's energy counter over
# the whole run), against a reference run of the same call with the same waits measured by
# the counter alone (bench/gpu/call_reference.py): E/N over >= 10 s, above the active idle
# before and after it.
# Time budget: about 290 s of wall time on one GPU (BUDGET; 5 GEMMs and one attention op,
# ~48 s each: ~8 s to start torch, 2 s idle, gpuwatt's 2 s lead, ~18 s of calls, 2 s tail,
# 2 s idle, the 10 s replay, 2 s idle). One GPU (NVML index $GPU, CUDA through
# CUDA_VISIBLE_DEVICES=$GPU). Works on an H100 and an H200 (bf16 cuBLAS GEMMs and torch's
# scaled_dot_product_attention, ~6 GB of GPU memory at most).
#
#   GPU=0 bash bench/gpu/call_gemm.sh OUTDIR
#
# For each item, `gpuwatt call --target 1% --warmup 0 --lead 2s --tail 2s --out OUTDIR/<item>
# -- python3 bench/gpu/call_worker.py ...`: the worker sets the call up and warms it up, polls
# NVML's energy counter in a thread of its own (no gpuwatt code) but not while gpuwatt
# measures (gpuwatt reads the counter itself then; the ring lost readings in half the windows
# while the worker read it back to back: results/nvidia-h200/2026-11-28-call-2), waits 2 s of
# active idle, says `ready`, runs the call on each `call N` gpuwatt sends (N = the item's
# batch: ~40-50 ms of back-to-back calls per repetition), answers with time.monotonic()
# around two torch.cuda.synchronize(). At the end of its stdin it waits 2 s, replays the
# calls with gpuwatt's own waits between them for 10 s (the reference run), waits 2 s more
# and writes OUTDIR/<item>.reference.json (every counter change, every span of both runs, and
# both figures: the reference run's, and the counter's over gpuwatt's run). gpuwatt stops at
# ±1 % (--target; the repetitions it needed are in call.json) or after --max-time, and keeps
# its whole recording (trace.csv.gz: ring and counter) so that call.json can be computed
# again from it (internal/call's recorded-run tests). Then bench/gpu/call_table.py:
# OUTDIR/call_table.md and .json.
#
# The sensor model passed (--sensor) only sets the windows around each call and the waits
# between them (docs/call.md): a 14 ms lag on a 20 ms grid, 4 ms late, as fitted on the
# H100 and the H200s (FACTS.md); the readings in each window are integrated as they are.
#
# Environment: GPUWATT (default .gpu/gpuwatt), GPU (default 0), TARGET (default 1%),
# MAX_TIME (default 30s; whole seconds; shrunk to fit BUDGET), BUDGET (default 290 s for the
# whole script), OVERHEAD (default 30 s per item besides the calls), IDLE (default 2),
# REPLAY (default 10 s), STEADY (default 0: no back-to-back run), ONLY (a space-separated
# list of item names), ITEMS (lines "name op batch" instead of the six).
set -u
OUT=${1:?usage: call_gemm.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
GPU=${GPU:-0}
TARGET=${TARGET:-1%}
MAX_TIME=${MAX_TIME:-30s}
BUDGET=${BUDGET:-290}  # wall seconds for the whole script: each item's --max-time shrinks to fit
OVERHEAD=${OVERHEAD:-30}
STEADY=${STEADY:-0}
IDLE=${IDLE:-2}
REPLAY=${REPLAY:-10}
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

# name  op  batch (calls per repetition: ~40-50 ms of back-to-back calls on an H200)
ITEMS=${ITEMS:-"
gemm-4096 gemm:4096x4096x4096 250
gemm-8192x4096 gemm:8192x8192x4096 60
gemm-8192 gemm:8192x8192x8192 30
gemm-16384x8192 gemm:16384x16384x8192 8
gemm-16384x73728 gemm:16384x16384x73728 1
sdpa-8x32x4096x128 sdpa:8,32,4096,128 10
"}

{
  echo "# bench/gpu/call_gemm.sh $OUT"
  date -u +%Y-%m-%dT%H:%M:%SZ
  "$B" version
  nvidia-smi -q | sed -n '1,12p' | grep -E 'Driver Version|CUDA Version' || true
  # the measured board's own line (nvidia-smi -q's first lines are GPU 0's, whichever ran)
  nvidia-smi -i "$GPU" --query-gpu=index,name,uuid,power.limit --format=csv || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "GPU=$GPU TARGET=$TARGET MAX_TIME=$MAX_TIME BUDGET=$BUDGET IDLE=$IDLE REPLAY=$REPLAY STEADY=$STEADY SENSOR=$SENSOR"
} > "$OUT/meta.txt" 2>&1
cat "$OUT/meta.txt"

T0=$(date +%s)
LEFT=$(echo "$ITEMS" | while read -r name _; do
  [ -n "$name" ] || continue
  if [ -n "${ONLY:-}" ] && ! echo " $ONLY " | grep -q " $name "; then continue; fi
  echo "$name"; done | wc -l)
echo "$ITEMS" | while read -r name op batch; do
  [ -n "$name" ] || continue
  if [ -n "${ONLY:-}" ] && ! echo " $ONLY " | grep -q " $name "; then continue; fi
  d="$OUT/$name"
  # this item's share of what is left of the budget, less what it needs besides the calls
  share=$(( (BUDGET - ($(date +%s) - T0)) / LEFT - OVERHEAD ))
  LEFT=$((LEFT - 1))
  mt=${MAX_TIME%s}
  [ "$share" -lt "$mt" ] && mt=$share
  [ "$mt" -lt 5 ] && mt=5
  cmd=("$B" call --gpu "$GPU" --target "$TARGET" --max-time "${mt}s" --batch "$batch" --warmup 0 --sensor "$SENSOR"
       --lead 2s --tail 2s --ready-timeout 2m --exit-timeout "$((REPLAY + 3 * IDLE + 30))s" --out "$d" --
       python3 bench/gpu/call_worker.py --gpu "$GPU" --op "$op" --steady "$STEADY" --idle "$IDLE" --replay "$REPLAY"
       --reference "$OUT/$name.reference.json")
  echo "== $name: ${cmd[*]}" | tee -a "$OUT/commands.txt"
  s=$(date +%s)
  CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$GPU timeout -k 5 $((mt + OVERHEAD + REPLAY + 40)) "${cmd[@]}" > "$OUT/$name.txt" 2> "$OUT/$name.stderr.txt"
  rc=$?
  echo "   exit $rc in $(( $(date +%s) - s )) s" | tee -a "$OUT/commands.txt"
  [ -f "$OUT/$name.reference.json" ] && [ -d "$d" ] && cp "$OUT/$name.reference.json" "$d/reference.json"
  [ -f "$d/trace.csv" ] && gzip -f "$d/trace.csv"
  sed -n '1,12p' "$OUT/$name.txt"
  grep -E '^(reference|same run):' "$OUT/$name.stderr.txt" || tail -3 "$OUT/$name.stderr.txt"
done

python3 bench/gpu/call_table.py "$OUT"
