#!/usr/bin/env bash
# issue 16 (push): gpuwatt job begin / workload / job end with SLURM_JOB_GPUS=0 on the H200,
# inside a `gpuwatt measure` of the same span (its trace covers the whole job), three jobs:
#   A: 1 s idle, 8 s bf16 matmul, 1 s idle   (long: the counter's own figure)
#   B: a 1.5 s matmul burst                 (short)
#   C: 3 s matmul with the recorder SIGKILLed mid-job (begin/end counters only, incomplete)
# Reads only; never changes clocks, limits or modes. Max wall time ~120 s.
# From the repository root, with CGO_ENABLED=0 go build -o .gpu/gpuwatt ./cmd/gpuwatt:
#   bash bench/gpu/job.sh OUTDIR      (GW_DEV=sim:h200 GW_LOAD=sleep: the same on the sim)
# then python3 bench/gpu/job_compare.py OUTDIR .gpu/gpuwatt (compare.json).
set -u
OUT=${1:?usage: run.sh OUTDIR}
mkdir -p "$OUT"
D=$(cd "$(dirname "$0")" && pwd)
B=${GPUWATT:-.gpu/gpuwatt}
export GW=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
export GW_DEV=${GW_DEV:-nvml} GW_LOAD=${GW_LOAD:-"python3 bench/load/matmul.py --seconds"}
step() { # step NAME TIMEOUT CMD...
  local name=$1 to=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$to" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; rc=$?
  t1=$(date +%s.%N)
  echo "$name rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1-$t0}")" | tee -a "$OUT/steps.txt"
}
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60; } > "$OUT/env.txt" 2>&1
step version 20 "$B" version --device "$GW_DEV"

# The job script measure runs: begin, the workload, end (as a prolog, the job, an epilog).
cat > /tmp/gw-push-job.sh <<'EOS'
#!/usr/bin/env bash
# job.sh ID OUT PRE LOADSECS POST [kill]
set -u
ID=$1 OUT=$2 PRE=$3 SECS=$4 POST=$5 KILL=${6:-}
export SLURM_JOB_ID=$ID SLURM_JOB_GPUS=0 SLURM_JOB_USER=gpuwatt-test
"$GW" job begin --dir "$OUT/jobs" --device "$GW_DEV"; echo "begin rc=$?" >&2
sleep "$PRE"
if [ -n "$KILL" ]; then ( sleep 1; kill -9 "$(cat "$OUT/jobs/$ID/recorder.pid")"; echo "killed the recorder" >&2 ) & fi
$GW_LOAD "$SECS"
wait
sleep "$POST"
"$GW" job end --dir "$OUT/jobs" > "$OUT/$ID.sacctmgr.txt"; echo "end rc=$?" >&2
EOS
step jobA 60 "$B" measure --device "$GW_DEV" --out "$OUT/measureA" --gpu 0 --baseline 1s --tail 1s -- bash /tmp/gw-push-job.sh gwA "$OUT" 1 8 1
step jobB 40 "$B" measure --device "$GW_DEV" --out "$OUT/measureB" --gpu 0 --baseline 1s --tail 1s -- bash /tmp/gw-push-job.sh gwB "$OUT" 0 1.5 0
step jobC 40 "$B" measure --device "$GW_DEV" --out "$OUT/measureC" --gpu 0 --baseline 1s --tail 1s -- bash /tmp/gw-push-job.sh gwC "$OUT" 0 3 0 kill
# A recorder left by a step that timed out before its job end: end it (only our own pids).
for f in "$OUT"/jobs/*/recorder.pid; do
  [ -f "$f" ] || continue
  d=$(dirname "$f"); p=$(cat "$f")
  if [ ! -f "$d/recorder.done" ] && kill -0 "$p" 2>/dev/null && grep -q record "/proc/$p/cmdline" 2>/dev/null; then
    kill "$p"; echo "left recorder $p of $d ended" >> "$OUT/steps.txt"
  fi
done
find "$OUT" -name trace.csv -exec gzip -9 {} \;
echo done >> "$OUT/steps.txt"
