#!/bin/bash
# Alternating A/B on the write presets: ./run.sh ROUNDS binA binB...; each run its own process.
# PRESETS and POLICIES override the defaults below.
R=$1; shift
for r in $(seq ${FIRST:-1} $R); do for p in ${PRESETS:-paper-write-zipf paper-write-uniform}; do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets $p --policies ${POLICIES:-basic,adaptive:0.35} --engines accordion --dir /work/bdir --json $n-$p-$r.json > $n-$p-$r.txt 2>$n-$p-$r.err
done; done; done
