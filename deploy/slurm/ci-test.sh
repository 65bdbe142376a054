#!/usr/bin/env bash
# deploy/slurm/ci-test.sh GPUWATT [WITH_DBD]: a real Slurm on this one machine runs gpuwatt's
# Prolog and Epilog (deploy/slurm/prolog.sh, epilog.sh, as shipped but for their settings)
# on the sim device, explicitly simulated (--device sim:h200: no figure here is measured),
# and checks where docs/slurm.md says each job's energy lands:
#   1. a job that runs to its end: JOBS/ID/job.json, and its AdminComment in sacct;
#   2. a job cancelled while it runs (scancel): the same, for the part it ran;
#   3. a job requeued while it runs (scontrol requeue) that then runs to its end: both runs
#      kept (JOBS/ID.1 the first, JOBS/ID the second), sacct --duplicates lists both.
# Debian's slurmctld, slurmd, munge and, with WITH_DBD=1 (the default), slurmdbd on a
# MariaDB of its own, all configured here in a temporary directory (no cgroups:
# proctrack/linuxproc, task/none; select/cons_tres; two fake gres GPUs so that Slurm sets
# SLURM_JOB_GPUS in the prolog). Every daemon it starts is stopped at the end, on failure
# too (trap); every wait is bounded. Run as root (slurmd runs prologs as root). .ci/run calls
# it; it needs: slurmctld slurmd munge (and slurmdbd mariadb-server with WITH_DBD=1).
set -euo pipefail

GPUWATT=$(realpath "${1:?usage: ci-test.sh GPUWATT [WITH_DBD]}")
WITH_DBD=${2:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/gwslurm.XXXXXX) # short: unix socket paths hold 108 bytes
chmod 755 "$T"
NODE=$(hostname -s)
JOBS=$T/jobs
T0=$SECONDS
say() { echo "slurm-ci: [$((SECONDS - T0)) s] $*"; }
fail() { echo "slurm-ci: FAIL: $*" >&2; exit 1; }

