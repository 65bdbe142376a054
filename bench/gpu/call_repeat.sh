#!/usr/bin/env bash
# Issue 34 on a real GPU: the energy of one call measured twice by `gpuwatt call`, a pass of
# minutes apart on the same card, against a reference run by the energy counter alone (the
# same calls with the same waits, E/N over >= 10 s, right after the item's second run): do
# the intervals, with their run-to-run part (the spread between the blocks of each run, split
# at its idle gaps), hold the reference and each other? Five bf16 cuBLAS GEMMs of ~0.22 to
# ~53 ms per call on an H200 (4096x4096x5120, 8192x8192x4096, 8192^3, 16384^2x8192,
# 16384^2x73728), each in repetitions of ~45 ms (the ring adds ~2 J of noise to a repetition
# whatever its length: results/nvidia-h200/2026-11-28-call).
#
# Time budget: about 290 s of wall time on one GPU (BUDGET 265 s for the ten runs, the five
# replays and the idle between them, ~8 s of calls per run; ~15 s to start torch and set the
# five GEMMs up; the tables). One GPU (NVML index $GPU; CUDA through CUDA_VISIBLE_DEVICES=$GPU);
# ~7 GB of GPU memory. Works on an H100 and an H200 (bf16 torch.matmul).
#
#   GPU=0 bash bench/gpu/call_repeat.sh OUTDIR
#
# One python process (bench/gpu/call_repeat.py) sets the GEMMs up once and runs, for pass 1
# and then pass 2, each GEMM through `gpuwatt call --stdio --target 3% --warmup 0 --lead 2s
# --tail 2s --out OUTDIR/<item>-run<pass>` (it answers the protocol itself), 2 s of idle
# between runs; after an item's pass-2 run it replays that run's calls with the same waits
# for 10 s (the reference). NVML's energy counter is polled by a thread of its own (no
# gpuwatt code), paused while gpuwatt measures. Then bench/gpu/call_repeat_table.py (runs
# against the reference and against each other, the run-to-run spread the pairs show) and
# bench/gpu/call_table.py (the ring against the counter).
#
# Environment: GPUWATT (default .gpu/gpuwatt), GPU (default 0), TARGET (default 3%: reachable
# with the H200's run-to-run floor of 2.15 %, so a run stops at its target), BUDGET
# (default 265), REPLAY (default 10), IDLE (default 2), PASSES (default 2), MAX_TIME (default
# 30: seconds of calls per run at most), SENSOR, EXTRA (more gpuwatt call flags), ITEMS
# ("name op batch;..." instead of the five).
set -u
OUT=${1:?usage: call_repeat.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
GPU=${GPU:-0}
TARGET=${TARGET:-3%}
BUDGET=${BUDGET:-265}
REPLAY=${REPLAY:-10}
IDLE=${IDLE:-2}
PASSES=${PASSES:-2}
MAX_TIME=${MAX_TIME:-30}
SENSOR=${SENSOR:-rc:tau=14ms,period=20ms,delay=4ms}
EXTRA=${EXTRA:-}
ITEMS=${ITEMS:-"gemm-4096x5120 gemm:4096x4096x5120 200;gemm-8192x4096 gemm:8192x8192x4096 60;gemm-8192 gemm:8192x8192x8192 30;gemm-16384x8192 gemm:16384x16384x8192 8;gemm-16384x73728 gemm:16384x16384x73728 1"}
if [ ! -x "$B" ]; then
  echo "call_repeat.sh: no gpuwatt binary at $B (build it: CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt)" >&2
  exit 2
fi
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  echo "call_repeat.sh: $OUT is not empty: give a new OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT"
{
  echo "# bench/gpu/call_repeat.sh $OUT"
  date -u +%Y-%m-%dT%H:%M:%SZ
  "$B" version
  nvidia-smi -q | sed -n '1,12p' | grep -E 'Driver Version|CUDA Version' || true
  # the measured board's own line (nvidia-smi -q's first lines are GPU 0's, whichever ran)
  nvidia-smi -i "$GPU" --query-gpu=index,name,uuid,power.limit --format=csv || true
  nvidia-smi --query-gpu=index,uuid,temperature.gpu,power.draw --format=csv || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "GPU=$GPU TARGET=$TARGET BUDGET=$BUDGET REPLAY=$REPLAY IDLE=$IDLE PASSES=$PASSES MAX_TIME=$MAX_TIME SENSOR=$SENSOR EXTRA=$EXTRA"
  echo "ITEMS=$ITEMS"
} > "$OUT/meta.txt" 2>&1
cat "$OUT/meta.txt"
cmd=(python3 bench/gpu/call_repeat.py --out "$OUT" --items "$ITEMS" --passes "$PASSES" --gpuwatt "$B" --gpu "$GPU"
     --target "$TARGET" --budget "$BUDGET" --max-time "$MAX_TIME" --replay "$REPLAY" --idle "$IDLE" --sensor "$SENSOR" --extra "$EXTRA")
echo "${cmd[*]}" > "$OUT/commands.txt"
s=$(date +%s)
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$GPU timeout -k 5 $((BUDGET + 90)) "${cmd[@]}" 2>&1 | tee "$OUT/script.log"
echo "exit ${PIPESTATUS[0]} in $(( $(date +%s) - s )) s" | tee -a "$OUT/commands.txt"
for d in "$OUT"/*/; do
  [ -f "$d/trace.csv" ] && gzip -f "$d/trace.csv"
  [ -f "$d/call.json" ] && cp "$d/reference.json" "${d%/}.reference.json" 2>/dev/null
done
nvidia-smi --query-gpu=index,uuid,temperature.gpu,power.draw --format=csv >> "$OUT/meta.txt" 2>&1 || true
python3 bench/gpu/call_repeat_table.py "$OUT"
python3 bench/gpu/call_table.py "$OUT" > /dev/null || true
