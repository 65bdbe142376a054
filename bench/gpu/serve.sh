#!/usr/bin/env bash
# gpuwatt serve on an H200 (issue 16): serve runs on its own, a real Prometheus (Debian's
# 2.42, carried xz-compressed) scrapes it every 1 s, and `gpuwatt measure` wraps a torch
# workload of matmul bursts (~60 s), after 35 s of serve alone on the idle card (its CPU
# measured there); afterwards the scrapes are read back through
# Prometheus's HTTP API. Reads the card only; changes no setting. Max wall time ~220 s.
# As run from .gpu/serve/ (beside it there: gpuwatt.gz, the gzipped binary; prometheus.xz,
# Debian's /usr/bin/prometheus compressed with xz -9; work.py, this directory's serve_work.py;
# BUILD, the build line). GW_DEVICE=sim GW_WORK="sleep 3" runs it on the sim.
set -u
OUT=${1:?usage: run.sh OUTDIR}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
log() { echo "$(date -u +%H:%M:%S.%N) $*" | tee -a "$OUT/steps.log"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'; }
step() { local name=$1; shift; local t0=$(now); "$@"; local rc=$?; log "step $name rc=$rc wall=$(since $t0)s"; return $rc; }
# curl and xz may be missing on the device: python3 stands in.
get() { python3 -c 'import sys,urllib.request,urllib.parse; u=sys.argv[1]; q=sys.argv[2:]; u+=("?"+urllib.parse.urlencode([tuple(x.split("=",1)) for x in q]) if q else ""); sys.stdout.buffer.write(urllib.request.urlopen(u,timeout=10).read())' "$@"; }
{ date -u; nvidia-smi -q | head -60; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
gunzip -c "$HERE/gpuwatt.gz" > "$T/gpuwatt" && chmod +x "$T/gpuwatt"
python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' "$HERE/prometheus.xz" "$T/prometheus" && chmod +x "$T/prometheus"
"$T/gpuwatt" version >> "$OUT/env.txt" 2>&1
cat "$HERE/BUILD" >> "$OUT/env.txt"
"$T/gpuwatt" devices --device ${GW_DEVICE:-nvml} > "$OUT/devices.txt" 2>&1; log "devices rc=$?"
"$T/prometheus" --version >> "$OUT/env.txt" 2>&1
PORT=19402
"$T/gpuwatt" serve --device ${GW_DEVICE:-nvml} --listen 127.0.0.1:$PORT --dcgm-names > "$OUT/serve.stdout" 2> "$OUT/serve.stderr" &
SERVE=$!
log "serve pid $SERVE"
cat > "$T/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: gpuwatt
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
"$T/prometheus" --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:19090 > "$OUT/prometheus.log" 2>&1 &
PROM=$!
log "prometheus pid $PROM"
cpu() { awk '{print $14+$15}' /proc/$SERVE/stat 2>/dev/null; }  # serve's user+system CPU in clock ticks
sleep 5
log "idle phase start: serve cpu ticks $(cpu) (CLK_TCK $(getconf CLK_TCK))"
sleep 30
log "idle phase end: serve cpu ticks $(cpu)"
get "http://127.0.0.1:$PORT/metrics" > "$OUT/metrics-before.txt"; log "metrics-before rc=$?"
log "workload start: serve cpu ticks $(cpu)"
step measure "$T/gpuwatt" measure --device ${GW_DEVICE:-nvml} --out "$OUT/measure" -- ${GW_WORK:-python3 "$HERE/work.py" "$OUT/work.json"} > "$OUT/measure.txt" 2>&1
log "workload end: serve cpu ticks $(cpu)"
sleep 10
get "http://127.0.0.1:$PORT/metrics" > "$OUT/metrics-after.txt"; log "metrics-after rc=$?"
# The scrape log: every sample Prometheus stored, read back through its HTTP API.
for q in 'gpuwatt_gpu_energy_joules_total' 'gpuwatt_gpu_power_watts' 'gpuwatt_gpu_corrected_power_delay_seconds' 'gpuwatt_gpu_up' 'gpuwatt_gpu_idle_power_watts' 'gpuwatt_sampler_cpu_seconds_total' 'gpuwatt_sampler_polls_total' 'gpuwatt_sampler_errors_total' 'gpuwatt_sampler_missed_updates_total' 'gpuwatt_process_gpu_energy_joules_total' 'gpuwatt_gpu_unattributed_energy_joules_total' 'gpuwatt_gpu_clock_event_active' 'DCGM_FI_DEV_POWER_USAGE' 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION' 'scrape_duration_seconds' 'up'; do
  get "http://127.0.0.1:19090/api/v1/query" "query=${q}[10m]" > "$T/q-$q.json"
done
python3 - "$T" "$OUT/scrapes.json" <<'PY'
import glob, json, os, sys
res = {}
for f in glob.glob(os.path.join(sys.argv[1], "q-*.json")):
    res[os.path.basename(f)[2:-5]] = json.load(open(f))
json.dump(res, open(sys.argv[2], "w"))
PY
log "scrapes rc=$?"
t0=$(now); kill -TERM $SERVE; wait $SERVE; rc=$?; log "serve SIGTERM exit=$rc after $(since $t0)s"
kill -TERM $PROM; wait $PROM; log "prometheus exit=$?"
tar czf "$OUT/tsdb.tar.gz" -C "$T" tsdb; log "tsdb rc=$?"
gzip -9 "$OUT/scrapes.json" "$OUT/measure/trace.csv" 2>/dev/null
rm -rf "$T"
log done
