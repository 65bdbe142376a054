#!/bin/bash
# measure.sh LABEL [go test args...]: one warm run of the README's test command (-count=1: every
# test runs again, the packages compiled), each test binary timed by exec-time.sh (its children
# included). Run from the repository root; writes LABEL.info (date, commit, load before and
# after, exit code, the whole command's wall/user/sys), LABEL.times and LABEL.json into OUTDIR.
# Compile first (e.g. the same command with -run XXX_NONE) so that the run is warm.
set -u
label=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
OUTDIR=${OUTDIR:-/tmp}
export CGO_ENABLED=0 TS_OUT=$OUTDIR/$label.times
rm -f "$TS_OUT"
{ date -u; git rev-parse --short HEAD; uptime; } > "$OUTDIR/$label.info"
/usr/bin/time -f "%e wall %U user %S sys" -o "$OUTDIR/$label.total" \
  go test -vet=off -ldflags=-w -count=1 -exec "$here/exec-time.sh" -json "$@" > "$OUTDIR/$label.json" 2> "$OUTDIR/$label.err"
echo "rc=$?" >> "$OUTDIR/$label.info"
uptime >> "$OUTDIR/$label.info"
cat "$OUTDIR/$label.total" >> "$OUTDIR/$label.info"
