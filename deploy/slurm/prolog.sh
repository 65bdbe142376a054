#!/bin/sh
# gpuwatt's Slurm Prolog (docs/slurm.md): reads the energy counter of each of the job's GPUs
# and starts the job's recorder. slurmd runs it as root on each node of the job, without a
# search path. A prolog that fails takes the node out of service, so a failed measurement
# ends with `|| true` and `exit 0`; the log says what went wrong.
#
# Install: as /etc/slurm/prolog.sh, mode 755, and `Prolog=/etc/slurm/prolog.sh` in slurm.conf.
# The settings below are all there is to edit.
GPUWATT=/usr/local/bin/gpuwatt
JOBS=/var/lib/gpuwatt/jobs
LOG=/var/log/gpuwatt-jobs.log
DEVICE=auto
ARGS= # more of job begin's flags, e.g. --channels energy.total for jobs of days

"$GPUWATT" job begin --quiet --device "$DEVICE" --dir "$JOBS" $ARGS >>"$LOG" 2>&1 || true
exit 0
