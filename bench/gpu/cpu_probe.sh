#!/usr/bin/env bash
# gpuwatt's own CPU at its defaults on a real board (issue 35's must-show: the whole process
# at <= 1 % of one core per GPU for measure and serve, with one GPU and with two).
# Time budget: ~140 s of wall time (six runs of SPAN=18 s plus start-up and analysis).
# Needs: one GPU ($GPU) for the one-GPU runs, and a second for the two-GPU runs ($GPUS,
# default $GPU and its neighbour; with a single GPU they are skipped and the table says so);
# python3 with torch for the loaded runs (bench/load/matmul.py, matmul_all.py). Works on an
# H100 and on an H200.
#
#   GPU=0 bash bench/gpu/cpu_probe.sh OUTDIR      (binary: $GPUWATT, default .gpu/gpuwatt)
#
# Runs, each at gpuwatt's defaults (no --poll, no --channels), through bench/gpu/cpu_run.py,
# which reads the gpuwatt process's own CPU (utime + stime of its threads, /proc/PID/stat;
# not the command it runs) over a window of its run and over its whole life:
#   measure-1-idle   gpuwatt measure --gpu $GPU  -- sleep SPAN
#   measure-1-load   gpuwatt measure --gpu $GPU  -- python3 bench/load/matmul.py (bf16, the cap)
#   measure-2-idle   gpuwatt measure --gpu $GPUS -- sleep SPAN
#   measure-2-load   gpuwatt measure --gpu $GPUS -- python3 bench/load/matmul_all.py
#   serve-1          gpuwatt serve --gpu $GPU  (SPAN s, one scrape at the end)
#   serve-2          gpuwatt serve --gpu $GPUS
# Window: from 3 s after the start to 1 s before the command's end (measure; its end's
# analysis is in the life figure) or to SPAN (serve). The one-GPU idle runs keep a CPU
# profile (GPUWATT_CPUPROFILE: a sampling profiler, ~1 % of what it profiles).
# Output: OUTDIR/cpu.md (the table), OUTDIR/*.json (cpu_run.py's), summaries, env.txt.
set -u
OUT=${1:?usage: cpu_probe.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
G=${GPU:-0}
SPAN=${SPAN:-18}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$B" ]; then
	echo "cpu_probe.sh: no gpuwatt binary at $B" >&2
	exit 2
fi
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -z "${GPUS:-}" ]; then
	if [ $((G + 1)) -lt "$N" ]; then GPUS=$G,$((G + 1)); elif [ "$G" -gt 0 ]; then GPUS=$((G - 1)),$G; else GPUS=; fi
fi
mkdir -p "$OUT"
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	"$B" version
	nvidia-smi --query-gpu=index,uuid,name,driver_version,power.limit --format=csv
	nvidia-smi -q | sed -n 1,12p
	echo "nproc $(nproc)"
	echo "GPU=$G GPUS=$GPUS SPAN=$SPAN"
} >"$OUT/env.txt" 2>&1
run() { # name gpus window_end stop_after -- cmd...
	local name=$1 gpus=$2 wend=$3 stop=$4
	shift 5
	python3 "$HERE/cpu_run.py" --name "$name" --out "$OUT/$name.json" --window 3 "$wend" --gpus "$gpus" \
		${stop:+--stop-after "$stop"} --stdout "$OUT/$name.stdout" --stderr "$OUT/$name.stderr" -- "$@" | tee -a "$OUT/steps.txt"
}
measure() { # name gpus gpu-list command...
	local name=$1 gpus=$2 list=$3
	shift 3
	echo "+ $B measure --gpu $list --out $OUT/$name -- $*" >>"$OUT/commands.txt"
	run "$name" "$gpus" $((SPAN)) "" -- "$B" measure --gpu "$list" --out "$OUT/$name" -- "$@"
	rm -f "$OUT/$name/trace.csv" "$OUT/$name/report.html"
}
serve() { # name gpus gpu-list port
	local name=$1 gpus=$2 list=$3 port=$4
	echo "+ $B serve --gpu $list --listen 127.0.0.1:$port" >>"$OUT/commands.txt"
	(sleep $((SPAN - 1)) && curl -s -m 5 "http://127.0.0.1:$port/metrics" >"$OUT/$name.metrics" 2>/dev/null) &
	local scraper=$!
	run "$name" "$gpus" "$SPAN" "$((SPAN + 1))" -- "$B" serve --gpu "$list" --listen "127.0.0.1:$port"
	wait "$scraper"
}
export CUDA_DEVICE_ORDER=PCI_BUS_ID
S=$(date +%s)
CUDA_VISIBLE_DEVICES=$G GPUWATT_CPUPROFILE="$OUT/measure-1-idle.prof" measure measure-1-idle 1 "$G" sleep "$SPAN"
CUDA_VISIBLE_DEVICES=$G measure measure-1-load 1 "$G" python3 bench/load/matmul.py --seconds $((SPAN - 4))
if [ -n "$GPUS" ]; then
	CUDA_VISIBLE_DEVICES=$GPUS measure measure-2-idle 2 "$GPUS" sleep "$SPAN"
	CUDA_VISIBLE_DEVICES=$GPUS measure measure-2-load 2 "$GPUS" python3 bench/load/matmul_all.py --seconds $((SPAN - 6))
fi
GPUWATT_CPUPROFILE="$OUT/serve-1.prof" serve serve-1 1 "$G" 9471
if [ -n "$GPUS" ]; then
	serve serve-2 2 "$GPUS" 9472
fi
echo "wall $(($(date +%s) - S)) s" >>"$OUT/steps.txt"
python3 "$HERE/cpu_table.py" "$OUT" >"$OUT/cpu.md"
cat "$OUT/cpu.md"
exit 0
