#!/usr/bin/env bash
# Issue 33 (tensor cores) on one GPU of a GPU machine (H100 or H200). From the repository
# root, with the binary built by `CGO_ENABLED=0 go build -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/tensor.sh OUTDIR
#
# Time budget: about 170 s of wall time per card (each step has its own limit below).
# Needs: one GPU, python3 with torch, pynvml and cupy, ptxas/cuobjdump/ncu (CUDA toolkit).
#
# 1. micro: the baseline and every tensor-core kernel (mma.sync bf16/fp16/tf32/int8, wgmma
#    bf16/fp16/e4m3/e5m2) under zeros, const and random operands: pJ/MAC with intervals,
#    throughput against the dense peak at the clock run, power capping (OUTDIR/micro/).
# 2. their PTX, ptxas for each module's own .target (sm_90a for wgmma) and cuobjdump's SASS
#    (OUTDIR/ptx, OUTDIR/sass); Nsight Compute on one launch of each (random operands):
#    warp-level tensor instructions and tensor pipe utilisation (OUTDIR/ncu-tensor.csv);
#    `gpuwatt micro --check OUTDIR` (OUTDIR/check.md, check.json).
# 3. archline --quick --precision tc-bf16,tc-fp8 (the tensor roofline, 1 s points):
#    eps_mac, eps_mem, pi0 with intervals, balance points, where the cap bends it (OUTDIR/archline/).
# 4. cuBLAS GEMMs (torch, bf16 and fp8) at the roofline's intensities, energy from the NVML
#    counter, against the archline fit (bench/gpu/tensor_gemm.py): OUTDIR/gemm.jsonl, gemm.md.
# Every step's exit code and wall time go to OUTDIR/steps.txt; a failing step does not stop
# the others. Nothing on the card is changed.
set -u
OUT=${1:?usage: tensor.sh OUTDIR}
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
  echo "+ $*" >>"$OUT/commands.txt"
  local s; s=$(date +%s%N)
  timeout -s INT "$limit" "$@"
  local rc=$?
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$name exit $rc after $((ms / 1000)).$((ms % 1000 / 100)) s" | tee -a "$OUT/steps.txt"
  return $rc
}
{ date -u; nvidia-smi -q | head -40; nvidia-smi -L; "$B" version; nvcc --version; ncu --version; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } >"$OUT/env.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d . | tr -d ' ')
arch=${arch:-90}
cc="${arch:0:${#arch}-1}.${arch: -1}"

# 1. micro (~45 s: 25 kernels of ~1.5 s).
step micro "${MICRO_LIMIT:-60}" "$B" micro --only 'baseline,*.mma,*.wgmma' --operands all --min-updates 10 --warmup 300ms \
  --out "$OUT/micro" >"$OUT/micro.txt" 2>"$OUT/micro-progress.txt"

# 2. PTX, SASS, Nsight Compute, the check (~35 s).
step ptx 10 "$B" micro --ptx "$OUT/ptx" --only '*.mma,*.wgmma' --operands random --cc "$cc"
mkdir -p "$OUT/sass" "$OUT/cubin"
for f in "$OUT"/ptx/*.ptx; do
  b=$(basename "$f" .ptx); t=$(grep -m1 '^\.target' "$f" | awk '{print $2}')
  ptxas -v -arch="$t" -O3 -o "$OUT/cubin/$b.cubin" "$f" >"$OUT/sass/$b.ptxas.txt" 2>&1 &&
    cuobjdump -sass "$OUT/cubin/$b.cubin" >"$OUT/sass/$b.sass" 2>>"$OUT/sass/$b.ptxas.txt"
done
ptxas --version >"$OUT/sass/ptxas-version.txt" 2>&1
rm -rf "$OUT/cubin"
metrics=smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed_pipe_tensor_op_imma.sum,smsp__inst_executed_pipe_tensor_op_gmma.sum
metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_int8.sum,sm__ops_path_tensor_src_fp8.sum
metrics+=,gpu__time_duration.sum,sm__cycles_elapsed.avg,dram__bytes_read.sum,dram__bytes_write.sum
names=$(python3 -c "import json; print(','.join(k['name'] for k in json.load(open('$OUT/ptx/kernels.json'))['kernels']))")
step ncu "${NCU_LIMIT:-45}" ncu --csv --page raw --clock-control none --metrics "$metrics" \
  python3 "$HERE/launch_ptx.py" "$OUT/ptx" "$names" >"$OUT/ncu-tensor.csv" 2>"$OUT/ncu-stderr.txt"
step check 10 "$B" micro --check "$OUT" >"$OUT/check.md" 2>"$OUT/check-stderr.txt"
"$B" micro --check "$OUT" --json >"$OUT/check.json" 2>/dev/null

# 3. The tensor roofline (~45 s: 31 points of ~1.3 s).
step archline "${ARCH_LIMIT:-60}" "$B" archline --quick --precision tc-bf16,tc-fp8 --min-duration 1s --min-updates 10 --warmup 250ms \
  --out "$OUT/archline" >"$OUT/archline.txt" 2>"$OUT/archline-progress.txt"

# 4. cuBLAS at the same intensities (~35 s: 12 shapes of 2.5 s).
step gemm "${GEMM_LIMIT:-45}" python3 "$HERE/tensor_gemm.py" measure "$OUT/gemm.jsonl" --seconds 2.5 >"$OUT/gemm-progress.txt" 2>&1
python3 "$HERE/tensor_gemm.py" compare "$OUT/gemm.jsonl" "$OUT/archline/results.json" >"$OUT/gemm.md" 2>&1
gzip -9f "$OUT/micro/trace.csv" "$OUT/archline/trace.csv" 2>/dev/null
date -u >>"$OUT/steps.txt"
