#!/usr/bin/env bash
# twin CPU, before and after, one after the other
set -u
OUT=$1
mkdir -p $OUT
R=/work/wt/lean-wip/bench/gpu/cpu_run.py
for v in before after; do
  B=/tmp/lean/gpuwatt-$v
  python3 $R --name $v-measure-1 --out $OUT/$v-measure-1.json --window 3 15 --gpus 1 -- $B measure --device sim:h200 --out /tmp/lean/ct-$v-m1 -- sleep 16
  python3 $R --name $v-measure-2 --out $OUT/$v-measure-2.json --window 3 15 --gpus 2 -- $B measure --sim-config /tmp/lean/h200x2.json --out /tmp/lean/ct-$v-m2 -- sleep 16
  python3 $R --name $v-serve-1 --out $OUT/$v-serve-1.json --window 3 15 --stop-after 16 --gpus 1 -- $B serve --device sim:h200 --listen 127.0.0.1:9481
  python3 $R --name $v-serve-2 --out $OUT/$v-serve-2.json --window 3 15 --stop-after 16 --gpus 2 -- $B serve --sim-config /tmp/lean/h200x2.json --listen 127.0.0.1:9482
done
