#!/bin/bash
# The README's test command on a quiet 2-core VM: cold (empty build cache), in the README's
# order (install, then the tests, from another empty cache) and warm (-count=1), for two
# variants of its flags:
#   A: -vet=off -ldflags=-w                 (the command until this run)
#   B: -vet=off -gcflags=all=-dwarf=false   (no DWARF compiled: go test links test binaries
#                                            with -s -w anyway, so -ldflags=-w changes nothing)
#   C: B with GOGC=400 in the environment   (the compiler, linker and test binaries collect
#                                            garbage a quarter as often)
# usage: run.sh CLONE OUT [VARIANTS]   (VARIANTS: "A B" by default; a fresh clone of main)
# The install command runs with GOGC=100 (the README's install line sets nothing).
set -u
src=$1; T=$2; variants=${3:-A B}
mkdir -p "$T"; cd "$src"
export CGO_ENABLED=0
flags() { case $1 in A) echo "-vet=off -ldflags=-w";; B|C) echo "-vet=off -gcflags=all=-dwarf=false";; esac; }
gogc() { case $1 in C) echo 400;; *) echo 100;; esac; }
timed() { # timed NAME CMD...
  local n=$1; shift
  cut -d' ' -f1-3 /proc/loadavg > "$T/$n.load"
  /usr/bin/time -o "$T/$n.time" -f '%e s wall, %U s user, %S s sys' "$@" > "$T/$n.log" 2>&1
  echo "rc $?" >> "$T/$n.time"; gzip -f "$T/$n.log"
  echo "$n: $(head -1 "$T/$n.time") (load at start $(cat "$T/$n.load"))"
}
{ git log --oneline -1; go version; nproc; date -u; } > "$T/commit.txt"
for v in $variants; do
  f=$(flags $v)
  export GOGC=$(gogc $v)
  GOCACHE=$(mktemp -d) timed cold-$v go test $f ./...
  export GOCACHE=$(mktemp -d)
  GOGC=100 timed install-$v go install ./cmd/gpuwatt
  timed after-install-$v go test $f ./...
  timed warm-$v go test $f -count=1 ./...
  rm -rf "$GOCACHE"; unset GOCACHE GOGC
done
date -u >> "$T/commit.txt"
