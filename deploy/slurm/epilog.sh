#!/bin/sh
# gpuwatt's Slurm Epilog (docs/slurm.md): reads the counters again, stops the job's recorder,
# writes JOBS/ID/job.json and stores the job's GPU energy in its AdminComment through
# sacctmgr (which needs slurmdbd). slurmd runs it as root on each node of the job, without a
# search path; it must never fail the node, hence `|| true` and `exit 0`.
#
# Install: as /etc/slurm/epilog.sh, mode 755, and `Epilog=/etc/slurm/epilog.sh` in slurm.conf.
# The settings below are all there is to edit: SACCTMGR= (empty) where there is no slurmdbd
# (job.json is then the record), OTLP=http://collector:4318 to push to a collector too.
GPUWATT=/usr/local/bin/gpuwatt
JOBS=/var/lib/gpuwatt/jobs
LOG=/var/log/gpuwatt-jobs.log
SACCTMGR=--sacctmgr
OTLP=
export PATH=/usr/bin:/bin:/usr/local/bin # where sacctmgr is (slurmd gives epilogs no PATH)

"$GPUWATT" job end --quiet $SACCTMGR ${OTLP:+--otlp "$OTLP"} --dir "$JOBS" >>"$LOG" 2>&1 || true
exit 0
