#!/usr/bin/env bash
# Issue 35 in one run on a host of two GPUs: gpuwatt's own CPU at its defaults (serve and
# measure, one GPU and two, under a bf16 load) and the cross-check of measure's lean default
# against every channel on the SAME card at the SAME time.
# Time budget: ~310 s of wall time (at most 400 s): the driver calls' CPU probe ~20 s, the
# cross-check ~100 s of GPU time (its analysis then runs on the host's CPU beside the next
# step), seven CPU runs (~180 s: measure 2 x ~20 s, serve idle 19 s, serve under load
# 4 x ~30 s), the tables a few seconds.
# Needs: two GPUs ($GPUS, default $GPU and its neighbour) for the two-GPU runs, one ($GPU)
# for everything else; with a single GPU the two-GPU runs are skipped and the table says so.
# python3 with torch and pynvml. Works on an H100 and on an H200; reads only, changes no
# setting of any card.
#
#   GPU=0 GPUS=0,1 bash bench/gpu/serve_lean.sh OUTDIR      (binary: $GPUWATT, default .gpu/gpuwatt)
#
# 1. calls/: the CPU time (not the wall time) of one call of each NVML function serve makes,
#    idle and under a bf16 load, from python (bench/gpu/nvml_call_cpu.py): the counter, the
#    sample ring, the process utilisation, the power, clock and temperature calls.
# 2. xc/: the cross-check (bench/gpu/crosscheck.py) of measure at its defaults (`--channels
#    default`, the lean default) and of measure with every channel (`--channels all`), the
#    two recording the same 21 bf16 bursts on $GPU at once (one measure runs the other), while
#    bench/gpu/energy_poller.py logs the counter: xc/lean and xc/all, and xc/compare.md side
#    by side (same card, same bursts, same reference).
# 3. cpu/: the whole gpuwatt process's CPU (bench/gpu/cpu_run.py: /proc, its own threads, a
#    window from 3 s to SPAN; for serve under load from 8 s to SPAN + 7, the load started a
#    second after serve) at its defaults:
#      measure-1-load   measure --gpu $GPU   -- matmul.py             (one GPU, at its cap)
#      measure-2-load   measure --gpu $GPUS  -- matmul_all.py         (two GPUs)
#      serve-1-idle     serve --gpu $GPU                               (nothing on the card)
#      serve-1-load     serve --gpu $GPU,  matmul.py beside it         (its processes read)
#      serve-2-load     serve --gpu $GPUS, matmul_all.py beside it
#      serve-1-load-100ms  serve --gpu $GPU --poll 100ms, matmul.py beside it: the polling
#                       of serve's default before issue 35, same build (before/after)
#      serve-2-load-100ms  the same for two GPUs
#    The serve runs keep a CPU profile (GPUWATT_CPUPROFILE) and their last scrape: each
#    GPU's processes + unattributed energy against its counter (within 0.4 %).
# Output: OUTDIR/summary.md (every table), env.txt, commands.txt, and the folders above.
# GW_DEVICE (e.g. sim:h200) passes --device to every gpuwatt command: a dry run of the script's
# mechanics without a GPU (the driver probe, the poller and the loads then fail, and say so).
set -u
OUT=${1:?usage: serve_lean.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
G=${GPU:-0}
SPAN=${SPAN:-18}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$B" ]; then
	echo "serve_lean.sh: no gpuwatt binary at $B" >&2
	exit 2
fi
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
DEV=()
if [ -n "${GW_DEVICE:-}" ]; then DEV=(--device "$GW_DEVICE"); fi
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -z "${GPUS:-}" ]; then
	if [ $((G + 1)) -lt "$N" ]; then GPUS=$G,$((G + 1)); elif [ "$G" -gt 0 ]; then GPUS=$((G - 1)),$G; else GPUS=; fi
fi
if [ -e "$OUT/xc" ]; then
	echo "serve_lean.sh: $OUT/xc exists: give a new OUTDIR" >&2
	exit 2