PIDS=() # name:pid of each daemon started, stopped in reverse order
stop_all() {
  local rc=$? i name pid n p
  cd / # out of the jobs' directory, where the sweep below finds what they left
  # Jobs still running (a failure half-way): cancelled while slurmctld can, for their
  # slurmstepd outlives slurmd.
  if scontrol ping >/dev/null 2>&1 && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
    scancel --quiet $(squeue -h -o %i) 2>/dev/null || true
    for n in $(seq 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    name=${PIDS[i]%%:*} pid=${PIDS[i]#*:}
    kill -TERM "$pid" 2>/dev/null || continue
    for n in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then say "$name ($pid) did not end in 10 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  done
  # What a job left running (slurmstepd, the batch script, its children): every process in
  # the jobs' working directory, which is this test's own.
  for p in /proc/[0-9]*; do
    case $(readlink "$p/cwd" 2>/dev/null) in "$T/work" | "$T/work/"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
  done
  # Recorders of jobs whose epilog never ran (a failure half-way) are ours too: each one
  # still running, its command line naming its job's directory here (a pid reused since
  # by another process is left alone).
  for f in "$JOBS"/*/recorder.pid; do
    [ -f "$f" ] && [ ! -e "$(dirname "$f")/recorder.done" ] || continue
    pid=$(cat "$f")
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$(dirname "$f")"; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  if [ "$rc" != 0 ]; then
    for f in "$T"/*.log "$T"/mysqld.err; do
      [ -f "$f" ] && { echo "---- $f (last 40 lines)"; tail -n 40 "$f"; }
    done
  fi
  if [ -n "${SLURM_CI_KEEP:-}" ]; then cp -r "$T" "$SLURM_CI_KEEP"; fi
  rm -rf "$T"
  exit "$rc"
}
trap stop_all EXIT
trap 'exit 1' INT TERM

# start NAME PIDFILE-OR-- CMD...: runs CMD in the background (the daemons in the foreground,
# -D) and remembers its pid.
start() {
  local name=$1; shift
  "$@" >>"$T/$name.log" 2>&1 &
  PIDS+=("$name:$!")
}

# until_ok SECONDS WHAT CMD...: retries CMD every 0.2 s until it succeeds, SECONDS at most.
until_ok() {
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then
      "$@" 2>&1 | tail -n 5 | sed 's/^/  /' >&2 || true
      fail "$what: not within ${secs} s"
    fi
    sleep 0.2
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(free_port) SLURMD_PORT=$(free_port) DBD_PORT=$(free_port) DB_PORT=$(free_port)

# munge: a key of our own, a socket of our own.
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge.key"
start munged munged --foreground --force --key-file="$T/munge.key" --socket="$T/munge.sock" \
  --pid-file="$T/munged.pid" --seed-file="$T/munge.seed" --log-file="$T/munged.log"
until_ok 15 "munged answers" sh -c "munge --socket='$T/munge.sock' -n | unmunge --socket='$T/munge.sock'"
say "munged up"

mkdir -p "$T/state" "$T/spool" "$T/dev" "$T/work" "$JOBS"
# gres files: Slurm wants character devices, and reads the GPUs' indices from their names.
# Links to /dev/null: no GPU is behind them (the sim device stands in for both).
ln -s /dev/null "$T/dev/nvidia0"
ln -s /dev/null "$T/dev/nvidia1"
cat >"$T/gres.conf" <<EOF
AutoDetect=off
NodeName=$NODE Name=gpu File=$T/dev/nvidia[0-1]
EOF
acct=
if [ "$WITH_DBD" = 1 ]; then
  acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$T/munge.sock"
fi
cat >"$T/slurm.conf" <<EOF
ClusterName=gwci
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock,cred_expire=10
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
GresTypes=gpu
Prolog=$T/prolog.sh
Epilog=$T/epilog.sh
$acct
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) Gres=gpu:2 State=UNKNOWN
PartitionName=ci Nodes=$NODE Default=YES MaxTime=10 State=UP
EOF
export SLURM_CONF=$T/slurm.conf

# The prolog and epilog as shipped, their settings pointed here and at the sim device.
settings() {
  sed -e "s|^GPUWATT=.*|GPUWATT=$GPUWATT|" -e "s|^JOBS=.*|JOBS=$JOBS|" -e "s|^LOG=.*|LOG=$T/gpuwatt-jobs.log|" \
    -e "s|^DEVICE=.*|DEVICE=sim:h200|" -e "s|^ARGS=.*|ARGS='--sim-config $T/sim.json'|" "$@"
}
# Two H200 twins (the preset has one), as many as the node's gres.
echo '{"preset": "h200", "gpus": 2}' >"$T/sim.json"
settings "$HERE/prolog.sh" >"$T/prolog.sh"
if [ "$WITH_DBD" = 1 ]; then
  settings "$HERE/epilog.sh" >"$T/epilog.sh"
else
  settings -e 's|^SACCTMGR=.*|SACCTMGR=|' "$HERE/epilog.sh" >"$T/epilog.sh"
fi
chmod 755 "$T/prolog.sh" "$T/epilog.sh"
grep -q -- "--device \"\$DEVICE\"" "$T/prolog.sh" && grep -q '^DEVICE=sim:h200$' "$T/prolog.sh" || fail "the prolog does not use the sim device"

if [ "$WITH_DBD" = 1 ]; then
  # MariaDB of our own (TCP on loopback, a data directory here), for slurmdbd.
  mariadb-install-db --no-defaults --datadir="$T/db" --user=root --auth-root-authentication-method=normal \
    --skip-test-db >"$T/mariadb-install.log" 2>&1 || fail "mariadb-install-db (see $T/mariadb-install.log)"
  start mysqld mariadbd --no-defaults --datadir="$T/db" --socket="$T/mysql.sock" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --user=root --pid-file="$T/mysqld.pid" --log-error="$T/mysqld.err" --skip-name-resolve
  until_ok 60 "mariadb answers" mariadb --no-defaults --socket="$T/mysql.sock" -uroot -e 'select 1'
  mariadb --no-defaults --socket="$T/mysql.sock" -uroot -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'ci'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  say "mariadb up"
  cat >"$T/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=ci
StorageLoc=slurm_acct_db
PidFile=$T/slurmdbd.pid
LogFile=$T/slurmdbd.log
DebugLevel=info
EOF
  chmod 600 "$T/slurmdbd.conf"
  start slurmdbd slurmdbd -D
  until_ok 60 "slurmdbd answers" sacctmgr -n list cluster
  sacctmgr -i add cluster gwci >/dev/null
  say "slurmdbd up"
fi

start slurmctld slurmctld -D -i -f "$T/slurm.conf"
until_ok 60 "slurmctld answers" scontrol ping
start slurmd slurmd -D -f "$T/slurm.conf" -N "$NODE"
until_ok 60 "the node is idle" sh -c "sinfo -h -N -o %t | grep -qx idle"
say "slurmctld and slurmd up: node $NODE idle, $(sinfo -h -o '%G') gres"

# state JOBID: the job's state as slurmctld says it.
state() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
until_state() { # until_state JOBID SECONDS STATE...
  local id=$1 secs=$2; shift 2
  local end=$((SECONDS + secs)) s
  while :; do
    s=$(state "$id")
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    [ $SECONDS -lt $end ] || fail "job $id: state $s, not $* within ${secs} s"
    sleep 0.3
  done
}
# until_file SECONDS PATH
until_file() { until_ok "$1" "$2 appears" test -s "$2"; }
# check_job DIR: job.json is there, names the sim, holds one GPU-energy per GPU with an interval
check_job() {
  python3 - "$1/job.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["format"] == "gpuwatt-job/1", j["format"]
assert j["device"].startswith("sim:"), "device %r is not the sim" % j["device"]
assert len(j["gpus"]) == 2, "gpus %r" % [g["index"] for g in j["gpus"]]
for g in j["gpus"]:
    assert 0 < g["energy_low_j"] <= g["energy_j"] <= g["energy_high_j"], g
assert j["energy_low_j"] <= j["energy_j"] <= j["energy_high_j"]
# The twin idles at 76-81 W a board and caps at 700 W: a mean power outside is no measurement.
p = j["energy_j"] / j["span_s"] / len(j["gpus"])
assert 50 < p < 700, "mean power %.1f W a GPU" % p
assert j["admin_comment"].startswith("gpuwatt=gpuwatt-job/1,energy_j="), j["admin_comment"]
print("job %s: %.1f J [%.1f, %.1f] over %.1f s on %s (simulated), recorder %s%s" % (
    j["job_id"], j["energy_j"], j["energy_low_j"], j["energy_high_j"], j["span_s"], j["device"],
    j["recorder"], ", incomplete: " + j["reason"] if j.get("incomplete") else ""))
EOF
}
# check_sacct JOBID DIR: sacct's AdminComment is the one in job.json
check_sacct() {
  [ "$WITH_DBD" = 1 ] || return 0
  local want got
  want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin_comment"])' "$2/job.json")
  until_ok 30 "job $1's AdminComment in sacct" sh -c "sacct -j $1 -X -n -P -o AdminComment%2000 | grep -q gpuwatt"
  got=$(sacct -j "$1" -X -n -P -o AdminComment%2000 | tail -n 1)
  [ "$got" = "$want" ] || fail "job $1: sacct's AdminComment $got, job.json's $want"
  say "job $1: sacct -j $1 -o AdminComment: $got"
}

cd "$T/work" # every job runs here (sbatch's default): stop_all finds what they leave by it

# 1. A job that runs to its end.
J1=$(sbatch --parsable --gres=gpu:2 -o /dev/null --wrap 'sleep 3')
until_state "$J1" 60 COMPLETED
until_file 30 "$JOBS/$J1/job.json"
out=$(check_job "$JOBS/$J1") || fail "job $J1: job.json"
say "$out"
check_sacct "$J1" "$JOBS/$J1"

# 2. A job cancelled while it runs.
J2=$(sbatch --parsable --gres=gpu:2 -o /dev/null --wrap 'sleep 120')
until_state "$J2" 60 RUNNING
until_file 30 "$JOBS/$J2/recorder.ready"
sleep 2
scancel "$J2"
until_state "$J2" 60 CANCELLED
until_file 30 "$JOBS/$J2/job.json"
out=$(check_job "$JOBS/$J2") || fail "job $J2: job.json"
say "cancelled: $out"
check_sacct "$J2" "$JOBS/$J2"

# 3. A job requeued while it runs, then run to its end: both runs kept.
J3=$(sbatch --parsable --requeue --gres=gpu:2 -o /dev/null --wrap 'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then sleep 120; else sleep 3; fi')
until_state "$J3" 60 RUNNING
until_file 30 "$JOBS/$J3/recorder.ready"
sleep 2
scontrol requeue "$J3"
say "job $J3 requeued"
until_file 60 "$JOBS/$J3/job.json" # the first run's, before the second begins
say "job $J3: the first run's job.json written, the job pending again"
until_state "$J3" 120 COMPLETED
until_file 30 "$JOBS/$J3.1/job.json"
until_file 30 "$JOBS/$J3/job.json"
out=$(check_job "$JOBS/$J3.1") || fail "job $J3: the first run's job.json"
say "requeued, first run: $out"
out=$(check_job "$JOBS/$J3") || fail "job $J3: the second run's job.json"
say "requeued, second run: $out"
first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start"])' "$JOBS/$J3.1/job.json")
second=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start"])' "$JOBS/$J3/job.json")
[ "$first" != "$second" ] || fail "job $J3: both runs' job.json start at $first"
check_sacct "$J3" "$JOBS/$J3"
if [ "$WITH_DBD" = 1 ]; then
  runs=$(sacct -j "$J3" -X -D -n -P -o JobID,State | wc -l)
  [ "$runs" -ge 2 ] || fail "job $J3: sacct --duplicates lists $runs run(s)"
  say "job $J3: sacct --duplicates lists $runs runs: $(sacct -j "$J3" -X -D -n -P -o State | tr '\n' ' ')"
fi

grep -q . "$T/gpuwatt-jobs.log" && { say "gpuwatt-jobs.log:"; sed 's/^/  /' "$T/gpuwatt-jobs.log"; }
say "ok: 3 jobs (one cancelled, one requeued with both runs kept) measured by gpuwatt's prolog and epilog on sim:h200 under slurmctld $(slurmctld -V | cut -d' ' -f2)$([ "$WITH_DBD" = 1 ] && echo ", AdminComment through slurmdbd")"
