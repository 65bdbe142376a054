#!/usr/bin/env bash
# Issue 6's runs of `gpuwatt loadlevel` on a GPU machine. From the repository root, with the
# binary built by `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/loadlevel.sh OUTDIR
#
# Time budget (wall clock; everything must end within 540 s, one device call is 600 s).
# Intervals: warm-up 2 s, 2 calibrations, and per interval 1 s pre + 3 s recording + 0.5 s
# post (4.5 s); active idle 1 + 3 + 0.5 s. A run of 4 levels + idle is 2 + 6 x 4.5 + 4.5
# = 33.5 s; a run of the 100 % level only + idle is 2 + 3 x 4.5 + 4.5 = 20 s.
#   1. build the C++ CUDA reference (bench/reference/fft_tx.cu) with nvcc     ~ 30 s
#   2. own FFT, sizes 64, 512, 4096, levels 100/75/50/25 + idle, CTX contexts  3 x 33.5 = 100 s
#   3. own FFT, size 64, 3 runs (run-to-run CV of power and throughput), CV_IV:
#      5 s warm-up, 3 x 11.5 s calibration, 5 x 11.5 s levels and idle          3 x 97   = 291 s
#   4. contexts sweep 1,2,4,8 at size 64, 100 % level + idle                 4 x 20   =  80 s
#   5. the reference, 64 points, 1,2,4,8 host threads, 1 s warm-up + 3 s each 4 x 4.5  =  18 s
#   6. cuFFT, sizes 64, 512, 4096, 100 % level + idle, CTX contexts          3 x 20   =  60 s
#   start-up (driver, NVML, JIT, per-run contexts) about 1-2 s per invocation            ~ 15 s
#                                                                      total about 600 s
# so one device call cannot hold them all: pick steps with STEPS="runs3 reference" etc.
# Each step is skipped (and says so) when the time left before LIMIT (default 530 s) is
# shorter than its budget. Writes OUTDIR/results.tgz: env.txt, reference.jsonl,
# compare.md, and per step the gpuwatt results.json, report.html, --json and stderr.
set -u
OUT=${1:?usage: loadlevel.sh OUTDIR}
R=${WORKDIR:-/tmp/gpuwatt-loadlevel}/r
rm -rf "$R"; mkdir -p "$R"
B=${GPUWATT:-.gpu/gpuwatt}
CTX=${CTX:-4}
LIMIT=${LIMIT:-530}
T0=$(date +%s)
IV=(--warmup 2s --calibrations 2 --pre 1s --record 3s --post 500ms --idle 3s)
# The run-to-run CV step takes longer intervals (3 calibrations, 10 s recordings): short
# recordings put the power CV above 1.5 % on the first H200 run. About 300 s for 3 runs.
CV_IV=(--warmup 5s --calibrations 3 --pre 1s --record 10s --post 500ms --idle 10s)
STEPS=${STEPS:-sizes runs3 contexts reference cufft}
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
step() { # step NAME BUDGET_S ARGS...: one gpuwatt loadlevel invocation
  local name=$1 budget=$2; shift 2
  want "$name" || return 0
  local iv=("${IV[@]}"); [ "$name" = runs3 ] && iv=("${CV_IV[@]}")
  if [ "$(left)" -lt "$budget" ]; then echo "skip $name: $(left) s left, needs $budget s" | tee -a "$R/skipped.txt"; return; fi
  local s=$(date +%s)
  timeout -s INT "$(( $(left) - 5 ))" "$B" loadlevel "${iv[@]}" --out "$R/$name" --json "$@" >"$R/$name.json" 2>"$R/$name.txt"
  echo "$name: exit $? after $(( $(date +%s) - s )) s ($(left) s left)" | tee -a "$R/steps.txt"
}
echo "time budget: about 405 s of $LIMIT s (see the header of $0); contexts $CTX"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
{ date -u; nvidia-smi; "$B" version; nproc; } >"$R/env.txt" 2>&1
s=$(date +%s)
nvcc -O3 -arch=sm_${arch:-90} -std=c++17 -o "$R/fft_tx" bench/reference/fft_tx.cu 2>"$R/nvcc.txt" || { cat "$R/nvcc.txt"; echo "nvcc failed: no reference" | tee -a "$R/steps.txt"; }
echo "nvcc: $(( $(date +%s) - s )) s" | tee -a "$R/steps.txt"

