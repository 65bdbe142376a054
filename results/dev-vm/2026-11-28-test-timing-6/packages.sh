#!/bin/bash
# T: a scratch folder holding basesrc/ and newsrc/ (git archive of the two commits) and
# bin/{base,new}/PKG.test (go test -c -vet=off -ldflags=-w of each package in each tree).
# Side-by-side timing of the packages' test binaries, base (aa55352) and new (HEAD), alternating.
PK="cli call sensor loadlevel characterize energy marks loadlevel/gpufft measure sensorchar profile archline record micro region lsq"
T=${T:-/tmp/t30}
out=$T/meas
runone() { # v p round
  local v=$1 p=$2 r=$3 b=$(echo $2 | tr / _)
  cd $T/${v}src/internal/$p
  local load=$(cut -d' ' -f1 /proc/loadavg)
  if [ "$p" = cli ]; then
    /usr/bin/time -f "%e %U %S" -o $out/$b.$v.$r.time $T/bin/$v/$b.test -test.count=1 -test.v=test2json 2>&1 | go tool test2json -t > $out/$b.$v.$r.json
    rc=$(grep -c '"Action":"fail"' $out/$b.$v.$r.json)
  else
    /usr/bin/time -f "%e %U %S" -o $out/$b.$v.$r.time $T/bin/$v/$b.test -test.count=1 > $out/$b.$v.$r.log 2>&1
    rc=$?
  fi
  echo "$r $p $v load=$load $(tail -1 $out/$b.$v.$r.time) fail=$rc" | tee -a $out/summary.txt
}
date -u >> $out/summary.txt
for r in 1 2; do
  for p in $PK; do
    if [ $r = 1 ]; then runone base $p $r; runone new $p $r; else runone new $p $r; runone base $p $r; fi
  done
done
date -u >> $out/summary.txt
