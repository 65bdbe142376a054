#!/bin/bash
# old,new,new,old per package; CPU = user+sys
out=/tmp/perf30/pairs.txt
: > $out
for p in "$@"; do
  cd /work/wt/perf30/internal/$p
  for v in old new new old; do
    /usr/bin/time -f "$p $v %e %U %S" -o /tmp/perf30/t.$$ /tmp/perf30/m-$p-$v.test -test.count=1 > /tmp/perf30/run-$p-$v.out 2>&1
    rc=$?
    echo "$(cat /tmp/perf30/t.$$ | tail -1) rc=$rc load=$(cut -d' ' -f1 /proc/loadavg)" >> $out
  done
done