step sizes 105 --variant gpu --size 64,512,4096 --contexts "$CTX"
step runs3 300 --variant gpu --size 64 --contexts "$CTX" --runs 3
step contexts 85 --variant gpu --size 64 --contexts 1,2,4,8 --levels 100
if want reference && [ -x "$R/fft_tx" ]; then
  for t in 1 2 4 8; do
    "$R/fft_tx" --size 64 --threads "$t" --seconds 3 --warmup 1 >>"$R/reference.jsonl" 2>>"$R/reference.txt"
  done
  echo "reference: done ($(left) s left)" | tee -a "$R/steps.txt"
fi
step cufft 65 --variant cufft --size 64,512,4096 --contexts "$CTX" --levels 100

python3 - "$R" "$CTX" <<'PY' | tee "$R/compare.md"
import json, os, sys
r, ctx = sys.argv[1], int(sys.argv[2])
def load(name):
    try:
        return json.load(open(f"{r}/{name}.json"))
    except Exception as e:
        print(f"- {name}: no results ({e})")
        return None
ref = {}
if os.path.exists(f"{r}/reference.jsonl"):
    for line in open(f"{r}/reference.jsonl"):
        j = json.loads(line)
        ref[j["threads"]] = j
print("## 100 % level of 64-point FFTs: gpuwatt (own PTX FFT, calibrated rate) vs the C++ CUDA reference (goal >= 90 %)\n")
print("| contexts / host threads | gpuwatt tx/s at the 100 % level | reference tx/s | gpuwatt / reference |")
print("|---:|---:|---:|---:|")
rates, cal = {}, {}
for name in ("contexts", "sizes", "runs3"):
    rep = load(name) if os.path.exists(f"{r}/{name}.json") else None
    for c in (rep or {}).get("configs", []):
        if c["size"] == 64:
            for run in c["runs"]:
                cal.setdefault(c["contexts"], []).append(run["calibrated_tx_per_s"])
                for l in run["levels"]:
                    if not l["active_idle"] and l["target_load"] == 1:
                        rates.setdefault(c["contexts"], []).append(l["tx_per_s"])
for n in sorted(set(rates) | set(ref)):
    g = sum(rates.get(n, [0])) / max(1, len(rates.get(n, [])))
    k = max(cal.get(n, [0]))
    f = ref.get(n, {}).get("tx_per_s", 0)
    print(f"| {n} | {g:.0f} (calibrated {k:.0f}) | {f:.0f} | {100*g/f:.1f} % |" if f else f"| {n} | {g:.0f} | - | - |")
print("\n(gpuwatt: the mean tx/s of the 100 % level over the runs at that context count, beside the best"
      " calibrated rate; the reference: transactions completed in 3 s after a 1 s warm-up.)\n")
rep = load("runs3")
if rep:
    for c in rep["configs"]:
        print(f"## Run-to-run CV, FFT {c['size']} points, {c['contexts']} contexts, {len(c['runs'])} runs (goal: power <= 1.5 %, throughput <= 2 %)\n")
        print("| level | tx/s CV | power CV | power source |")
        print("|---|---:|---:|---|")
        for v in c.get("cv", []):
            lv = "active idle" if v["active_idle"] else f"{100*v['target_load']:.0f} %"
            print(f"| {lv} | {100*v['tx_per_s_cv']:.2f} % | {100*v['power_w_cv']:.2f} % | {c['runs'][0].get('power_source','-')} |")
        print()
def levels(name, title):
    rep = load(name)
    if not rep:
        return
    print(f"## {title} (variant {rep['variant']}, {rep.get('device','')})\n")
    print("| size | contexts | level | target | actual | tx/s | power W | tx/J | valid |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for c in rep["configs"]:
        for run in c["runs"][:1]:
            for l in run["levels"]:
                lv = "idle" if l["active_idle"] else f"{100*l['target_load']:.0f} %"
                print(f"| {c['size']} | {c['contexts']} | {lv} | {100*l['target_load']:.0f} % | {100*l['actual_load']:.1f} % | {l['tx_per_s']:.0f} | {l['power_w']:.1f} | {l['tx_per_j']:.1f} | {l['valid']} |")
    print(f"\npower_w from: {rep['configs'][0]['runs'][0].get('power_source','-')}; valid {rep['valid']}\n")
levels("sizes", "Own FFT over dataset size and load level")
levels("contexts", "Contexts sweep, 64 points")
levels("cufft", "cuFFT beside the own FFT")
PY
echo "total: $(( $(date +%s) - T0 )) s" | tee -a "$R/steps.txt"
tar czf "$OUT/results.tgz" -C "$(dirname "$R")" r
