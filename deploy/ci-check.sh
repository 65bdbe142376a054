#!/usr/bin/env bash
# deploy/ci-check.sh: checks what deploy/ ships with the ecosystem's own tools, as .ci/run
# runs it (from the repository root):
#   - the Helm chart: `helm lint --strict` (its values.schema.json included) and `helm template`
#     at the default values and with every option on (helm built from the Go module proxy
#     once, into GOPATH/bin, and kept there);
#   - the rendered chart and deploy/kubernetes/gpuwatt.yaml: decoded strictly into the
#     Kubernetes API's own types (deploy/check; kubeconform's schemas live on GitHub, which CI
#     cannot reach) and cross-referenced; the chart's gpuwatt arguments run by gpuwatt serve
#     on the sim device until `curl /health` says 200;
#   - the systemd unit: `systemd-analyze verify`, where systemd is installed;
#   - the container recipe's base: the binary started in a chroot holding only what
#     distroless/static has (nothing: it cannot start) and what distroless/base has (glibc's
#     loader and libraries: it runs), where this runs as root.
# The Grafana dashboard's PromQL is checked against a real Prometheus by deploy's Go test
# (TestDashboardQueries), run here too so that its lines are in the log.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
HELM_VERSION=v3.22.0
say() { echo "deploy-check: $*"; }
fail() { echo "deploy-check: FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

gobin=$(go env GOPATH)/bin
helm=$gobin/helm
if ! "$helm" version 2>/dev/null | grep -q "Version:\"${HELM_VERSION%.0}"; then
  t0=$SECONDS
  go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  say "helm $HELM_VERSION built from the Go module proxy in $((SECONDS - t0)) s (kept in $gobin)"
fi
t0=$SECONDS
go build -C deploy/check -o "$tmp/check" .
go build -o "$tmp/gpuwatt" ./cmd/gpuwatt
say "deploy/check and gpuwatt built in $((SECONDS - t0)) s"

chart=deploy/helm/gpuwatt
"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" --set webConfigSecret=gpuwatt-web,probeAuthorization='Basic eDp5',dcgmNames=true,serviceMonitor.enabled=false,device=sim:h200
if "$helm" template gw "$chart" --set port=http >/dev/null 2>"$tmp/bad.txt"; then
  fail "helm template accepted port=http"
fi
say "helm lint --strict: ok; values.schema.json refuses port=http: $(grep -o "at '/port'.*" "$tmp/bad.txt")"
"$helm" template gw "$chart" --namespace gpuwatt >"$tmp/default.yaml"
"$helm" template gw "$chart" --namespace gpuwatt --set webConfigSecret=gpuwatt-web,probeAuthorization='Basic eDp5',dcgmNames=true,poll=250ms --set-string gpus=0 >"$tmp/options.yaml"
for f in deploy/kubernetes/gpuwatt.yaml "$tmp/default.yaml" "$tmp/options.yaml"; do
  say "$(basename "$f"): $("$tmp/check" "$f")"
done

# The chart's arguments, as rendered, run by gpuwatt serve on the sim device (explicitly
# simulated) on a loopback port; curl /health until 200.
mapfile -t args < <("$tmp/check" -args "$tmp/default.yaml")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run=()
for a in "${args[@]}"; do
  case $a in
  --device=*) a=--device=sim:h200 ;;
  --listen=*) a=--listen=127.0.0.1:$port ;;
  --pod-resources=*) a=--pod-resources=$tmp/absent.sock ;;
  esac
  run+=("$a")
done
"$tmp/gpuwatt" "${run[@]}" 2>"$tmp/serve.log" &
serve_pid=$!
code=
for _ in $(seq 100); do
  code=$(curl -s -o "$tmp/health.txt" -w '%{http_code}' "http://127.0.0.1:$port/health" || true)
  [ "$code" = 200 ] && break
  sleep 0.1
done
[ "$code" = 200 ] || fail "gpuwatt ${run[*]}: /health $code: $(cat "$tmp/health.txt" "$tmp/serve.log" 2>/dev/null)"
say "the chart's args: gpuwatt ${run[*]}: curl /health: $code $(cat "$tmp/health.txt")"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^gpuwatt_(build|gpu)_info' | sed 's/^/deploy-check:   /'
kill -INT "$serve_pid"
wait "$serve_pid" || fail "gpuwatt serve did not end cleanly on SIGINT"
serve_pid=

if command -v systemd-analyze >/dev/null 2>&1; then
  sed "s|/usr/local/bin/gpuwatt|$tmp/gpuwatt|" deploy/systemd/gpuwatt.service >"$tmp/gpuwatt.service"
  SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$tmp/gpuwatt.service"
  say "systemd-analyze verify deploy/systemd/gpuwatt.service: ok"
else
  say "systemd-analyze is not installed: the unit is not verified"
fi

if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null 2>&1; then
  interp=$(readelf -l "$tmp/gpuwatt" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  mkdir -p "$tmp/static/bin" "$tmp/base/bin"
  cp "$tmp/gpuwatt" "$tmp/static/bin/"
  cp "$tmp/gpuwatt" "$tmp/base/bin/"
  if chroot "$tmp/static" /bin/gpuwatt version --device sim >"$tmp/static.txt" 2>&1; then
    fail "gpuwatt started without $interp: distroless/static would do"
  fi
  for lib in $(readelf -d "$tmp/gpuwatt" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|AArch64/ { print $NF; exit }')
    [ -n "$path" ] || fail "$lib: not found by ldconfig"
    mkdir -p "$tmp/base$(dirname "$path")"
    cp -L "$path" "$tmp/base$path"
  done
  mkdir -p "$tmp/base$(dirname "$interp")"
  cp -L "$interp" "$tmp/base$interp"
  # the whole output, then its first line: `| head -n 1` closed the pipe on a second line,
  # and the SIGPIPE failed the check under pipefail
  out=$(chroot "$tmp/base" /bin/gpuwatt version --device sim 2>&1) || fail "gpuwatt in a chroot with glibc: $out"
  out=${out%%$'\n'*}
  say "container base: without $interp gpuwatt cannot start ($(head -c 80 "$tmp/static.txt")); with glibc's loader and libraries (distroless/base) it runs: $out"
else
  say "not root: the container base's chroot check is skipped"
fi

go test ./deploy/ -count=1 -v -run 'TestDashboardQueries|TestShippedServeArgs' 2>&1 | grep -E '^(---|ok|FAIL|PASS)|series|/health' | sed 's/^/deploy-check: /'
say "ok"
