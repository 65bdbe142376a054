#!/usr/bin/env bash
# Issue 28 item 4: `characterize --quick --stages micro,archline --repeat 3` on one card, then
# is each run's figure inside the other runs' relative intervals (>= 95 % of pairs)?
# Time budget: ~360 s of wall (three runs of micro ~65 s and archline ~45 s on an H200).
# Needs one GPU ($GPU, an H100 or an H200); python3 with the standard library.
#
#   GPU=0 bash bench/gpu/repeat3.sh OUTDIR
#
# Writes OUTDIR/rep (the runs, repeat.json; report.html gzipped), OUTDIR/inside.md (the
# table of bench/gpu/repeat_inside.py), env.txt, stdout.txt and stderr.txt.
set -u
OUT=${1:?usage: repeat3.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
G=${GPU:-0}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	"$B" version
	nvidia-smi --query-gpu=index,uuid,name,driver_version,power.limit,clocks.sm --format=csv
	nvidia-smi -q | sed -n 1,12p
	echo "GPU=$G"
	echo "command: $B characterize --quick --stages micro,archline --repeat 3 --gpu $G --out $OUT/rep"
} >"$OUT/env.txt" 2>&1
t0=$(date +%s)
"$B" characterize --quick --stages micro,archline --repeat 3 --gpu "$G" --out "$OUT/rep" \
	>"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
echo "rc=$? wall=$(($(date +%s) - t0))s" >>"$OUT/env.txt"
python3 "$HERE/repeat_inside.py" "$OUT/rep/repeat.json" >"$OUT/inside.md" 2>&1
echo "inside rc=$?" >>"$OUT/env.txt"
tail -2 "$OUT/inside.md"
find "$OUT/rep" -name '*.html' -exec gzip -9 {} +
find "$OUT/rep" -name 'trace*' -size +1M -exec gzip -9 {} + 2>/dev/null
du -sh "$OUT"
