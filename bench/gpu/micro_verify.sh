#!/usr/bin/env bash
# Issue 19 item 3 on a GPU machine: what micro counts, checked against what the GPU runs,
# and micro's operand patterns. From the repository root:
#
#   GPUWATT=/path/to/gpuwatt bash bench/gpu/micro_verify.sh OUTDIR
#
# 1. micro under every operand pattern: the classes that have patterns, and the baseline
#    (`micro --operands all`, 20 sensor updates per kernel): OUTDIR/micro/.
# 2. `gpuwatt micro --ptx` writes every kernel's PTX and kernels.json (the counts); ptxas
#    compiles each for this GPU and cuobjdump dumps its SASS: OUTDIR/ptx/, OUTDIR/sass/.
# 3. Nsight Compute profiles one launch of every kernel (bench/gpu/launch_ptx.py loads the
#    same PTX through the driver): instructions executed by SASS class and pipe, DRAM and L2
#    bytes: OUTDIR/ncu-memory.csv, OUTDIR/ncu-arith.csv. --clock-control none: ncu must not lock the clocks.
# 4. `gpuwatt micro --check OUTDIR` (internal/micro/sass): OUTDIR/check.md, check.json.
# Every step's exit code and wall time go to OUTDIR/steps.txt; a failing step does not stop
# the others. Nothing on the card is changed.
set -u
OUT=${1:?usage: micro_verify.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
HERE=$(cd "$(dirname "$0")" && pwd)
export PATH=$PATH:/usr/local/cuda/bin
if ! command -v ncu >/dev/null; then
  for n in /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu; do
    [ -x "$n" ] && PATH=$PATH:$(dirname "$n") && break
  done
fi
mkdir -p "$OUT"
step() { # step NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local s; s=$(date +%s%N)
  timeout -s INT "$limit" "$@"
  local rc=$?
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$name exit $rc after $((ms / 1000)).$((ms % 1000 / 100)) s" | tee -a "$OUT/steps.txt"
  return $rc
}
{ date -u; nvidia-smi -q | head -60; nvidia-smi -L; "$B" version; nvcc --version; ncu --version; } >"$OUT/env.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d . | tr -d ' ')
arch=${arch:-90}
cc="${arch:0:${#arch}-1}.${arch: -1}"

# 1. The operand patterns.
step micro "${MICRO_LIMIT:-95}" "$B" micro ${MICRO_DEVICE:+--device "$MICRO_DEVICE"} --only baseline,int32.add,int32.mad,int32.logic,int64.add,fp32.add,fp32.fma,fp64.fma,fp16.fma,bf16.fma \
  --operands all --min-updates 20 --warmup 500ms --out "$OUT/micro" >"$OUT/micro.txt" 2>"$OUT/micro-progress.txt"

# 2. PTX, SASS.
step ptx "${PTX_LIMIT:-10}" "$B" micro --ptx "$OUT/ptx" --operands all --cc "$cc"
mkdir -p "$OUT/sass" "$OUT/cubin"
sass() {
  local f=$1 b; b=$(basename "$f" .ptx)
  ptxas -arch="sm_$arch" -O3 -o "$OUT/cubin/$b.cubin" "$f" 2>"$OUT/sass/$b.ptxas.txt" &&
    cuobjdump -sass "$OUT/cubin/$b.cubin" >"$OUT/sass/$b.sass" 2>>"$OUT/sass/$b.ptxas.txt"
}
export -f sass; export OUT arch
step sass "${SASS_LIMIT:-30}" bash -c 'ls "$OUT"/ptx/*.ptx | xargs -P 8 -I{} bash -c "sass {}"'
ptxas --version >"$OUT/sass/ptxas-version.txt" 2>&1
rm -rf "$OUT/cubin"

# 3. Nsight Compute: one launch of each kernel under its default operands.
metrics=smsp__inst_executed.sum,smsp__thread_inst_executed.sum,smsp__thread_inst_executed_pred_on.sum
for op in ffma fadd fmul dfma dadd dmul hfma hadd hmul integer; do
  metrics+=,smsp__sass_thread_inst_executed_op_${op}_pred_on.sum
done
for p in alu fma fmaheavy fmalite fp64 fp16 xu lsu adu cbu uniform; do
  metrics+=,smsp__inst_executed_pipe_${p}.sum
done
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg
metrics+=,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,smsp__sass_inst_executed_op_shared_ld.sum
# Keep the metrics this ncu knows (an unknown name fails the whole run); NCU_METRICS=list
# skips the query (e.g. the list a run on the same machine kept: ncu-metric-list.txt).
if [ -n "${NCU_METRICS:-}" ]; then
  metrics=$NCU_METRICS
elif timeout 15 ncu --query-metrics --chip "${NCU_CHIP:-gh100}" >"$OUT/ncu-metrics.txt" 2>&1; then
  keep=
  for m in ${metrics//,/ }; do
    base=${m%.*}
    grep -q "^$base " "$OUT/ncu-metrics.txt" && keep+=${keep:+,}$m
  done
  [ -n "$keep" ] && metrics=$keep
fi
echo "$metrics" >"$OUT/ncu-metric-list.txt"
# Two runs (ncu prints its table only at the end: a run cut short loses it): the memory
# kernels, then the arithmetic ones under their default operands.
pick() { python3 -c "
import json, re, sys; m = json.load(open('$OUT/ptx/kernels.json'))
print(','.join(k['name'] for k in m['kernels'] if '@' not in k['name'] and re.match(sys.argv[1], k['group'])))" "$1"; }
step ncu-memory "${NCU_MEM_LIMIT:-30}" ncu --csv --page raw --clock-control none --cache-control all --metrics "$metrics" \
  python3 "$HERE/launch_ptx.py" "$OUT/ptx" "$(pick '^(memory|coalescing|access-size)$')" >"$OUT/ncu-memory.csv" 2>"$OUT/ncu-memory-stderr.txt" ||
  # A metric this ncu does not know fails the whole run: the few that matter most, alone.
  step ncu-minimal "${NCU_MIN_LIMIT:-20}" ncu --csv --page raw --clock-control none --cache-control all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,gpu__time_duration.sum \
    python3 "$HERE/launch_ptx.py" "$OUT/ptx" "$(pick '^(memory|coalescing|access-size|arith)$')" >"$OUT/ncu-minimal.csv" 2>"$OUT/ncu-minimal-stderr.txt"
step ncu-arith "${NCU_ARITH_LIMIT:-30}" ncu --csv --page raw --clock-control none --cache-control all --metrics "$metrics" \
  python3 "$HERE/launch_ptx.py" "$OUT/ptx" "$(pick '^(arith|baseline)$')" >"$OUT/ncu-arith.csv" 2>"$OUT/ncu-arith-stderr.txt"
[ -f "$OUT/ncu-metrics.txt" ] && gzip -9f "$OUT/ncu-metrics.txt"
# The check (it runs anywhere: gpuwatt micro --check DIR on a copy with ptx/ and sass/).
step check "${CHECK_LIMIT:-10}" "$B" micro --check "$OUT" >"$OUT/check.md" 2>"$OUT/check-stderr.txt"
"$B" micro --check "$OUT" --json >"$OUT/check.json" 2>/dev/null
date -u >>"$OUT/steps.txt"
