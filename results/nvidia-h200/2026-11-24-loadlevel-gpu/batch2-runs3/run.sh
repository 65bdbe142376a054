#!/usr/bin/env bash
# loadlevel (issue 14), batch 2: three runs of the default configuration (`gpuwatt loadlevel
# --runs 3`: the serve preset, GEMM 4096 x 256 x 8 in TF32 through cuBLAS, 8 users,
# 100/75/50/25 % + active idle, 58 s a run), then two short checks: the own FFT with 256
# transforms per launch (fixed after batch 1) and the seed's transactions (--preset seed).
# About 225 s in all (each step under its own timeout; 265 s at most). Never changes clocks,
# limits or modes.
set -u
OUT=${1:?usage: run.sh OUTDIR}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
B=/tmp/gw-loadlevel
gunzip -c "$HERE/gpuwatt.gz" > "$B" && chmod +x "$B"
T0=$(date +%s)
EXTRA=$(python3 -c 'import glob,site,os; print(":".join(sorted(set(os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d+"/nvidia/*/lib/libcublas*.so*")))))' 2>/dev/null)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib${EXTRA:+:$EXTRA}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60; nvidia-smi -q -d POWER | head -40; "$B" version; nproc; ls /sys/class/powercap 2>&1; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,power.draw,temperature.gpu,clocks.sm,power.limit,clocks_event_reasons.active --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
SMI=$!
step() { # NAME LIMIT_S ARGS...
  local name=$1 lim=$2; shift 2
  local s=$(date +%s)
  echo "gpuwatt loadlevel --out $name --json $*" > "$OUT/$name.cmd"
  timeout -s INT "$lim" "$B" loadlevel --out "$OUT/$name" --json "$@" > "$OUT/$name.json" 2> "$OUT/$name.txt"
  echo "$name: exit $? after $(( $(date +%s) - s )) s (total $(( $(date +%s) - T0 )) s)" | tee -a "$OUT/steps.txt"
}
SHORT=(--warmup 2s --calibrations 2 --pre 500ms --record 2s --post 500ms --idle 2s --contexts 8)
step runs3 215 --runs 3
step own-4096-x256 25 "${SHORT[@]}" --variant gpu --size 4096 --batch 256 --levels 100
step seed 25 "${SHORT[@]}" --preset seed --levels 100,50
kill $SMI 2>/dev/null
python3 - "$OUT" <<'PY' > "$OUT/summary.md" 2>&1
import json, sys, os, glob
out = sys.argv[1]
for f in sorted(glob.glob(out + "/*.json")):
    try:
        r = json.load(open(f))
    except Exception as e:
        print(f"- {os.path.basename(f)}: {e}"); continue
    for c in r.get("configs", []):
        for i, run in enumerate(c["runs"]):
            print(f"## {os.path.basename(f)} run {i+1}: {run['workload']} valid={run['valid']} cal={run['calibrated_tx_per_s']:.1f} tx/s verified={run['verified']} dropped={run['verify_dropped']} fails={(run.get('verify_failures') or [])[:2]} txerr={run.get('transaction_errors')}")
            for l in run["levels"]:
                print(f"   {'idle' if l['active_idle'] else l['target_load']}: actual={l['actual_load']:.4f} tx/s={l['tx_per_s']:.1f} W={l.get('power_w',0):.1f} [{l.get('power_low_w',0):.1f},{l.get('power_high_w',0):.1f}] tx/J={l.get('tx_per_j',0):.3f} T={l.get('temperature_c')}")
            print('   resolved:', run.get('levels_resolved'), run.get('levels_resolved_note'), '| host:', run.get('host_power_source') or run.get('host_power_unavailable'), '| invalid:', run.get('invalid'))
        if c.get("cv"):
            print("\n| level | tx/s CV | power CV |\n|---|---:|---:|")
            for v in c["cv"]:
                lv = "active idle" if v["active_idle"] else f"{100*v['target_load']:.0f} %"
                print(f"| {lv} | {100*v['tx_per_s_cv']:.2f} % | {100*v['power_w_cv']:.2f} % |")
            print()
PY
echo "total $(( $(date +%s) - T0 )) s" >> "$OUT/steps.txt"
