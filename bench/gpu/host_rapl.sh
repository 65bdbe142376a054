#!/usr/bin/env bash
# issue 31: the host's CPU and DRAM energy (RAPL through powercap) beside one GPU's, on a
# real host: what the host exposes (powercap.txt), a Slurm-style job (gpuwatt job begin, a
# 4 s bf16 matmul, gpuwatt job end: job.json's host_energy) and gpuwatt measure of a command
# with two marked regions (summary.json's host and each region's host). Where the host has
# no powercap (a VM), every output carries the one line saying so: that is the result then.
# Reads only; never changes clocks, limits or modes. Time budget: ~45 s wall (at most 90 s).
# One GPU: GPU=N (an NVML index, default 0); torch runs on that same board.
# From the repository root, with CGO_ENABLED=0 go build -o .gpu/gpuwatt ./cmd/gpuwatt:
#   GPU=0 bash bench/gpu/host_rapl.sh OUTDIR
# On the sim (checked here): GW_DEV=sim GW_SIMCFG=cfg.json GW_LOAD=sleep bash bench/gpu/host_rapl.sh OUTDIR
set -u
OUT=${1:?usage: host_rapl.sh OUTDIR}
mkdir -p "$OUT"
GPU=${GPU:-0}
B=${GPUWATT:-.gpu/gpuwatt}
GW=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
GW_DEV=${GW_DEV:-nvml}
DEVARGS=(--device "$GW_DEV")
[ -n "${GW_SIMCFG:-}" ] && DEVARGS+=(--sim-config "$GW_SIMCFG")
LOAD=${GW_LOAD:-"python3 bench/load/matmul.py --seconds"}
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$GPU
log() { echo "$*" | tee -a "$OUT/steps.txt"; }
step() { # step NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  local t0 t1 rc
  echo "$name: $*" >> "$OUT/commands.txt"
  t0=$(date +%s.%N)
  timeout "$to" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; rc=$?
  t1=$(date +%s.%N)
  log "$name rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1-$t0}")"
}
{ date -u; echo "GPU=$GPU"; "$GW" version; nvidia-smi -L; nvidia-smi -q | head -40; } > "$OUT/env.txt" 2>&1

# What the host exposes: the powercap tree, its RAPL zones, and whether energy_uj is readable.
{
  echo "id: $(id)"
  command -v systemd-detect-virt >/dev/null && echo "virt: $(systemd-detect-virt 2>&1)"
  grep -m1 'model name' /proc/cpuinfo
  echo "sockets: $(grep 'physical id' /proc/cpuinfo | sort -u | wc -l)"
  if [ -d /sys/class/powercap ]; then
    ls -l /sys/class/powercap/
    for z in /sys/class/powercap/intel-rapl:*; do
      [ -d "$z" ] || continue
      printf '%s name=%s max_energy_range_uj=%s energy_uj=%s\n' "$z" "$(cat "$z/name" 2>&1)" \
        "$(cat "$z/max_energy_range_uj" 2>&1)" "$(cat "$z/energy_uj" 2>&1)"
    done
  else
    echo "no /sys/class/powercap"
  fi
} > "$OUT/powercap.txt" 2>&1

# A job: begin, 1 s, the load, 1 s, end (SLURM_JOB_GPUS names the one GPU).
cat > "$OUT/job.sh" <<EOS
#!/usr/bin/env bash
set -u
export SLURM_JOB_ID=rapl1 SLURM_JOB_GPUS=$GPU SLURM_JOB_USER=gpuwatt-test
"$GW" job begin --dir "$OUT/jobs" ${DEVARGS[*]}; echo "begin rc=\$?" >&2
sleep 1
$LOAD 4
sleep 1
"$GW" job end --dir "$OUT/jobs"; echo "end rc=\$?" >&2
EOS
step job 60 bash "$OUT/job.sh"

# measure: a command with two marked regions (a 2 s matmul, a 1 s sleep).
cat > "$OUT/marked.sh" <<EOS
#!/usr/bin/env bash
echo begin matmul >> "\$GPUWATT_MARKS"; $LOAD 2; echo end matmul >> "\$GPUWATT_MARKS"
echo begin rest >> "\$GPUWATT_MARKS"; sleep 1; echo end rest >> "\$GPUWATT_MARKS"
EOS
step measure 60 "$GW" measure "${DEVARGS[@]}" --gpu "$GPU" --baseline 1s --tail 1s --out "$OUT/measure" -- bash "$OUT/marked.sh"

# A recorder left by a job that timed out before its end: end it (only our own, by pid).
for f in "$OUT"/jobs/*/recorder.pid; do
  [ -f "$f" ] || continue
  d=$(dirname "$f"); p=$(cat "$f")
  if [ ! -f "$d/recorder.done" ] && kill -0 "$p" 2>/dev/null && grep -q record "/proc/$p/cmdline" 2>/dev/null; then
    kill "$p"; log "left recorder $p of $d ended"
  fi
done
# The host's part of each output, for a quick look.
python3 - "$OUT" > "$OUT/host.txt" 2>&1 <<'EOP'
import json, sys, glob, os
out = sys.argv[1]
for p in glob.glob(os.path.join(out, "jobs", "*", "job.json")):
    j = json.load(open(p))
    print("job", j["job_id"], "span_s", j["span_s"], "GPUs", [(g["index"], g["energy_j"], g["energy_low_j"], g["energy_high_j"]) for g in j["gpus"]])
    print("  host_energy", json.dumps(j.get("host_energy")))
    print("  admin_comment", j["admin_comment"])
p = os.path.join(out, "measure", "summary.json")
if os.path.exists(p):
    s = json.load(open(p))
    print("measure host", json.dumps(s.get("host")))
    for r in s.get("regions") or []:
        print("  region", r["name"], r["duration_s"], "host", json.dumps(r.get("host")))
EOP
find "$OUT" -name trace.csv -exec gzip -9 {} \;
log done
