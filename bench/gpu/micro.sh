#!/usr/bin/env bash
# The micro issue's runs on a GPU machine. From the repository root, with the binary built
# by `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/micro.sh OUTDIR
#
# 1. The CUDA C reference kernels (bench/reference/reference.cu), built here with nvcc.
# 2. gpuwatt's fp32.fma, fp64.fma and dram.copy, right after, on the same GPU.
# 3. The whole suite (`gpuwatt micro --out`), timed.
# Writes OUTDIR/results.tgz (reference.jsonl, compare.md, micro/ with every file).
set -u
OUT=${1:?usage: micro.sh OUTDIR}
R=${WORKDIR:-/tmp/gpuwatt-micro}/r
rm -rf "$R"; mkdir -p "$R"
B=${GPUWATT:-.gpu/gpuwatt}
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
{ date -u; nvidia-smi; "$B" version; } >"$R/env.txt" 2>&1
nvcc -O3 -arch=sm_${arch:-90} -o "$R/reference" bench/reference/reference.cu 2>"$R/nvcc.txt" || { cat "$R/nvcc.txt"; exit 1; }
"$R/reference" >"$R/reference.jsonl"
"$B" micro --only baseline,fp32.fma,fp64.fma,dram.copy --json >"$R/side-by-side.json" 2>"$R/side-by-side.txt"
python3 - "$R" <<'PY' | tee "$R/compare.md"
import json, sys
r = sys.argv[1]
ref = {j["name"]: j for j in map(json.loads, open(f"{r}/reference.jsonl"))}
rep = json.load(open(f"{r}/side-by-side.json"))
rows = {x["name"]: x for x in rep["rows"]}
p = rep["props"]
print("| kernel | gpuwatt (PTX from Go) | CUDA C reference | gpuwatt / reference | goal |")
print("|---|---:|---:|---:|---|")
for name, goal in [("fp32.fma", ">= 99 %"), ("fp64.fma", ">= 99 %"), ("dram.copy", ">= 99 %")]:
    g = rows[name].get("flops_per_s") or rows[name]["per_s"]
    c = ref[name]["per_s"]
    print(f"| {name} | {g:.4g} | {c:.4g} | {100 * g / c:.1f} % | {goal} |")
for name, lanes, goal in [("fp32.fma", 128, ">= 97 %"), ("fp64.fma", 64, ">= 98 %")]:
    nominal = 2 * lanes * p["sms"] * p["max_sm_clock_hz"]
    g = rows[name]["flops_per_s"]
    print(f"| {name} of nominal ({lanes} x 2 x {p['sms']} SMs x {p['max_sm_clock_hz']/1e9:.3g} GHz = {nominal/1e12:.2f} TFLOP/s) | {g/1e12:.2f} TFLOP/s | | {100 * g / nominal:.1f} % | {goal} |")
g, m = rows["dram.copy"]["per_s"], ref["memcpy.d2d"]["per_s"]
print(f"| dram.copy of cudaMemcpy D2D | {g/1e9:.0f} GB/s | {m/1e9:.0f} GB/s | {100 * g / m:.1f} % | >= 90 % |")
PY
S=$(date +%s)
timeout -s INT "${MICRO_LIMIT:-480}" "$B" micro --out "$R/micro" >"$R/micro.txt" 2>"$R/micro-progress.txt"
echo "exit $? after $(( $(date +%s) - S )) s" | tee -a "$R/micro-progress.txt"
tar czf "$OUT/results.tgz" -C "$(dirname "$R")" r
