#!/bin/bash
# old (90b14e4, run in the base worktree) and new (main, run in tpkg30's worktree), old,new,new,old per package
for p in loadlevel call sensor characterize energy profile archline micro region record sensorchar cuda marks correct loadlevel/gpufft kernels gpu/sim trace root; do
  n=$(echo $p | tr / _); d=internal/$p; [ $p = root ] && d=.
  for v in old new new old; do
    if [ $v = old ]; then bin=/tmp/tpkg30/base0/$n.test; dir=/work/wt/tpkg30-base/$d; else bin=/tmp/tpkg30/cur/$n.test; dir=/work/wt/tpkg30/$d; fi
    (cd $dir && /usr/bin/time -f "%e %U %S" -o /tmp/tpkg30/c.time $bin -test.count=1 >/tmp/tpkg30/c.out 2>&1; echo $? > /tmp/tpkg30/c.rc)
    read e u s < /tmp/tpkg30/c.time
    printf "%s %s wall %s cpu %.2f rc %s load %s\n" $n $v $e $(echo "$u + $s" | bc) $(cat /tmp/tpkg30/c.rc) "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
