#!/bin/bash
# one cold compile+link of the test binaries: empty GOCACHE, module cache warm, no network
d=$1; n=$2
cd /tmp/deps30-time/$d
rm -rf /tmp/deps30-time/gocache-$d-$n
GOCACHE=/tmp/deps30-time/gocache-$d-$n GOPROXY=off CGO_ENABLED=0 /usr/bin/time -f "$d run $n: %e s wall %U user %S sys" go test -vet=off -ldflags=-w -debug-trace=/tmp/deps30-time/trace-$d-$n.json -run '^$' ./... > /tmp/deps30-time/out-$d-$n.txt 2>&1
tail -1 /tmp/deps30-time/out-$d-$n.txt
grep -c "^ok\|no test files" /tmp/deps30-time/out-$d-$n.txt
grep -v "^ok\|no test files\|s wall" /tmp/deps30-time/out-$d-$n.txt | head -5
rm -rf /tmp/deps30-time/gocache-$d-$n
