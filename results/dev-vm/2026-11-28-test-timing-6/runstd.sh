#!/bin/bash
# the same compile with Go's standard library already in the build cache (a copy of one
# made by `go build std`), so that only the module's packages, its dependencies and the
# links are timed
d=$1; n=$2
cd /tmp/deps30-time/$d
rm -rf /tmp/deps30-time/gocache-$d-$n && cp -a /tmp/deps30-time/gocache-std /tmp/deps30-time/gocache-$d-$n
GOCACHE=/tmp/deps30-time/gocache-$d-$n GOPROXY=off CGO_ENABLED=0 /usr/bin/time -f "$d std-warm run $n: %e s wall %U user %S sys" go test -vet=off -ldflags=-w -run '^$' ./... > /tmp/deps30-time/outstd-$d-$n.txt 2>&1
tail -1 /tmp/deps30-time/outstd-$d-$n.txt
rm -rf /tmp/deps30-time/gocache-$d-$n
