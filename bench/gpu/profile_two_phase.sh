#!/usr/bin/env bash
# Two-phase kernel profiles (issue 13, docs/profile.md): `gpuwatt profile --kernel A+B` for a
# sweep of phase lengths, each with its phases' steady powers measured apart. On the GPU
# machine, from the repository root, with the binary built elsewhere by
# `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/profile_two_phase.sh OUTDIR
#
# Environment: GPUWATT (the binary, default .gpu/gpuwatt), SENSOR (--sensor-profile: a
# sensor.json of this card, default the built-in model with its intervals), RUNS (default
# 1000), LENGTHS (default "4ms+4ms 2ms+2ms 1ms+1ms 0.5ms+0.5ms"). On an H200 each length takes
# about 19 s of long back-to-back runs and 40 ms per run: ~60 s with 1000 runs, ~4 min for the
# default sweep. results/nvidia-h200/2026-11-24-profile-two-phase was an earlier form of this
# script whose timeouts cut every run short. Each profile.json records its runs and readings
# (from 1ed48ca): `gpuwatt profile --from OUTDIR/4ms_4ms --sensor-profile sensor.json` computes
# it again offline under a model fitted later (results/nvidia-h200/2026-11-24-profile-resolution
# did so in the same run).
set -u
OUT=${1:?usage: profile_two_phase.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
RUNS=${RUNS:-1000}
LENGTHS=${LENGTHS:-"4ms+4ms 2ms+2ms 1ms+1ms 0.5ms+0.5ms"}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi -q | head -60; } > "$OUT/env.txt" 2>&1
"$B" version > "$OUT/version.txt" 2>&1
sensor=()
if [ -n "${SENSOR:-}" ]; then
	sensor=(--sensor-profile "$SENSOR")
	cp "$SENSOR" "$OUT/"
fi
for k in $LENGTHS; do
	d="$OUT/${k//+/_}"
	t0=$(date +%s.%N)
	"$B" profile --kernel "$k" --runs "$RUNS" "${sensor[@]}" --out "$d" > "$d.stdout" 2> "$d.stderr"
	rc=$?
	echo "$k rc=$rc wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$OUT/steps.txt"
done
exit 0
