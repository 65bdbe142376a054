#!/usr/bin/env bash
# characterize --quick on one GPU against issue 35's goal (at most 180 s of GPU time), and its
# headline figures against earlier runs' intervals. Time budget: ~200 s of wall time (the
# run itself, ~150-180 s, then a few seconds of comparison). Needs one GPU ($GPU, an H100
# or an H200); no Python package beyond the standard library.
#
#   GPU=0 bash bench/gpu/characterize_time.sh OUTDIR [PREVDIR ...]
#
# PREVDIR: earlier characterize directories (with results.json) to compare with; default
# the three H200 quick runs of results/nvidia-h200/2026-11-28-four-gpus/characterize (the
# same boards where the host is that one: matched by UUID). Writes OUTDIR/char (the run),
# OUTDIR/compare.md (time per stage, figures against the earlier runs), compare.json,
# compare.html, env.txt, the command's stdout and stderr.
set -u
OUT=${1:?usage: characterize_time.sh OUTDIR [PREVDIR ...]}
shift
B=${GPUWATT:-.gpu/gpuwatt}
G=${GPU:-0}
HERE=$(cd "$(dirname "$0")" && pwd)
PREV=("$@")
if [ ${#PREV[@]} -eq 0 ]; then
	PREV=(results/nvidia-h200/2026-11-28-four-gpus/characterize/gpu-*)
fi
if [ ! -x "$B" ]; then
	echo "characterize_time.sh: no gpuwatt binary at $B" >&2
	exit 2
fi
if [ -e "$OUT/char" ]; then
	echo "characterize_time.sh: $OUT/char exists: give a new OUTDIR" >&2
	exit 2
fi
mkdir -p "$OUT"
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	"$B" version
	nvidia-smi --query-gpu=index,uuid,name,driver_version,power.limit --format=csv
	nvidia-smi -q | sed -n 1,12p
	echo "GPU=$G nproc $(nproc)"
	echo "earlier runs: ${PREV[*]}"
} >"$OUT/env.txt" 2>&1
CMD=("$B" characterize --quick --gpu "$G" --out "$OUT/char")
echo "${CMD[*]}" >"$OUT/command.txt"
S=$(date +%s.%N)
# SIGINT at the limit: characterize writes what it measured, marked incomplete.
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$G timeout -s INT -k 30 "${LIMIT:-400}" "${CMD[@]}" \
	>"$OUT/characterize.stdout" 2>"$OUT/characterize.stderr"
RC=$?
E=$(date +%s.%N)
python3 -c "print(round($E - $S, 1))" >"$OUT/wall_s"
echo "characterize --quick: exit $RC after $(cat "$OUT/wall_s") s" | tee "$OUT/steps.txt"
"$B" report --json --out "$OUT/compare.html" "${PREV[@]}" "$OUT/char" >"$OUT/compare.json" 2>"$OUT/compare.stderr"
echo "report: exit $?" >>"$OUT/steps.txt"
python3 "$HERE/characterize_compare.py" "$OUT" >"$OUT/compare.md"
cat "$OUT/compare.md"
exit $((RC != 0))
