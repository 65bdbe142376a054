#!/bin/bash
# OTLP interop on the dev VM: gpuwatt serve (sim) pushes to otlpbridge (Prometheus v2.55.1's
# OTLP decode and translation), which remote-writes to Debian's Prometheus 2.42; the series
# are then queried back from Prometheus. Usage: interop.sh GPUWATT OUTDIR
set -u
gw=$1; out=$2; mkdir -p $out/requests
work=$(mktemp -d)
cat > $work/prom.yml <<'Y'
global:
  scrape_interval: 1h
Y
echo "$(date -u +%FT%TZ) $(prometheus --version 2>&1 | head -1); $($gw version 2>&1 | head -1)" > $out/versions.txt
prometheus --config.file=$work/prom.yml --storage.tsdb.path=$work/tsdb --web.listen-address=127.0.0.1:19190 \
  --web.enable-remote-write-receiver > $out/prometheus.log 2>&1 &
ppid=$!
./otlpbridge -listen 127.0.0.1:14318 -write http://127.0.0.1:19190/api/v1/write -dump $out/requests > $out/bridge.log 2>&1 &
bpid=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:19190/-/ready >/dev/null && break; sleep 0.2; done
echo "+ $gw serve --device sim --listen 127.0.0.1:0 --otlp http://127.0.0.1:14318 --otlp-interval 1s (4 s, then SIGTERM)" >> $out/commands.txt
$gw serve --device sim --listen 127.0.0.1:0 --otlp http://127.0.0.1:14318 --otlp-interval 1s > $out/serve.log 2>&1 &
spid=$!; sleep 4.5; kill -TERM $spid; wait $spid; echo "serve exit $?" >> $out/serve.log
echo "+ OTEL_EXPORTER_OTLP_COMPRESSION=gzip OTEL_RESOURCE_ATTRIBUTES=deployment.environment=interop $gw serve ... --otlp-interval 1s (2.5 s)" >> $out/commands.txt
OTEL_EXPORTER_OTLP_COMPRESSION=gzip OTEL_RESOURCE_ATTRIBUTES=deployment.environment=interop $gw serve --device sim --listen 127.0.0.1:0 --otlp http://127.0.0.1:14318 --otlp-interval 1s > $out/serve-gzip.log 2>&1 &
spid=$!; sleep 2.5; kill -TERM $spid; wait $spid; echo "serve exit $?" >> $out/serve-gzip.log
sleep 1
for q in 'hw_energy_joules_total' 'hw_power_watts' 'target_info' 'count by (__name__)({__name__=~"hw_.*|gpuwatt_.*"})'; do
  echo "+ query $q" >> $out/commands.txt
  curl -s --get --data-urlencode "query=$q" http://127.0.0.1:19190/api/v1/query > "$out/query-$(echo $q | tr -c 'a-z_' '_' | cut -c1-40).json"
done
curl -s --get --data-urlencode 'match[]={__name__=~"hw_.*"}' http://127.0.0.1:19190/api/v1/series > $out/series.json
kill $bpid $ppid; wait $bpid $ppid 2>/dev/null
rm -rf $work
