#!/usr/bin/env bash
# Where gpuwatt's own CPU goes on a real board (issue 35): `measure` of an idle and of a
# loaded span with a CPU profile (GPUWATT_CPUPROFILE) and, near each span's end, the CPU of
# every thread of the gpuwatt process (/proc/PID/task/*/stat: the driver's own threads show
# there, not in a Go profile); then `serve` alone with the same. ~80 s of wall time.
#   GPU=0 bash bench/gpu/cpu_probe.sh OUTDIR     (binary: $GPUWATT, default .gpu/gpuwatt)
set -u
OUT=${1:?usage: cpu_probe.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
G=${GPU:-0}
SPAN=${SPAN:-20}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv; nproc; } > "$OUT/env.txt" 2>&1
"$B" version > "$OUT/version.txt" 2>&1
threads() { # pid file: one line per thread: tid comm utime stime (clock ticks)
	for t in /proc/$1/task/*; do
		[ -r "$t/stat" ] || continue
		awk -v tid="${t##*/}" '{ s=$0; sub(/^[^)]*\) /, "", s); split(s, f, " "); print tid, f[12], f[13] }' "$t/stat" 2>/dev/null | sed "s/^\([0-9]*\)/\1 $(tr ' ' _ < $t/comm)/"
	done > "$2"
	echo "ticks_per_s $(getconf CLK_TCK)" >> "$2"
}
probe() { # name, command...
	local name=$1; shift
	GPUWATT_CPUPROFILE="$OUT/$name.prof" "$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr" &
	local pid=$!
	sleep 2; threads $pid "$OUT/$name.threads0"
	sleep $((SPAN - 2)); threads $pid "$OUT/$name.threads1"
	wait $pid; echo "$name rc=$?" >> "$OUT/steps.txt"
}
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$G
probe idle "$B" measure --gpu "$G" --out "$OUT/idle" -- sleep "$SPAN"
probe load "$B" measure --gpu "$G" --out "$OUT/load" -- python3 bench/load/matmul.py --seconds "$SPAN"
GPUWATT_CPUPROFILE="$OUT/serve.prof" "$B" serve --gpu "$G" --listen 127.0.0.1:9471 > "$OUT/serve.stdout" 2> "$OUT/serve.stderr" &
spid=$!
sleep 2; threads $spid "$OUT/serve.threads0"; sleep $((SPAN - 2)); threads $spid "$OUT/serve.threads1"
kill -TERM $spid; wait $spid
rm -f "$OUT"/*/trace.csv
exit 0
