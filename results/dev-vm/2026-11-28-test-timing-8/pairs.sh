#!/bin/bash
# usage: pairs.sh NAME DIR [rounds]  -> old,new,new,old interleaved, CPU user+sys
n=$1; dir=$2; rounds=${3:-1}
cd /work/wt/tpkg30/$dir
for r in $(seq $rounds); do
for v in old new new old; do
  /usr/bin/time -f "%e %U %S" -o /tmp/tpkg30/p.time /tmp/tpkg30/$v/$n.test -test.count=1 >/tmp/tpkg30/p.out 2>&1; rc=$?
  read e u s < /tmp/tpkg30/p.time
  printf "%s %s wall %s cpu %.2f (user %s sys %s) rc %s load %s\n" $n $v $e $(echo "$u + $s" | bc) $u $s $rc "$(cut -d' ' -f1 /proc/loadavg)"
done; done
