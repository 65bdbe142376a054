#!/bin/bash
# usage: pertest.sh BIN DIR  -> CPU (user+sys) per top-level test, run alone
bin=$1; dir=$2; shift 2
cd $dir
for t in $($bin -test.list '.*' | grep -E '^(Test|Fuzz|Example)'); do
  /usr/bin/time -f "%e %U %S" -o /tmp/tpkg30/t.time $bin -test.count=1 -test.run "^$t\$" "$@" >/tmp/tpkg30/t.out 2>&1 || echo "FAIL $t"
  read e u s < /tmp/tpkg30/t.time
  echo "$(echo "$u + $s" | bc) $e $t"
done | sort -rn