fi
mkdir -p "$OUT/calls" "$OUT/xc" "$OUT/cpu"
S0=$(date +%s)
step() { echo "$(date -u +%H:%M:%S) +$(($(date +%s) - S0))s $*" | tee -a "$OUT/steps.txt"; }
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	"$B" version
	nvidia-smi --query-gpu=index,uuid,name,driver_version,power.limit --format=csv
	nvidia-smi -q | sed -n 1,12p
	echo "nproc $(nproc)"
	grep -m1 "model name" /proc/cpuinfo
	echo "GPU=$G GPUS=$GPUS SPAN=$SPAN"
} >"$OUT/env.txt" 2>&1
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# 1. The driver calls' CPU, idle then under load (~10 s).
step "calls"
python3 "$HERE/nvml_call_cpu.py" --gpu "$G" --out "$OUT/calls/idle.json" >>"$OUT/calls/log.txt" 2>&1
CUDA_VISIBLE_DEVICES=$G python3 bench/load/matmul.py --seconds 16 >"$OUT/calls/load.txt" 2>&1 &
L=$!
sleep 5
python3 "$HERE/nvml_call_cpu.py" --gpu "$G" --out "$OUT/calls/load.json" >>"$OUT/calls/log.txt" 2>&1
wait "$L"

# 2. The cross-check, lean and all on one card at once (~100 s of GPU time).
step "cross-check on GPU $G"
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
"$B" devices "${DEV[@]}" --json >"$OUT/xc/devices.json" 2>"$OUT/xc/devices-stderr.txt"
python3 "$HERE/energy_poller.py" --gpu "$G" --out "$OUT/xc/poller.csv" 2>"$OUT/xc/poller-stderr.txt" &
POLLER=$!
for _ in $(seq 300); do
	[ "$(lines "$OUT/xc/poller.csv")" -ge 2 ] && break
	kill -0 "$POLLER" 2>/dev/null || break
	sleep 0.1
done
sleep 1
XCMD=("$B" measure "${DEV[@]}" --channels default --gpu "$G" --out "$OUT/xc/lean/measure" --
	"$B" measure "${DEV[@]}" --channels all --gpu "$G" --out "$OUT/xc/all/measure" --
	env CUDA_VISIBLE_DEVICES="$G" python3 bench/load/bursts.py --out "$OUT/xc/bursts.jsonl")
