#!/usr/bin/env bash
# ab with --json several times (base vs ~1% slower probe): per-round data for a look at outliers
set -u
out=$1; here=scripts/gate-check; w=/tmp/abd
plant() { mkdir -p "$w/$1"; sed "s/@EXTRA@/$2/" "$here/probe.cu.in" >"$w/$1/probe.cu"; cp kernels/dot/tree_reduce.cuh "$w/$1/"; }
plant base 0; plant slow1 10
for i in 1 2 3 4 5 6; do
  s=$(date +%s)
  python3 -m cudabench ab $w/base $w/slow1 --op dot --size '1<<23' --seed $i --json $out/ab$i.json > $out/ab$i.txt 2>&1
  echo "run $i rc=$? $(echo $(( $(date +%s) - s )) ) s"; grep probe $out/ab$i.txt | head -1
done
