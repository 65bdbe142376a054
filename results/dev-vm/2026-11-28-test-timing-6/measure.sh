#!/bin/bash
# measure.sh LABEL SRC: one warm run of the README's test command in the source tree SRC
# (-count=1: every test runs again, the packages compiled first by the same command with
# -run XXX_NONE), each test binary timed by exec-time.sh (its children included). Writes
# LABEL.info (date, load before and after, exit code, the whole command's wall/user/sys),
# LABEL.times (wall user sys package, one line per test binary) and LABEL.json into OUTDIR.
set -u
label=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
OUTDIR=${OUTDIR:-/tmp}
export CGO_ENABLED=0 TS_OUT=$OUTDIR/$label.times
unset GPUWATT_SLOW_TESTS
cd "$src"
go test -vet=off -ldflags=-w -run XXX_NONE ./... > /dev/null 2>&1
rm -f "$TS_OUT"
{ date -u; cat "$src/commit.txt" 2>/dev/null; uptime; } > "$OUTDIR/$label.info"
/usr/bin/time -f "%e wall %U user %S sys" -o "$OUTDIR/$label.total" \
  go test -vet=off -ldflags=-w -count=1 -exec "$here/exec-time.sh" -json ./... > "$OUTDIR/$label.json" 2> "$OUTDIR/$label.err"
echo "rc=$?" >> "$OUTDIR/$label.info"
uptime >> "$OUTDIR/$label.info"
cat "$OUTDIR/$label.total" >> "$OUTDIR/$label.info"
