#!/usr/bin/env bash
# Several GPUs of one host (issue 18, docs/measure.md "Several GPUs"): on the GPU machine,
# from the repository root, with the binary built elsewhere by
# `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/multi_gpu.sh OUTDIR
#
# 1. `gpuwatt measure --gpu all` of an NCCL all-reduce across every GPU (bench/load/allreduce.py,
#    NVLink multicast off): per-GPU energy with intervals, their total, the Sampler's updates
#    seen and CPU per GPU.
# 2. `gpuwatt serve --gpu all` scraped every second (curl) during a second all-reduce, where
#    this gpuwatt has the serve verb.
# 3. `gpuwatt characterize --quick --gpu all` (each card in turn, then compared), unless
#    CHARACTERIZE=0 (it takes about 5 minutes of GPU time per card).
# curl may be missing there: python3 scrapes. Environment: GPUWATT (default .gpu/gpuwatt), SECONDS_RUN (all-reduce length, default 20),
# CHARACTERIZE (default 1), STAGES (characterize --stages, default all).
set -u
OUT=${1:?usage: multi_gpu.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
RUN=${SECONDS_RUN:-20}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi -q | head -60; } > "$OUT/env.txt" 2>&1
"$B" version > "$OUT/version.txt" 2>&1
step() { # name, command...
	local name=$1; shift
	local t0; t0=$(date +%s.%N)
	"$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
	local rc=$?
	echo "$name rc=$rc wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$OUT/steps.txt"
}
step measure "$B" measure --gpu all --out "$OUT/measure" -- python3 bench/load/allreduce.py --seconds "$RUN"
if "$B" serve --help > /dev/null 2>&1; then
	"$B" serve --gpu all --listen 127.0.0.1:9464 > "$OUT/serve.stdout" 2> "$OUT/serve.stderr" &
	spid=$!
	sleep 3
	( while kill -0 $spid 2> /dev/null; do
		echo "# scrape $(date -u +%s.%N)"
		python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=2).read().decode(), end="")' | grep -E '^(gpuwatt_gpu_(energy_joules_total|power_watts|up)|gpuwatt_sampler)'
		sleep 1
	done ) > "$OUT/scrape.log" 2>&1 &
	cpid=$!
	step serve_workload "$B" measure --gpu all --out "$OUT/measure_serve" -- python3 bench/load/allreduce.py --seconds "$RUN"
	sleep 2
	kill -TERM $spid; t0=$(date +%s.%N); wait $spid; echo "serve exit=$? after SIGTERM in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" >> "$OUT/steps.txt"
	kill $cpid 2> /dev/null
	gzip -9 "$OUT/scrape.log"
else
	echo "serve: not in this gpuwatt" >> "$OUT/steps.txt"
fi
if [ "${CHARACTERIZE:-1}" = 1 ]; then
	st=()
	[ -n "${STAGES:-}" ] && st=(--stages "$STAGES")
	step characterize "$B" characterize --quick --gpu all "${st[@]}" --out "$OUT/characterize"
fi
gzip -9 "$OUT"/measure*/trace.csv 2> /dev/null
exit 0