echo "+ ${XCMD[*]}" >>"$OUT/commands.txt"
"${XCMD[@]}" >"$OUT/xc/measure.txt" 2>"$OUT/xc/measure-stderr.txt"
step "measure (lean outside, all inside): exit $?"
sleep 1
kill -INT "$POLLER" 2>/dev/null
wait "$POLLER"
step "poller: exit $?"
rm -f "$OUT"/xc/*/measure/report.html
# Its analysis on the host's CPU, beside the CPU runs (it calls no driver).
(
	for v in lean all; do
		python3 "$HERE/crosscheck.py" "$OUT/xc/$v/measure" "$OUT/xc/poller.csv" "$OUT/xc/bursts.jsonl" --gpuwatt "$B" \
			--gpu "$G" --pad 0.15 --jobs 4 --out "$OUT/xc/$v" >/dev/null 2>"$OUT/xc/$v/crosscheck-stderr.txt"
		echo "crosscheck $v: exit $?" >>"$OUT/xc/analysis.txt"
		gzip -f "$OUT/xc/$v/measure/trace.csv" 2>/dev/null
	done
) &
XA=$!

# 3. The CPU runs (~150 s).
run() { # name gpus window_start window_end stop_after -- cmd...
	local name=$1 gpus=$2 wstart=$3 wend=$4 stop=$5
	shift 6
	python3 "$HERE/cpu_run.py" --name "$name" --out "$OUT/cpu/$name.json" --window "$wstart" "$wend" --gpus "$gpus" \
		${stop:+--stop-after "$stop"} --stdout "$OUT/cpu/$name.stdout" --stderr "$OUT/cpu/$name.stderr" -- "$@" | tee -a "$OUT/steps.txt"
}
measure() { # name gpus gpu-list command...
	local name=$1 gpus=$2 list=$3
	shift 3
	echo "+ CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES $B measure ${DEV[*]} --gpu $list --out $OUT/cpu/$name -- $*" >>"$OUT/commands.txt"
	run "$name" "$gpus" 3 "$SPAN" "" -- "$B" measure "${DEV[@]}" --gpu "$list" --out "$OUT/cpu/$name" -- "$@"
	rm -f "$OUT/cpu/$name/trace.csv" "$OUT/cpu/$name/report.html"
}
serve() { # name gpus gpu-list port load [serve flags...]
	local name=$1 gpus=$2 list=$3 port=$4 load=$5
	shift 5
	local lp="" w0=3 w1=$SPAN
	if [ "$load" = 1 ]; then
		# The load a second after serve's start: serve sees the idle card first (its idle
		# floor, so that the split is given, not held), then the load's processes from
		# ~5 s on (torch's start); the window is the SPAN - 1 s from 8 s on, under load.
		w0=8
		w1=$((SPAN + 7))
		if [ "$gpus" = 1 ]; then
			(sleep 1 && exec python3 bench/load/matmul.py --seconds $((SPAN + 4))) >"$OUT/cpu/$name.load" 2>&1 &
		else
			(sleep 1 && exec python3 bench/load/matmul_all.py --seconds $((SPAN + 4))) >"$OUT/cpu/$name.load" 2>&1 &
		fi
		lp=$!
	fi
	echo "+ $B serve ${DEV[*]} --gpu $list --listen 127.0.0.1:$port $* (load $load; window $w0-$w1 s)" >>"$OUT/commands.txt"
	(sleep $((w1 - 1)) && curl -s -m 5 "http://127.0.0.1:$port/metrics" >"$OUT/cpu/$name.metrics" 2>/dev/null) &
	local scraper=$!
	GPUWATT_CPUPROFILE="$OUT/cpu/$name.prof" run "$name" "$gpus" "$w0" "$w1" "$((w1 + 1))" -- "$B" serve "${DEV[@]}" --gpu "$list" --listen "127.0.0.1:$port" "$@"
	wait "$scraper"
	if [ -n "$lp" ]; then wait "$lp"; fi
}
step "cpu runs"
CUDA_VISIBLE_DEVICES=$G measure measure-1-load 1 "$G" python3 bench/load/matmul.py --seconds $((SPAN - 4))
if [ -n "$GPUS" ]; then
	CUDA_VISIBLE_DEVICES=$GPUS measure measure-2-load 2 "$GPUS" python3 bench/load/matmul_all.py --seconds $((SPAN - 6))
fi
CUDA_VISIBLE_DEVICES=$G serve serve-1-idle 1 "$G" 9481 0
CUDA_VISIBLE_DEVICES=$G serve serve-1-load 1 "$G" 9482 1
CUDA_VISIBLE_DEVICES=$G serve serve-1-load-100ms 1 "$G" 9483 1 --poll 100ms
if [ -n "$GPUS" ]; then
	CUDA_VISIBLE_DEVICES=$GPUS serve serve-2-load 2 "$GPUS" 9484 1
	CUDA_VISIBLE_DEVICES=$GPUS serve serve-2-load-100ms 2 "$GPUS" 9485 1 --poll 100ms
fi
step "cpu runs done; waiting for the cross-check's analysis"
wait "$XA"
step "analysis done"
python3 "$HERE/serve_lean_table.py" "$OUT" >"$OUT/summary.md" 2>"$OUT/summary-stderr.txt"
step "summary: exit $?"
cat "$OUT/summary.md"
exit 0
