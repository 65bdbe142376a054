#!/bin/bash
# go test -exec: times one test binary (wall, user, sys, its children included) into $TS_OUT,
# one line per binary: wall user sys package-directory.
exec /usr/bin/time -f "%e %U %S $PWD" -a -o "${TS_OUT:-/tmp/times.txt}" "$@"
