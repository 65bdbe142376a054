#!/usr/bin/env bash
# gpuwatt serve on an H200, run 3 (issue 16): what serve costs in CPU on a real board at each
# --poll, alone on the idle card: for 100ms (the default), 250ms, 500ms and 1s, serve runs
# 5 s, then its CPU (user+system from /proc/PID/stat) is read over 25 s, the exposition kept,
# and it is ended with SIGTERM. `gpuwatt devices --json` first gives each channel's call
# latency. Reads only; changes no setting. Max wall time ~150 s.
set -u
OUT=${1:?usage: run.sh OUTDIR}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
log() { echo "$(date -u +%H:%M:%S.%N) $*" | tee -a "$OUT/steps.log"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'; }
get() { python3 -c 'import sys,urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1],timeout=10).read())' "$@"; }
{ date -u; nvidia-smi -q | head -60; nvidia-smi -L; nproc; grep -m1 "model name" /proc/cpuinfo; } > "$OUT/env.txt" 2>&1
gunzip -c "$HERE/gpuwatt.gz" > "$T/gpuwatt" && chmod +x "$T/gpuwatt"
"$T/gpuwatt" version >> "$OUT/env.txt" 2>&1
cat "$HERE/BUILD" >> "$OUT/env.txt"
"$T/gpuwatt" devices --device ${GW_DEVICE:-nvml} --json > "$OUT/devices.json" 2>&1; log "devices rc=$?"
PORT=19402
for p in 100ms 250ms 500ms 1s; do
  "$T/gpuwatt" serve --device ${GW_DEVICE:-nvml} --listen 127.0.0.1:$PORT --poll $p > /dev/null 2> "$OUT/serve-$p.stderr" &
  SERVE=$!
  cpu() { awk '{print $14+$15}' /proc/$SERVE/stat 2>/dev/null; }
  sleep 5
  c0=$(cpu); t0=$(now)
  sleep 25
  c1=$(cpu)
  log "poll $p: serve cpu ticks $c0 -> $c1 over $(since $t0) s (CLK_TCK $(getconf CLK_TCK)): $(awk -v a=$c0 -v b=$c1 -v t=$(since $t0) -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.2f", 100*(b-a)/hz/t}') % of one core"
  get "http://127.0.0.1:$PORT/metrics" > "$OUT/metrics-$p.txt"; log "metrics-$p rc=$?"
  t0=$(now); kill -TERM $SERVE; wait $SERVE; rc=$?; log "serve --poll $p SIGTERM exit=$rc after $(since $t0)s"
done
rm -rf "$T"
log done
