#!/bin/bash
# Alternating A/B on paper-write-uniform, adaptive 0.35 (which flattens with unique keys counted):
# ./run.sh ROUNDS binA binB; each run its own process.
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets paper-write-uniform --policies adaptive:0.35 --engines accordion --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
done; done
python3 ../issue28-merge-entries/summary.py .
