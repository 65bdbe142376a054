#!/usr/bin/env bash
# Issue 34: where the run-to-run spread of a call's energy on a GPU comes from. The same five
# bf16 GEMMs (as bench/gpu/call_repeat.sh: ~0.22-53 ms per call, in repetitions of ~45 ms,
# each after 0.19 s, as gpuwatt call places them) read by NVML's energy counter alone (no
# gpuwatt), E/N above the active idle before and after each item's 8 s, in four rounds that
# change one thing at a time:
#   round 1 and 2: one process, the same operands (torch.manual_seed(1)), ~1 min apart;
#   round 3: the same process, fresh operands (manual_seed(2));
#   round 4: a new process, the operands of round 1 again (manual_seed(1)).
# results/nvidia-h200/2026-11-28-call-5-repeats (a new process and new unseeded operands per
# run) spread 1.10 % per run, 2026-11-28-call-5 (one process) 0.47 %: this says which.
#
# Time budget: about 260 s of wall time on one GPU (4 rounds × 5 items × 10 s, two python
# starts of ~15 s, the table). One GPU (NVML index $GPU; CUDA through CUDA_VISIBLE_DEVICES).
# Works on an H100 and an H200 (~7 GB of GPU memory). No gpuwatt binary needed.
#
#   GPU=0 bash bench/gpu/call_spread.sh OUTDIR
#
# Environment: GPU (default 0), SECONDS_PER_ITEM (default 8), IDLE (default 2), ITEMS.
set -u
OUT=${1:?usage: call_spread.sh OUTDIR}
GPU=${GPU:-0}
S=${SECONDS_PER_ITEM:-8}
IDLE=${IDLE:-2}
ITEMS=${ITEMS:-"gemm-4096x5120 gemm:4096x4096x5120 200;gemm-8192x4096 gemm:8192x8192x4096 60;gemm-8192 gemm:8192x8192x8192 30;gemm-16384x8192 gemm:16384x16384x8192 8;gemm-16384x73728 gemm:16384x16384x73728 1"}
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  echo "call_spread.sh: $OUT is not empty: give a new OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT"
{
  echo "# bench/gpu/call_spread.sh $OUT"
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi -q | sed -n '1,40p' | grep -E 'Driver Version|CUDA Version' || true
  nvidia-smi --query-gpu=index,name,uuid,temperature.gpu,power.draw --format=csv || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "GPU=$GPU SECONDS_PER_ITEM=$S IDLE=$IDLE"
  echo "ITEMS=$ITEMS"
} > "$OUT/meta.txt" 2>&1
cat "$OUT/meta.txt"
run() {
  echo "python3 bench/gpu/call_spread.py --out $OUT --items \"$ITEMS\" --gpu $GPU --seconds $S --idle $IDLE $*" >> "$OUT/commands.txt"
  CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$GPU timeout -k 5 200 python3 bench/gpu/call_spread.py --out "$OUT" --items "$ITEMS" --gpu "$GPU" --seconds "$S" --idle "$IDLE" "$@" 2>&1 | tee -a "$OUT/script.log"
}
s=$(date +%s)
run --round 1 --rounds-here 3 --seed 1 --reseed 2
run --round 4 --rounds-here 1 --seed 1
echo "wall $(( $(date +%s) - s )) s" | tee -a "$OUT/commands.txt"
nvidia-smi --query-gpu=index,uuid,temperature.gpu,power.draw --format=csv >> "$OUT/meta.txt" 2>&1 || true
python3 bench/gpu/call_spread_table.py "$OUT"
