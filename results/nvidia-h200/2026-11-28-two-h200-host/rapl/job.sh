#!/usr/bin/env bash
set -u
export SLURM_JOB_ID=rapl1 SLURM_JOB_GPUS=1 SLURM_JOB_USER=gpuwatt-test
"/work/main/.gpu/gpuwatt" job begin --dir "/tmp/res/c2/rapl/jobs" --device nvml; echo "begin rc=$?" >&2
sleep 1
python3 bench/load/matmul.py --seconds 4
sleep 1
"/work/main/.gpu/gpuwatt" job end --dir "/tmp/res/c2/rapl/jobs"; echo "end rc=$?" >&2
