#!/bin/bash
# go test -exec: record user, sys, wall of each test binary run (children included)
exec /usr/bin/time -a -o "${RUNEXEC_LOG:-runexec.log}" -f "%U %S %e $(basename "$1") $PWD" "$@"
