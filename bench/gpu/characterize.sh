#!/usr/bin/env bash
# Issue 7's runs of `gpuwatt characterize` on a GPU machine. From the repository root, with
# the binary built by `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/characterize.sh OUTDIR quick   # --quick, about 4 min
#   bash bench/gpu/characterize.sh OUTDIR part1   # the full run's sensor and micro stages, about 5 min
#   bash bench/gpu/characterize.sh OUTDIR part2   # --resume: archline and loadlevel, about 9 min
#
# A full run (about 14 min of GPU time) is longer than one 10-minute device call, so it is
# split with --stages and --resume. part2 resumes the directory .gpu/char-full: after part1,
# unpack its OUTDIR/full.tgz into .gpu/ on the machine that builds (it then travels with
# carry [".gpu"]). Run part2 right after part1, while the machine is still warm: --resume
# refuses results of another GPU (the UUID must match).
# Writes OUTDIR/<mode>.tgz with the characterize directory, stdout, progress and wall times.
set -u
OUT=${1:?usage: characterize.sh OUTDIR quick|part1|part2}
MODE=${2:?usage: characterize.sh OUTDIR quick|part1|part2}
B=${GPUWATT:-.gpu/gpuwatt}
W=${WORKDIR:-/tmp/gpuwatt-characterize}
mkdir -p "$W"
case $MODE in
quick) D=$W/char-quick; rm -rf "$D"; args=(--quick --out "$D") ;;
part1) D=$W/char-full; rm -rf "$D"; args=(--stages sensor,micro --out "$D") ;;
part2) D=$W/char-full; rm -rf "$D"; cp -r .gpu/char-full "$D" || { echo "no .gpu/char-full to resume"; exit 2; }
       args=(--resume --out "$D") ;;
*) echo "mode $MODE: want quick, part1 or part2"; exit 2 ;;
esac
{ date -u; nvidia-smi; "$B" version; nproc; } >"$W/env-$MODE.txt" 2>&1
S=$(date +%s)
timeout -s INT "${LIMIT:-570}" "$B" characterize "${args[@]}" >"$W/$MODE.txt" 2>"$W/$MODE-progress.txt"
echo "characterize $MODE: exit $? after $(( $(date +%s) - S )) s" | tee -a "$W/$MODE-progress.txt"
tail -3 "$W/$MODE-progress.txt"
name=full; [ "$MODE" = quick ] && name=quick
tar czf "$OUT/$name.tgz" -C "$W" "$(basename "$D")" "env-$MODE.txt" "$MODE.txt" "$MODE-progress.txt"
