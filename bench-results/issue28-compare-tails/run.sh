#!/bin/bash
# Alternating A/B of the memstore alone (no WAL, no disk): ./run.sh ROUNDS binA binB
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  $b bench memstore --threads 1,2 --dists zipf,uniform --policies basic,adaptive --layouts cell-chunk > $n-$r.txt 2>&1
done; done
