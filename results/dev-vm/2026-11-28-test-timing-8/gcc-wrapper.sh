#!/bin/bash
start=$(date +%s.%N)
/usr/bin/time -f "%U %S" -o /tmp/tpkg30/gccw/t.$$ /usr/bin/gcc "$@"; rc=$?
echo "$(cat /tmp/tpkg30/gccw/t.$$) $PWD ${@: -2:1} $*" | cut -c1-200 >> /tmp/tpkg30/gccw/log
rm -f /tmp/tpkg30/gccw/t.$$
exit $rc
