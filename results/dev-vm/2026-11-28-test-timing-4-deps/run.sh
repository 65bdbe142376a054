#!/bin/bash
# Compile CPU of the README's test command with -run XXX_NONE (no test runs), from an empty
# build cache, before (3441acb) and after (deps), back to back, twice.
export CGO_ENABLED=0
out=/tmp/deps-timing
for round in 1 2; do
  for which in before after; do
    cd /tmp/deps-$which
    c=$(mktemp -d /tmp/deps-gocache.XXXX)
    { echo "== $which round $round $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load: $(cut -d' ' -f1-3 /proc/loadavg)"; } >> $out/summary.txt
    GOCACHE=$c /usr/bin/time -o $out/$which-$round.time go test -vet=off -ldflags=-w -run XXX_NONE ./... > $out/$which-$round.log 2>&1
    echo "rc=$? $(tail -3 $out/$which-$round.time | tr '\n' ' ') load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/summary.txt
    rm -rf $c
  done
done
echo done >> $out/summary.txt
