#!/usr/bin/env bash
# measure.sh CLONE OUTDIR: the README's test command in CLONE (a fresh git clone), as a newcomer
# runs it: cold (an empty GOCACHE; the module cache is the machine's, already filled), then
# warm (the same GOCACHE again, -count=1 so that the tests run rather than their results being
# read from the cache). Writes OUTDIR/{command,env,cold.time,cold.out,warm.time,warm.out}:
# the .time files are /usr/bin/time -v (user, sys, wall), with uptime's load before and after.
set -euo pipefail
clone=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$clone"
cmd=$(grep -m1 -E '^CGO_ENABLED=0 go test ' README.md)
echo "$cmd" > "$out/command"
{ git log --oneline -1; go version; echo "nproc $(nproc)"; env | grep -E '^(GOFLAGS|GOMAXPROCS|GPUWATT_)=' || true; } > "$out/env"
export GOCACHE; GOCACHE=$(mktemp -d)
trap 'rm -rf "$GOCACHE"' EXIT
for phase in cold warm; do
  extra=; [ $phase = warm ] && extra="-count=1 "
  uptime > "$out/$phase.time"
  /usr/bin/time -v -a -o "$out/$phase.time" bash -c "${cmd/go test /go test $extra } > '$out/$phase.out' 2>&1" || echo "rc $?" >> "$out/$phase.time"
  uptime >> "$out/$phase.time"
done
